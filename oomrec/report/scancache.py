"""What the report keeps between runs, and what it is kept under: reading and folding every row
of a large corpus takes seconds, and a report is often asked again over files that have not
changed (the table, then `--html`, then `--json`) or after a sweep added one.

The fold of the rows is kept in parts (report/scanparts.py), each under the signature of every
file it read and of the provenance beside them: device, inode, size, mtime and ctime (a write
changes the ctime, which no user can set back). Anything different, and that part is folded
again: what is taken is exactly what a fresh scan would give. Git's answers (the commit that
added a row without one) are not kept: they depend on more than a key could name, and asking
costs a few rows per cell.

The files are under `<git dir>/oomrec/` (each worktree its own; machine-local, never tracked;
none outside git), each with oomrec's version and what it was made under in its head. They are
a cache: one that cannot be read, is of another version or was made under another key is
ignored and rewritten (atomically).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from oomrec import __version__
from oomrec.core.atomic import replace_file
from oomrec.core.provenance import SIDECAR_SUFFIX
from oomrec.core.regular import NotRead, read_regular
from oomrec.core.schema import REPORT_PARTS_FORMAT

_MAGIC = b"oomrec report-cache\n"
# Past this, a kept file is not worth its read (a corpus of millions of distinct cells).
_MAX_BYTES = 64 << 20


# A file's signature: (device, inode, size, mtime, ctime, mode), or (-errno,) when it cannot be
# stat'ed. A tuple of ints: made and compared in C, 10,000 times a report.
Signature = tuple[int, ...]


class Signed(NamedTuple):
    """What the files of a scan are now: each file's signature (in the scan's order), each
    file's provenance files' (the file and its journal; absent: none), and the files another
    path names too (a symlink, a hard link: read once, by scan_files)."""

    files: dict[str, Signature]
    sidecar_of: dict[str, Signature]
    shared: set[str]


def sign(files: Sequence[str]) -> Signed:
    """A stat of each of `files` and one listing of each of their folders."""
    signed = Signed({}, {}, set())
    paths_of: dict[tuple[int, int], list[str]] = {}
    folders: set[str] = set()
    for path in files:
        signed.files[path], identity = _signed(path)
        if identity is not None:
            paths_of.setdefault(identity, []).append(path)
        folders.add(os.path.dirname(path))
    for group in paths_of.values():
        if len(group) > 1:
            signed.shared.update(group)
    # The provenance beside the CSVs gives rows their commit and machine.
    for folder in sorted(folders):
        try:
            names = sorted(n for n in os.listdir(folder) if SIDECAR_SUFFIX in n)
        except OSError:
            continue
        for name in names:
            path = os.path.join(folder, name)
            # `<csv>.oomrec.json` and its journal, `<csv>.oomrec.json.journal`.
            csv = path[: path.rfind(SIDECAR_SUFFIX)]
            signed.sidecar_of[csv] = signed.sidecar_of.get(csv, ()) + _signed(path)[0]
    return signed


def _signed(path: str) -> tuple[Signature, tuple[int, int] | None]:
    """The signature of `path` (by stat: a symlink's is its target's), and the file's (device,
    inode) when it has one (some filesystems give every file inode 0)."""
    try:
        st = os.stat(path)
    except OSError as exc:
        return (-(exc.errno or 1),), None
    signature = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode)
    return signature, ((st.st_dev, st.st_ino) if st.st_ino else None)


def key_of(*made_under: object) -> bytes:
    """The head a kept file starts with: oomrec's version, the kept format (core/schema.py)
    and what it was made under."""
    kept = (__version__, REPORT_PARTS_FORMAT, made_under)
    digest = hashlib.sha256(repr(kept).encode()).hexdigest()
    return _MAGIC + digest.encode() + b"\n"


def load(path: Path, key: bytes, kind: type) -> Any:
    """The object of `kind` kept in `path` under `key`, else None."""
    try:
        # A regular file only, opened without blocking: a FIFO put there cannot hang a report.
        data, _ = read_regular(path, _MAX_BYTES)
    except (OSError, NotRead):
        return None
    if not data.startswith(key):
        return None
    try:
        # Only oomrec writes it, in the repository's own git dir (whoever can write there can
        # already run code through its hooks).
        kept = pickle.loads(data[len(key) :])
    except Exception:  # a cut or foreign file is only a cache miss
        return None
    return kept if isinstance(kept, kind) else None


def save(path: Path, key: bytes, kept: object) -> bool:
    """Keep `kept` in `path` under `key`, atomically; False when it could not be kept (time
    lost only)."""
    try:
        body = pickle.dumps(kept, protocol=pickle.HIGHEST_PROTOCOL)
        if len(body) > _MAX_BYTES:
            return False
        path.parent.mkdir(parents=True, exist_ok=True)
        _remove_stale_saves(path.parent)
        # A cache: losing it to a power cut costs time only, so no fsync; private to oomrec.
        replace_file(
            path,
            key + body,
            keep_mode=False,
            new_mode=None,
            durable=False,
            sync_folder=False,
            prefix=path.name + ".",
        )
    except (OSError, pickle.PicklingError, RecursionError):
        return False
    return True


# A save's temporary file older than this was left by a report that was killed.
_STALE_SAVE_S = 600


def _remove_stale_saves(folder: Path) -> None:
    """The temporary files of saves killed mid-write (SIGKILL, a full disk), so that they do
    not pile up; one being written now is younger and left alone."""
    now = time.time()
    with contextlib.suppress(OSError), os.scandir(folder) as entries:
        for entry in entries:
            if entry.name.endswith(".tmp") and entry.is_file(follow_symlinks=False):
                with contextlib.suppress(OSError):
                    if now - entry.stat(follow_symlinks=False).st_mtime > _STALE_SAVE_S:
                        os.unlink(entry.path)


def kept_names(folder: Path) -> Iterable[str]:
    """The kept files in `folder`, by name, not those a save is writing."""
    try:
        return sorted(n for n in os.listdir(folder) if not n.endswith(".tmp"))
    except OSError:
        return []
