from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests import profiles  # noqa: F401  (loads the hypothesis profile)
from tests.gitrepo import IDENTITY, History, Repo, build_history
from tests.scripted_runner import Runner

SHARED_CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "mlxcel-benchmarks"


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Every test gets a git identity, a fixed hardware tag and no inherited oomrec settings."""
    for key, value in IDENTITY.items():
        monkeypatch.setenv(key, value)
    # No user or system git config: CI's fresh machine has none either.
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "no-gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("OOMREC_HARDWARE", "testhw")
    # Records carry no memory size unless a test says so: lines stay the same on every machine.
    monkeypatch.setenv("OOMREC_MEM_BYTES", "unknown")
    for name in (
        "OOMREC_RECORD",
        "OOMREC_IGNORE_RECORD",
        "MLXCEL_BENCH_IGNORE_OOM_RECORD",
        "MLXCEL_BENCH_FAKE_OOM",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("COLUMNS", "200")


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Repo:
    """A real git repository with one commit; the cwd is its top level."""
    r = Repo(tmp_path / "repo")
    r.commit("initial commit")
    # As after oomrec's first write there (oomrec/store/exclude.py): tests of the notice make
    # their own.
    (r.path / ".git" / "info").mkdir(exist_ok=True)
    with (r.path / ".git" / "info" / "exclude").open("a") as exclude:
        exclude.write("/benchmarks/.oom-record\n/benchmarks/.oom-record.*\n")
    monkeypatch.chdir(r.path)
    return r


@dataclass
class CliResult:
    exit_code: int
    stdout: str
    stderr: str


@pytest.fixture
def cli() -> Iterator[Callable[..., CliResult]]:
    """Run oomrec in-process through Typer's CliRunner, stdout and stderr apart."""
    from oomrec.cli import app

    runner = CliRunner()

    def run(*args: str, input: str | None = None) -> CliResult:
        result = runner.invoke(app, list(args), input=input, catch_exceptions=False)
        return CliResult(result.exit_code, result.stdout, result.stderr)

    yield run


@pytest.fixture
def history(repo: Repo) -> History:
    """main: base - pre - fix - post; `side` never merges the fix; `feat` merges it."""
    return build_history(repo)


@pytest.fixture
def record(repo: Repo) -> Path:
    """Where the record lives in `repo` by default (its folder exists, the file does not)."""
    path = repo.path / "benchmarks" / ".oom-record"
    path.parent.mkdir()
    return path


@pytest.fixture
def runner(tmp_path: Path) -> Runner:
    """The scripted runner (tests/scripted_runner.py), in its own folder outside the repo."""
    return Runner(tmp_path / "runner")


@pytest.fixture
def models(repo: Repo) -> Callable[..., None]:
    """Makes model directories under `repo`'s ./models."""

    def make(*names: str) -> None:
        for name in names:
            (repo.path / "models" / name).mkdir(parents=True, exist_ok=True)

    return make
