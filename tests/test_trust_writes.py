"""Trust boundaries of what oomrec writes and opens (issue 41): a clone someone else committed
to cannot make oomrec write outside it, and a repository's path is a path, never expanded.

Every test runs the CLI on real files in real repositories: clones of a hostile bare repository
whose attacker committed what a victim's clone then holds."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import CliResult
from tests.gitrepo import git
from tests.helpers import dry_run_verdicts
from tests.test_disk_full import small_tmpfs

Cli = Callable[..., CliResult]
SHA = "9bef3f2334c4048d8540aa392ef030c97d4dad2c"
GIB = 1024**3


def one_error(result: CliResult) -> str:
    """The one line a refusal prints (exit 2, nothing on stdout)."""
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


# ---------------------------------------------------------------------------------------------
# Paths are paths: GitPython's `$NAME` expansion never picks another repository.


class Origin:
    """A bare origin; `clone(name)` makes a clone at `root/name`, literally (no expansion)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.path = root / "origin.git"
        git(root, "init", "-q", "--bare", "-b", "main", str(self.path))
        seed = root / "seed"
        git(root, "clone", "-q", str(self.path), str(seed))
        git(seed, "commit", "-q", "--allow-empty", "-m", "base")
        git(seed, "push", "-q", "origin", "main")

    def clone(self, name: str) -> Path:
        path = self.root / name
        git(self.root, "clone", "-q", str(self.path), str(path))
        (path / "models" / "gemma-4-31b").mkdir(parents=True)
        return path


def _as_host(monkeypatch: pytest.MonkeyPatch, where: Path, host: str) -> None:
    monkeypatch.chdir(where)
    monkeypatch.setenv("OOMREC_HARDWARE", "gb10")
    monkeypatch.setenv("OOMREC_MEM_BYTES", str(128 * GIB))
    monkeypatch.setenv("OOMREC_HOST", host)


