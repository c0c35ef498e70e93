"""The report's last scan, kept between runs: reading and folding every row of a large corpus
takes seconds, and a report is often asked again over files that have not changed (the table,
then `--html`, then `--json`).

The whole Scan is kept, under a fingerprint of everything it was made from: oomrec's version,
how it was asked (root, commit columns, git or not), HEAD and the git index (a row's commit is
the commit that added it), and every file it read or refused and every provenance file beside
them, each by device, inode, size, mtime and ctime (a write changes the ctime, which no user can
set back). Anything different, and the scan is made again: from the parts kept of the files
that did not change (report/scanparts.py) and a fold of those that did, and git is asked only
about rows it was not asked about under the same HEAD and index in a file unchanged since
(`report-git`, git's answers, each under its file's signature). A kept scan is exactly what a
fresh one would be.

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
from typing import Any, NamedTuple

from oomrec import __version__
from oomrec.core.provenance import SIDECAR_SUFFIX

_MAGIC = b"oomrec report-scan v1\n"
# Past this, a kept scan is not worth its read (a corpus of millions of distinct cells).
_MAX_BYTES = 64 << 20


class Signed(NamedTuple):
    """What the files of a scan are now: each file's signature (in the scan's order), the
    refused paths', each file's provenance files' (the file and its journal; absent: none),
    every provenance file's in their folders, and the files another path names too (a
    symlink, a hard link: read once, by scan_files)."""

    files: dict[str, bytes]
    refused: list[bytes]
    sidecar_of: dict[str, bytes]
    sidecars: list[bytes]
    shared: set[str]


def sign(files: Sequence[str], refused: Iterable[str]) -> Signed:
    """A stat of each of `files` and `refused` and one listing of each of their folders."""
    signed = Signed({}, [], {}, [], set())
    paths_of: dict[tuple[int, int], list[str]] = {}
    folders: set[str] = set()
    for path in files:
        signed.files[path], identity = _signed(path)
        if identity is not None:
            paths_of.setdefault(identity, []).append(path)
        folders.add(os.path.dirname(path))
    for path in refused:
        signed.refused.append(_signed(path)[0])
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
            signature = _signed(path)[0]
            signed.sidecars.append(signature)
            # `<csv>.oomrec.json` and its journal, `<csv>.oomrec.json.journal`.
            csv = path[: path.rfind(SIDECAR_SUFFIX)]
            signed.sidecar_of[csv] = signed.sidecar_of.get(csv, b"") + signature
    return signed


def fingerprint(signed: Signed, asked: Iterable[object], git_state: Iterable[object]) -> str:
    """A digest of what a scan of the files `signed` depends on."""
    digest = hashlib.sha256(repr((__version__, tuple(asked), tuple(git_state))).encode())
    for signature in (*signed.files.values(), *signed.refused, *signed.sidecars):
        digest.update(signature)
    return digest.hexdigest()


def _signed(path: str) -> tuple[bytes, tuple[int, int] | None]:
    """The signature of `path` (by stat: a symlink's is its target's), and the file's (device,
    inode) when it has one (some filesystems give every file inode 0)."""
    try:
        st = os.stat(path)
    except OSError as exc:
        return f"{path}\0-{exc.errno}\n".encode("utf-8", "surrogateescape"), None
    fields = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode)
    signature = f"{path}\0{fields}\n".encode("utf-8", "surrogateescape")
    return signature, ((st.st_dev, st.st_ino) if st.st_ino else None)


def git_key(asked: Iterable[object], git_state: Iterable[object]) -> str:
    """The key of git's answers about rows (report-git): what they depend on besides each
    file's own signature (which each answer is kept under)."""
    return hashlib.sha256(repr((__version__, tuple(asked), tuple(git_state))).encode()).hexdigest()


def git_state(git_dir: Path, head: str | None) -> tuple[object, ...]:
    """HEAD and the index's signature (the worktree's own git dir holds its index): what the
    commits git gives rows depend on."""
    return (head, _signed(str(git_dir / "index"))[0])


def load(path: Path, key: str, kind: type | None = None) -> Any:
    """What was kept in `path` under `key` (a Scan, or an object of `kind`), else None."""
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

    return scan if isinstance(scan, Scan) or (kind is not None and isinstance(scan, kind)) else None


def save(path: Path, key: str, scan: object) -> None:
    """Keep `scan` (or another object) under `key`; a cache that cannot be written costs
    time only."""
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
