"""`record prune` (archive, never delete), `record restore`, `record list --archived`, and the
sweep judging every record at HEAD: through the CLI, on real repositories and record files."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from tests.conftest import CliResult
from tests.gitrepo import History, Repo
from tests.helpers import dry_run_verdicts, line, write

Cli = Callable[..., CliResult]
ROOT = Path(__file__).resolve().parents[1]


def archive_of(record: Path) -> Path:
    return record.with_name(record.name + ".archive")


def test_prune_archives_what_no_longer_applies_and_keeps_the_rest(
    cli: Cli, history: History, record: Path
) -> None:
    h = history
    lines = [
        line("gemma-4-31b", 1024, h.pre),
        "# a note the harness never wrote",
        line("gemma-4-31b", 2048, h.fix),
        line("gemma-4-31b", 8192, h.side),
        line("llama-3", 512, h.pre),
        line("gemma-4-31b", 32768, f"{h.pre[:8]}-dirty"),
    ]
    write(record, lines)
    result = cli("record", "prune")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines()[-1] == (
        f"archived 2 records lifted; kept 3 that apply at HEAD (1 because git cannot prove "
        f"otherwise); undo with: oomrec record restore --fix {h.fix[:7]}"
    )
    assert record.read_text().splitlines() == [lines[1], lines[2], lines[4], lines[5]]
    archived = archive_of(record).read_text().splitlines()
    assert [a.split(" ", 2)[1:] for a in archived] == [[h.fix, lines[0]], [h.fix, lines[3]]]
    # Listed as archived, with the judgement at HEAD.
    listed = cli("record", "list", "--archived", "--json")
    assert [
        (r["prompt_target_len"], r["status"]) for r in json.loads(listed.stdout)["records"]
    ] == [
        (1024, f"out of play: archived by record prune; fix {h.fix[:7]} (Chunk the prefill) "
         "in effect"),
        (8192, f"out of play: archived by record prune; fix {h.fix[:7]} (Chunk the prefill) "
         "in effect"),
    ]  # fmt: skip


def test_since_judges_only_what_that_fix_matches(cli: Cli, repo: Repo, record: Path) -> None:
    pre = repo.commit("pre")
    f1 = repo.commit("gemma fix\n\nOOM-Fix: gemma-4-*\n")
    mid = repo.commit("between")
    f2 = repo.commit("qwen fix\n\nOOM-Fix: qwen3-*\n")
    lines = [line("gemma-4-31b", 1, mid), line("llama-3", 2, pre), line("qwen3-8b", 3, mid)]
    write(record, lines)
    result = cli("record", "prune", "--since", f2[:8])
    assert result.exit_code == 0, result.stderr
    assert record.read_text().splitlines() == lines[:2]
    assert f1 != f2


def test_since_a_commit_without_trailer_needs_model(cli: Cli, history: History, record: Path):
    h = history
    before = write(record, [line("gemma-4-31b", 1, h.pre), line("llama-3", 2, h.pre)])
    result = cli("record", "prune", "--since", h.post)
    assert result.exit_code == 2
    assert "carries no OOM-Fix trailer" in result.stderr
    assert "--model GLOB" in result.stderr
    assert record.read_bytes() == before
    # With --model, the commit is taken as a fix of those models.
    result = cli("record", "prune", "--since", h.post, "--model", "llama-*")
    assert result.exit_code == 0, result.stderr
    assert record.read_text().splitlines() == [line("gemma-4-31b", 1, h.pre)]


def test_since_a_fix_head_does_not_have_is_refused(cli: Cli, history: History, record: Path):
    h = history
    before = write(record, [line("gemma-4-31b", 1, h.pre)])
    h.repo.git("checkout", "-q", "side")
    result = cli("record", "prune", "--since", h.fix)
    assert result.exit_code == 2
    assert "does not have fix" in result.stderr
    assert record.read_bytes() == before
    assert not archive_of(record).exists()


def test_dry_run_changes_no_byte(cli: Cli, history: History, record: Path) -> None:
    before = write(record, [line("gemma-4-31b", 1, history.pre)])
    result = cli("record", "prune", "--dry-run")
    assert result.stdout.splitlines()[-1].startswith("dry run: would archive 1 record lifted")
    assert record.read_bytes() == before
    assert not archive_of(record).exists()


def test_print_removed_prints_the_lines_verbatim(cli: Cli, history: History, record: Path):
    lines = [line("gemma-4-31b", 1, history.pre), line("gemma-4-31b", 2, history.post)]
    write(record, lines)
    result = cli("record", "prune", "--print-removed")
    assert result.stdout == lines[0] + "\n"
    assert "archived 1 record" in result.stderr


def test_a_revert_makes_an_archived_record_apply_again_and_restore_brings_it_back(
    cli: Cli, history: History, record: Path
) -> None:
    h = history
    lines = [line("gemma-4-31b", 8192, h.pre), line("gemma-4-31b", 32768, h.post)]
    write(record, lines)
    assert cli("record", "prune").exit_code == 0
    assert record.read_text().splitlines() == [lines[1]]
    h.repo.git("revert", "--no-edit", h.fix)
    stale = cli("record", "stale", "--exit-code")
    assert stale.exit_code == 1
    assert "1 archived record applies again" in stale.stdout
    assert "run: oomrec record restore" in stale.stdout
    restored = cli("record", "restore")
    assert restored.exit_code == 0, restored.stderr
    assert restored.stdout.splitlines()[-1] == "restored 1 record; 0 stay archived"
    assert record.read_text().splitlines() == [lines[1], lines[0]]
    assert archive_of(record).read_text() == ""


def test_restore_by_fix_and_all(cli: Cli, history: History, record: Path) -> None:
    h = history
    lines = [line("gemma-4-31b", 1, h.pre), line("gemma-4-31b", 2, h.side)]
    write(record, lines)
    cli("record", "prune")
    assert cli("record", "restore").stdout.splitlines()[-1] == "restored 0 records; 2 stay archived"
    dry = cli("record", "restore", "--fix", h.fix[:7], "--dry-run")
    assert dry.stdout.splitlines()[-1] == "dry run: would restore 2 records; 0 stay archived"
    assert record.read_text() == ""
    assert cli("record", "restore", "--all").exit_code == 0
    assert sorted(record.read_text().splitlines()) == sorted(lines)


def test_the_sweep_judges_records_at_head_without_any_prune(
    cli: Cli, history: History, record: Path
) -> None:
    h = history
    write(record, [line("gemma-4-31b", 8192, h.pre, hardware="testhw")])
    plan, verdicts = dry_run_verdicts(cli, h.repo.path)
    assert verdicts == ["run", "probe"]
    lifted = plan["cells"][1]  # type: ignore[index]
    assert lifted["reason"] == (
        f"recorded OOM at 8192 <= 8192, lifted, unverified: fix {h.fix[:7]} (Chunk the "
        "prefill); runs alone as a probe under the guard"
    )
    assert lifted["record_line"].startswith("benchmarks/.oom-record:1: ")
    # The fix reverted: the record applies again.
    h.repo.git("revert", "--no-edit", h.fix)
    assert dry_run_verdicts(cli, h.repo.path)[1] == ["run", "SKIP:oom_record"]
    h.repo.git("revert", "--no-edit", "HEAD")
    assert dry_run_verdicts(cli, h.repo.path)[1] == ["run", "probe"]


def test_an_archived_record_pre_skips_again_on_a_branch_without_the_fix(
    cli: Cli, history: History, record: Path
) -> None:
    h = history
    write(record, [line("gemma-4-31b", 8192, h.pre, hardware="testhw")])
    assert cli("record", "prune").exit_code == 0
    assert record.read_text() == ""
    h.repo.git("checkout", "-q", "side")
    plan, verdicts = dry_run_verdicts(cli, h.repo.path)
    assert verdicts == ["run", "SKIP:oom_record"]
    assert plan["cells"][1]["record_line"].startswith(  # type: ignore[index]
        "benchmarks/.oom-record.archive:1: "
    )


def test_a_linked_worktree_shares_the_main_worktrees_record(
    cli: Cli, history: History, record: Path, monkeypatch
) -> None:
    h = history
    write(record, [line("gemma-4-31b", 4096, h.side, hardware="testhw")])
    other = h.repo.path.parent / "wt"
    h.repo.git("worktree", "add", "-q", str(other), "side")
    monkeypatch.chdir(other)
    result = cli("record", "list", "--json")
    assert [r["commit"] for r in json.loads(result.stdout)["records"]] == [h.side]
    assert cli("record", "add", "qwen3-8b", "512").exit_code == 0
    assert "qwen3-8b,512" in record.read_text()
    assert not (other / "benchmarks" / ".oom-record").exists()


def test_a_killed_move_leaves_the_line_in_both_never_in_neither(
    cli: Cli, history: History, record: Path
) -> None:
    """An archive line whose record line is still there (a prune killed between its append and
    its rewrite) is read once, and pruning again does not duplicate it."""
    h = history
    text = line("gemma-4-31b", 8192, h.pre)
    write(record, [text])
    archive_of(record).write_text(f"2026-11-30T00:00:00Z {h.fix} {text}\n")
    listed = cli("record", "list", "--archived", "--json")
    assert json.loads(listed.stdout)["records"] == []
    assert cli("record", "prune").exit_code == 0
    assert record.read_text() == ""
    assert archive_of(record).read_text().count(text) == 2
    # Still one record as far as the sweep and list are concerned.
    assert len(json.loads(cli("record", "list", "--archived", "--json").stdout)["records"]) == 1


def test_a_concurrent_appender_loses_nothing(history: History, record: Path) -> None:
    h = history
    write(record, [line("gemma-4-31b", n, h.pre) for n in range(1, 200)])
    appender = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys\n"
            "from pathlib import Path\n"
            "from oomrec.core.records import RecordFile, OomRecord\n"
            "f = RecordFile(Path(sys.argv[1]))\n"
            "for n in range(300):\n"
            "    f.append([OomRecord('llama-3', n, '2026-07-03', sys.argv[2])])\n",
            str(record),
            h.post,
        ],
        cwd=ROOT,
    )
    for _ in range(5):
        subprocess.run(
            [sys.executable, "-m", "oomrec", "record", "prune"],
            cwd=h.repo.path,
            capture_output=True,
            check=True,
        )
    assert appender.wait(timeout=60) == 0
    kept = record.read_text().splitlines()
    assert sum(1 for t in kept if t.startswith("llama-3,")) == 300
    archived = archive_of(record).read_text()
    assert sum(1 for n in range(1, 200) if f"gemma-4-31b,{n}," in archived) == 199


def test_prune_outside_git_is_one_line(cli: Cli, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    rec = tmp_path / "r"
    write(rec, [line("m", 1, "abc1234")])
    result = cli("record", "prune", "--record", str(rec))
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1
    assert "needs git history" in result.stderr


def test_prune_before_the_first_commit_says_there_is_no_commit(
    cli: Cli, tmp_path: Path, monkeypatch
) -> None:
    """Inside a repository with no commit yet, 'run it inside the repository' misled: the
    cause is that no commit (so no fix) exists. The record is left as it is."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    monkeypatch.chdir(tmp_path)
    rec = tmp_path / "r"
    write(rec, [line("m", 1, "abc1234")])
    kept = rec.read_bytes()
    result = cli("record", "prune", "--record", str(rec))
    assert result.exit_code == 2
    assert result.stderr == (
        f"oomrec: error: record prune: {tmp_path} has no commit yet, so no fix; commit first (a "
        "fix is a commit with an OOM-Fix trailer)\n"
    )
    assert rec.read_bytes() == kept


def test_a_line_in_the_archive_that_is_not_an_archive_line_is_kept_and_warned(
    cli: Cli, history: History, record: Path
) -> None:
    h = history
    write(record, [line("gemma-4-31b", 1, h.pre)])
    archive_of(record).write_text("hand-written note\n")
    result = cli("record", "prune")
    assert result.exit_code == 0
    assert "warning: benchmarks/.oom-record.archive:1: not an archive line, kept as is" in (
        cli("record", "list").stderr
    )
    lines = archive_of(record).read_text().splitlines()
    assert lines[0] == "hand-written note"
    assert len(lines) == 2
    assert cli("record", "restore", "--all").exit_code == 0
    assert archive_of(record).read_text() == "hand-written note\n"
