"""`oomrec record prune --since FIX`, through the CLI, on real repositories and record files."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import CliResult
from tests.gitrepo import History
from tests.helpers import line, write

Cli = Callable[..., CliResult]


def test_prunes_what_lacks_the_fix_and_keeps_what_has_it(
    cli: Cli, history: History, record: Path
) -> None:
    h = history
    lines = [
        line("gemma-4-31b", 1024, h.pre),
        "# a note the harness never wrote",
        line("gemma-4-31b", 2048, h.fix),
        line("gemma-4-31b", 4096, h.post),
        line("gemma-4-31b", 8192, h.side),
        line("gemma-4-31b", 16384, h.merged),
        line("gemma-4-31b", 32768, h.base[:7]),
    ]
    write(record, lines)
    result = cli("record", "prune", "--since", h.fix[:9])
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "pruned 3, kept 3 current, kept 0 unknown"
    assert f"records against fix {h.fix[:7]}" in result.stdout
    for pruned in (h.pre, h.side, h.base[:7]):
        assert f"stale: {pruned[:8]} lacks fix {h.fix[:7]}" in result.stdout
    assert h.post[:8] not in result.stdout
    assert result.stderr == (
        "warning: benchmarks/.oom-record:2: not a record (1 fields, needs at least 6), kept as is\n"
    )
    assert record.read_text().splitlines() == [lines[1], lines[2], lines[3], lines[5]]


def test_before_commit_is_the_same_option(cli: Cli, history: History, record: Path) -> None:
    write(record, [line("m", 1, history.pre), line("m", 2, history.post)])
    result = cli("record", "prune", "--before-commit", history.fix)
    assert result.stdout.splitlines()[-1] == "pruned 1, kept 1 current, kept 0 unknown"
    assert record.read_text() == line("m", 2, history.post) + "\n"


def test_unknown_records_are_kept_with_their_reason_unless_asked(
    cli: Cli, history: History, record: Path
) -> None:
    h = history
    lines = [
        line("m", 1, "unknown"),
        line("m", 2, "deadbeef99"),
        line("m", 3, f"{h.pre[:8]}-dirty"),
        line("m", 4, f"{h.post[:8]}-dirty"),
    ]
    write(record, lines)
    result = cli("record", "prune", "--since", h.fix)
    out = " ".join(result.stdout.split())
    assert result.stdout.splitlines()[-1] == "pruned 1, kept 1 current, kept 2 unknown"
    assert "kept │ unknown: no commit recorded" in out
    assert (
        "kept │ unknown: commit deadbeef99 not in this repository "
        "(rebased away or from another clone?)" in out
    )
    assert (
        f"pruned │ stale: {h.pre[:8]}-dirty lacks fix {h.fix[:7]} "
        f"({h.pre[:8]}-dirty judged by {h.pre[:8]})" in out
    )
    assert record.read_text().splitlines() == [lines[0], lines[1], lines[3]]

    result = cli("record", "prune", "--since", h.fix, "--prune-unknown")
    out = " ".join(result.stdout.split())
    assert result.stdout.splitlines()[-1] == "pruned 2, kept 1 current, kept 0 unknown"
    assert "pruned │ unknown: no commit recorded" in out
    assert "pruned │ unknown: commit deadbeef99 not in this repository" in out
    assert record.read_text().splitlines() == [lines[3]]


def test_model_globs_and_hardware_limit_what_is_judged(
    cli: Cli, history: History, record: Path
) -> None:
    pre = history.pre
    lines = [
        line("gemma-4-31b", 1, pre),
        line("qwen3-8b", 1, pre),
        line("llama-3", 1, pre),
        line("gemma-4-31b", 2, pre, hardware="m1ultra"),
    ]
    write(record, lines)
    result = cli(
        "record", "prune", "--since", history.fix, "--model", "gemma-*", "--model", "qwen3-*",
        "--hardware", "NVIDIA_GB10_CUDA13.0_122GB",
    )  # fmt: skip
    assert result.stdout.splitlines()[-1] == "pruned 2, kept 0 current, kept 0 unknown"
    assert record.read_text().splitlines() == [lines[2], lines[3]]


def test_dry_run_changes_no_byte(cli: Cli, history: History, record: Path) -> None:
    before = write(record, [line("m", 1, history.pre), line("m", 2, "unknown")])
    mtime = record.stat().st_mtime_ns
    result = cli("record", "prune", "--since", history.fix, "--dry-run")
    assert result.exit_code == 0
    out = " ".join(result.stdout.split())
    assert "would go │ stale" in out and "would stay │ unknown: no commit recorded" in out
    assert result.stdout.splitlines()[-1] == (
        "dry run: would prune 1, keep 0 current, keep 1 unknown; benchmarks/.oom-record is "
        "unchanged"
    )
    assert record.read_bytes() == before
    assert record.stat().st_mtime_ns == mtime
    assert not record.with_name(".oom-record.lock").exists()


@pytest.mark.parametrize("fix", ["nope", "deadbeefdeadbeef", "HEAD~99", "--all"])
def test_a_fix_that_is_no_commit_is_one_line_and_changes_no_byte(
    cli: Cli, history: History, record: Path, fix: str
) -> None:
    before = write(record, [line("m", 1, history.pre)])
    result = cli("record", "prune", "--since", fix)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == (
        f"oomrec: error: {fix!r} is not a commit in {history.repo.path}; check the revision "
        "(git log --oneline)\n"
    )
    assert record.read_bytes() == before


def test_outside_git_prune_is_a_one_line_error(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = cli("record", "prune", "--since", "HEAD")
    assert result.exit_code == 2
    assert result.stderr == (
        "oomrec: error: record prune needs git history: run it inside the repository that "
        "holds the fix commit\n"
    )


def test_print_removed_lines_restore_with_append(cli: Cli, history: History, record: Path) -> None:
    h = history
    lines = [line("a", 1, h.pre), line("b", 2, h.post), "c,3,2026-07-03," + h.side + ',,"x,y.csv"']
    before = write(record, lines)
    result = cli("record", "prune", "--since", h.fix, "--print-removed")
    assert result.stdout == f"{lines[0]}\n{lines[2]}\n"
    assert "pruned 2, kept 1 current, kept 0 unknown" in result.stderr
    with record.open("a", encoding="utf-8") as out:
        out.write(result.stdout)
    assert sorted(record.read_bytes().splitlines()) == sorted(before.splitlines())


def test_warns_when_head_lacks_the_fix_and_still_prunes(
    cli: Cli, history: History, record: Path
) -> None:
    history.repo.git("checkout", "-q", "side")
    write(record, [line("m", 1, history.pre)])
    result = cli("record", "prune", "--since", history.fix)
    assert result.exit_code == 0
    assert result.stderr == (
        f"warning: HEAD ({history.side[:7]}) does not contain fix {history.fix[:7]}: this "
        "checkout runs without the fix\n"
    )
    assert record.read_text() == ""


def test_nothing_to_prune_leaves_the_file_alone(cli: Cli, history: History, record: Path) -> None:
    before = write(record, [line("m", 1, history.post)])
    mtime = record.stat().st_mtime_ns
    result = cli("record", "prune", "--since", history.fix)
    assert result.stdout == "pruned 0, kept 1 current, kept 0 unknown\n"
    assert record.read_bytes() == before and record.stat().st_mtime_ns == mtime


_APPENDER = """
import sys
from pathlib import Path
from oomrec.records import OomRecord, RecordFile

