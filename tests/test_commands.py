"""The verbs as library calls (oomrec.commands): each takes typed keyword arguments, returns a
result with `to_json()`, prints nothing, and raises OomrecError for what the user can fix. On
real git repositories, record files and CSVs; the CLI's rendering of them is tested elsewhere."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from oomrec.commands import SCHEMA_VERSION
from oomrec.commands.hook import hook_install, hook_uninstall
from oomrec.commands.record_add import record_add
from oomrec.commands.record_import import record_import_csv
from oomrec.commands.record_list import record_list
from oomrec.commands.record_prune import record_prune, record_restore
from oomrec.commands.record_stale import record_stale
from oomrec.core.errors import OomrecError
from oomrec.hooks.check import EVENTS
from oomrec.hooks.files import HookAction, Legacy
from tests.gitrepo import History, Repo
from tests.harness_rows import H15, csv_text, ok_row, row
from tests.helpers import line, write

ROOT = Path(__file__).resolve().parents[1]


def test_no_verb_imports_typer_rich_or_gitpython() -> None:
    # Typer and rich are the CLI's; GitPython is loaded by a verb that runs, not by an import
    # (`oomrec --help` imports every verb module).
    code = (
        "import sys\n"
        "import oomrec.commands.hook, oomrec.commands.record_add, oomrec.commands.record_import\n"
        "import oomrec.commands.record_list, oomrec.commands.record_prune\n"
        "import oomrec.commands.record_stale\n"
        "print(sorted(m for m in ('typer', 'click', 'rich', 'git') if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert done.stdout == "[]\n"


def test_add_then_list(repo: Repo, record: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = record_add(model="m", length="2048", hardware="gb10", source="by hand")
    again = record_add(model="m", length=2048, hardware="gb10", source="elsewhere")
    record_add(model="a", length=512, any_hardware=True)
    assert (first.added, again.added) == (True, False)
    assert first.line == f"m,2048,{first.entry.date},{repo.head()},,by hand,gb10,"
    assert record.read_text().splitlines() == [
        first.line,
        f"a,512,{first.entry.date},{repo.head()},,manual",
    ]
    data = again.to_json()
    assert list(data) == ["schema_version", "record", "added", "already_recorded", "line", "entry"]
    assert (data["schema_version"], data["added"], data["already_recorded"]) == (2, False, True)
    assert data["entry"]["source_csv"] == "elsewhere"

    listed = record_list(git=False)
    assert [(r.model, r.prompt_target_len) for r in listed.records] == [("a", 512), ("m", 2048)]
    assert (listed.origins, listed.statuses, listed.warnings) == (["local", "local"], None, [])
    in_git = record_list(models=["m*", "z"], hardware="GB10")
    assert [r.model for r in in_git.records] == ["m"]
    assert in_git.statuses == ["applies"]
    assert in_git.to_json() == {
        "schema_version": SCHEMA_VERSION,
        "record": "benchmarks/.oom-record",
        "archived": False,
        "records": [{**in_git.records[0].to_dict(), "from": "local", "status": "applies"}],
    }
    # A verb prints nothing: its caller decides what to show.
    assert capsys.readouterr() == ("", "")


def test_add_reports_the_info_exclude_notice_and_bad_input_as_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    user = Repo(tmp_path / "user")
    user.commit("their project")
    monkeypatch.chdir(user.path)
    first = record_add(model="m", length=512)
    assert len(first.notices) == 1
    assert first.notices[0].startswith("oomrec: added /benchmarks/.oom-record and ")
    assert record_add(model="n", length=512).notices == []
    with pytest.raises(OomrecError, match="not a whole number"):
        record_add(model="m", length="12.5k")
    with pytest.raises(OomrecError, match="exclude each other"):
        record_add(model="m", length=1, hardware="gb10", any_hardware=True)
    with pytest.raises(OomrecError, match="does not exist"):
        record_add(model="m", length=1, record=tmp_path / "no" / "such" / "record")
    assert not (tmp_path / "no").exists()
    assert capsys.readouterr() == ("", "")


def test_list_warns_about_lines_it_cannot_read(repo: Repo, record: Path) -> None:
    write(record, [line("m", 512, repo.head()), "not,a,record"])
    result = record_list(git=False)
    assert [r.model for r in result.records] == ["m"]
    assert len(result.warnings) == 1
    assert result.warnings[0].startswith("warning: benchmarks/.oom-record:2: ")


def _prune_lines(h: History) -> list[str]:
    return [
        line("gemma-4-31b", 1024, h.pre),
        line("gemma-4-31b", 2048, h.fix),
        line("gemma-4-31b", 8192, h.side),
        line("llama-3", 512, h.pre),
    ]


def test_prune_and_restore_dry_and_real_runs_have_one_shape(
    history: History, record: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    h = history
    lines = _prune_lines(h)
    before = write(record, lines)

    dry = record_prune(dry_run=True)
    assert record.read_bytes() == before
    real = record_prune()
    assert list(dry.to_json()) == list(real.to_json())
    dry_json, real_json = dry.to_json(), real.to_json()
    assert (dry_json["dry_run"], real_json["dry_run"]) == (True, False)
    assert (dry_json["would_archive"], dry_json["archived"]) == (2, 0)
    assert (real_json["would_archive"], real_json["archived"]) == (2, 2)
    assert dry_json["records"] == real_json["records"]
    assert [(e["line"], e["status"], e["fix"]) for e in real_json["records"]] == [
        (1, "lifted, unverified", h.fix),
        (3, "lifted, unverified", h.fix),
    ]
    assert (real.kept, real.kept_unknown, real.since) == (2, 0, None)
    assert real.archived == [lines[0], lines[2]]
    assert record.read_text().splitlines() == [lines[1], lines[3]]
    # Archived records are listed from the archive, with when they moved.
    parked = record_list(archived=True)
    assert parked.origins == ["archive", "archive"]
    assert parked.archived_at is not None and len(parked.archived_at) == 2

    after_prune = record.read_bytes()
    dry_back = record_restore(fix=h.fix, dry_run=True)
    assert record.read_bytes() == after_prune
    back = record_restore(fix=h.fix)
    assert list(dry_back.to_json()) == list(back.to_json())
    assert (dry_back.to_json()["would_restore"], dry_back.to_json()["restored"]) == (2, 0)
    assert (back.to_json()["would_restore"], back.to_json()["restored"]) == (2, 2)
    assert dry_back.to_json()["records"] == back.to_json()["records"]
    entry = back.to_json()["records"][0]
    assert (entry["archived_for"], entry["status"], entry["record"]["prompt_target_len"]) == (
        h.fix,
        "lifted, unverified",
        1024,
    )
    assert sorted(record.read_text().splitlines()) == sorted(lines)
    assert capsys.readouterr() == ("", "")


def test_prune_since_a_fix_not_at_head_is_an_error(history: History, record: Path) -> None:
    write(record, _prune_lines(history))
    history.repo.git("checkout", "-q", "side")
    with pytest.raises(OomrecError, match="does not have fix"):
        record_prune(since=history.fix)


def test_stale_sorts_the_lines_and_says_when_the_user_must_act(
    history: History, record: Path
) -> None:
    h = history
    write(record, [line("gemma-4-31b", 1024, h.pre), line("gemma-4-31b", 2048, "cafe")])
    result = record_stale()
    assert [(x.line, x.judgement.status.value) for x in result.no_longer_apply] == [
        (1, "lifted, unverified")
    ]
    assert [x.line for x in result.unknown] == [2]
    assert (result.apply_again, result.found) == ([], True)
    data = result.to_json()
    assert data["range"] == "HEAD"
    assert data["no_longer_apply"][0]["fix"] == h.fix
    # The fix is not in this range: nothing it lifts counts.
    assert not record_stale(range_=f"{h.post}..HEAD").found


def test_stale_puts_trailer_warnings_in_the_result(repo: Repo, record: Path) -> None:
    spaced = repo.commit("Fix A\n\nOOM-Fix: gemma-4-* qwen3-*\n")
    write(record, [line("gemma-4-31b", 1024, repo.head())])
    result = record_stale()
    assert len(result.trailer_warnings) == 1
    assert f"commit {spaced[:7]}" in result.trailer_warnings[0]
    assert result.warnings == [f"warning: {result.trailer_warnings[0]}"]
    assert result.to_json()["warnings"] == result.trailer_warnings
    # An explicit record in a folder that does not exist: a typo, never a new folder.
    with pytest.raises(OomrecError, match="does not exist"):
        record_stale(record=repo.path.parent / "elsewhere" / "r")


def test_stale_outside_git_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(OomrecError, match="reads git history"):
        record_stale()


def test_import_dry_and_real_runs_have_one_shape(
    repo: Repo, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.commit(
        "benchmarks",
        {
            "benchmarks/run.csv": csv_text(
                H15,
                ok_row("llama-3.1-8b-4bit", 512),
                row("gemma-4-31b-it-4bit", "SKIP:oom", length="32768"),
                row("qwen3-30b-a3b-4bit", "SKIP:oom", length="4096"),
                row("../model", "SKIP:oom", length="1024"),
            )
        },
    )
    dry = record_import_csv(all_hardware=True, dry_run=True)
    assert not (repo.path / "benchmarks" / ".oom-record").exists()
    real = record_import_csv(all_hardware=True)
    dry_json, real_json = dry.to_json(), real.to_json()
    assert list(dry_json) == list(real_json)
    assert (dry_json["would_add"], dry_json["added"], dry_json["dry_run"]) == (2, 0, True)
    assert (real_json["would_add"], real_json["added"], real_json["dry_run"]) == (2, 2, False)
    assert dry_json["records"] == real_json["records"]
    assert [w.split(" (")[0] for w in real.warnings] == [
        "warning: benchmarks/run.csv:5: SKIP:oom row not imported"
    ]
    rerun = record_import_csv(all_hardware=True)
    assert (rerun.would_add, rerun.added, rerun.report.already_present) == (0, 0, 2)
    with pytest.raises(OomrecError, match="exclude each other"):
        record_import_csv(hardware="gb10", all_hardware=True)
    assert capsys.readouterr() == ("", "")


def test_hooks_install_beside_a_foreign_one_and_uninstall_puts_it_back(
    repo: Repo, capsys: pytest.CaptureFixture[str]
) -> None:
    hooks = repo.path / ".git" / "hooks"
    hooks.mkdir(exist_ok=True)
    theirs = "#!/bin/sh\necho theirs\n"
    (hooks / "post-merge").write_text(theirs)
    # post-checkout: a foreign hook and a .legacy one; only this hook needs the user.
    (hooks / "post-checkout").write_text(theirs)
    (hooks / "post-checkout.legacy").write_text(theirs)

    installed = hook_install(oomrec="/opt/oomrec/bin/oomrec")
    by_hook = {change.hook: change for change in installed.hooks}
    assert [change.hook for change in installed.hooks] == list(EVENTS)
    assert (by_hook["post-merge"].action, by_hook["post-merge"].legacy_change) == (
        HookAction.INSTALLED,
        Legacy.MOVED_ASIDE,
    )
    assert by_hook["post-checkout"].action == HookAction.CONFLICT
    assert by_hook["post-commit"].action == HookAction.INSTALLED
    assert len(installed.problems) == 1 and "post-checkout" in installed.problems[0]
    assert (hooks / "post-merge.legacy").read_text() == theirs
    assert "/opt/oomrec/bin/oomrec" in (hooks / "post-commit").read_text()
    data = installed.to_json()
    assert list(data) == ["schema_version", "hooks_dir", "hooks", "problems"]
    assert data["hooks_dir"] == ".git/hooks"
    assert {
        "hook": "post-merge",
        "path": ".git/hooks/post-merge",
        "action": "installed",
        "legacy": ".git/hooks/post-merge.legacy",
        "legacy_change": "moved aside",
    } in data["hooks"]
    again = hook_install(oomrec="/opt/oomrec/bin/oomrec")
    assert {c.hook: c.action for c in again.hooks}["post-commit"] == HookAction.ALREADY_INSTALLED

    removed = hook_uninstall()
    by_hook = {change.hook: change for change in removed.hooks}
    assert (by_hook["post-merge"].action, by_hook["post-merge"].legacy_change) == (
        HookAction.REMOVED,
        Legacy.PUT_BACK,
    )
    assert by_hook["post-checkout"].action == HookAction.LEFT_AS_IS
    assert removed.problems == []
    assert (hooks / "post-merge").read_text() == theirs
    assert not (hooks / "post-commit").exists()
    assert capsys.readouterr() == ("", "")


def test_hooks_outside_git_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(OomrecError, match="not inside a git repository"):
        hook_install()
    hook_dir = tmp_path / "hooks"
    assert [c.action for c in hook_install(directory=hook_dir).hooks] == [
        HookAction.INSTALLED
    ] * len(EVENTS)


def test_a_hooks_folder_that_is_a_file_is_an_oomrec_error(tmp_path: Path) -> None:
    """As core.hooksPath pointing at a file would make it: the verb's error, not a raw
    FileExistsError (the CLI made it one line; a library caller got a traceback)."""
    (tmp_path / "afile").write_text("x")
    with pytest.raises(OomrecError, match="the hooks folder is not a folder"):
        hook_install(directory=tmp_path / "afile")
    with pytest.raises(OomrecError, match=r"cannot be created \(Not a directory\)"):
        hook_install(directory=tmp_path / "afile" / "hooks")


def test_add_takes_unknown_as_the_commit_even_outside_git(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`unknown` is the record format's word for a commit nobody knows (docs/record-format.md
    lists it): an OOM seen long ago can be recorded by hand, with no repository to resolve
    anything in."""
    monkeypatch.chdir(tmp_path)
    added = record_add(
        model="m", length=512, commit="unknown", any_hardware=True, record=tmp_path / "rec"
    )
    assert added.entry.commit == "unknown"
    assert (tmp_path / "rec").read_text().split(",")[3] == "unknown"
    with pytest.raises(OomrecError):
        record_add(model="m", length=512, commit="HEAD", record=tmp_path / "rec")
