"""Wall time of `oomrec --help` and `oomrec record list` on a 1000-record file.

Each command runs as a fresh process (what a user waits for), several times; the median is
reported next to baselines measured in the same run: a bare `python -c pass` and
`python -c "import typer"` (the floor any Typer CLI pays).

    python benchmarks/perf/bench_cli.py [--runs 15]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def wall(argv: list[str], runs: int, env: dict[str, str]) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, env=env)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        record = Path(tmp) / "oom-record"
        sha = "9bef3f2334c4048d8540aa392ef030c97d4dad2c"
        record.write_text(
            "".join(
                f"model-{i % 40},{512 * (1 + i % 9)},2026-07-03,{sha},{i * 1024},"
                f"benchmarks/cuda_gb10_{i}.csv,gb10\n"
                for i in range(1000)
            )
        )
        env = {**os.environ, "OOMREC_RECORD": str(record), "COLUMNS": "160"}
        py = sys.executable
        cases = {
            "python -c pass (baseline)": [py, "-c", "pass"],
            "python -c 'import typer' (baseline)": [py, "-c", "import typer"],
            "oomrec --help": [py, "-m", "oomrec", "--help"],
            "oomrec record list --no-git (1000 records)": [
                py,
                "-m",
                "oomrec",
                "record",
                "list",
                "--no-git",
            ],
            "oomrec record list --json --no-git (1000 records)": [
                py,
                "-m",
                "oomrec",
                "record",
                "list",
                "--json",
                "--no-git",
            ],
        }
        help_out = subprocess.run(
            [py, "-m", "oomrec", "record", "list", "--help"], capture_output=True, text=True
        ).stdout
        if "--no-git" not in help_out:
            cases = {k: [a for a in v if a != "--no-git"] for k, v in cases.items()}
        results = {name: wall(argv, args.runs, env) for name, argv in cases.items()}

    base = results["python -c pass (baseline)"]
    print(f"median of {args.runs} runs each, {sys.version.split()[0]}")
    for name, seconds in results.items():
        print(f"  {seconds * 1000:7.1f} ms  {seconds / base:5.1f}x python-start  {name}")


if __name__ == "__main__":
    main()
