"""The resume state read as untrusted: any provenance file (generated types, depths, sizes) and
special files give a Prior or one OomrecError, never a traceback or a hang; an entry counts only
for the row it describes; a torn last CSV row is moved aside."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oomrec.core.errors import OomrecError
from oomrec.core.schema import HEADER_15
from oomrec.sweep import resume
from tests.conftest import CliResult
from tests.gitrepo import Repo
from tests.profiles import examples

Cli = Callable[..., CliResult]
TAIL = '2026-07-03,hw,0.3.3,release,32,"Hi, you",'


def ok_row(model: str, length: int) -> str:
    return f"{model},./models/{model},{length},32,1.0,2.0,3.0,4.0,{TAIL}{length}"


def oom_row(model: str, length: int) -> str:
    return f"{model},./models/{model},,,,,,,{TAIL}{length},SKIP:oom"


def entry(model: str, length: object, token: str, row: str, **more: object) -> dict:
    return {"model": model, "length": length, "token": token, "row": row, "commit": "c" * 40,
            "runner": "r", **more}  # fmt: skip


def write_state(folder: Path, rows: list[str], cells: object) -> Path:
    csv_path = folder / "out.csv"
    csv_path.write_text(HEADER_15 + "\n" + "".join(r + "\n" for r in rows))
    resume.sidecar_path(csv_path).write_text(
        json.dumps({"schema_version": 1, "cells": cells}), encoding="utf-8"
    )
    return csv_path


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=20,
)
_value = st.one_of(_json, st.sampled_from(["a", "512", 512, -1, 2**70, True, None, ["a"]]))
_item = st.fixed_dictionaries(
    {},
    optional=dict.fromkeys(
        ("model", "length", "token", "row", "commit", "runner", "hardware", "mem_bytes", "x"),
        _value,
    ),
)


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cells=st.one_of(_json, st.lists(st.one_of(_item, _json), max_size=6)))
def test_any_provenance_file_gives_a_prior_or_one_error(cells: object) -> None:
    rows = [ok_row("a", 512), oom_row("a", 2048)]
    with tempfile.TemporaryDirectory() as tmp:
        try:
            prior = resume.load(write_state(Path(tmp), rows, cells))
        except OomrecError as exc:
            assert "\n" not in str(exc)
            return
    for (model, length), found in prior.entries.items():
        assert type(found.length) is int and isinstance(found.row, str)
        assert (model, length) == (found.model, found.length)
        assert found.row in rows and found.row.startswith(f"{model},")
        assert f",{length}" in found.row


def test_deep_nesting_huge_and_special_files_are_one_error_each(tmp_path: Path) -> None:
    csv_path = write_state(tmp_path, [ok_row("a", 512)], [])
    side = resume.sidecar_path(csv_path)
    side.write_text('{"schema_version": 1, "cells": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(OomrecError, match="nested too deep"):
        resume.load(csv_path)
    side.unlink()
    os.mkfifo(side)
    with pytest.raises(OomrecError, match="is a FIFO, not a regular file"):
        resume.load(csv_path)
    side.unlink()
    side.symlink_to("/dev/zero")
    with pytest.raises(OomrecError, match="not a regular file"):
        resume.load(csv_path)
    side.unlink()
    csv_path.unlink()
    os.mkfifo(csv_path)
    with pytest.raises(OomrecError, match="is a FIFO, not a regular file"):
        resume.load(csv_path)


def test_an_entry_counts_only_for_the_row_it_describes(tmp_path: Path) -> None:
    """One entry copied onto another cell's row (or with its length as a string) never makes
    a cell that did not run count as done."""
    row = ok_row("a", 512)
    cells = [
        entry("a", 512, "ok", row),
        entry("b", 2048, "ok", ok_row("a", 512)),
        entry("c", "512", "ok", ok_row("c", 512)),
        entry("d", 512, "SKIP:oom", ok_row("d", 512)),
    ]
    rows = [row, ok_row("c", 512), ok_row("d", 512)]
    prior = resume.load(write_state(tmp_path, rows, cells))
    assert set(prior.entries) == {("a", 512)}
    now = resume.Provenance("c" * 40, "r")
    assert resume.prior_cell(prior, "b", 2048, now) is None
    # c's and d's rows are known rows without provenance: they run again.
    for model in ("c", "d"):
        found = resume.prior_cell(prior, model, 512, now)
        assert found is not None and not found.done, model


def test_a_torn_last_row_is_moved_aside_not_kept(tmp_path: Path) -> None:
    csv_path = tmp_path / "out.csv"
    csv_path.write_text(f"{HEADER_15}\n{ok_row('a', 512)}\nb,./models/b,,,,,,,2026-07")
    prior = resume.load(csv_path)
    assert prior.rows == [ok_row("a", 512)]
    torn = tmp_path / "out.csv.torn"
    assert torn.read_text() == "b,./models/b,,,,,,,2026-07\n"


def test_resume_dry_run_refuses_a_fifo_output_at_once(cli: Cli, repo: Repo, tmp_path: Path) -> None:
    (repo.path / "models" / "a").mkdir(parents=True)
    fifo = tmp_path / "out.csv"
    os.mkfifo(fifo)
    done = subprocess.run(
        [sys.executable, "-m", "oomrec", "sweep", "--models", "a", "--lengths", "512",
         "--runner", "true", "--output", str(fifo), "--resume", "--dry-run"],
        cwd=repo.path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2
    assert "not a regular file" in done.stderr.splitlines()[-1]


def test_the_journal_holds_each_cell_until_the_sweep_folds_it_in(tmp_path: Path) -> None:
    """Each cell's entry is one appended journal line (no rewrite of the whole file per cell);
    a reader sees base and journal alike, a torn last journal line is no entry, and the end of
    the sweep folds the journal into the file."""
    csv_path = tmp_path / "out.csv"
    rows = [ok_row("a", 512), ok_row("a", 2048), oom_row("b", 512)]
    csv_path.write_text(HEADER_15 + "\n" + "".join(r + "\n" for r in rows))
    kept = resume.Entry("a", 512, "ok", rows[0], "c" * 40, "r")
    side = resume.Sidecar(csv_path, [kept])
    journal = tmp_path / "out.csv.oomrec.json.journal"
    assert not journal.exists()
    side.add([resume.Entry("a", 2048, "ok", rows[1], "c" * 40, "r")])
    side.add([resume.Entry("b", 512, "SKIP:oom", rows[2], "c" * 40, "r")])
    assert len(journal.read_text().splitlines()) == 2
    base = json.loads(resume.sidecar_path(csv_path).read_text())
    assert [c["length"] for c in base["cells"]] == [512]
    # A sweep killed here, mid-write of a third entry.
    with journal.open("a") as out:
        out.write('{"model": "c", "length": 5')
    prior = resume.load(csv_path)
    assert set(prior.entries) == {("a", 512), ("a", 2048), ("b", 512)}
    assert set(resume.measured_on(csv_path)) == {("a", 512), ("a", 2048), ("b", 512)}
    side.close()
    assert not journal.exists()
    cells = json.loads(resume.sidecar_path(csv_path).read_text())["cells"]
    assert [(c["model"], c["length"]) for c in cells] == [("a", 512), ("a", 2048), ("b", 512)]


def test_a_lock_taken_before_its_holder_wrote_its_name_is_still_one_line(tmp_path: Path) -> None:
    """The other sweep holds the lock but has not written its pid yet (an empty lock file)."""
    import fcntl

    from oomrec.sweep import outlock

    csv_path = tmp_path / "out.csv"
    held = os.open(outlock.lock_path(csv_path), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(held, fcntl.LOCK_EX)
        with pytest.raises(OomrecError, match=r"another sweep is writing it \(its holder is not"):
            outlock.acquire(csv_path)
    finally:
        os.close(held)
    taken = outlock.acquire(csv_path)
    assert taken is not None
    assert outlock.lock_path(csv_path).read_text().startswith(f"pid {os.getpid()} on ")
    taken.release()
