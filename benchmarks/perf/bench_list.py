"""Wall time of `oomrec record list` of 100,000 records to a pipe (target: at most 1 s).

Fresh processes, median of several runs, next to baselines measured in the same run: python's
start, and a process that only reads and parses the record file (`RecordFile.load`), the floor
under any listing. Cases: outside git (no status column) and inside a git repository (the status
column, judged at HEAD), with stdout a pipe.

    python benchmarks/perf/bench_list.py [--records 100000] [--runs 5]

Figures (moved here from docs/commands.md; fresh processes, medians of 7, a 2-core VM):
`record list` of 100,000 records to a pipe took 54 s before rich's table was dropped for pipes
(it laid out 100,000 rows at 80 columns), then 0.89 s outside git (`--no-git`), 1.08 s inside
git with the status column (GitPython's import, 0.1 s, is most of the difference), 1.45 s with
`--json`; the floor, a process that only reads and parses the file, took 0.50 s.
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

SHA = "9bef3f2334c4048d8540aa392ef030c97d4dad2c"
GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
}


def wall(argv: list[str], runs: int, env: dict[str, str], cwd: Path) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(
            argv, check=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=cwd
        )
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def write_record(path: Path, n: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "".join(
            f"model-{i % 400}-instruct-4bit,{512 * (1 + i % 64)},2026-07-03,{SHA},{i * 1024},"
            f"benchmarks/cuda_gb10_longprompt_{i % 97}.csv,gb10\n"
            for i in range(n)
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        plain = Path(tmp) / "plain"
        write_record(plain / "oom-record", args.records)
        repo = Path(tmp) / "repo"
        write_record(repo / "benchmarks" / ".oom-record", args.records)
        env = {**os.environ, **GIT_ENV, "COLUMNS": "80"}
        env.pop("OOMREC_RECORD", None)
        subprocess.run(["git", "init", "-q", str(repo)], check=True, env=env)
        subprocess.run(
            ["git", "commit", "-q", "--allow-empty", "-m", "init"], check=True, env=env, cwd=repo
        )
        load = (
            "from pathlib import Path; from oomrec.core.records import RecordFile; "
            "RecordFile(Path('oom-record')).load()"
        )
        cases = {
            "python -c pass (baseline)": ([py, "-c", "pass"], plain),
            "RecordFile.load() only (baseline)": ([py, "-c", load], plain),
            "record list --no-git | (outside git)": (
                [py, "-m", "oomrec", "record", "list", "--record", "oom-record", "--no-git"],
                plain,
            ),
            "record list | (in git, status column)": ([py, "-m", "oomrec", "record", "list"], repo),
            "record list --json | (in git)": (
                [py, "-m", "oomrec", "record", "list", "--json"],
                repo,
            ),
        }
        results = {name: wall(argv, args.runs, env, cwd) for name, (argv, cwd) in cases.items()}
    print(f"{args.records} records, median of {args.runs} runs each, {sys.version.split()[0]}")
    for name, seconds in results.items():
        print(f"  {seconds:7.3f} s  {name}")


if __name__ == "__main__":
    main()
