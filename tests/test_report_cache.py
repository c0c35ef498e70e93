"""The report's kept scan (report/scanparts.py, report/scancache.py): asked again over the same
files it is taken as it is, and any change to what it was made from (a CSV, its mtime set
back, the provenance beside it) makes it afresh; a broken cache is only a miss. Git is asked
afresh every time: a commit, a replace ref, a deepened clone, git config and the time zone
change its answers with no file changed. Real files, real git."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CliResult
from tests.gitrepo import FIX_MESSAGE, Repo, git
from tests.test_report import GEMMA, csv_text, failed, ran
from tests.test_startup_imports import MARK, imported

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
def test_a_broken_cache_is_a_miss(repo: Repo, corpus: Path, damage: str) -> None:
    repo.git("add", "benchmarks/a.csv")
    repo.git("commit", "-q", "-m", "the CSV: its OOM row's commit is asked of git")
    first, _ = report(repo)
    kept = repo.path / ".git" / "oomrec"
    (part,) = (kept / "report-parts").iterdir()
    _damage(part, damage)
    again, modules = report(repo)
    assert again == first
    # A broken part is read again.
    assert "polars" in modules
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
    # Where an earlier version kept git's answers: removed, never opened.
    os.mkfifo(kept / "report-git")
    again, modules = report(repo)
    assert again == first
    assert "polars" in modules
    assert not (kept / "report-git").exists()


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


# -- git is asked afresh: its answers depend on more than HEAD and the index -----------------

# An OOM row with no date and no commit column: its commit and date are git's answers.
UNDATED_OOM = failed(GEMMA, 8192, "", "SKIP:oom")


def warm(where: Path) -> None:
    """A report that keeps its parts, made before what the next report must see."""
    done, _ = imported(["report", "--json"], where)
    assert done.returncode == 0, done.stderr


def kept_and_fresh(where: Path, **env: str) -> dict[str, Any]:
    """The report from the parts kept (none of its rows read again), asserted equal to a report
    with nothing kept, its warnings too."""
    done, modules = imported(["report", "--json"], where, **env)
    assert done.returncode == 0, done.stderr
    assert "polars" not in modules, "the rows were read again: nothing kept was tested"
    git_dir = Path(git(where, "rev-parse", "--absolute-git-dir"))
    shutil.rmtree(git_dir / "oomrec" / "report-parts")
    fresh, _ = imported(["report", "--json"], where, **env)
    assert fresh.returncode == 0, fresh.stderr
    assert (json.loads(done.stdout), warnings(done.stderr)) == (
        json.loads(fresh.stdout),
        warnings(fresh.stderr),
    )
    return json.loads(done.stdout)


def warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if not line.startswith(MARK)]


def the_oom(body: dict[str, Any]) -> tuple[str, str, str]:
    (oom,) = body["ooms"]
    return oom["commit"], oom["date"], oom["status"]


def oom_then_fix(repo: Repo) -> tuple[str, str]:
    """A CSV whose undated OOM row came in one commit, then a fix of its model: the commits."""
    rows = [ran(GEMMA, 512, "2026-07-01")]
    repo.commit("a run", {"benchmarks/a.csv": csv_text(*rows)})
    oom = repo.commit("an OOM", {"benchmarks/a.csv": csv_text(*rows, UNDATED_OOM)})
    return oom, repo.commit(FIX_MESSAGE)


def test_a_replace_ref_or_a_graft_is_seen_though_head_is_the_same(repo: Repo) -> None:
    """`git replace --graft` changes which commit added the row, HEAD and the index the same;
    so does undoing it, and GIT_NO_REPLACE_OBJECTS."""
    oom, fix = oom_then_fix(repo)
    warm(repo.path)
    assert the_oom(kept_and_fresh(repo.path))[::2] == (oom, "lifted, unverified")
    repo.git("replace", "--graft", "HEAD", "HEAD~2")
    # HEAD's parent is the first run now: HEAD, which has the fix, added the OOM row.
    assert the_oom(kept_and_fresh(repo.path))[::2] == (fix, "applies")
    assert the_oom(kept_and_fresh(repo.path, GIT_NO_REPLACE_OBJECTS="1"))[0] == oom
    repo.git("replace", "-d", "HEAD")
    assert the_oom(kept_and_fresh(repo.path))[0] == oom


def test_a_shallow_clone_deepened_is_seen(repo: Repo, tmp_path: Path) -> None:
    """Deepening a shallow clone moves HEAD nowhere, yet the row's adding commit is found
    below the old cut: the fix after it lifts the OOM."""
    oom, fix = oom_then_fix(repo)
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{repo.path}", str(clone))
    warm(clone)
    assert the_oom(kept_and_fresh(clone))[::2] == (fix, "applies")
    git(clone, "fetch", "-q", "--unshallow")
    assert the_oom(kept_and_fresh(clone))[::2] == (oom, "lifted, unverified")


def test_git_config_that_changes_what_is_committed_is_seen(repo: Repo) -> None:
    """With CRLF line ends in the work tree the row is not committed (dated by its file, no
    commit); `core.autocrlf` set, the same file is what was committed: the file, HEAD and the
    index are unchanged."""
    oom, _ = oom_then_fix(repo)
    csv = repo.path / "benchmarks" / "a.csv"
    csv.write_bytes(csv.read_bytes().replace(b"\n", b"\r\n"))
    warm(repo.path)
    assert the_oom(kept_and_fresh(repo.path))[0] == "unknown"
    repo.git("config", "core.autocrlf", "true")
    assert the_oom(kept_and_fresh(repo.path))[::2] == (oom, "lifted, unverified")


def test_a_row_dated_by_its_file_is_dated_in_the_time_zone_of_the_report(repo: Repo) -> None:
    """A row no commit dates takes its file's modification date, in local time."""
    csv = repo.path / "benchmarks" / "a.csv"
    csv.parent.mkdir()
    csv.write_text(csv_text(UNDATED_OOM))
    os.utime(csv, (1_783_294_200, 1_783_294_200))  # 2026-07-05 23:30 UTC
    warm(repo.path)
    assert the_oom(kept_and_fresh(repo.path, TZ="UTC0"))[1] == "2026-07-05"
    assert the_oom(kept_and_fresh(repo.path, TZ="JST-9"))[1] == "2026-07-06"
