"""Reading a runner's cell CSV: the layout, special files, and only the cell's own rows."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oomrec.core.schema import HEADER_14, HEADER_15, split_row
from oomrec.sweep.cell.cellcsv import CellCsv, read_cell_csv, remove
from tests.profiles import examples

TAIL = '2026-07-03,hw,0.3.3,release,32,"Hello, how are you today?"'


def ok(model: str, length: int | str) -> str:
    return f"{model},./models/{model},{length},32,1.0,2.0,3.0,4.0,{TAIL},{length}"


def skipped(model: str, length: int | str, token: str, prompt: str = "") -> str:
    return f'{model},./models/{model},,,,,,,2026-07-03,,,,32,"{prompt}",{length},{token}'


def write(path: Path, text: str) -> Path:
    path.write_bytes(text.encode())
    return path


def test_the_layout_a_runner_writes(tmp_path: Path) -> None:
    path = tmp_path / "cell.csv"
    assert read_cell_csv(path, "m", 512) == CellCsv(None, ())
    write(path, "")
    assert read_cell_csv(path, "m", 512) == CellCsv(None, ())
    write(path, f"\ufeff{HEADER_15}\r\n{ok('m', 512)}\r\n\r\n{skipped('m', 512, 'FAIL:x')}")
    # Each line as written, its `\r` kept (copied to the aggregate unchanged); the harness
    # classifies the second line. A cell has one row: the first, none being a SKIP:oom.
    assert read_cell_csv(path, "m", 512) == CellCsv(
        HEADER_15 + "\r",
        (ok("m", 512) + "\r",),
        harness_row=ok("m", 512) + "\r",
        repeated=(skipped("m", 512, "FAIL:x"),),
    )
    write(path, HEADER_14 + "\n")
    assert read_cell_csv(path, "m", 512) == CellCsv(HEADER_14, ())


def test_only_the_cells_own_model_and_length_are_kept(tmp_path: Path) -> None:
    rows = [
        ok("m", 512),
        ok("other", 512),
        ok("m", 2048),
        skipped("m", 1, "SKIP:oom"),
        # Unescaped inner quotes, as the harness writes them: a CSV parser misreads the row.
        skipped("m", 512, "SKIP:oom", prompt='say "no, thanks" now'),
        skipped("m", 4096, "SKIP:oom", prompt='say "no, thanks" now'),
    ]
    path = write(tmp_path / "cell.csv", HEADER_15 + "\n" + "\n".join(rows) + "\n")
    cell = read_cell_csv(path, "m", 512)
    # One row of the cell: its SKIP:oom over its success row (the safe side).
    assert (cell.rows, cell.repeated) == ((rows[4],), (rows[0],))
    assert cell.dropped == (rows[1], rows[2], rows[3], rows[5])


def test_a_row_whose_length_cannot_be_checked_is_kept_once(tmp_path: Path) -> None:
    # An empty prompt_target_len, or no such column: the first row of the model is kept, since
    # dropping the runner's own SKIP:oom would miss an OOM.
    empty = [skipped("m", "", "SKIP:oom"), skipped("m", "", "FAIL:bench")]
    path = write(tmp_path / "a.csv", HEADER_15 + "\n" + "\n".join(empty) + "\n")
    assert read_cell_csv(path, "m", 512) == CellCsv(HEADER_15, (empty[0],), (empty[1],))
    v14 = [f"m,./models/m,,,,,,,{TAIL},FAIL:warmup", f"m,./models/m,,,,,,,{TAIL},SKIP:oom"]
    path = write(tmp_path / "b.csv", HEADER_14 + "\n" + "\n".join(v14) + "\n")
    assert read_cell_csv(path, "m", 512) == CellCsv(HEADER_14, (v14[0],), (v14[1],))


def test_special_files_are_not_read_and_never_block(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.csv"
    os.mkfifo(fifo)
    assert read_cell_csv(fifo, "m", 512).problem == (
        "the cell CSV is a FIFO, not a regular file; not read"
    )
    link = tmp_path / "zero.csv"
    link.symlink_to("/dev/zero")
    assert "a character device" in (read_cell_csv(link, "m", 512).problem or "")
    assert "a directory" in (read_cell_csv(tmp_path, "m", 512).problem or "")
    dangling = tmp_path / "dangling.csv"
    dangling.symlink_to(tmp_path / "nowhere")
    assert read_cell_csv(dangling, "m", 512) == CellCsv(None, ())


def test_remove_clears_whatever_the_runner_left(tmp_path: Path) -> None:
    (tmp_path / "dir" / "sub").mkdir(parents=True)
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "link").symlink_to(tmp_path / "dir")
    for name in ("dir", "fifo", "link", "missing"):
        remove(tmp_path / name)
    assert list(tmp_path.iterdir()) == []


def test_a_file_that_cannot_be_read_is_said_not_raised(tmp_path: Path) -> None:
    loop = tmp_path / "loop.csv"
    loop.symlink_to(loop)
    assert read_cell_csv(loop, "m", 512).problem == (
        "cannot open the cell CSV (Too many levels of symbolic links); not read"
    )
    kmsg = Path("/proc/kmsg")
    if kmsg.exists():
        # A regular file by its type whose non-blocking read fails (EAGAIN) or is refused.
        link = tmp_path / "kmsg.csv"
        link.symlink_to(kmsg)
        problem = read_cell_csv(link, "m", 512).problem or ""
        assert problem.startswith("cannot "), problem


@settings(max_examples=examples(100), deadline=None)
@given(content=st.binary(max_size=400) | st.text(alphabet=',"\r\n m512ab', max_size=200))
def test_any_content_reads_without_raising_and_keeps_only_the_models_rows(
    tmp_path_factory: pytest.TempPathFactory, content: bytes | str
) -> None:
    data = content if isinstance(content, bytes) else content.encode()
    path = tmp_path_factory.mktemp("cell") / "cell.csv"
    path.write_bytes(HEADER_15.encode() + b"\n" + data)
    cell = read_cell_csv(path, "m", 512)
    assert cell.problem is None
    for row in cell.rows:
        assert split_row(row)[0].strip() == "m"
