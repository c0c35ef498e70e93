"""Per-cell overhead of `oomrec sweep`, against the bare-runner floor and (given its path) the bash
harness, at 100, 500 and 2,000 cells.

Every tool runs the same stand-in runner: a `scripts/bench_decode.sh` that writes one success
row to its `--output` (the harness's own runner, called as the harness calls it, which is also
oomrec's default runner). The runner's own time is measured in the same run by launching it as
many times, with the same arguments, from a bare loop (`subprocess.run`: the floor any launcher
pays). Overhead per cell = (the tool's wall time - the bare loop's) / cells: everything the tool
does beyond launching the runner (start-up included, so small grids pay it most).

Issue 24's targets: oomrec's overhead per cell at most 0.1x the harness's, and at 2,000 cells at
most 1.3x its own at 100 cells (per-cell work that does not grow with the sweep). At 500 cells
two more sweeps: with a 1000-line record that matches no cell (the per-cell record lookup) and
with every cell pre-skipped by the record (no launch: rows only).

    python benchmarks/perf/bench_sweep_overhead.py [--cells 100 500 2000] [--runs 3]
        [--harness PATH/TO/scripts/bench_longprompt.sh]

The harness is not part of this repository: give the path of a checkout's
`scripts/bench_longprompt.sh`; it is run as `bash PATH --models ... --lengths ... --models-dir
models --output OUT` from the benchmark's folder, where its `scripts/bench_decode.sh` is the
stand-in.

Figures, 2026-12-02 (fourth stop), 2-core dev VM, --runs 3, no harness here (its figure from
issue 24: a flat ~11 ms per cell on the same kind of machine), back to back with the tree
before this stop (PYTHONPATH=<worktree of 839cb62>):

    cells   runner alone   oomrec overhead   before this stop
    100     1.04 ms        7.70 ms           6.42 ms   (start-up, ~0.7 s, over few cells)
    500     0.90 ms        3.32 ms           3.93 ms
    2,000   0.89 ms        2.68 ms           2.95 ms   (x0.35 of 100 cells: target <= 1.3 met)
    500, +1000 unrelated records    3.30 ms   3.66 ms
    500, every cell pre-skipped     0.87 ms   1.12 ms

This stop took out the journal's fsync per cell and the wake-up of the watchdog's shell at each
cell's start (a pwrite to a shared slot now). Earlier: before the runner joined its cgroup
through a shell (preexec_fn made subprocess fork the whole process), a 500-cell sweep cost
11.5 ms a cell. Against the harness's ~11 ms oomrec is ~0.25-0.3x: the 0.1x target is not met.
What is left per cell (cProfile of 500 cells): the shell's exec that joins the cell's cgroup
(~0.7 ms), the tree walk for leftovers (~0.45 ms), the OOM-kill counters before and after
(~0.4 ms, /proc/vmstat is ~50 us a read), the cgroup's creation and removal (~0.4 ms), the
process tree's set-up (~0.2 ms), the row and the journal line (~0.2 ms).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

# A stand-in for the harness's runner: parses the harness's call, appends one success row (the
# header first into a new file), as bench_decode.sh does.
STAND_IN = r"""#!/bin/sh
model_path=$1; shift
n=0; out=
while [ $# -gt 0 ]; do
  case $1 in
    --prompt-tokens) n=$2 ;;
    --output) out=$2 ;;
  esac
  shift 2
