"""Planning a sweep with 100,000 records (live + archive) over 2,000 commits, against 50 fix
commits (some reverted, a revert of a revert, some cherry-picked to a release branch) on a
20,000-commit repository.

The repository is built with `git fast-import` in three phases (the reverts and picks name the
SHAs of the fixes, so each phase reads the marks of the one before) and cached under the temp
dir. Reported, median of --runs, next to baselines measured in the same run:

- baselines: `git rev-list --count HEAD` (one walk of the whole history), loading the record;
- plan: read the record and its archive, judge every line at HEAD and build the planner (what
  `oomrec sweep` does before its first cell), in process;
- the number of git processes planning starts (GIT_TRACE), for 10,000 and for 100,000 records:
  it must not grow with the number of records;
- as fresh processes: `oomrec sweep --dry-run` and `oomrec record stale --json`.

- with `--against DIR` (another checkout, e.g. `git worktree add /tmp/old <rev>`): the plan
  timed with this checkout's oomrec and with DIR's, alternately, each in a process of its own
  (the same record, repository and machine load), and their ratio.

    python benchmarks/perf/bench_stale.py [--commits 20000] [--lines 100000] [--runs 5]
        [--against DIR]

Figures, 2026-12-04, on 2 cores with other work running beside it (load 2 to 4), against the
tree before lifts became probes (68ec53a), 100,000 records, 20,000 commits: `plan, this checkout
/ DIR's` 1.16x (2.11 s against 1.81 s, --runs 5), then 0.86x (1.55 s against 1.80 s, --runs 7,
after deciding a live line's state once per judgement). In process the planner's own loop
took 0.14 to 0.23 s here and 0.12 to 0.25 s there: the difference is in the noise.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from timing import median_time  # a sibling script module

IDENTITY = "bench <bench@oomrec.invalid>"
FIXES = 50
REVERTED = 10
RE_REVERTED = 3
PICKED = 10
MODELS = 20


class Builder:
    """Commits in fast-import streams, phase by phase, with marks carried across phases."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.marks = path / ".git" / "bench-marks"
        self.mark = 0
        self.when = 1_700_000_000
        self.stream: list[str] = []
        self.shas: dict[int, str] = {}

    def commit(
        self, ref: str, message: str, parent: int | None, files: dict[str, str | None]
    ) -> int:
        """A commit of `files` (path -> content; None deletes the path)."""
        self.mark += 1
        self.when += 60
        data = message.encode()
        self.stream.append(
            f"commit {ref}\nmark :{self.mark}\ncommitter {IDENTITY} {self.when} +0000\n"
            f"data {len(data)}\n{message}\n"
        )
        if parent is not None:
            self.stream.append(f"from :{parent}\n")
        for name, content in files.items():
            if content is None:
                self.stream.append(f"D {name}\n")
            else:
                self.stream.append(f"M 644 inline {name}\ndata {len(content)}\n{content}\n")
        return self.mark

    def flush(self) -> None:
        args = ["git", "fast-import", "--quiet", "--done", f"--export-marks={self.marks}"]
        if self.marks.exists():
            args.append(f"--import-marks={self.marks}")
        self.stream.append("done\n")
        subprocess.run(args, cwd=self.path, input="".join(self.stream).encode(), check=True)
        self.stream = []
        for row in self.marks.read_text().split("\n"):
            if row:
                mark, sha = row.split()
                self.shas[int(mark[1:])] = sha


