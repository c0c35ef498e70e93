"""The one lock (core/lock.py), held by real processes: another process's lock makes a writer
wait and then say so; a SIGKILLed holder's lock is free at once; the notes writer's lock is the
file in the git dir that every writer of the clone takes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from oomrec.core import lock, records
from oomrec.core.errors import OomrecError
from oomrec.core.records import OomRecord, RecordFile
from oomrec.store import notes
from oomrec.store.gitrepo import open_repo
from tests.gitrepo import Repo

ROOT = Path(__file__).resolve().parents[1]

# Takes the lock through oomrec's own primitive, says so, and holds it until stdin closes.
HOLDER = (
    "import sys\n"
    "from pathlib import Path\n"
    "from oomrec.core import lock\n"
    "fd = lock.acquire(Path(sys.argv[1]), 5)\n"
    "print('held', flush=True)\n"
    "sys.stdin.read()\n"
)


@contextmanager
def held_elsewhere(path: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process holding the lock on `path` for the block (it has it on entry)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline() == "held\n"
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def test_a_record_locked_by_another_process_is_said_still_locked_then_written_once_free(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "rec"
    record_file = RecordFile(path)
    monkeypatch.setattr(records, "LOCK_TIMEOUT_S", 0.2)
    row = OomRecord("m", 1024, "2026-01-01", "unknown")
    said = r"rec\.lock: still locked after 0 s; is another"
    with held_elsewhere(record_file.lock_path), pytest.raises(OomrecError, match=said):
        record_file.append([row])
    assert record_file.append([row]) == 1
    # The lock file stays (waiters share its inode); the record holds the one line.
    assert record_file.lock_path.exists()
    assert [r.model for r in record_file.load().records] == ["m"]


def test_a_sigkilled_holders_lock_is_free_at_once_and_its_file_left(tmp_path: Path) -> None:
    path = tmp_path / "x.lock"
    with held_elsewhere(path) as proc:
        with pytest.raises(lock.LockTimeout):
            lock.acquire(path, 0)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        fd = lock.acquire(path, 0)
        lock.release(fd)
    assert path.exists()


def test_a_lock_file_deleted_while_waited_on_is_not_the_one_held(tmp_path: Path) -> None:
    """`delete the lock file` (the record's advice for a stale lock) must not let two writers
    in: a waiter that opened the deleted file, then got its lock, takes the new file's."""
    path = tmp_path / "x.lock"
    got: list[int] = []
    with held_elsewhere(path) as proc:
        waiter = threading.Thread(target=lambda: got.append(lock.acquire(path, 60)))
        waiter.start()
        # Until the waiter has the file open (a real condition, not a timer).
        while not _open_here(path):
            assert waiter.is_alive()
            time.sleep(0.01)
        path.unlink()
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait()
        waiter.join()
    (fd,) = got
    try:
        assert os.fstat(fd).st_nlink == 1
        assert os.fstat(fd).st_ino == os.stat(path).st_ino
    finally:
        lock.release(fd)


def _open_here(path: Path) -> bool:
    """Whether this process has `path` open (its /proc/self/fd links)."""
    for name in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{name}") in (str(path), f"{path} (deleted)"):
                return True
        except OSError:
            continue
    return False


def test_a_lock_file_that_is_a_symlink_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    (tmp_path / "x.lock").symlink_to(target)
    with pytest.raises(OSError):
        lock.acquire(tmp_path / "x.lock", 0)
    assert not target.exists()


def test_the_notes_writer_holds_the_lock_file_in_the_git_dir(repo: Repo) -> None:
    opened = open_repo(repo.path)
    assert opened is not None
    path = Path(opened.common_dir, "oomrec-notes.lock")
    with notes.writing(opened):
        fd = lock.open_lock(path)
        try:
            assert not lock.try_lock(fd)
        finally:
            os.close(fd)
    fd = lock.acquire(path, 0)
    lock.release(fd)