def test_a_dollar_in_the_repository_path_reads_this_repositorys_notes_not_a_siblings(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`repo$S4DV` with S4DV=other: GitPython would open `repoother`, a sibling that holds a
    record of its own in its notes; list and sweep must read `repo$S4DV`'s (none)."""
    origin = Origin(tmp_path)
    other = origin.clone("repoother")
    _as_host(monkeypatch, other, "gb10-other")
    assert cli("record", "add", "gemma-4-31b", "8192").exit_code == 0
    assert cli("record", "push").exit_code == 0
    # Its record only in its notes: the local file would not be read from the other clone.
    (other / "benchmarks" / ".oom-record").unlink()
    listed = json.loads(cli("record", "list", "--json").stdout)["records"]
    assert [r["from"] for r in listed] == ["notes:gb10-other"]

    mine = origin.clone("repo$S4DV")
    assert mine.name == "repo$S4DV"
    _as_host(monkeypatch, mine, "gb10-mine")
    monkeypatch.setenv("S4DV", "other")
    listed = json.loads(cli("record", "list", "--json").stdout)["records"]
    assert listed == []
    assert dry_run_verdicts(cli, mine)[1] == ["run", "run"]


def test_home_in_the_repository_path_sets_up_pulls_and_checks_this_repository(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`v$HOME`: expanded, it names no folder, and remote setup, pull and check failed."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    origin = Origin(tmp_path)
    a = origin.clone("a")
    _as_host(monkeypatch, a, "gb10-a")
    assert cli("record", "add", "gemma-4-31b", "8192").exit_code == 0
    assert cli("record", "push").exit_code == 0

    victim = origin.clone("v$HOME")
    _as_host(monkeypatch, victim, "gb10-v")
    setup = cli("remote", "setup")
    assert setup.exit_code == 0, setup.stderr
    pulled = cli("record", "pull")
    assert pulled.exit_code == 0, pulled.stderr
    assert pulled.stdout.endswith("records by host: gb10-a (1)\n")
    checked = cli("check", "gemma-4-31b", "8192")
    assert checked.exit_code == 1, (checked.stdout, checked.stderr)
    assert cli("check", "gemma-4-31b", "4096").exit_code == 0


# ---------------------------------------------------------------------------------------------
# A hostile clone: what an attacker committed, cloned by a victim.

HEADER = "model,prompt_target_len,date,hardware,commit,mlx_peak_gb,peak_bytes"
PWN = "x;id>PWNED;x"


def oom_row(model: str, length: int = 512) -> str:
    return f"{model},{length},2026-07-03,testhw,{SHA},,,SKIP:oom"


def hostile_clone(
    tmp_path: Path, files: dict[str, str] | None = None, links: dict[str, str] | None = None
) -> Path:
    """The victim's clone of a bare repository an attacker pushed `files` and `links` (path in
    the repository -> symlink target, committed as symlinks) to."""
    attacker = tmp_path / "attacker"
    git(tmp_path, "init", "-q", "-b", "main", str(attacker))
    for rel, text in (files or {}).items():
        (attacker / rel).parent.mkdir(parents=True, exist_ok=True)
        (attacker / rel).write_text(text, encoding="utf-8")
    for rel, target in (links or {}).items():
        (attacker / rel).parent.mkdir(parents=True, exist_ok=True)
        (attacker / rel).symlink_to(target)
    git(attacker, "add", "-A")
    git(attacker, "commit", "-q", "--allow-empty", "-m", "benchmarks")
    bare = tmp_path / "hostile.git"
    git(tmp_path, "clone", "-q", "--bare", str(attacker), str(bare))
    victim = tmp_path / "victim"
    git(tmp_path, "clone", "-q", str(bare), str(victim))
    return victim


def test_import_refuses_a_model_name_with_shell_metacharacters_as_record_add_does(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The import reads names by record add's one rule: a row naming `x;id>PWNED;x` is left out
    with a warning; the honest row beside it is recorded."""
    csv = "\n".join([HEADER, oom_row(PWN), oom_row("ok-model", 1024)]) + "\n"
    victim = hostile_clone(tmp_path, {"benchmarks/cuda_testhw_x.csv": csv})
    monkeypatch.chdir(victim)
    done = cli("record", "import-csv")
    assert done.exit_code == 0, done.stderr
    record = (victim / "benchmarks" / ".oom-record").read_text()
    assert [line.split(",")[0] for line in record.splitlines()] == ["ok-model"]
    assert "contains a shell metacharacter" in done.stderr
    assert "x;id>PWNED;x" in done.stderr


@pytest.mark.parametrize(
    ("model", "why"),
    [
        (PWN, "a shell metacharacter"),
        ("a|b", "a shell metacharacter"),
        ("a&b", "a shell metacharacter"),
        ("a$HOME", "a shell metacharacter"),
        ("a`id`", "a shell metacharacter"),
        ("a<b", "a shell metacharacter"),
        ("a(b)", "a shell metacharacter"),
        ("it's", "a quote"),
        ("a b", "whitespace"),
        ("a\u00a0b", "whitespace"),
    ],
)
def test_record_add_refuses_shell_metacharacters_in_one_line(
    tmp_path: Path, cli: Cli, model: str, why: str
) -> None:
    record = tmp_path / "rec"
    line = one_error(cli("record", "add", model, "512", "--record", str(record)))
    assert line.startswith("oomrec: error: model name ")
    assert f"contains {why}; give the model's directory" in line
    assert not record.exists()


# ---------------------------------------------------------------------------------------------
# Writes stay inside: a committed symlink is never written through.

# A shell start-up file whose last line has no line ending (a writer would have "repaired" it).
BASHRC = "# ~/.bashrc\nalias ll='ls -l'"


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bashrc").write_text(BASHRC)
    return home


def _untouched(home: Path) -> None:
    """The victim's home as it was: .bashrc byte for byte, and no lock or torn file beside it."""
    assert (home / ".bashrc").read_text() == BASHRC
    assert sorted(p.name for p in home.iterdir()) == [".bashrc"]


WRITERS = {
    "import-csv": ("record", "import-csv"),
    "record add": ("record", "add", "ok-model", "2048"),
    "retract": ("record", "retract", "ok-model", "1024", "--reason", "typo"),
    "prune": ("record", "prune"),
    "restore": ("record", "restore", "--all"),
    "sweep": ("sweep", "--models", "ok-model", "--lengths", "512", "--runner", "true {cell_csv}"),
    "run": ("run", "ok-model", "512", "--", "true"),
}


@pytest.mark.parametrize("command", list(WRITERS))
def test_a_record_symlink_committed_in_a_clone_is_refused_by_every_writer(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    """The clone commits `benchmarks/.oom-record` -> ~/.bashrc and a CSV naming the model
    `x;id>PWNED;x`: no command appends to .bashrc, puts a lock or a torn line beside it."""
    home = _home(tmp_path)
    csv = "\n".join([HEADER, oom_row(PWN), oom_row("ok-model", 1024)]) + "\n"
    victim = hostile_clone(
        tmp_path,
        {"benchmarks/cuda_testhw_x.csv": csv},
        {"benchmarks/.oom-record": str(home / ".bashrc")},
    )
    (victim / "models" / "ok-model").mkdir(parents=True)
    monkeypatch.chdir(victim)
    line = one_error(cli(*WRITERS[command]))
    assert line == (
        f"oomrec: error: {victim / 'benchmarks' / '.oom-record'}: benchmarks/.oom-record is a "
        f"symlink committed in the repository {victim} (to {home / '.bashrc'}); refusing to "
        "write through it; remove it (git rm) or pass --record FILE"
    )
    _untouched(home)


@pytest.mark.parametrize("side", [".oom-record.lock", ".oom-record.torn", ".oom-record.archive"])
def test_a_lock_torn_or_archive_symlink_committed_in_a_clone_is_refused(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch, side: str
) -> None:
    home = _home(tmp_path)
    victim = hostile_clone(tmp_path, links={f"benchmarks/{side}": str(home / ".bashrc")})
    monkeypatch.chdir(victim)
    # A torn last line of the victim's own record: the next writer would move it aside.
    (victim / "benchmarks" / ".oom-record").write_text(f"ok-model,1024,2026-07-03,{SHA},,x.csv\nm,")
    args = (
        ("record", "retract", "ok-model", "1024", "--reason", "typo")
        if side.endswith("archive")
        else ("record", "add", "ok-model", "2048")
    )
    line = one_error(cli(*args))
    assert f"benchmarks/{side} is a symlink committed in the repository {victim}" in line
    _untouched(home)


def test_a_dangling_committed_record_symlink_creates_no_file_outside(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = hostile_clone(tmp_path, links={"benchmarks/.oom-record": str(outside / "planted")})
    monkeypatch.chdir(victim)
    line = one_error(cli("record", "add", "ok-model", "2048"))
    assert "is a symlink committed in the repository" in line
    assert list(outside.iterdir()) == []


def test_a_committed_symlink_is_refused_even_when_named_on_the_command_line(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The user named the link, not its target: the clone chose where it points."""
    home = _home(tmp_path)
    victim = hostile_clone(tmp_path, links={"data/rec": str(home / ".bashrc")})
    monkeypatch.chdir(victim)
    line = one_error(cli("record", "add", "ok-model", "2048", "--record", "data/rec"))
    assert line.startswith("oomrec: error: data/rec: data/rec is a symlink committed in the ")
    _untouched(home)


def test_a_committed_symlinked_folder_is_refused(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = _home(tmp_path)
    victim = hostile_clone(tmp_path, links={"benchmarks": str(home)})
    monkeypatch.chdir(victim)
    line = one_error(cli("record", "add", "ok-model", "2048"))
    assert "benchmarks is a symlink committed in the repository" in line
    _untouched(home)


def test_a_record_path_the_clones_pyproject_sets_outside_it_is_refused_unless_the_user_names_it(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`[tool.oomrec] record` is the clone's text: it may not point outside the clone. The same
    path in $OOMREC_RECORD or --record is the user's choice, and is written."""
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = hostile_clone(
        tmp_path, {"pyproject.toml": '[tool.oomrec]\nrecord = "../outside/rec"\n'}
    )
    monkeypatch.chdir(victim)
    line = one_error(cli("record", "add", "ok-model", "2048"))
    assert line == (
        f"oomrec: error: {victim / '../outside/rec'}: resolves to {outside / 'rec'}, outside "
        f"the repository {victim}; refusing to write there; pass --record FILE naming the file "
        "to write there on purpose"
    )
    assert list(outside.iterdir()) == []
    assert cli("record", "add", "ok-model", "2048", "--record", str(outside / "rec")).exit_code == 0
    monkeypatch.setenv("OOMREC_RECORD", str(outside / "rec"))
    assert cli("record", "add", "ok-model", "4096").exit_code == 0
    assert len((outside / "rec").read_text().splitlines()) == 2


def test_a_lock_beside_a_named_record_may_not_lead_out_of_its_folder(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The user named the record; a symlink planted as its lock (untracked: outside any
    repository) is not theirs: the lock stays in the record's folder."""
    home = _home(tmp_path)
    data = tmp_path / "data"
    data.mkdir()
    (data / "rec.lock").symlink_to(home / ".bashrc")
    line = one_error(cli("record", "add", "ok-model", "2048", "--record", str(data / "rec")))
    assert f"resolves to {home / '.bashrc'}, outside the folder of the file named {data};" in line
    _untouched(home)


# ---------------------------------------------------------------------------------------------
# Git's files and oomrec's own are never a derived file's target.

CLONE_FILES = {
    "models/ok-model/.keep": "",
    "benchmarks/cuda_testhw_x.csv": f"{HEADER}\n{oom_row('ok-model', 1024)}\n",
}
SWEEP = ("sweep", "--models", "ok-model", "--lengths", "512", "--runner", "true {cell_csv}")


def _last_error(result: CliResult) -> str:
    """A sweep says its header first; a refusal is its last line, with nothing on stdout."""
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert result.stdout == ""
    return result.stderr.splitlines()[-1]


@pytest.mark.parametrize("target", [".git/config", ".git/hooks/pre-commit", "sub/../.git/HEAD"])
def test_a_file_of_git_is_never_the_sweeps_output_or_the_reports_page(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch, target: str
) -> None:
    victim = hostile_clone(tmp_path, CLONE_FILES)
    monkeypatch.chdir(victim)
    (victim / "sub").mkdir()
    before = {p: p.read_bytes() for p in (victim / ".git").rglob("*") if p.is_file()}
    line = _last_error(cli(*SWEEP, "--output", target))
    assert line == (
        f"oomrec: error: --output {target} is inside git's own folder (.git); writing the "
        "sweep's CSV there would overwrite git's files; pass another --output"
    )
    line = _last_error(cli("run", "ok-model", "512", "--output", target, "--", "true"))
    assert line.startswith(f"oomrec: error: --output {target} is inside git's own folder (.git)")
    line = one_error(cli("report", "--html", target))
    assert line == (
        f"oomrec: error: --html {target} is inside git's own folder (.git); writing the page "
        "there would overwrite git's files; pass another --html"
    )
    after = {p: p.read_bytes() for p in (victim / ".git").rglob("*") if p.is_file()}
    assert after == before


@pytest.mark.parametrize(
    "name", ["old.csv.oomrec.json", "old.csv.oomrec.json.journal", "old.csv.oomrec.lock"]
)
def test_a_sweeps_provenance_or_lock_file_is_never_an_output_or_a_page(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    victim = hostile_clone(tmp_path, CLONE_FILES)
    monkeypatch.chdir(victim)
    kept = victim / "benchmarks" / name
    kept.write_text('{"schema_version": 1, "cells": []}\n')
    target = f"benchmarks/{name}"
    assert _last_error(cli(*SWEEP, "--output", target)) == (
        f"oomrec: error: --output {target} is a sweep's provenance or lock file; writing the "
        "sweep's CSV there would wipe it; pass another --output"
    )
    assert one_error(cli("report", "--html", target)) == (
        f"oomrec: error: --html {target} is a sweep's provenance or lock file; writing the "
        "page there would wipe it; pass another --html"
    )
    assert kept.read_text() == '{"schema_version": 1, "cells": []}\n'
    assert sorted(p.name for p in kept.parent.iterdir()) == sorted([name, "cuda_testhw_x.csv"])


def test_an_output_the_clone_chose_stays_inside_it(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`[tool.oomrec] output` pointing out of the clone, or at a symlink committed there, is
    refused before anything is written (its lock included); --output is the user's own."""
    home = _home(tmp_path)
    victim = hostile_clone(
        tmp_path,
        {"models/ok-model/.keep": "", "pyproject.toml": '[tool.oomrec]\noutput = "out.csv"\n'},
        {"out.csv": str(home / ".bashrc")},
    )
    monkeypatch.chdir(victim)
    line = _last_error(cli(*SWEEP))
    assert line == (
        f"oomrec: error: {victim / 'out.csv'}: out.csv is a symlink committed in the repository "
        f"{victim} (to {home / '.bashrc'}); refusing to write through it; remove it (git rm) or "
        "pass --output FILE"
    )
    (victim / "pyproject.toml").write_text('[tool.oomrec]\noutput = "../home/sweep.csv"\n')
    line = _last_error(cli(*SWEEP))
    assert line.startswith(f"oomrec: error: {victim / '../home/sweep.csv'}: resolves to ")
    assert f"outside the repository {victim}; refusing to write there;" in line
    _untouched(home)
    done = cli(*SWEEP, "--output", str(home / "mine.csv"))
    assert done.exit_code == 0, done.stderr
    assert (home / "mine.csv").read_text().startswith("model,")


# ---------------------------------------------------------------------------------------------
# A derived file is replaced all or nothing.


def _frontier_csv(folder: Path, models: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    rows = [oom_row(f"model-{i}", 512 * (i % 7 + 1)) for i in range(models)]
    (folder / "cuda_testhw_x.csv").write_text("\n".join([HEADER, *rows]) + "\n")


def test_a_full_disk_leaves_the_previous_html_page_whole(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`report --html` on a 64 KiB tmpfs: a page that does not fit is one line and exit 2, and
    the page there before is still there, whole; no temp file is left beside it."""
    monkeypatch.chdir(tmp_path)
    _frontier_csv(tmp_path / "small", 2)
    _frontier_csv(tmp_path / "big", 60)
    with small_tmpfs(tmp_path / "disk", "64k") as disk:
        page = disk / "frontier.html"
        assert cli("report", "small", "--html", str(page), "--record", "rec").exit_code == 0
        before = page.read_bytes()
        assert b"model-1" in before and len(before) < 32 * 1024
        line = one_error(cli("report", "big", "--html", str(page), "--record", "rec"))
        assert line.startswith(f"oomrec: error: cannot write {page}: No space left on device")
        assert page.read_bytes() == before
        assert [p.name for p in disk.iterdir()] == ["frontier.html"]


def test_a_default_record_that_resolves_outside_the_repository_is_refused_unless_named(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not committed, yet not named by the user either: the default path leads out of the
    repository, so nothing is written there; naming it ($OOMREC_RECORD) is the user's choice."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    victim = hostile_clone(tmp_path)
    monkeypatch.chdir(victim)
    link = victim / "benchmarks" / ".oom-record"
    link.parent.mkdir()
    link.symlink_to(elsewhere / "rec")
    line = one_error(cli("record", "add", "ok-model", "2048"))
    assert line == (
        f"oomrec: error: {link}: resolves to {elsewhere / 'rec'}, outside the repository "
        f"{victim}; refusing to write there; pass --record FILE naming the file to write there "
        "on purpose"
    )
    assert list(elsewhere.iterdir()) == []
    monkeypatch.setenv("OOMREC_RECORD", str(link))
    assert cli("record", "add", "ok-model", "2048").exit_code == 0
    assert (elsewhere / "rec").read_text().startswith("ok-model,2048,")
