"""The report's kept scan (report/scanparts.py, report/scancache.py): asked again over the same
files it is taken as it is, and any change to what it was made from (a CSV, its mtime set
back, the provenance beside it, a new commit) makes it afresh; a broken cache is only a miss.
Real files, real git."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CliResult
from tests.gitrepo import Repo
from tests.test_report import GEMMA, csv_text, failed, ran
from tests.test_startup_imports import imported

Cli = Callable[..., CliResult]


def report(repo: Repo) -> tuple[dict[str, Any], set[str]]:
    """`oomrec report --json` in a fresh process, and the modules it imported."""
    done, modules = imported(["report", "--json"], repo.path)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), modules


def frontier(body: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [
        (
            f["model"],
            f["machine"],
            (f["ran_max"] or {}).get("length"),
            (f["oom_min"] or {}).get("length"),
        )
        for f in body["frontier"]
    ]


@pytest.fixture
def corpus(repo: Repo) -> Path:
    csv = repo.path / "benchmarks" / "a.csv"
    csv.parent.mkdir()
    csv.write_text(
        csv_text(ran(GEMMA, 512, "2026-07-01"), failed(GEMMA, 8192, "2026-07-01", "SKIP:oom"))
    )
    return csv


def test_the_same_files_are_not_read_again(repo: Repo, corpus: Path) -> None:
    first, modules = report(repo)
    assert "polars" in modules
    again, modules = report(repo)
    assert again == first
    # Nothing was parsed: the row reader's engine was not even imported.
    assert "polars" not in modules


def test_a_changed_csv_is_read_afresh_even_with_its_mtime_set_back(
    repo: Repo, corpus: Path
) -> None:
    first, _ = report(repo)
    assert frontier(first) == [(GEMMA, "gb10 122GB", 512, 8192)]
    st = corpus.stat()
    # The same size, the same mtime: only the content (and the ctime) differ.
    corpus.write_text(corpus.read_text().replace(",8192,SKIP:oom", ",4096,SKIP:oom"))
    os.utime(corpus, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert corpus.stat().st_size == st.st_size
    second, modules = report(repo)
    assert frontier(second) == [(GEMMA, "gb10 122GB", 512, 4096)]
    assert "polars" in modules


def test_a_new_file_a_removed_file_and_provenance_count(repo: Repo, corpus: Path) -> None:
    report(repo)
    other = corpus.with_name("b.csv")
    other.write_text(csv_text(ran(GEMMA, 2048, "2026-07-02")))
    assert frontier(report(repo)[0]) == [(GEMMA, "gb10 122GB", 2048, 8192)]
    other.unlink()
    assert frontier(report(repo)[0]) == [(GEMMA, "gb10 122GB", 512, 8192)]
    corpus.with_name("a.csv.oomrec.json").write_text('{"schema_version": 1, "cells": []}')
    assert "polars" in report(repo)[1]


def test_a_commit_of_the_csv_gives_its_oom_the_commit(repo: Repo, corpus: Path) -> None:
    before, _ = report(repo)
    repo.git("add", "benchmarks/a.csv")
    sha = repo.commit("the CSV")
    after, modules = report(repo)
    # The rows are as they were (a kept part): only git is asked again.
    assert "polars" not in modules
    (row,) = after["frontier"]
    assert row["oom_min"]["commit"] == sha
    assert before["frontier"][0]["oom_min"]["commit"] != sha


def _damage(kept: Path, damage: str) -> None:
    if damage == "cut":
        kept.write_bytes(kept.read_bytes()[:-10])
    elif damage == "garbage":
        kept.write_bytes(kept.read_bytes()[:60] + b"\x00" * 100)
    else:
        kept.unlink()
        kept.mkdir()


@pytest.mark.parametrize("damage", ["cut", "garbage", "folder"])
@pytest.mark.parametrize("which", ["part", "git"])
def test_a_broken_cache_is_a_miss(repo: Repo, corpus: Path, damage: str, which: str) -> None:
    repo.git("add", "benchmarks/a.csv")
    repo.git("commit", "-q", "-m", "the CSV: its OOM row's commit is asked of git")
    first, _ = report(repo)
    kept = repo.path / ".git" / "oomrec"
    (part,) = (kept / "report-parts").iterdir()
    _damage(part if which == "part" else kept / "report-git", damage)
    again, modules = report(repo)
    assert again == first
    # A broken part is read again; broken answers are asked of git again.
    assert ("polars" in modules) == (which == "part")
    if damage != "folder":
        # Replaced by a good one: the next report reads no row.
        third, modules = report(repo)
        assert third == first
        assert "polars" not in modules


def test_a_fifo_or_a_link_to_a_device_in_the_cache_does_not_hang(repo: Repo, corpus: Path) -> None:
    """Kept files are opened without blocking and read only when regular: a FIFO (no writer)
    would hang an open for reading, /dev/zero a read."""
    first, _ = report(repo)
    kept = repo.path / ".git" / "oomrec"
    (part,) = (kept / "report-parts").iterdir()
    part.unlink()
    os.mkfifo(part)
    (kept / "report-parts" / "zero").symlink_to("/dev/zero")
    (kept / "report-git").unlink(missing_ok=True)
    os.mkfifo(kept / "report-git")
    again, modules = report(repo)
    assert again == first
    assert "polars" in modules


def test_a_save_killed_mid_write_leaves_no_file_behind_for_long(repo: Repo, corpus: Path) -> None:
    """A report killed while it writes a part leaves its temporary file; the next save removes
    it once it is old (one being written now is young and kept)."""
    report(repo)
    parts = repo.path / ".git" / "oomrec" / "report-parts"
    old, young = parts / "abc.1234.tmp", parts / "def.5678.tmp"
    old.write_bytes(b"cut")
    young.write_bytes(b"cut")
    os.utime(old, (0, 0))
    corpus.write_text(corpus.read_text() + ran(GEMMA, 1024, "2026-07-02") + "\n")
    body, _ = report(repo)
    assert frontier(body) == [(GEMMA, "gb10 122GB", 1024, 8192)]
    assert not old.exists() and young.exists()


def test_a_report_from_kept_parts_lists_what_a_fresh_one_lists_in_its_order(repo: Repo) -> None:
    """The JSON of a report made from parts (files added one report after another, in another
    order than they sort) is the JSON of a report with nothing kept, lists in the same order:
    contradictions, OOMs, frontier, timeline."""
    folder = repo.path / "benchmarks"
    folder.mkdir()
    for name, model in (("c.csv", "zeta-4bit"), ("b.csv", "mu-4bit"), ("a.csv", "alpha-4bit")):
        (folder / name).write_text(
            csv_text(
                failed(model, 8192, "2026-07-01", "SKIP:oom"),
                ran(model, 8192, "2026-07-02"),
                ran(model, 512, "2026-07-02", hw="Apple_M1_Ultra_128GB"),
            )
        )
        kept, _ = report(repo)
    assert len(kept["contradictions"]) == 3
    for part in (repo.path / ".git" / "oomrec" / "report-parts").iterdir():
        part.unlink()
    fresh, modules = report(repo)
    assert "polars" in modules
    assert kept == fresh
