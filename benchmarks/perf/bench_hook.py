"""Wall time of the post-merge hook on a 20,000-commit repository (budget: under 200 ms when the
merged range has no fix commit; under 1 s with a fix on a 100,000-commit one: --commits 100000).

Uses bench_stale.py's cached repository (50 fixes, reverts, picks), cloned into a temp dir,
where a 5-commit feature branch without a fix is merged; the record holds --lines lines
(100,000 by default; a real record holds hundreds to thousands). Each
case runs as a fresh process (what git waits for), median of --runs, next to baselines measured
in the same run: `python -c pass`, `git log -1`, and `python -c "import git, typer"` (what the
hook would pay before doing anything if it went through the full command line).

    python benchmarks/perf/bench_hook.py [--runs 21] [--commits 20000] [--lines 100000]
        [--cache DIR]
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

from bench_stale import cached_repo, git_out, write_records

BUDGET_S = 0.200


def wall(argv: list[str], cwd: Path, env: dict[str, str], runs: int) -> tuple[float, str]:
    times = []
    out = ""
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=True)
        times.append(time.perf_counter() - start)
        out = done.stdout + done.stderr
    return statistics.median(times), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--commits", type=int, default=20_000)
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "oomrec-bench")
    args = parser.parse_args()

    source = cached_repo(args.cache, args.commits)
    root = Path(__file__).resolve().parents[2]
    bin_dir = os.path.dirname(sys.executable)
    oomrec = os.path.join(bin_dir, "oomrec")
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "clone"
        subprocess.run(["git", "clone", "-q", str(source), str(repo)], check=True)
        env = {
            **os.environ,
            "PATH": bin_dir + os.pathsep + os.environ["PATH"],
            "GIT_AUTHOR_NAME": "bench",
            "GIT_AUTHOR_EMAIL": "bench@oomrec.invalid",
            "GIT_COMMITTER_NAME": "bench",
            "GIT_COMMITTER_EMAIL": "bench@oomrec.invalid",
        }

        def git(*argv: str) -> None:
            subprocess.run(["git", *argv], cwd=repo, env=env, check=True, capture_output=True)

        record = repo / "benchmarks" / ".oom-record"
        record.parent.mkdir()
        write_records(repo, record, args.lines, min(2_000, args.lines))
        git("checkout", "-q", "-b", "feature", "main~3")
        for n in range(5):
            git("commit", "-q", "--allow-empty", "-m", f"feature work {n}")
        git("checkout", "-q", "main")
        git("commit", "-q", "--allow-empty", "-m", "main moves on")
        git("merge", "-q", "--no-edit", "feature")
        merged_range = len(git_out(repo, "rev-list", "ORIG_HEAD..HEAD").split())

        py = sys.executable
        cases: dict[str, list[str]] = {
            "python -c pass (baseline)": [py, "-c", "pass"],
            "git log -1 (baseline)": ["git", "log", "-1"],
            "python -c 'import git, typer' (the full CLI's floor)": [
                py,
                "-c",
                "import git, typer",
            ],
            f"oomrec hook post-merge, no fix in {merged_range} merged commits": [
                oomrec,
                "hook",
                "post-merge",
                "0",
            ],
            "hooks/post-merge shim (sh + oomrec), no fix, same merge": [
                str(root / "hooks" / "post-merge"),
                "0",
            ],
        }
        head = git_out(repo, "rev-parse", "HEAD")
        cases["oomrec hook post-checkout, branch switch with no fix between"] = [
            oomrec,
            "hook",
            "post-checkout",
            git_out(repo, "rev-parse", "feature"),
            head,
            "1",
        ]
        results = {name: wall(argv, repo, env, args.runs) for name, argv in cases.items()}
        fix = git_out(repo, "log", "-1", "--format=%H", "--grep=^OOM-Fix:", "main")
        last = git_out(repo, "log", "-1", "--format=%H", "--grep=^This reverts", "main")
        # Wider ranges: everything after the last revert (no fix, pick or revert in it), then a
        # range holding the last fix and the reverts.
        for orig, label in ((last, "no fix"), (f"{fix}~1", "the fix")):
            git("update-ref", "ORIG_HEAD", orig)
            size = len(git_out(repo, "rev-list", "ORIG_HEAD..HEAD").split())
            name = f"oomrec hook post-merge, {label} in a {size}-commit range"
            results[name] = wall([oomrec, "hook", "post-merge", "0"], repo, env, args.runs)

    base = results["python -c pass (baseline)"][0]
    budget = f"budget {BUDGET_S * 1000:.0f} ms"
    print(
        f"{args.commits} commits, {args.lines} record lines; median of {args.runs} runs each, "
        f"{sys.version.split()[0]}; {budget}"
    )
    for name, (seconds, out) in results.items():
        verdict = ""
        if name.startswith(("oomrec hook", "hooks/")) and "no fix" in name:
            verdict = "  within budget" if seconds < BUDGET_S else "  OVER BUDGET"
        print(
            f"  {seconds * 1000:7.1f} ms  {seconds / base:5.1f}x python-start  "
            f"+{(seconds - base) * 1000:6.1f} ms  {name}{verdict}"
        )
        if name.startswith("oomrec hook") and "the fix" in name:
            print(f"             output: {out.strip()}")


if __name__ == "__main__":
    main()
