"""What watching a cell costs oomrec: the signature scan, the memory sampling, the per-cell work.

- scan: MB/s of SignatureScanner over 64 KiB chunks, on a plain log (no anchor word) and on a
  log where every line says "memory" (all patterns tried);
- sampling: oomrec's own CPU time (user + sys, its threads and unreaped children excluded) while
  a runner of 4 processes sleeps for --seconds, as a share of one core;
- per cell: run_cell(["true"]) wall time (launch, counters before/after, tree walk, reap).

    python benchmarks/perf/bench_runner.py [--seconds 10] [--runs 5]
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.perf.timing import median_time
from oomrec.sweep.cell.runner import run_cell
from oomrec.sweep.cell.signatures import SignatureScanner

CHUNK = 65536


def scan_mb_s(line: bytes, megabytes: int, runs: int) -> float:
    data = line * ((megabytes << 20) // len(line))

    def scan() -> None:
        scanner = SignatureScanner()
        for i in range(0, len(data), CHUNK):
            scanner.feed(data[i : i + CHUNK])
        scanner.close()
        assert scanner.hit is None

    return len(data) / median_time(scan, runs) / 1e6


def own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def sampling_share(seconds: float) -> float:
    code = (
        "import subprocess, sys, time\n"
        f"kids = [subprocess.Popen(['sleep', '{seconds}']) for _ in range(3)]\n"
        f"time.sleep({seconds})\n"
    )
    cpu, start = own_cpu(), time.perf_counter()
    run_cell([sys.executable, "-c", code], timeout=seconds * 3)
    return (own_cpu() - cpu) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    plain = scan_mb_s(b"INFO step 1234: loss=0.123 lr=3e-4 tokens/s=5120.0\n", 64, args.runs)
    laden = scan_mb_s(b"INFO step 1234: allocated memory 12.3 GiB, cache 4.5 GiB\n", 64, args.runs)
    print(f"scan, plain log:         {plain:7.0f} MB/s")
    print(f"scan, memory in each line: {laden:5.0f} MB/s")
    shares = [sampling_share(args.seconds) for _ in range(3)]
    print(
        f"sampling a 4-process cell for {args.seconds:.0f} s: oomrec used "
        + ", ".join(f"{share * 100:.2f}%" for share in shares)
        + " of a core"
    )
    per_cell = median_time(lambda: run_cell(["true"], 30), args.runs * 20)
    print(f"run_cell(['true']): {per_cell * 1000:.1f} ms median")


if __name__ == "__main__":
    main()