path, current, stale, stop = Path(sys.argv[1]), sys.argv[2], sys.argv[3], Path(sys.argv[4])
record = RecordFile(path)
n = 0
while not stop.exists():
    # Alternate: a line prune must keep, and one it may remove on a later pass.
    commit = current if n % 2 == 0 else stale
    record.append([OomRecord("gemma-4-31b", 100000 + n, "2026-07-03", commit)])
    n += 1
print(n)
"""


def test_a_concurrent_appender_loses_nothing(
    cli: Cli, history: History, record: Path, tmp_path: Path
) -> None:
    h = history
    seed = [line("m", n, h.pre if n % 2 else h.post) for n in range(200)]
    write(record, seed)
    stop = tmp_path / "stop"
    appender = subprocess.Popen(
        [sys.executable, "-c", _APPENDER, str(record), h.post, h.pre, str(stop)],
        cwd=h.repo.path,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        # The appender runs from before the first prune until after the last one.
        while "gemma-4-31b," not in record.read_text():
            assert appender.poll() is None
        for _ in range(3):
            result = cli("record", "prune", "--since", h.fix)
            assert result.exit_code == 0, result.stderr
    finally:
        stop.touch()
        out, _ = appender.communicate(timeout=120)
    assert appender.returncode == 0
    appended = int(out)
    cli("record", "prune", "--since", h.fix)
    kept = record.read_text().splitlines()
    assert [text for text in kept if text.startswith("gemma-4-31b,")] == [
        f"gemma-4-31b,{100000 + n},2026-07-03,{h.post},," for n in range(0, appended, 2)
    ]
    assert [text for text in kept if text.startswith("m,")] == seed[0::2]


def test_help_names_the_alias_and_an_example(cli: Cli) -> None:
    out = " ".join(cli("record", "prune", "--help").stdout.split())
    assert "--since" in out and "--before-commit" in out and "Example: oomrec record prune" in out


def test_a_long_report_is_cut_and_says_where_the_rest_is(
    cli: Cli, history: History, record: Path
) -> None:
    write(record, [line("m", n, history.pre) for n in range(130)])
    result = cli("record", "prune", "--since", history.fix, "--dry-run")
    rows = [row for row in result.stdout.splitlines() if row.startswith("│ m ")]
    assert len(rows) == 100
    assert result.stdout.splitlines()[-2:] == [
        "... and 30 more (--print-removed lists them all)",
        "dry run: would prune 130, keep 0 current, keep 0 unknown; benchmarks/.oom-record is "
        "unchanged",
    ]
