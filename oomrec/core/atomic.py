"""Replace a file all or nothing: a temp file in the same folder, renamed over it.

The one way oomrec replaces a whole file it owns (the record's rewrites, a sweep's CSV and its
provenance) or derives (the report's page, its caches): a full disk or a kill mid-write leaves
the previous file as it was, never a truncated one, and at most a temp file beside it (named
`<prefix>XXXXXXXX<suffix>`, `.<name>.XXXXXXXX.tmp` by default; the record's next writer and
the report's cache remove those they find). tests/test_one_home.py keeps every such rewrite
here.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path


def replace_file(
    target: Path,
    data: bytes,
    *,
    create_folder: bool = True,
    keep_mode: bool = True,
    new_mode: int | None = 0o644,
    durable: bool = True,
    sync_folder: bool = True,
    prefix: str | None = None,
    suffix: str = ".tmp",
) -> None:
    """Write `data` to `target` atomically. `target` is the file itself: resolve a symlink
    first to keep the link. OSError when it cannot; the old file is then untouched and the temp
    file removed (whatever the exception).

    The file gets its old mode with `keep_mode` (when it can be read), else `new_mode` (None:
    mkstemp's, 0o600, for a file only oomrec reads).
    `durable`: fsync the data before the rename (a cache that may be lost skips it);
    `sync_folder`: fsync the folder after it, so the rename itself survives a power cut.
    `prefix` and `suffix` name the temp file (`prefix` defaults to `.<name>.`)."""
    directory = target.parent
    if create_folder:
        directory.mkdir(parents=True, exist_ok=True)
    mode: int | None = new_mode
    if keep_mode:
        with contextlib.suppress(OSError):
            mode = stat.S_IMODE(os.stat(target).st_mode)
    import tempfile  # here: only a rewrite needs it (~4 ms of every start-up otherwise)

    start = f".{target.name}." if prefix is None else prefix
    fd, tmp = tempfile.mkstemp(prefix=start, suffix=suffix, dir=directory)
    try:
        with os.fdopen(fd, "wb") as out:
            if mode is not None:
                os.fchmod(out.fileno(), mode)
            out.write(data)
            if durable:
                out.flush()
                os.fsync(out.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    if sync_folder:
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
