"""The report's scan kept in parts (report/scanparts.py): after any sequence of changes to a
folder of CSVs (files written, rewritten with their mtime set back, removed, linked twice,
committed), the scan made from the kept parts and a fold of what changed equals a fresh scan
of every file; provenance written beside a kept file makes it stale. Real files, real links,
real git; no cache is faked."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from oomrec.report import scanparts
from oomrec.report.folded import Scan
from oomrec.report.scan import scan_csvs
from tests.profiles import examples
from tests.test_import_hostile import _H15
from tests.test_report_scan import csv_file

SLOTS = 5
WHAT = ["write", "write", "write", "rewrite", "remove", "link", "hardlink", "unlink"]


@st.composite
def cell_rows(draw: st.DrawFn) -> bytes:
    """A file of rows of a few cells (two models, two lengths, two machines), their dates and
    tokens varied: files whose parts fold the same cells, their rows tied by date or not."""
    lines = ["model,prompt_target_len,date,hardware,commit"]
    for _ in range(draw(st.integers(1, 4))):
        fields = [
            draw(st.sampled_from(["m-4bit", "n-4bit"])),
            draw(st.sampled_from(["512", "2048"])),
            draw(st.sampled_from(["2026-07-03", "2026-07-04", "", "9999-12-31"])),
            draw(st.sampled_from(["NVIDIA_GB10_CUDA13.0_122GB", "Apple_M1_Ultra_128GB"])),
            draw(st.sampled_from(["abc1234", "def5678", ""])),
        ]
        lines.append(",".join(fields) + draw(st.sampled_from(["", "", ",SKIP:oom", ",FAIL:x"])))
    return ("\n".join(lines) + "\n").encode()


@st.composite
def changes(draw: st.DrawFn) -> list[tuple[str, int, bytes]]:
    """Changes to the file slots: (what, which slot, content); now and then a hostile file."""
    content = st.one_of(cell_rows(), cell_rows(), cell_rows(), csv_file())
    op = st.tuples(st.sampled_from(WHAT), st.integers(0, SLOTS - 1), content)
    return draw(st.lists(op, min_size=1, max_size=12))


def kept_and_fresh(folder: Path, cache: Path) -> tuple[Scan, Scan]:
    # The parts alone decide what is read: they are kept under the files' signatures.
    kept = scan_csvs([folder], folder, keep_in=cache)
    return kept, scan_csvs([folder], folder)


def parts_in(cache: Path) -> list[Path]:
    folder = cache / "report-parts"
    return sorted(folder.iterdir()) if folder.is_dir() else []


def _rows(*days: str) -> bytes:
    rows = "".join(f"m-4bit,512,{day},NVIDIA_GB10_CUDA13.0_122GB,abc1234\n" for day in days)
    return b"model,prompt_target_len,date,hardware,commit\n" + rows.encode()


@settings(max_examples=examples(15))
@given(changes())
# Rows of one cell in two files, kept in two parts: tied by date (the earlier file wins), the
# later file later or earlier, undated against dated, undated against undated.
@example([("write", 0, _rows("2026-07-03")), ("write", 1, _rows("2026-07-03"))])
@example([("write", 1, _rows("2026-07-03")), ("write", 0, _rows("2026-07-03"))])
@example([("write", 0, _rows("2026-07-03")), ("write", 1, _rows("2026-07-04", "2026-07-02"))])
@example([("write", 1, _rows("2026-07-03")), ("write", 0, _rows("2026-07-04", "2026-07-02"))])
@example([("write", 1, _rows("", "2026-07-03")), ("write", 0, _rows("")), ("write", 2, _rows(""))])
def test_a_scan_from_kept_parts_is_a_fresh_scan(ops: list[tuple[str, int, bytes]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder, cache = Path(tmp) / "csvs", Path(tmp) / "cache"
        folder.mkdir()
        for what, slot, data in ops:
            path = folder / f"f{slot}.csv"
            link = folder / f"link{slot}.csv"
            if what in ("write", "rewrite") and (what == "write" or path.exists()):
                old = path.stat() if path.exists() else None
                path.write_bytes(data)
                if old is not None and what == "rewrite":
                    os.utime(path, ns=(old.st_atime_ns, old.st_mtime_ns))
            elif what == "remove" and path.exists():
                path.unlink()
            elif what in ("link", "hardlink") and path.exists() and not link.exists():
                if what == "link":
                    link.symlink_to(path.name)
                else:
                    os.link(path, link)
            elif what == "unlink" and os.path.lexists(link):
                link.unlink()
            kept, fresh = kept_and_fresh(folder, cache)
            assert kept == fresh, (what, slot)
            assert len(parts_in(cache)) <= scanparts.MAX_PARTS


def _write(folder: Path, name: str, *rows: str) -> Path:
    from tests.test_report import csv_text

    path = folder / name
    path.write_text(csv_text(*rows))
    return path


def test_one_more_file_is_read_alone_and_the_parts_stay_few(tmp_path: Path) -> None:
    from tests.test_report import GEMMA, failed, ran

    folder, cache = tmp_path / "csvs", tmp_path / "cache"
    folder.mkdir()
    for i in range(3):
        _write(folder, f"a{i}.csv", ran(GEMMA, 512, f"2026-07-0{i + 1}"))
    kept_and_fresh(folder, cache)
    (first,) = parts_in(cache)
    for i in range(2 * scanparts.MAX_PARTS):
        day = f"2026-08-{i + 1:02d}"
        _write(
            folder,
            f"b{i:02d}.csv",
            ran(GEMMA, 1024 + i, day),
            failed(GEMMA, 65536, day, "SKIP:oom"),
        )
        kept, fresh = kept_and_fresh(folder, cache)
        assert kept == fresh
        parts = parts_in(cache)
        # The part of the files that did not change is kept as it was, not read again.
        assert first in parts
        assert len(parts) <= scanparts.MAX_PARTS
    assert kept.files_read == 3 + 2 * scanparts.MAX_PARTS


def test_provenance_written_beside_a_kept_file_reads_it_again(tmp_path: Path) -> None:
    """A sweep's provenance (and its journal) gives its rows their commit and machine: written
    beside a CSV whose part is kept, it makes that part stale."""
    from oomrec.core.rowfacts import Outcome

    folder, cache = tmp_path / "csvs", tmp_path / "cache"
    folder.mkdir()
    row = 'm,./models/m,,,,,,,2026-12-01,,,,32,"",512,SKIP:oom'
    csv = folder / "cuda_gb10_2026-12-01.csv"
    csv.write_text(_H15 + "\n" + row + "\n")
    kept, fresh = kept_and_fresh(folder, cache)
    assert kept == fresh
    sidecar = Path(f"{csv}.oomrec.json")
    entry = {"model": "m", "length": 512, "token": "SKIP:oom", "row": row, "runner": "bench"}
    sidecar.write_text(json.dumps({"schema_version": 1, "cells": [{**entry, "commit": "abc1234"}]}))
    kept, fresh = kept_and_fresh(folder, cache)
    assert kept == fresh
    assert [c.latest[Outcome.OOM].commit for c in kept.cells.values()] == ["abc1234"]
    # The journal of a sweep still running names a later commit for the same row.
    journal = Path(f"{sidecar}.journal")
    journal.write_text(json.dumps({**entry, "commit": "def5678"}) + "\n")
    kept, fresh = kept_and_fresh(folder, cache)
    assert kept == fresh
    assert [c.latest[Outcome.OOM].commit for c in kept.cells.values()] == ["def5678"]


def test_a_link_to_a_kept_file_reads_both_once(tmp_path: Path) -> None:
    """A symlink added to a file whose part is kept: the file is read once, under its own
    path, as a fresh scan reads it; removing the link again gives the plain scan back."""
    from tests.test_report import GEMMA, failed

    folder, cache = tmp_path / "csvs", tmp_path / "cache"
    folder.mkdir()
    target = _write(folder, "b.csv", failed(GEMMA, 8192, "2026-07-01", "SKIP:oom"))
    first, _ = kept_and_fresh(folder, cache)
    (folder / "a.csv").symlink_to(target.name)
    kept, fresh = kept_and_fresh(folder, cache)
    assert kept == fresh
    assert kept.files_read == 1 and sum(kept.files_skipped.values()) == 1
    assert [c.latest for c in kept.cells.values()] == [c.latest for c in first.cells.values()]
    (folder / "a.csv").unlink()
    kept, fresh = kept_and_fresh(folder, cache)
    assert kept == fresh == first


@pytest.mark.parametrize("together", [True, False])
def test_two_files_of_one_source_name_are_folded_together(tmp_path: Path, together: bool) -> None:
    """` a.csv` and `a.csv` are both named `a.csv` by their rows (a record's source is
    stripped): which of their tied rows comes first is known only to one fold of all the
    files, whether the two were kept in one part (`together`) or come in two."""
    folder, cache = tmp_path / "csvs", tmp_path / "cache"
    folder.mkdir()
    row = "m-4bit,512,2026-07-03,NVIDIA_GB10_CUDA13.0_122GB,{}\n"
    header = "model,prompt_target_len,date,hardware,commit\n"
    (folder / "a.csv").write_text(header + row.format("aaaaaaa"))
    first = folder / " a.csv"
    if together:
        first.write_text(header + row.format("ccccccc"))
    kept_and_fresh(folder, cache)
    # Sorted between the two: ` a.csv`, `_b.csv`, `a.csv`.
    (folder / "_b.csv").write_text(header + row.format("bbbbbbb"))
    if not together:
        first.write_text(header + row.format("ccccccc"))
    kept, fresh = kept_and_fresh(folder, cache)
    assert kept == fresh
    (cell,) = kept.cells.values()
    # ` a.csv` is the first file: its row is the first of the tie.
    assert {s.commit for s in cell.latest.values()} == {"ccccccc"}


GIT_OPS = st.lists(
    st.tuples(
        st.sampled_from(["write", "append", "remove", "commit", "commit"]),
        st.integers(0, 2),
        cell_rows(),
    ),
    min_size=1,
    max_size=8,
)


_UNDATED_OOM = "model,prompt_target_len,date,hardware,commit\nm-4bit,512,,{},,SKIP:oom\n"
_X = _UNDATED_OOM.format("NVIDIA_GB10_CUDA13.0_122GB").encode()
_Y = _UNDATED_OOM.format("Apple_M1_Ultra_128GB").encode()


@settings(max_examples=examples(6))
@given(GIT_OPS)
# The same row (line, no date, no commit) on another machine, not committed yet: the commit
# that added the first is not the answer for it.
@example([("write", 0, _X), ("commit", 0, b""), ("write", 0, _Y)])
def test_kept_parts_in_git_are_what_git_says_now(ops: list[tuple[str, int, bytes]]) -> None:
    """In a real repository: CSVs written, grown (their old rows keep their lines, the new ones
    are not committed yet), removed and committed; the scan from the kept parts, git asked
    about its rows, equals a fresh scan."""
    from tests.gitrepo import Repo

    with tempfile.TemporaryDirectory() as tmp:
        repo = Repo(Path(tmp) / "repo")
        repo.commit("initial commit")
        folder, cache = repo.path / "benchmarks", Path(tmp) / "cache"
        folder.mkdir()
        for what, slot, data in ops:
            path = folder / f"f{slot}.csv"
            if what == "write":
                path.write_bytes(data)
            elif what == "append" and path.exists():
                path.write_bytes(path.read_bytes() + data.split(b"\n", 1)[1])
            elif what == "remove" and path.exists():
                path.unlink()
            elif what == "commit":
                repo.git("add", "-A")
                repo.git("commit", "-q", "--allow-empty", "-m", f"{what} {slot}")
            kept = scan_csvs([folder], repo.path, in_git=True, keep_in=cache)
            fresh = scan_csvs([folder], repo.path, in_git=True)
            assert kept == fresh, (what, slot)
