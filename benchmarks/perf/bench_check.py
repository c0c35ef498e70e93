"""Wall time of `oomrec check MODEL LENGTH` (it sits in front of every hand run), as a ratio
of Python's own start-up, measured in the same run.

Each case is a fresh process (what a script waits for), median of --runs rounds after one
warm-up round, the cases taking turns within each round. The cases, in a real git repository
with a 1000-line record on this host's tag:

- no record file at all;
- the 1000-line record, none of its lines this model's (the common case of a hand run);
- a record line of this model applies (judged at HEAD): the history was read before (the warm-up
  round) and holds no fix, which the event cache proves without GitPython;
- the same, but a new commit before each run: HEAD was never scanned, so the history is read
  (GitPython and the log), what the first check after every commit pays;
- a record of this model that a fix in the tree lifted (the history and the fix's content).

Target (issue 26): at most 3x `python -c pass` (PASS/FAIL beside each).

    python benchmarks/perf/bench_check.py [--runs 15]

2026-12-02 (third stop), 2-core VM, Python 3.11.7, median of 15 (ms, and x `python -c pass`;
the baseline moves between 22 and 39 ms across runs of the same day, so the ratio is the
figure to read):

      38.5 ms    1.0x python-start  python -c pass (baseline)
      37.0 ms    1.0x python-start  oomrec -V (for scale)
     106.8 ms    2.8x python-start  check: no record file  PASS (<= 3x)
     115.0 ms    3.0x python-start  check: 1000 lines, none of this model  PASS (<= 3x)
     146.3 ms    3.8x python-start  check: a record applies  FAIL (<= 3x)
     254.9 ms    6.6x python-start  check: a record applies, first after a commit  FAIL (<= 3x)
     258.8 ms    6.7x python-start  check: a record lifted by a fix  FAIL (<= 3x)

Before the event cache's proof (the same day, median of 15, baseline 33.3 ms): 2.7x, 3.2x,
6.0x for "a record applies" (every check then read the history), 7.2x lifted. Earlier stops:
2.6x, 3.1x, 6.5x, 6.7x; before tempfile, platform, tomllib and difflib were lazy: 3.1x, 3.2x,
6.2x, 6.8x.

Where the time goes (`python -X importtime -m oomrec check ...`): ~40 ms of imports beyond
Python's own (the record's parser and its dataclasses, the settings, the archive, the planner),
~5 ms of probes (hardware, memory, one `git for-each-ref` for shared notes); with a line of
this model, one `git rev-parse` and the cache file (~10 ms) when the cache proves there is no
fix, else GitPython's import (~60-80 ms) and the history (~40 ms).
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

BASELINE = "python -c pass (baseline)"
TARGET = 3.0
IDENTITY = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, check=True, capture_output=True, text=True
    ).stdout.strip()


def measure(
    cases: dict[str, tuple[list[str], Path]],
    runs: int,
    env: dict[str, str],
    before: dict[str, Callable[[], None]] | None = None,
) -> dict:
    """`before`: per case, what to do (untimed) before each of its runs."""
    times: dict[str, list[float]] = {name: [] for name in cases}
    for i in range(runs + 1):
        for name, (argv, cwd) in cases.items():
            if before and name in before:
                before[name]()
            start = time.perf_counter()
            done = subprocess.run(
                argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env
            )
            elapsed = time.perf_counter() - start
            if done.returncode not in (0, 1):
                raise SystemExit(f"{name}: exit {done.returncode}: {done.stderr.decode()}")
            if i:
                times[name].append(elapsed)
    return {name: statistics.median(t) for name, t in times.items()}


def repository(root: Path, name: str, record_lines: list[str]) -> Path:
    repo = root / name
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "prefill.py").write_text("def prefill(t):\n    return run(t)\n")
    git(repo, "add", "prefill.py")
    git(repo, "commit", "-q", "-m", "add the prefill")
    (repo / "models" / "m").mkdir(parents=True)
    if record_lines:
        head = git(repo, "rev-parse", "HEAD")
        (repo / "benchmarks").mkdir()
        text = "".join(line.replace("HEAD", head) for line in record_lines)
        (repo / "benchmarks" / ".oom-record").write_text(text)
    return repo


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    env = {**os.environ, **IDENTITY, "OOMREC_HARDWARE": "benchhw", "OOMREC_MEM_BYTES": "unknown"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("OOMREC_RECORD", None)
    os.environ.update(IDENTITY)
    others = [
        f"model-{i % 40},{512 * (1 + i % 9)},2026-07-03,HEAD,{i * 1024},"
        f"benchmarks/cuda_{i}.csv,benchhw\n"
        for i in range(1000)
    ]
    mine = "m,8192,2026-07-03,HEAD,,benchmarks/cuda_m.csv,benchhw\n"
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        bare = repository(root, "bare", [])
        busy = repository(root, "busy", others)
        applies = repository(root, "applies", [*others, mine])
        moved = repository(root, "moved", [*others, mine])
        lifted = repository(root, "lifted", [*others, mine])
        (lifted / "prefill.py").write_text("def prefill(t):\n    return run_chunked(t, 512)\n")
        git(lifted, "commit", "-q", "-am", "Chunk the prefill\n\nOOM-Fix: m")
        py = sys.executable
        check = [py, "-m", "oomrec", "check", "m", "32768"]
        cases = {
            BASELINE: ([py, "-c", "pass"], bare),
            "oomrec -V (for scale)": ([py, "-m", "oomrec", "-V"], bare),
            "check: no record file": (check, bare),
            "check: 1000 lines, none of this model": (check, busy),
            "check: a record applies": (check, applies),
            "check: a record applies, first after a commit": (check, moved),
            "check: a record lifted by a fix": (check, lifted),
        }
        for name, (argv, cwd) in cases.items():
            if name.startswith("check"):
                said = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, env=env)
                print(f"  {name}: exit {said.returncode}: {said.stdout.strip()[:90]}")
        counter = iter(range(10**6))

        def new_commit() -> None:
            # HEAD was never scanned: the event cache proves nothing, the history is read.
            git(moved, "commit", "-q", "--allow-empty", "-m", f"work {next(counter)}")

        results = measure(
            cases, args.runs, env, {"check: a record applies, first after a commit": new_commit}
        )
    base = results[BASELINE]
    print(f"median of {args.runs} runs each, {sys.version.split()[0]}")
    for name, seconds in results.items():
        ratio = seconds / base
        verdict = ""
        if name.startswith("check"):
            verdict = f"  {'PASS' if ratio <= TARGET else 'FAIL'} (<= {TARGET:g}x)"
        print(f"  {seconds * 1000:7.1f} ms  {ratio:5.1f}x python-start  {name}{verdict}")


if __name__ == "__main__":
    main()
