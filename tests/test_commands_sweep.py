"""The sweep as a library verb: called without the CLI, against a real repository and real
runner processes, it returns what it did and prints nothing."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from oomrec.commands.sweep import SweepOptions, SweepOutcome, dry_run, prepare, sweep
from oomrec.core.errors import OomrecError
from oomrec.sweep.grid import CellResult
from oomrec.sweep.planner import Cell
from tests.gitrepo import Repo

# Exits 1 with an OOM message for one length, else exits 0; given no {cell_csv}, it writes no
# row, so a clean exit is its result (ok).
RUNNER = """#!/bin/sh
[ "$2" = "{oom}" ] && {{ echo "CUDA out of memory. Tried to allocate 2 GiB" >&2; exit 1; }}
exit 0
"""


@pytest.fixture
def runner(tmp_path: Path) -> Callable[[int], str]:
    def make(oom_length: int) -> str:
        script = tmp_path / "runner.sh"
        script.write_text(RUNNER.format(oom=oom_length))
        script.chmod(0o755)
        return f"{script} {{model}} {{length}}"

    return make


def options(runner: str, **more: object) -> SweepOptions:
    given: dict[str, object] = {"models": ["a", "b"], "lengths": [512, 2048, 8192], **more}
    return SweepOptions(runner=runner, output=Path("out.csv"), **given)  # type: ignore[arg-type]


def test_a_sweep_returns_its_cells_records_and_json_and_prints_nothing(
    repo: Repo, runner: Callable[[int], str], capfd: pytest.CaptureFixture[str]
) -> None:
    (repo.path / "models" / "a").mkdir(parents=True)
    (repo.path / "models" / "b").mkdir()
    outcome = sweep(options(runner(2048)))
    assert [(r.cell.model, r.cell.length, r.token) for r in outcome.result.results] == [
        ("a", 512, "ok"),
        ("a", 2048, "SKIP:oom"),
        ("a", 8192, "SKIP:oom_backstop"),
        ("b", 512, "ok"),
        ("b", 2048, "SKIP:oom"),
        ("b", 8192, "SKIP:oom_backstop"),
    ]
    assert [line.split(",")[:2] for line in outcome.new_records()] == [["a", "2048"], ["b", "2048"]]
    data = outcome.to_json()
    assert data["schema_version"] == 2 and data["dry_run"] is False
    assert data["totals"] == {"ok": 2, "SKIP:oom": 2, "SKIP:oom_backstop": 2}
    assert capfd.readouterr() == ("", "")
    # The next plan reads the records just written: a dry run, again printing nothing.
    planned = dry_run(options(runner(2048)))
    assert [(c["model"], c["length"], c["verdict"]) for c in planned.to_json()["cells"]] == [
        ("a", 512, "run"),
        ("a", 2048, "SKIP:oom_record"),
        ("a", 8192, "SKIP:oom_record"),
        ("b", 512, "run"),
        ("b", 2048, "SKIP:oom_record"),
        ("b", 8192, "SKIP:oom_record"),
    ]
    assert set(planned.to_json()) == set(data)
    assert capfd.readouterr() == ("", "")


def test_a_reporter_hears_each_cell_as_it_ends(repo: Repo, runner: Callable[[int], str]) -> None:
    (repo.path / "models" / "a").mkdir(parents=True)
    heard: list[str] = []

    class Ears:
        def log(self, message: str) -> None:
            heard.append(f"log {message}")

        def cell_started(self, done: int, cell: Cell) -> None:
            heard.append(f"start {cell.length}")

        def cell_done(self, done: int, result: CellResult) -> None:
            heard.append(f"done {done} {result.token}")

    prepared = prepare(options(runner(512), models=["a"], lengths=[512, 2048]))
    assert prepared.warnings == []
    prepared.run(Ears())
    assert heard == ["start 512", "done 1 SKIP:oom", "start 2048", "done 2 SKIP:oom_backstop"]


def test_nothing_to_run_is_an_error_unless_allowed(
    repo: Repo, runner: Callable[[int], str]
) -> None:
    (repo.path / "models").mkdir()
    with pytest.raises(OomrecError, match=r"every model is missing under \./models"):
        sweep(options(runner(512)))
    outcome = sweep(options(runner(512), allow_empty=True))
    assert outcome.result.results == [] and outcome.plan.missing == ("a", "b")


def test_a_sweep_runs_from_a_thread_that_is_not_the_main_one(
    repo: Repo, runner: Callable[[int], str]
) -> None:
    """A library caller (a GUI, a server) may sweep from a worker thread, where Python allows no
    signal handler: the sweep runs and records as from the main thread."""
    (repo.path / "models" / "a").mkdir(parents=True)
    done: list[SweepOutcome] = []
    failed: list[BaseException] = []

    def work() -> None:
        try:
            done.append(sweep(options(runner(2048), models=["a"])))
        except BaseException as exc:  # the test reports it, in the main thread
            failed.append(exc)

    worker = threading.Thread(target=work)
    worker.start()
    worker.join(timeout=60)
    assert failed == []
    assert [r.token for r in done[0].result.results] == [
        "ok",
        "SKIP:oom",
        "SKIP:oom_backstop",
    ]
    assert len(done[0].new_records()) == 1
