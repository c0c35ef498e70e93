"""The report's last scan, kept between runs: reading and folding every row of a large corpus
takes seconds, and a report is often asked again over files that have not changed (the table,
then `--html`, then `--json`).

The whole Scan is kept, under a fingerprint of everything it was made from: oomrec's version,
how it was asked (root, commit columns, git or not), HEAD and the git index (a row's commit is
the commit that added it), and every file it read or refused and every provenance file beside
them, each by device, inode, size, mtime and ctime (a write changes the ctime, which no user can
set back). Anything different, and the scan is made afresh; nothing is updated in part, so a
kept scan is exactly what a fresh one would be.

The file is `<git dir>/oomrec/report-scan` (each worktree its own, as its HEAD and index are;
machine-local, never tracked; none outside git). It is a cache: one that cannot be read, is of
another version or another fingerprint, is ignored and rewritten (atomically).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from oomrec import __version__
from oomrec.core.provenance import SIDECAR_SUFFIX

if TYPE_CHECKING:
    from oomrec.report.scan import Scan

_MAGIC = b"oomrec report-scan v1\n"
# Past this, a kept scan is not worth its read (a corpus of millions of distinct cells).
_MAX_BYTES = 64 << 20


def fingerprint(
    files: Sequence[str],
    refused: Iterable[str],
    asked: Iterable[object],
    git_state: Iterable[object],
) -> str:
    """A digest of what a scan of `files` (and of the `refused` paths) depends on."""
    digest = hashlib.sha256(repr((__version__, tuple(asked), tuple(git_state))).encode())
    folders: set[str] = set()
    for path in (*files, *refused):
        digest.update(_signature(path))
        folders.add(os.path.dirname(path))
    # The provenance beside the CSVs gives rows their commit and machine.
    for folder in sorted(folders):
        try:
            names = sorted(n for n in os.listdir(folder) if SIDECAR_SUFFIX in n)
        except OSError:
            continue
        for name in names:
            digest.update(_signature(os.path.join(folder, name)))
    return digest.hexdigest()


def _signature(path: str) -> bytes:
    try:
        st = os.stat(path)
    except OSError as exc:
        return f"{path}\0-{exc.errno}\n".encode("utf-8", "surrogateescape")
    fields = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode)
    return f"{path}\0{fields}\n".encode("utf-8", "surrogateescape")


def git_state(git_dir: Path, head: str | None) -> tuple[object, ...]:
    """HEAD and the index's signature (the worktree's own git dir holds its index): what the
    commits git gives rows depend on."""
    return (head, _signature(str(git_dir / "index")))


def load(path: Path, key: str) -> Scan | None:
    """The kept scan when it was made under `key`, else None."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(_MAX_BYTES + 1)
    except OSError:
        return None
    head = _MAGIC + key.encode() + b"\n"
    if len(data) > _MAX_BYTES or not data.startswith(head):
        return None
    try:
        # Only oomrec writes it, in the repository's own git dir (whoever can write there can
        # already run code through its hooks).
        scan = pickle.loads(data[len(head) :])
    except Exception:  # a cut or foreign file is only a cache miss
        return None
    from oomrec.report.scan import Scan

    return scan if isinstance(scan, Scan) else None


def save(path: Path, key: str, scan: Scan) -> None:
    """Keep `scan` under `key`; a cache that cannot be written costs time only."""
    try:
        body = pickle.dumps(scan, protocol=pickle.HIGHEST_PROTOCOL)
        if len(body) > _MAX_BYTES:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(_MAGIC + key.encode() + b"\n" + body)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except (OSError, pickle.PicklingError, RecursionError):
        return
