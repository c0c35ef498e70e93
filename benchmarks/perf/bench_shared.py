"""Reading shared records: 50 hosts x 2,000 records each, in git notes refs (one note per
commit, over 2,000 commits, so every notes tree fans out; `--per-commit N` puts N records in
one note), then planning a sweep over them.

Reported, median of --runs, next to a baseline measured in the same run (`git for-each-ref`
over the notes refs, the least any reader does): reading every host's notes, and planning a
sweep (`gather_evidence` + the planner) on top of an empty local record; and the number of git
processes the read starts (GIT_TRACE), for 5 and for 50 hosts: it must not grow with them.

    python benchmarks/perf/bench_shared.py [--hosts 50] [--records 2000] [--runs 5]

Figures (moved here from docs/sharing.md; a loaded 2-core VM): reading 50 hosts x 2,000 records
(100,000 lines) starts 5-6 git processes, the same for 5 hosts. With 20 records per record
commit it took 0.71 s, planning a sweep on top 0.77 s; every record at its own commit (100,000
note blobs) 1.5-1.7 s, of which `git cat-file` inflating the blobs 0.79 s.

Reading now goes through the ownership rules (issue 41, store/owners.py: each line checked
against its ref's host, retractions by their owner), as every reader does. Measured alternately
with the code before (plain `read_all`), one session, a 2-core VM at load 2.5, 1 record per
note: reading 2.7-4.8 s after vs 2.8-3.4 s before, planning 3.5-3.9 s vs 3.2-5.6 s (the noise
exceeds the change); 7 git processes for 5 and for 50 hosts, before and after (this machine's
git). A profile puts the rules at about 0.3 s of CPU per 100,000 lines; parsing them dominates.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from timing import median_time  # a sibling script module

IDENTITY = "bench <bench@oomrec.invalid>"


def build(path: Path, commits: int, hosts: int, records: int, per_commit: int) -> None:
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True)
    stream = []
    for n in range(commits):
        message = f"work {n}".encode()
        stream.append(
            f"commit refs/heads/main\nmark :{n + 1}\ncommitter {IDENTITY} {1_700_000_000 + n} "
            f"+0000\ndata {len(message)}\n{message.decode()}\n"
            + (f"from :{n}\n" if n else "")
            + f"M 644 inline state.txt\ndata {len(str(n)) + 1}\n{n}\n"
        )
    stream.append("done\n")
    subprocess.run(
        ["git", "fast-import", "--quiet", "--done", "--export-marks=marks"],
        cwd=path,
        input="".join(stream).encode(),
        check=True,
    )
    shas = [row.split()[1] for row in (path / "marks").read_text().splitlines()]
    (path / "marks").unlink()
    for h in range(hosts):
        by_commit: dict[str, list[str]] = {}
        for r in range(records):
            sha = shas[(h * 7 + r // per_commit) % len(shas)]
            text = f"model-{r % 20},{512 * (1 + r % 64)},2026-07-03,{sha},,b.csv,gb10,{128 << 30}"
            by_commit.setdefault(sha, []).append(text)
        notes = []
        for sha, lines in by_commit.items():
            data = "".join(f"{x}\n" for x in sorted(lines)).encode()
            notes.append(f"N inline {sha}\ndata {len(data)}\n".encode() + data + b"\n")
        message = b"bench notes"
        head = (
            (
                f"commit refs/notes/oomrec/gb10-host{h}\ncommitter {IDENTITY} 1700000000 +0000\n"
                f"data {len(message)}\n"
            ).encode()
            + message
            + b"\n"
        )
        subprocess.run(
            ["git", "fast-import", "--quiet", "--done"],
            cwd=path,
            input=head + b"".join(notes) + b"done\n",
            check=True,
        )


def cached(cache: Path, commits: int, hosts: int, records: int, per_commit: int) -> Path:
    path = cache / f"shared-{commits}-{hosts}-{records}-{per_commit}-v2"
    if not (path / ".git" / "oomrec-bench-done").exists():
        subprocess.run(["rm", "-rf", str(path)], check=True)
        path.mkdir(parents=True)
        start = time.perf_counter()
        build(path, commits, hosts, records, per_commit)
        # As after a fetch: one pack, not one per fast-import.
        subprocess.run(["git", "repack", "-q", "-a", "-d"], cwd=path, check=True)
        (path / ".git" / "oomrec-bench-done").touch()
        print(f"built {path} in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    return path


def read(path: Path) -> int:
    from oomrec.store import gitrepo as gitutil
    from oomrec.store import notes

    repo = gitutil.open_repo(path)
    assert repo is not None
    # As every reader does: each line judged by whose ref holds it (store/owners.py).
    return len(notes.read_owned(repo, "gb10", skip_own=False).applying)


def plan(path: Path, record: Path) -> int:
    from oomrec.core.records import RecordFile
    from oomrec.sweep.planner import Planner, gather_evidence

    os.chdir(path)
    record_file = RecordFile(record)
    evidence = gather_evidence(record_file, record_file.load(), "OOM-Fix", "gb10")
    return Planner(evidence, "gb10", host_mem=128 << 30).applicable_records


def git_processes(path: Path) -> int:
    trace = path.parent / f"{path.name}.trace"
    trace.unlink(missing_ok=True)
    code = (
        "import sys; sys.path.insert(0, sys.argv[2]); import bench_shared; "
        "print(bench_shared.read(__import__('pathlib').Path(sys.argv[1])))"
    )
    subprocess.run(
        [sys.executable, "-c", code, str(path), str(Path(__file__).parent)],
        env={**os.environ, "GIT_TRACE": str(trace)},
        check=True,
        capture_output=True,
    )
    return sum(1 for row in trace.read_text().splitlines() if "git.c:" in row and "built-in" in row)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=50)
    parser.add_argument("--records", type=int, default=2_000)
    parser.add_argument("--commits", type=int, default=2_000)
    parser.add_argument(
        "--per-commit",
        type=int,
        default=1,
        help="records per note (per commit): 1 is the worst case, one note blob per record",
    )
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "oomrec-bench")
    args = parser.parse_args()

    big = cached(args.cache, args.commits, args.hosts, args.records, args.per_commit)
    small = cached(
        args.cache, args.commits, max(1, args.hosts // 10), args.records, args.per_commit
    )
    with tempfile.TemporaryDirectory() as tmp:
        record = Path(tmp) / "oom-record"
        record.write_text("")
        lines = read(big)
        results = {
            "git for-each-ref refs/notes/ (baseline)": median_time(
                lambda: subprocess.run(
                    ["git", "for-each-ref", "refs/notes/"], cwd=big, capture_output=True
                ),
                args.runs,
            ),
            f"read every host's notes ({lines} distinct lines)": median_time(
                lambda: read(big), args.runs
            ),
            "plan a sweep over them (gather_evidence + planner)": median_time(
                lambda: plan(big, record), args.runs
            ),
        }
        counts = {args.hosts // 10 or 1: git_processes(small), args.hosts: git_processes(big)}
    print(
        f"{args.hosts} hosts x {args.records} records over {args.commits} commits, "
        f"{args.per_commit} record(s) per note; "
        f"median of {args.runs} runs"
    )
    base = next(iter(results.values()))
    for name, seconds in results.items():
        print(f"  {seconds * 1000:8.1f} ms  {seconds / base:6.1f}x baseline   {name}")
    for hosts, count in counts.items():
        print(f"  git processes to read {hosts} hosts: {count}")


if __name__ == "__main__":
    main()
