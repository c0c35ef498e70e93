"""Judging a 100,000-line record (2,000 distinct commits) against a fix on a 20,000-commit repo.

The repository is built once with `git fast-import` (a main line with a merged side branch every
40 commits, one long branch that never merges the fix, the fix commit halfway) and cached under
the temp dir. Reported, median of --runs, next to baselines measured in the same run:

- baseline: `git rev-list --count HEAD` (one walk of the whole history) and `python -c pass`;
- in process: loading the record, then judging every record against the fix (the issue's
  budget: under 2 s), and the same through `judge_fixes` for three fix commits at once;
- as a fresh process: `oomrec record prune --since FIX --dry-run --print-removed` and
  `oomrec record stale --json` (everything a user waits for, output included).

    python benchmarks/perf/bench_stale.py [--commits 20000] [--lines 100000] [--distinct 2000]
        [--runs 5] [--cache DIR]
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
SIDE_EVERY = 40
SIDE_LENGTH = 9
LONG_BRANCH = 300
FIX_GLOBS = "model-1*"


def build_repo(path: Path, commits: int) -> None:
    """A repository of about `commits` commits, made in one `git fast-import` stream."""
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True)
    stream: list[str] = []
    mark = 0
    when = 1_700_000_000

    def commit(ref: str, message: str, parent: int | None, merge: int | None = None) -> int:
        nonlocal mark, when
        mark += 1
        when += 60
        data = message.encode()
        stream.append(f"commit {ref}\nmark :{mark}\ncommitter {IDENTITY} {when} +0000\n")
        stream.append(f"data {len(data)}\n{message}\n")
        if parent is not None:
            stream.append(f"from :{parent}\n")
        if merge is not None:
            stream.append(f"merge :{merge}\n")
        content = f"{mark}\n"
        stream.append(f"M 644 inline state.txt\ndata {len(content)}\n{content}\n")
        return mark

    tip = commit("refs/heads/main", "root", None)
    branch = tip
    for n in range(LONG_BRANCH):
        branch = commit("refs/heads/never-merged", f"long branch {n}", branch)
    main_count = 0
    fixed = False
    while mark < commits:
        main_count += 1
        if not fixed and mark >= commits // 2:
            tip = commit("refs/heads/main", f"Chunk the prefill\n\nOOM-Fix: {FIX_GLOBS}", tip)
            fixed = True
        elif main_count % SIDE_EVERY == 0:
            side = tip
            for n in range(SIDE_LENGTH):
                side = commit(f"refs/heads/side-{main_count}", f"side {main_count}.{n}", side)
            tip = commit("refs/heads/main", f"merge side {main_count}", tip, merge=side)
        else:
            tip = commit("refs/heads/main", f"work {main_count}", tip)
    stream.append("done\n")
    subprocess.run(
        ["git", "fast-import", "--quiet", "--done"],
        cwd=path,
        input="".join(stream).encode(),
        check=True,
    )
    subprocess.run(["git", "reset", "-q", "--hard", "main"], cwd=path, check=True)


def cached_repo(cache: Path, commits: int) -> Path:
    path = cache / f"repo-{commits}-v1"
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


def write_record(repo: Path, record: Path, lines: int, distinct: int) -> None:
    """`lines` records over `distinct` commits drawn from the whole history (seeded)."""
    everything = git_out(repo, "rev-list", "--all").split()
    rng = random.Random(4)
    pool = rng.sample(everything, distinct)
    # Some records carry short, dirty, unknown or foreign commits, as real files do.
    pool[:20] = [sha[:9] for sha in pool[:20]]
    pool[20:30] = [f"{sha[:8]}-dirty" for sha in pool[20:30]]
    pool[30:35] = ["unknown", "deadbeefcafe", "0123456789abcdef0123", "feedface", "unknown"]
    rows = []
    for n in range(lines):
        model = f"model-{n % 50}"
        rows.append(f"{model},{512 * (1 + n % 64)},2026-07-03,{rng.choice(pool)},,bench.csv,gb10\n")
    record.write_text("".join(rows))


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
    args = parser.parse_args()

    import git

    from oomrec import gitutil
    from oomrec.fixes import FixCommit
    from oomrec.records import RecordFile
    from oomrec.stale import Judge, judge_fixes

    repo_path = cached_repo(args.cache, args.commits)
    total = int(git_out(repo_path, "rev-list", "--count", "--all"))
    fix = git_out(repo_path, "log", "-1", "--format=%H", "--grep=^OOM-Fix:", "main")
    with tempfile.TemporaryDirectory() as tmp:
        record = Path(tmp) / "oom-record"
        write_record(repo_path, record, args.lines, args.distinct)
        repo = git.Repo(repo_path)
        loaded = RecordFile(record).load()
        records = loaded.records
        commits = {r.commit for r in records}
        fixes = gitutil.fix_commits(repo, ["HEAD"], "OOM-Fix")
        others = git_out(repo_path, "rev-parse", "main~3000", "main~9000").split()
        three = [fixes[0], *(FixCommit(sha, "bench fix", ("*",)) for sha in others)]
        verdicts = Judge(repo, commits).against(fix)
        counts: dict[str, int] = {}
        for r in records:
            status = verdicts[r.commit].status
            counts[status] = counts.get(status, 0) + 1

        env = {**os.environ, "OOMREC_RECORD": str(record), "COLUMNS": "160"}
        py = sys.executable
        results = {
            "python -c pass (baseline)": median_time(
                process([py, "-c", "pass"], repo_path, env), args.runs
            ),
            "git rev-list --count HEAD (baseline)": median_time(
                process(["git", "rev-list", "--count", "HEAD"], repo_path, env), args.runs
            ),
            f"load the record ({args.lines} lines)": median_time(
                lambda: RecordFile(record).load(), args.runs
            ),
            f"judge {len(records)} records, {len(commits)} commits, vs 1 fix": median_time(
                lambda: Judge(repo, commits).against(fix), args.runs
            ),
            "judge_fixes: the same records vs 3 fixes": median_time(
                lambda: judge_fixes(repo, three, records), args.runs
            ),
            "oomrec record prune --since FIX --dry-run --print-removed (process)": median_time(
                process(
                    [
                        py,
                        "-m",
                        "oomrec",
                        "record",
                        "prune",
                        "--since",
                        fix[:12],
                        "--dry-run",
                        "--print-removed",
                    ],
                    repo_path,
                    env,
                ),
                args.runs,
            ),
            "oomrec record stale --json (process)": median_time(
                process([py, "-m", "oomrec", "record", "stale", "--json"], repo_path, env),
                args.runs,
            ),
        }
    base = results["git rev-list --count HEAD (baseline)"]
    print(
        f"{total} commits, {args.lines} records over {len(commits)} distinct commits; verdicts "
        f"vs fix {fix[:7]}: {counts}; median of {args.runs} runs, {sys.version.split()[0]}"
    )
    for name, seconds in results.items():
        print(f"  {seconds * 1000:8.1f} ms  {seconds / base:6.1f}x rev-list  {name}")


if __name__ == "__main__":
    main()
