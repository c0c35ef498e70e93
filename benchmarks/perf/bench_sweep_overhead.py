"""Per-cell overhead of `oomrec sweep`: its wall time minus the runner's own time, over 500+ cells.

The runner is a no-op (`true`), so almost everything measured is oomrec's: planning, launching
each cell in its own process group, waiting, classifying, appending and flushing the row. The
runner's own time is measured in the same run by launching the same no-op as many times from a
bare loop (`subprocess.run`, the floor any Python launcher pays). Reported per sweep:

- total overhead: sweep wall minus the runner's own time, per cell (start-up included);
- marginal overhead: what one more cell costs beyond the runner, (T(N) - T(1)) / (N - 1) - r,
  with T(1) the same sweep over one cell, so the fixed start-up cost drops out.

Three sweeps: every cell launched; the same with a 1000-line record that matches no cell (the
per-cell record lookup); every cell pre-skipped by the record (no launch: rows only).

    python benchmarks/perf/bench_sweep_overhead.py [--models 25] [--lengths 24] [--runs 3]

Figures, 2026-12-02, 2-core dev VM, --models 25 --lengths 20 --runs 1, back to back with the
tree before the provenance journal (PYTHONPATH=<before>), marginal overhead per cell:

    sweep                     journal     before (whole provenance file rewritten per cell)
    every cell launched       11.4 ms     21.2 ms
    + 1000 unrelated records   8.8 ms     23.5 ms
    every cell pre-skipped     0.41 ms     7.18 ms
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def wall(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, env=env, cwd=cwd)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=25)
    parser.add_argument("--lengths", type=int, default=24)
    parser.add_argument("--runs", type=int, default=3, help="repetitions; medians are reported")
    args = parser.parse_args()
    cells = args.models * args.lengths
    true = shutil.which("true")
    if true is None:
        sys.exit("needs a `true` executable on PATH")

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        models = [f"model-{i:03d}" for i in range(args.models)]
        for name in models:
            (root / "models" / name).mkdir(parents=True)
        lengths = " ".join(str(512 * (i + 1)) for i in range(args.lengths))
        unrelated = root / "unrelated-record"
        unrelated.write_text(
            "".join(
                f"other-{i},{512 * (1 + i % 9)},2026-07-03,unknown,,x.csv\n" for i in range(1000)
            )
        )
        blocking = root / "blocking-record"
        blocking.write_text("".join(f"{name},1,2026-07-03,unknown,,x.csv\n" for name in models))
        env = {**os.environ, "OOMREC_HARDWARE": "bench", "COLUMNS": "120"}
        for name in (
            "MLXCEL_BENCH_FAKE_OOM",
            "MLXCEL_BENCH_IGNORE_OOM_RECORD",
            "OOMREC_IGNORE_RECORD",
        ):
            env.pop(name, None)

        def sweep(record: Path, one: bool = False) -> list[str]:
            return [
                sys.executable, "-m", "oomrec", "sweep", "--runner", f"{true} {{model}} {{length}}",
                "--models", models[0] if one else " ".join(models),
                "--lengths", lengths.split()[0] if one else lengths,
                "--output", str(root / "out.csv"), "--record", str(record), "--timeout", "60",
            ]  # fmt: skip

        def bare_loop() -> float:
            start = time.perf_counter()
            for name in models:
                for length in lengths.split():
                    subprocess.run([true, name, length], check=True)
            return time.perf_counter() - start

        cases = {
            "every cell launched": root / "empty-record",
            "+ 1000 unrelated records": unrelated,
            "every cell pre-skipped": blocking,
        }
        samples: dict[str, list[float]] = {"bare": []}
        for _ in range(args.runs):
            samples["bare"].append(bare_loop())
            for label, record in cases.items():
                samples.setdefault(label, []).append(wall(sweep(record), env, root))
                rows = (root / "out.csv").read_text().count("\n") - 1
                assert rows == cells, f"{label}: {rows} rows for {cells} cells"
                samples.setdefault(label + " (1 cell)", []).append(
                    wall(sweep(record, one=True), env, root)
                )

    med = {label: statistics.median(values) for label, values in samples.items()}
    bare = med["bare"]
    r = bare / cells
    print(
        f"{cells} cells ({args.models} models x {args.lengths} lengths), no-op runner {true}, "
        f"median of {args.runs} runs, Python {sys.version.split()[0]}, {os.cpu_count()} CPUs"
    )
    print(f"  runner's own time (bare loop): {bare * 1000:7.1f} ms = {r * 1000:.3f} ms per cell")
    for label in cases:
        total, one = med[label], med[label + " (1 cell)"]
        runner = 0.0 if "pre-skipped" in label else bare
        per = r if runner else 0.0
        print(
            f"  {label + ':':26s} T(N) {total * 1000:7.1f} ms, T(1) {one * 1000:6.1f} ms; "
            f"total overhead {(total - runner) / cells * 1000:.3f} ms/cell, "
            f"marginal {((total - one) / (cells - 1) - per) * 1000:.3f} ms/cell "
            f"({(total - one) / (cells - 1) / r:.2f}x the bare launch)"
        )


if __name__ == "__main__":
    main()
