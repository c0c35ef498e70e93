"""oomrec means each line, flag and file as the bash harness (scripts/bench_longprompt.sh) does,
and where the two still differ it takes the safe side and says so: each case runs oomrec's sweep
through the CLI on a real work dir and compares its record file and CSVs with what the harness
would leave (its reader transcribed in tests/test_harness_records.py)."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from oomrec.core import hardware

from tests.conftest import CliResult
from tests.gitrepo import Repo
from tests.helpers import TODAY
from tests.scripted_runner import Runner
from tests.test_harness_records import harness_plan, oomrec_plan
from tests.test_sweep import sweep

Cli = Callable[..., CliResult]


def _record(repo: Repo, text: str) -> Path:
    path = repo.path / "benchmarks" / ".oom-record"
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    return path


# --- a record's length with a leading zero ---------------------------------------------------


def test_an_octal_looking_length_covers_the_smaller_reading(
    cli: Cli, repo: Repo, runner: Runner, models: Callable[..., None]
) -> None:
    """`0512` is 330 to the harness (bash arithmetic) and 512 as written: no cell either tool
    would skip is launched, and the sweep says which reading it took."""
    models("plain-8b")
    record = _record(repo, "plain-8b,0512,2026-07-03,abc1234,,benchmarks/old.csv\n")
    lengths = [256, 330, 400, 512, 2048]
    ours, warnings = oomrec_plan(cli, ["plain-8b"], lengths)
    theirs = harness_plan(record, ["plain-8b"], lengths)
    assert theirs == {"plain-8b:330", "plain-8b:400", "plain-8b:512", "plain-8b:2048"}
    assert ours == theirs
    assert len(warnings) == 1 and "octal (0512 is 330)" in warnings[0]
    # A real sweep launches only the cell below both readings, and keeps the record as it was.
    result = sweep(cli, runner, "--models", "plain-8b", "--lengths", "256 400 512")
    assert result.exit_code == 0, result.stderr
    assert runner.launched() == ["plain-8b:256"]
    assert record.read_text() == "plain-8b,0512,2026-07-03,abc1234,,benchmarks/old.csv\n"

    # `0980` is an error to bash (no octal 8 or 9): the harness honours nothing, oomrec the
    # length as written (the safe side), and says the harness would not.
    record.write_text("plain-8b,0980,2026-07-03,abc1234,,benchmarks/old.csv\n")
    ours, warnings = oomrec_plan(cli, ["plain-8b"], [512, 980, 2048])
    assert harness_plan(record, ["plain-8b"], [512, 980, 2048]) == set()
    assert ours == {"plain-8b:980", "plain-8b:2048"}
    assert len(warnings) == 1 and "would not honour this line" in warnings[0]


# --- the default CSV name ----------------------------------------------------------------------

NVIDIA_SMI = """#!/bin/sh
# As nvidia-smi on an H200 host: its bare call succeeds, the name query prints the GPU's name.
case "$1" in
  --query-gpu=name) echo "NVIDIA H200" ;;
  --query-gpu=memory.total) echo "143771" ;;
  *) echo "NVIDIA-SMI 550.54" ;;
esac
"""


def _path_with(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, nvidia: bool) -> None:
    """PATH as on a host with (or without) an NVIDIA GPU: a real `nvidia-smi` executable, or
    none anywhere on PATH."""
    fake = tmp_path / "bin"
    fake.mkdir(exist_ok=True)
    for tool in ("git", "sh", "bash", "env", "sysctl", "uname"):
        found = shutil.which(tool)
        if found and not (fake / tool).exists():
            (fake / tool).symlink_to(found)
    if nvidia:
        (fake / "nvidia-smi").write_text(NVIDIA_SMI)
        (fake / "nvidia-smi").chmod(0o755)
    monkeypatch.setenv("PATH", str(fake))


@pytest.mark.parametrize(
    ("nvidia", "name"),
    [(True, "cuda_nvidia_h200_longprompt"), (False, "metal__longprompt")],
)
def test_the_default_csv_is_named_as_the_harness_names_it(
    cli: Cli,
    repo: Repo,
    runner: Runner,
    models: Callable[..., None],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    nvidia: bool,
    name: str,
) -> None:
    """bench_longprompt.sh names its CSV `{backend}_{hw}_longprompt_{date}.csv` from
    `nvidia-smi` (`cuda`, the GPU's name lowercased), else `metal` and an empty hw; a record
    keeps oomrec's short tag."""
    models("plain-8b")
    _path_with(monkeypatch, tmp_path, nvidia)
    runner.behave({"plain-8b:2048": "exit:1:std::bad_alloc"})
    try:
        result = cli("sweep", "--runner", f"{sys.executable} {runner.template}",
                     "--models", "plain-8b", "--lengths", "512 2048")  # fmt: skip
    finally:
        hardware._probe.cache_clear()
    assert result.exit_code == 0, result.stderr
    expected = f"benchmarks/{name}_{TODAY}.csv"
    assert [p.name for p in (repo.path / "benchmarks").glob("*.csv")] == [Path(expected).name]
    rows = (repo.path / expected).read_text().splitlines()
    assert [row.rsplit(",", 1)[-1] for row in rows[1:]] == ["512", "SKIP:oom"]
    # The record names that CSV and keeps the short tag.
    record = (repo.path / "benchmarks" / ".oom-record").read_text()
    assert record.endswith(f",{expected},testhw\n")


def test_oomrec_backend_names_the_csv_backend(
    cli: Cli,
    repo: Repo,
    runner: Runner,
    models: Callable[..., None],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    models("plain-8b")
    _path_with(monkeypatch, tmp_path, nvidia=False)
    monkeypatch.setenv("OOMREC_BACKEND", "rocm")
    result = cli("sweep", "--runner", f"{sys.executable} {runner.template}",
                 "--models", "plain-8b", "--lengths", "512")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert (repo.path / "benchmarks" / f"rocm__longprompt_{TODAY}.csv").exists()
