"""`record retract`: a mistaken record taken back (archived with its reason, never deleted),
locally and, through `record push`, on every host that shares it; `record restore
--retracted` undoes it everywhere."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import CliResult
from tests.gitrepo import Repo
from tests.helpers import dry_run_verdicts
from tests.test_shared import Fleet, fleet  # noqa: F401  (the fixture)

Cli = Callable[..., CliResult]


def _plan(cli: Cli, root: Path, models: str = "llama", lengths: str = "256 512 2048") -> list[str]:
    return dry_run_verdicts(cli, root, models=models, lengths=lengths)[1]


@pytest.fixture
def llama(repo: Repo) -> Repo:
    (repo.path / "models" / "llama").mkdir(parents=True)
    return repo


def test_a_wrong_record_is_retracted_with_its_reason_and_restored(llama: Repo, cli: Cli) -> None:
    assert cli("record", "add", "llama", "512").exit_code == 0
    assert _plan(cli, llama.path) == ["run", "SKIP:oom_record", "SKIP:oom_record"]
    result = cli("record", "retract", "llama", "512", "--reason", "typo: meant 5120")
    assert result.exit_code == 0, result.stderr
    assert "retracted 1 record (typo: meant 5120)" in result.stdout
    assert "undo with: oomrec record restore --retracted" in result.stdout
    assert _plan(cli, llama.path) == ["run", "run", "run"]
    # Never deleted: the archive has it with the reason, and list --archived shows it.
    archive = (llama.path / "benchmarks" / ".oom-record.archive").read_text()
    assert " retracted:typo%3A%20meant%205120 llama,512," in archive
    listed = json.loads(cli("record", "list", "--archived", "--json").stdout)["records"]
    assert [(r["model"], r["retracted"]) for r in listed] == [("llama", "typo: meant 5120")]
    assert listed[0]["status"] == "retracted: typo: meant 5120"
    shown = cli("record", "list", "--archived")
    assert "retracted: typo: meant 5120" in shown.stdout
    # A plain restore brings back what applies again at HEAD: a retracted record applies (it
    # was a mistake, nothing fixed it), and it stays retracted.
    plain = cli("record", "restore", "--json")
    assert json.loads(plain.stdout)["restored"] == 0
    assert _plan(cli, llama.path) == ["run", "run", "run"]
    back = cli("record", "restore", "--retracted", "--json")
    assert back.exit_code == 0, back.stderr
    assert json.loads(back.stdout)["restored"] == 1
    assert _plan(cli, llama.path) == ["run", "SKIP:oom_record", "SKIP:oom_record"]
    assert (llama.path / "benchmarks" / ".oom-record").read_text().count("llama,512,") == 1
    # Retracted again later: the latest event decides.
    cli("record", "retract", "llama", "512", "--reason", "again")
    assert _plan(cli, llama.path) == ["run", "run", "run"]


def test_retract_takes_only_the_cell_and_the_hardware_asked_for(llama: Repo, cli: Cli) -> None:
    cli("record", "add", "llama", "512", "--hardware", "gb10")
    cli("record", "add", "llama", "512", "--hardware", "h100")
    cli("record", "add", "llama", "2048", "--hardware", "gb10")
    result = cli(
        "record", "retract", "llama", "512", "--hardware", "gb10", "--reason", "x", "--json"
    )
    assert result.exit_code == 0, result.stderr
    body = json.loads(result.stdout)
    assert body["retracted"] == 1
    assert [r["entry"]["hardware"] for r in body["records"]] == ["gb10"]
    left = (llama.path / "benchmarks" / ".oom-record").read_text().splitlines()
    assert [line.split(",")[1] + "/" + line.split(",")[6] for line in left] == [
        "512/h100",
        "2048/gb10",
    ]


def test_a_dry_run_changes_nothing(llama: Repo, cli: Cli) -> None:
    cli("record", "add", "llama", "512")
    record = llama.path / "benchmarks" / ".oom-record"
    before = record.read_bytes()
    result = cli("record", "retract", "llama", "512", "--reason", "x", "--dry-run")
    assert result.exit_code == 0
    assert "dry run: would retract 1 record" in result.stdout
    assert record.read_bytes() == before
    assert not (llama.path / "benchmarks" / ".oom-record.archive").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["llama", "512", "--reason", "  "], "--reason is empty"),
        (["llama", "5x2", "--reason", "x"], "5x2"),
        (["llama", "512"], "--reason"),
    ],
    ids=["empty-reason", "bad-length", "no-reason"],
)
def test_bad_input_is_one_line_and_exit_2(
    llama: Repo, cli: Cli, args: list[str], message: str
) -> None:
    result = cli("record", "retract", *args)
    assert result.exit_code == 2
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr


def test_nothing_to_retract_is_said(llama: Repo, cli: Cli) -> None:
    result = cli("record", "retract", "llama", "512", "--reason", "x")
    assert result.exit_code == 0
    assert "no record of llama at 512 tokens" in result.stderr


def test_a_retraction_pushed_by_a_stops_b_applying_and_a_restore_undoes_it(
    fleet: Fleet,  # noqa: F811
    cli: Cli,
) -> None:
    fleet.on("A")
    assert cli("record", "add", "gemma-4-31b", "8192").exit_code == 0
    assert cli("record", "push").exit_code == 0
    fleet.on("B")
    cli("remote", "setup")
    cli("record", "pull")
    assert fleet.plan("B") == ["run", "SKIP:oom_record"]
    # A takes it back and publishes that.
    fleet.on("A")
    retracted = cli("record", "retract", "gemma-4-31b", "8192", "--reason", "host was broken")
    assert retracted.exit_code == 0, retracted.stderr
    pushed = cli("record", "push")
    assert pushed.exit_code == 0, pushed.stderr
    fleet.on("B")
    assert cli("record", "pull").exit_code == 0
    assert fleet.plan("B") == ["run", "run"]
    assert json.loads(cli("record", "list", "--json").stdout)["records"] == []
    # Undone on A, published: B applies it again.
    fleet.on("A")
    assert cli("record", "restore", "--retracted").exit_code == 0
    assert cli("record", "push").exit_code == 0
    fleet.on("B")
    cli("record", "pull")
    assert fleet.plan("B") == ["run", "SKIP:oom_record"]


def test_b_retracts_a_shared_record_of_a_and_publishes_it(
    fleet: Fleet,  # noqa: F811
    cli: Cli,
) -> None:
    fleet.on("A")
    cli("record", "add", "gemma-4-31b", "8192")
    cli("record", "push")
    for host in ("B", "A2"):
        fleet.on(host)
        cli("remote", "setup")
        cli("record", "pull")
    fleet.on("B")
    result = cli("record", "retract", "gemma-4-31b", "8192", "--reason", "A's driver", "--json")
    assert result.exit_code == 0, result.stderr
    assert [r["from"] for r in json.loads(result.stdout)["records"]] == ["notes"]
    assert fleet.plan("B") == ["run", "run"]
    pushed = cli("record", "push")
    assert pushed.exit_code == 0, pushed.stderr
    # Another clone of A's kind takes B's retraction of A's record only from an admin host.
    assert fleet.plan("A2") == ["run", "SKIP:oom_record"]
    a2 = fleet.on("A2")
    cli("record", "pull")
    assert fleet.plan("A2") == ["run", "SKIP:oom_record"]
    (a2 / "pyproject.toml").write_text('[tool.oomrec]\nadmin_hosts = ["gb10-b"]\n')
    assert fleet.plan("A2") == ["run", "run"]


def test_a_retraction_stamped_in_the_future_hides_nothing(
    fleet: Fleet,  # noqa: F811
    cli: Cli,
) -> None:
    """Any machine may push notes, into A's own ref too: a retraction stamped 9999 there
    would beat every restore (stamped now) and hide A's record on every other host for good.
    One no clock could have written (over a day ahead) is left out with a warning; the record
    applies."""
    from tests.gitrepo import git

    fleet.on("A")
    assert cli("record", "add", "gemma-4-31b", "8192").exit_code == 0
    assert cli("record", "push").exit_code == 0
    rogue = fleet.clone("rogue")
    ref = "refs/notes/oomrec/gb10-a"
    git(rogue, "fetch", "-q", "origin", f"+{ref}:{ref}")
    (shown,) = [line for line in git(rogue, "notes", f"--ref={ref}", "list").splitlines()]
    commit = shown.split()[1]
    text = git(rogue, "notes", f"--ref={ref}", "show", commit)
    line = next(x for x in text.splitlines() if x.startswith("gemma-4-31b,"))
    git(rogue, "notes", f"--ref={ref}", "add", "-f", "-m",
        f"{text.strip()}\noomrec-retracted 9999-12-31T23:59:59Z x {line}", commit)  # fmt: skip
    git(rogue, "push", "-q", "origin", f"{ref}:{ref}")
    fleet.on("B")
    cli("remote", "setup")
    assert cli("record", "pull").exit_code == 0
    assert fleet.plan("B") == ["run", "SKIP:oom_record"]
    listed = cli("record", "list")
    assert "stamped in the future (the first: 9999-12-31T23:59:59Z)" in listed.stderr
