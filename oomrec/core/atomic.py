"""Replace a file all or nothing: a temp file in the same folder, fsynced, renamed over it.

The one way oomrec replaces a whole file it owns (the record's rewrites) or derives (the
report's page): a full disk or a kill mid-write leaves the previous file as it was, never a
truncated one, and at most a temp file named `.<name>.XXXXXXXX.tmp` beside it (the record's
next writer removes those it finds).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


def replace_file(target: Path, data: bytes, *, create_folder: bool = True) -> None:
    """Write `data` to `target` atomically, keeping its mode (0o644 for a new file). `target`
    is the file itself: resolve a symlink first to keep the link. OSError when it cannot; the
    old file is then untouched and the temp file removed."""
    directory = target.parent
    if create_folder:
        directory.mkdir(parents=True, exist_ok=True)
    mode = stat.S_IMODE(target.stat().st_mode) if target.exists() else 0o644
    import tempfile  # here: only a rewrite needs it (~4 ms of every start-up otherwise)

    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_dir(directory)


def fsync_dir(directory: Path) -> None:
    """Make a rename in `directory` durable (best effort: some filesystems refuse)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
