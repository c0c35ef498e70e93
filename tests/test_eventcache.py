"""The event cache (oomrec.staleness.eventcache) on real repositories: what it saves, and that no
state of the file (stale, corrupted, naming commits gone) changes a verdict."""

from __future__ import annotations

from pathlib import Path

from oomrec.core.records import OomRecord
from oomrec.staleness.verdict import History, Status
from oomrec.store import gitrepo as gitutil
from tests.gitrepo import Repo, git

MODEL = "gemma-4-31b"


def status(path: Path, commit: str) -> Status:
    repo = gitutil.open_repo(path)
    assert repo is not None
    rec = OomRecord(MODEL, 8192, "2026-07-03", commit)
    return History(repo, "OOM-Fix", [commit]).judge([rec])[0].status


def cache_file(repo: Repo) -> Path:
    return repo.path / ".git" / "oomrec" / "events-OOM-Fix"


def test_a_second_judgement_scans_only_new_history(repo: Repo) -> None:
    pre = repo.commit("pre", {"prefill.py": "v1\n"})
    assert status(repo.path, pre) == Status.APPLIES
    text = cache_file(repo).read_text()
    assert text.startswith("oomrec events v1 OOM-Fix\ntip ")
    f = repo.commit("Chunk\n\nOOM-Fix: gemma-4-*\n", {"prefill.py": "chunked\n"})
    # Found by the scan of what is new since the cached tips.
    assert status(repo.path, pre) == Status.LIFTED
    assert f in cache_file(repo).read_text()


def test_history_rewritten_away_stops_counting_though_the_cache_knows_it(repo: Repo) -> None:
    pre = repo.commit("pre", {"prefill.py": "v1\n"})
    repo.commit("Chunk\n\nOOM-Fix: gemma-4-*\n", {"prefill.py": "chunked\n"})
    assert status(repo.path, pre) == Status.LIFTED
    repo.git("reset", "-q", "--hard", "HEAD~1")
    assert status(repo.path, pre) == Status.APPLIES


def test_a_corrupted_or_foreign_cache_is_ignored_and_rewritten(repo: Repo) -> None:
    pre = repo.commit("pre", {"prefill.py": "v1\n"})
    repo.commit("Chunk\n\nOOM-Fix: gemma-4-*\n", {"prefill.py": "chunked\n"})
    path = cache_file(repo)
    path.parent.mkdir(parents=True, exist_ok=True)
    for garbage in (b"\x00\xff not a cache", b"oomrec events v0 OOM-Fix\ntip abc\n", b""):
        path.write_bytes(garbage)
        assert status(repo.path, pre) == Status.LIFTED
        assert path.read_text().startswith("oomrec events v1 OOM-Fix\n")


def test_a_cache_naming_a_commit_this_repository_lacks_starts_over(repo: Repo) -> None:
    pre = repo.commit("pre", {"prefill.py": "v1\n"})
    repo.commit("Chunk\n\nOOM-Fix: gemma-4-*\n", {"prefill.py": "chunked\n"})
    path = cache_file(repo)
    path.parent.mkdir(parents=True, exist_ok=True)
    # As if the cached tips had all been scanned (so nothing below them is looked at) and then
    # garbage-collected away.
    path.write_text(f"oomrec events v1 OOM-Fix\ntip {'1' * 40}\n")
    assert status(repo.path, pre) == Status.LIFTED


def test_a_shallow_clone_is_not_cached(tmp_path: Path, repo: Repo) -> None:
    pre = repo.commit("pre", {"prefill.py": "v1\n"})
    repo.commit("Chunk\n\nOOM-Fix: gemma-4-*\n", {"prefill.py": "chunked\n"})
    for n in range(3):
        repo.commit(f"more {n}")
    clone = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "2", f"file://{repo.path}", str(clone))
    assert status(clone, pre) == Status.APPLIES
    assert not (clone / ".git" / "oomrec" / "events-OOM-Fix").exists()
    git(clone, "fetch", "-q", "--unshallow")
    assert status(clone, pre) == Status.LIFTED


def test_a_cache_cut_short_is_not_read_as_far_as_it_goes(repo: Repo) -> None:
    pre = repo.commit("pre", {"prefill.py": "v1\n"})
    repo.commit("Chunk\n\nOOM-Fix: gemma-4-*\n", {"prefill.py": "chunked\n"})
    assert status(repo.path, pre) == Status.LIFTED
    path = cache_file(repo)
    whole = path.read_bytes()
    # Its tips intact, the fix's entry gone: read as it stands, the fix would never be seen.
    path.write_bytes(whole[: whole.index(b"tip ") + 45])
    assert status(repo.path, pre) == Status.LIFTED
    assert path.read_bytes() == whole


def test_a_fix_whose_message_is_not_utf8_is_cached_and_read_back(repo: Repo) -> None:
    pre = repo.commit("pre", {"prefill.py": "v1\n"})
    (repo.path / "prefill.py").write_text("chunked\n")
    (repo.path / "msg").write_bytes(b"Caf\xe9 fix\n\nOOM-Fix: gemma-4-*\n")
    repo.git("-c", "i18n.commitEncoding=binary", "commit", "-q", "-a", "-F", "msg")
    assert status(repo.path, pre) == Status.LIFTED
    assert "Caf\ufffd fix" in cache_file(repo).read_text(encoding="utf-8")
    # Read back from the cache, not logged again.
    assert status(repo.path, pre) == Status.LIFTED