def build_repo(path: Path, commits: int) -> None:
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True)
    b = Builder(path)
    tip = b.commit("refs/heads/main", "root", None, {"state.txt": "0\n"})
    fixes: list[int] = []
    spacing = (commits - 200) // (FIXES + 1)
    release = None
    for n in range(1, commits - 200):
        if n % spacing == 0 and len(fixes) < FIXES:
            i = len(fixes)
            message = f"Fix {i}\n\nOOM-Fix: model-{i % MODELS}-*\n"
            tip = b.commit("refs/heads/main", message, tip, {f"fix{i}.txt": f"fix {i}\n"})
            fixes.append(tip)
        else:
            tip = b.commit("refs/heads/main", f"work {n}", tip, {"state.txt": f"{n}\n"})
        if n == commits // 2:
            release = tip
    b.flush()
    # Phase 2: reverts of some fixes on main, picks of others onto a release branch.
    reverts = []
    for i in range(REVERTED):
        sha = b.shas[fixes[i]]
        message = f'Revert "Fix {i}"\n\nThis reverts commit {sha}.\n'
        # A real revert: the fix added the file, its revert deletes it.
        tip = b.commit("refs/heads/main", message, tip, {f"fix{i}.txt": None})
        reverts.append(tip)
    rel = release
    for i in range(FIXES - PICKED, FIXES):
        sha = b.shas[fixes[i]]
        message = f"Fix {i}\n\nOOM-Fix: model-{i % MODELS}-*\n(cherry picked from commit {sha})\n"
        rel = b.commit("refs/heads/release", message, rel, {f"fix{i}.txt": f"fix {i}\n"})
    for n in range(50):
        rel = b.commit("refs/heads/release", f"release work {n}", rel, {"rel.txt": f"{n}\n"})
    b.flush()
    # Phase 3: reverts of some of the reverts.
    for i in range(RE_REVERTED):
        sha = b.shas[reverts[i]]
        message = f'Reapply "Fix {i}"\n\nThis reverts commit {sha}.\n'
        tip = b.commit("refs/heads/main", message, tip, {f"fix{i}.txt": f"fix {i}\n"})
    for n in range(100):
        tip = b.commit("refs/heads/main", f"more work {n}", tip, {"state.txt": f"m{n}\n"})
    b.flush()
    subprocess.run(["git", "reset", "-q", "--hard", "main"], cwd=path, check=True)
    # A repository this size has been through git's automatic gc, which writes the commit-graph
    # file (gc.writeCommitGraph): without it every walk of the history parses each commit.
    subprocess.run(["git", "gc", "-q"], cwd=path, check=True)


