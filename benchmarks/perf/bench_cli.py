"""Wall time of `oomrec -V`, the help and `oomrec record list` on a 1000-record file, as ratios
of Python's own start-up.

Each command runs as a fresh process (what a user waits for), median of --runs rounds after one
warm-up round; the cases take turns within each round, so a load change on the machine hits
them alike. Baselines measured in the same run: a bare `python -c pass` (what every ratio is
of) and `python -c "import typer"` (the floor any Typer CLI pays). Targets: `-V` at most 3x the
bare start-up, `--help` and a command's `--help` at most 5x (PASS/FAIL beside each).

Python caches the bytecode of the modules it imports, as it does by default on any machine: a
sandbox that sets PYTHONDONTWRITEBYTECODE would have every run compile oomrec's modules again
(~30 ms more for the help), so it is unset for the runs.

    python benchmarks/perf/bench_cli.py [--runs 15]

2026-12-02, 2-core VM, Python 3.11.7, median of 15 (ms, and x `python -c pass`); before is
main at f55ed7b, after is branch fast-startup on it:

    case                                   before            after
    python -c pass (baseline)          25.1   1.0x     29.1   1.0x
    python -c 'import typer'           77.8   3.1x     83.0   2.9x
    oomrec -V                         261.6  10.4x     30.2   1.0x  PASS (<= 3x)
    oomrec --help                     268.8  10.7x     98.5   3.4x  PASS (<= 5x)
    oomrec sweep --help               341.6  13.6x     92.2   3.2x  PASS (<= 5x)
    oomrec record list --help         303.9  12.1x     99.6   3.4x  PASS (<= 5x)
    record list --no-git (1000)       317.4  12.6x    130.1   4.5x
    record list --json --no-git       290.8  11.6x    122.3   4.2x

2026-12-06, the same VM (slower that day: python -c pass took 55 ms), median of 11, with the
cases issue 42 names (a git repository with a models dir and no record; targets 4x):

    python -c pass (baseline)                      55.3   1.0x
    python -c 'import typer'                      152.0   2.7x
    oomrec -V                                      55.4   1.0x  PASS (<= 3x)
    oomrec --help                                 222.1   4.0x  PASS (<= 5x)
    oomrec sweep --help                           209.8   3.8x  PASS (<= 5x)
    oomrec record list --help                     209.3   3.8x  PASS (<= 5x)
    oomrec record list (empty record, in git)     272.5   4.9x  FAIL (<= 4x)
    oomrec check (no record, in git)              176.8   3.2x  PASS (<= 4x)
    record list --no-git (1000)                   269.2   4.9x
    record list --json --no-git (1000)            278.1   5.0x

Neither of the two imports GitPython or polars (record list asks `git for-each-ref` before
it would read notes). record list still goes through Typer (2.7x on its own), which check's
plain path does not; 4x would need a plain path for it too.

Later the same day (python -c pass 41 ms), after record list's plain forms were answered
without Typer as check's are (cli/record_list_plain.py), median of 11:

    python -c pass (baseline)                      40.6   1.0x
    python -c 'import typer'                      106.6   2.6x
    oomrec -V                                      43.4   1.1x  PASS (<= 3x)
    oomrec --help                                 136.0   3.3x  PASS (<= 5x)
    oomrec sweep --help                           125.6   3.1x  PASS (<= 5x)
    oomrec record list --help                     131.9   3.2x  PASS (<= 5x)
    oomrec record list (empty record, in git)     133.3   3.3x  PASS (<= 4x)
    oomrec check (no record, in git)              115.6   2.8x  PASS (<= 4x)
    record list --no-git (1000)                   153.1   3.8x
    record list --json --no-git (1000)            135.7   3.3x

Before, every command module imported its command's library code at the top (the sweep,
psutil, rich's progress bar and tables, the record's parser), `-V` went through Typer, Typer
imported pydantic to check the root's and the group's unset options on the way to a command's
--help (and a command's own), and it compiled the command modules' postponed annotations four
times each. With PYTHONDONTWRITEBYTECODE=1 and no cached bytecode (every run compiling oomrec's
modules): before 13.6-14.3x for all four; after, -V 1.2x, --help 4.2x, sweep --help 3.8x,
record list --help 3.9x.
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

BASELINE = "python -c pass (baseline)"
# The most a case may take, as a multiple of the baseline.
TARGETS = {
    "oomrec -V": 3.0,
    "oomrec --help": 5.0,
    "oomrec sweep --help": 5.0,
    "oomrec record list --help": 5.0,
    # Issue 42: neither imports GitPython nor polars.
    "oomrec record list (empty record, in git)": 4.0,
    "oomrec check (no record, in git)": 4.0,
}
# The cases run in a fresh git repository with a models dir and no record.
IN_REPO = ("oomrec record list (empty record, in git)", "oomrec check (no record, in git)")


def measure(
    cases: dict[str, list[str]], runs: int, env: dict[str, str], repo: Path
) -> dict[str, float]:
    """Each case's median wall time (s) as a fresh process, over `runs` rounds after a warm-up
    round, the cases taking turns within each round."""
    times: dict[str, list[float]] = {name: [] for name in cases}
    bare = {k: v for k, v in env.items() if k != "OOMREC_RECORD"}
    for i in range(runs + 1):
        for name, argv in cases.items():
            inside = name in IN_REPO
            start = time.perf_counter()
            subprocess.run(
                argv,
                check=True,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=bare if inside else env,
                cwd=repo if inside else None,
            )
            if i:
                times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) for name, t in times.items()}


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
        repo = Path(tmp) / "repo"
        (repo / "models" / "m").mkdir(parents=True)
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
        env = {**os.environ, "OOMREC_RECORD": str(record), "COLUMNS": "160"}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        py = sys.executable
        oomrec = [py, "-m", "oomrec"]
        cases = {
            BASELINE: [py, "-c", "pass"],
            "python -c 'import typer' (baseline)": [py, "-c", "import typer"],
            "oomrec -V": [*oomrec, "-V"],
            "oomrec --help": [*oomrec, "--help"],
            "oomrec sweep --help": [*oomrec, "sweep", "--help"],
            "oomrec record list --help": [*oomrec, "record", "list", "--help"],
            "oomrec record list (empty record, in git)": [*oomrec, "record", "list"],
            "oomrec check (no record, in git)": [*oomrec, "check", "m", "512"],
            "oomrec record list --no-git (1000 records)": [*oomrec, "record", "list", "--no-git"],
            "oomrec record list --json --no-git (1000 records)": [
                *oomrec,
                "record",
                "list",
                "--json",
                "--no-git",
            ],
        }
        help_out = subprocess.run(
            [*oomrec, "record", "list", "--help"], capture_output=True, text=True, env=env
        ).stdout
        if "--no-git" not in help_out:
            cases = {k: [a for a in v if a != "--no-git"] for k, v in cases.items()}
        results = measure(cases, args.runs, env, repo)

    base = results[BASELINE]
    print(f"median of {args.runs} runs each, {sys.version.split()[0]}")
    for name, seconds in results.items():
        ratio = seconds / base
        target = TARGETS.get(name)
        verdict = ""
        if target is not None:
            verdict = f"  {'PASS' if ratio <= target else 'FAIL'} (<= {target:g}x)"
        print(f"  {seconds * 1000:7.1f} ms  {ratio:5.1f}x python-start  {name}{verdict}")


if __name__ == "__main__":
    main()
