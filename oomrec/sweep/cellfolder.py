"""The sweep's scratch folder for its cells' CSVs (`$TMPDIR/oomrec-cells-*`), and the removal of
those that killed sweeps left behind.

A sweep holds an flock on `.alive` in its folder for as long as it runs; the kernel drops it
however the sweep ends. The next sweep removes every such folder whose lock it can take: its
owner is gone (a SIGKILL, an OOM kill, a power cut), and nothing else would ever remove it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from oomrec.core import lock

PREFIX = "oomrec-cells-"
ALIVE = ".alive"
# A folder of an older oomrec has no `.alive`: removed once it is this old (a sweep starting
# right now makes its `.alive` within milliseconds).
_OLD_S = 3600


@contextlib.contextmanager
def cell_folder() -> Iterator[Path]:
    """A fresh scratch folder, held alive until the block ends; leftovers removed first."""
    remove_leftovers()
    folder = Path(tempfile.mkdtemp(prefix=PREFIX))
    fd = lock.open_lock(folder / ALIVE, 0o600)
    try:
        lock.wait_lock(fd)
        yield folder
    finally:
        os.close(fd)
        shutil.rmtree(folder, ignore_errors=True)


def remove_leftovers(where: str | None = None) -> list[Path]:
    """Remove the scratch folders of sweeps that no longer run (this user's only); returns
    them. A folder in use, or one that cannot be judged, is left alone."""
    base = Path(where or tempfile.gettempdir())
    removed = []
    try:
        entries = list(os.scandir(base))
    except OSError:
        return []
    for entry in entries:
        if not entry.name.startswith(PREFIX):
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
            continue
        folder = Path(entry.path)
        if _abandoned(folder, info.st_mtime):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


def _abandoned(folder: Path, mtime: float) -> bool:
    try:
        fd = lock.open_lock(folder / ALIVE, create=False, nonblock=True)
    except FileNotFoundError:
        return time.time() - mtime > _OLD_S
    except OSError:
        return False
    try:
        # Taken: its sweep is gone. Held, or not lockable: alive, or not to be judged.
        return lock.try_lock(fd)
    except OSError:
        return False
    finally:
        os.close(fd)