def cached_repo(cache: Path, commits: int) -> Path:
    path = cache / f"plan-repo-{commits}-v3"
    if not (path / ".git" / "oomrec-bench-done").exists():
        if path.exists():
            subprocess.run(["rm", "-rf", str(path)], check=True)
        start = time.perf_counter()
        build_repo(path, commits)
        (path / ".git" / "oomrec-bench-done").touch()
        print(f"built {path} in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    return path


def git_out(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True, check=True
    ).stdout.strip()


def write_records(repo: Path, record: Path, lines: int, distinct: int) -> None:
    """`lines` records over `distinct` commits of main and release; a fifth archived."""
    pool = git_out(repo, "rev-list", "--all").split()
    rng = random.Random(4)
    chosen = rng.sample(pool, distinct)
    live, parked = [], []
    for n in range(lines):
        text = f"model-{n % MODELS}-x,{512 * (1 + n % 64)},2026-07-03,{rng.choice(chosen)},,b.csv"
        if n % 5 == 0:
            parked.append(f"2026-11-30T00:00:00Z {'f' * 40} {text}\n")
        else:
            live.append(text + "\n")
    record.write_text("".join(live))
    record.with_name(record.name + ".archive").write_text("".join(parked))


def plan(record: Path, content: bool = True) -> int:
    """What the sweep does before its first cell; `content=False`: the graph-only staleness
    rule (before the content check), as the baseline the content check is measured against."""
    from oomrec.core.records import RecordFile
    from oomrec.staleness import verdict as stale
    from oomrec.sweep.planner import Planner, gather_evidence

    record_file = RecordFile(record)
    loaded = record_file.load()
    if content:
        evidence = gather_evidence(record_file, loaded, "OOM-Fix", "gb10")
    else:
        real = stale.History.__init__

        def graph_only(self: stale.History, *args: object, **kwargs: object) -> None:
            real(self, *args, **{**kwargs, "content": False})  # type: ignore[arg-type]

        stale.History.__init__ = graph_only  # type: ignore[method-assign]
        try:
            evidence = gather_evidence(record_file, loaded, "OOM-Fix", "gb10")
        finally:
            stale.History.__init__ = real  # type: ignore[method-assign]
    return Planner(evidence, "gb10").applicable_records


def git_processes(repo: Path, record: Path, content: bool = True) -> int:
    trace = record.with_name("trace")
    trace.unlink(missing_ok=True)
    code = (
        "import sys; sys.path.insert(0, sys.argv[2]); import bench_stale; "
        "bench_stale.plan(__import__('pathlib').Path(sys.argv[1]), sys.argv[3] == '1')"
    )
    subprocess.run(
        [sys.executable, "-c", code, str(record), str(Path(__file__).parent), str(int(content))],
        cwd=repo,
        env={**os.environ, "GIT_TRACE": str(trace)},
        check=True,
    )
    return sum(1 for row in trace.read_text().splitlines() if "git.c:" in row and "built-in" in row)


# Times `plan` over the record in a fresh process with the oomrec of the checkout in argv[1].
_PLAN_IN = """
import pathlib, sys, time
sys.path[:0] = [sys.argv[1], sys.argv[1] + "/benchmarks/perf"]
import bench_stale
start = time.perf_counter()
bench_stale.plan(pathlib.Path(sys.argv[2]))
print(time.perf_counter() - start)
"""


def plan_in(checkout: Path, record: Path, repo: Path) -> float:
    done = subprocess.run(
        [sys.executable, "-c", _PLAN_IN, str(checkout), str(record)],
        cwd=repo, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return float(done.stdout.strip().splitlines()[-1])


def against(other: Path, record: Path, repo: Path, runs: int) -> tuple[float, float]:
    """Median plan seconds with this checkout's oomrec and with `other`'s, alternated."""
    here = Path(__file__).resolve().parents[2]
    mine, theirs = [], []
    for _ in range(runs):
        mine.append(plan_in(here, record, repo))
        theirs.append(plan_in(other, record, repo))
    return sorted(mine)[runs // 2], sorted(theirs)[runs // 2]


def process(argv: list[str], cwd: Path, env: dict[str, str]) -> Callable[[], object]:
    return lambda: subprocess.run(
        argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=20_000)
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--distinct", type=int, default=2_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "oomrec-bench")
    parser.add_argument("--against", type=Path, default=None)
    args = parser.parse_args()

    from oomrec.core.records import RecordFile

    repo = cached_repo(args.cache, args.commits)
    os.chdir(repo)
    total = int(git_out(repo, "rev-list", "--count", "--all"))
    with tempfile.TemporaryDirectory() as tmp:
        small = Path(tmp) / "small" / "oom-record"
        small.parent.mkdir()
        write_records(repo, small, args.lines // 10, args.distinct)
        record = Path(tmp) / "oom-record"
        write_records(repo, record, args.lines, args.distinct)
        applying = plan(record)
        applying_graph = plan(record, content=False)
        env = {**os.environ, "OOMREC_RECORD": str(record), "OOMREC_HARDWARE": "gb10"}
        py = sys.executable
        (repo / "models" / "model-1-x").mkdir(parents=True, exist_ok=True)
        results = {
            "git rev-list --count HEAD (baseline)": median_time(
                process(["git", "rev-list", "--count", "HEAD"], repo, env), args.runs
            ),
            f"load the record, no judging ({args.lines * 4 // 5} lines, baseline)": median_time(
                lambda: RecordFile(record).load(), args.runs
            ),
            "plan, graph only (before the content check; baseline)": median_time(
                lambda: plan(record, content=False), args.runs
            ),
            f"plan: read record + archive, judge {args.lines} lines at HEAD": median_time(
                lambda: plan(record), args.runs
            ),
            "oomrec sweep --dry-run (process)": median_time(
                process(
                    [
                        py,
                        "-m",
                        "oomrec",
                        "sweep",
                        "--models",
                        "model-1-x",
                        "--runner",
                        "true",
                        "--dry-run",
                    ],
                    repo,
                    env,
                ),
                args.runs,
            ),
            "oomrec record stale --json (process)": median_time(
                process([py, "-m", "oomrec", "record", "stale", "--json"], repo, env), args.runs
            ),
        }
        processes = {
            (n, content): git_processes(repo, p, content)
            for n, p in ((args.lines // 10, small), (args.lines, record))
            for content in (False, True)
        }
        compared = against(args.against, record, repo, args.runs) if args.against else None
    print(
        f"repository: {total} commits, {FIXES} fixes ({REVERTED} reverted, {RE_REVERTED} of "
        f"those reapplied, {PICKED} picked to release); {args.lines} records over "
        f"{args.distinct} commits, {applying} apply at HEAD ({applying_graph} by the graph "
        f"alone); median of {args.runs} runs"
    )
    base = results["git rev-list --count HEAD (baseline)"]
    for name, seconds in results.items():
        print(f"  {seconds * 1000:8.1f} ms  {seconds / base:6.1f}x rev-list   {name}")
    for (lines, content), count in processes.items():
        how = "with the content check" if content else "graph only"
        print(f"  git processes to plan {lines} records, {how}: {count}")
    if compared is not None:
        mine, theirs = compared
        print(
            f"  plan, this checkout / {args.against}'s: {mine / theirs:.2f}x "
            f"({mine:.2f} s against {theirs:.2f} s, median of {args.runs}, alternated)"
        )


if __name__ == "__main__":
    main()