done
model=${model_path%/}; model=${model##*/}
header=model,model_path,prompt_tokens,generated_tokens,prefill_ms,prefill_tok_s,decode_ms
header=$header,decode_tok_s,date,hardware,mlx_version,build_type,max_tokens,prompt,prompt_target_len
row="$model,$model_path,$n,32,1.0,2.0,3.0,4.0,2026-07-03,bench,0.3.3,release,32,\"Hi\",$n"
if [ -s "$out" ]; then printf '%s\n' "$row" >> "$out"
else printf '%s\n%s\n' "$header" "$row" > "$out"; fi
"""
LENGTHS_PER_MODEL = 20


def wall(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(
        argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=cwd
    )
    return time.perf_counter() - start


def grid(cells: int) -> tuple[list[str], list[str]]:
    models = [f"model-{i:04d}" for i in range(max(1, cells // LENGTHS_PER_MODEL))]
    lengths = [str(512 * (i + 1)) for i in range(LENGTHS_PER_MODEL)]
    return models, lengths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, nargs="+", default=[100, 500, 2000])
    parser.add_argument("--runs", type=int, default=3, help="repetitions; medians are reported")
    parser.add_argument("--harness", type=Path, help="path of scripts/bench_longprompt.sh")
    args = parser.parse_args()
    if args.harness is not None and not args.harness.is_file():
        sys.exit(f"--harness {args.harness}: no such file")

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        runner = root / "scripts" / "bench_decode.sh"
        runner.parent.mkdir()
        runner.write_text(STAND_IN)
        runner.chmod(0o755)
        for name in grid(max(args.cells))[0]:
            (root / "models" / name).mkdir(parents=True)
        unrelated = root / "unrelated-record"
        unrelated.write_text(
            "".join(
                f"other-{i},{512 * (1 + i % 9)},2026-07-03,unknown,,x.csv\n" for i in range(1000)
            )
        )
        blocking = root / "blocking-record"
        blocking.write_text(
            "".join(f"{name},1,2026-07-03,unknown,,x.csv\n" for name in grid(500)[0])
        )
        env = {**os.environ, "OOMREC_HARDWARE": "bench", "COLUMNS": "120"}
        for name in ("MLXCEL_BENCH_FAKE_OOM", "MLXCEL_BENCH_IGNORE_OOM_RECORD"):
            env.pop(name, None)
        env.pop("OOMREC_IGNORE_RECORD", None)
        out = root / "out.csv"

        def oomrec(cells: int, record: Path) -> float:
            models, lengths = grid(cells)
            argv = [
                sys.executable, "-m", "oomrec", "sweep", "--models", " ".join(models),
                "--lengths", " ".join(lengths), "--output", str(out), "--record", str(record),
                "--timeout", "60",
            ]  # fmt: skip
            took = wall(argv, env, root)
            rows = out.read_text().count("\n") - 1
            assert rows == len(models) * len(lengths), f"{rows} rows for {cells} cells"
            return took

        def harness(cells: int) -> float:
            assert args.harness is not None
            models, lengths = grid(cells)
            out.unlink(missing_ok=True)
            argv = ["bash", str(args.harness.resolve()), "--models", " ".join(models)]
            argv += ["--lengths", " ".join(lengths), "--models-dir", "models"]
            argv += ["--output", str(out)]
            return wall(argv, {**env, "MLXCEL_BENCH_IGNORE_OOM_RECORD": "1"}, root)

        def bare(cells: int) -> float:
            models, lengths = grid(cells)
            cell_csv = root / "bare.csv"
            start = time.perf_counter()
            for name in models:
                for length in lengths:
                    cell_csv.unlink(missing_ok=True)
                    subprocess.run(
                        [str(runner), f"./models/{name}", "--prompt-tokens", length,
                         "--max-tokens", "32", "--warmup-tokens", "4", "--cooldown", "0",
                         "--big-cooldown", "0", "--output", str(cell_csv)],
                        check=True, cwd=root,
                    )  # fmt: skip
            return time.perf_counter() - start

        empty = root / "empty-record"
        cases: dict[str, Callable[[], float]] = {}
        for cells in args.cells:
            n = len(grid(cells)[0]) * LENGTHS_PER_MODEL
            cases[f"bare {n}"] = lambda c=cells: bare(c)
            cases[f"oomrec {n}"] = lambda c=cells: oomrec(c, empty)
            if args.harness is not None:
                cases[f"harness {n}"] = lambda c=cells: harness(c)
        cases["oomrec 500 +1000 unrelated records"] = lambda: oomrec(500, unrelated)
        cases["oomrec 500 pre-skipped"] = lambda: oomrec(500, blocking)
        samples: dict[str, list[float]] = {}
        for _ in range(args.runs):
            # The cases take turns, so a slow minute of the machine hits them all alike.
            for label, case in cases.items():
                samples.setdefault(label, []).append(case())

    med = {label: statistics.median(values) for label, values in samples.items()}
    print(
        f"median of {args.runs} runs, stand-in bench_decode.sh, Python "
        f"{sys.version.split()[0]}, {os.cpu_count()} CPUs"
    )
    per: dict[tuple[str, int], float] = {}
    for cells in args.cells:
        n = len(grid(cells)[0]) * LENGTHS_PER_MODEL
        floor = med[f"bare {n}"]
        line = f"  {n:5d} cells: runner alone {floor / n * 1000:6.2f} ms/cell"
        for tool in ("oomrec", "harness"):
            if f"{tool} {n}" in med:
                per[tool, n] = (med[f"{tool} {n}"] - floor) / n
                line += f"; {tool} overhead {per[tool, n] * 1000:6.2f} ms/cell"
        if ("harness", n) in per:
            line += f" (oomrec/harness x{per['oomrec', n] / per['harness', n]:.2f}, target <= 0.1)"
        print(line)
    sizes = sorted(n for tool, n in per if tool == "oomrec")
    if len(sizes) > 1:
        small, large = sizes[0], sizes[-1]
        growth = per["oomrec", large] / per["oomrec", small]
        print(f"  oomrec overhead at {large} / at {small} cells: x{growth:.2f} (target <= 1.3)")
    floor500 = med["bare 500"] / 500 if "bare 500" in med else None
    for label in ("oomrec 500 +1000 unrelated records", "oomrec 500 pre-skipped"):
        total = med[label]
        runner_time = 0.0 if "pre-skipped" in label or floor500 is None else floor500 * 500
        print(f"  {label}: overhead {(total - runner_time) / 500 * 1000:.2f} ms/cell")


if __name__ == "__main__":
    main()
