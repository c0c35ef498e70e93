"""A memory cgroup per cell, where oomrec can make one: the cell's own evidence.

Slurm, systemd-run and Kubernetes give each job a cgroup of its own and read OOMKilled from that
cgroup's counters; oomrec does the same per cell. Only the cell's processes are in it (the
runner is placed there between fork and exec, so every process it starts is too), so:

- its `oom_kill` counter (v2 `memory.events`, v1 `memory.oom_control`) is proof that the OOM
  killer killed a process of the cell, however short-lived;
- its peak (v2 `memory.peak`, v1 `memory.max_usage_in_bytes`) counts each page once, page cache
  the cell touched included;
- its working set (usage less inactive page cache) is what the guard's `--max-cell-memory`
  checks: a page shared by a fork without exec is charged once, not once per process.

The cgroup is made under oomrec's own (v1: in the memory hierarchy; v2: where the memory
controller is enabled for oomrec's cgroup's children), named `oomrec-<pid>-<n>`, and removed when
the cell ends; cgroups a killed oomrec left behind are removed by the next one. Where none can
be made (not root and no delegation, no memory controller, macOS), or where OOMREC_CELL_SCOPE=tree
asks for it, `unavailable()` says why once and cells fall back to their process tree and the
kernel log (oomkill.py).
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import re
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from oomrec.core.errors import OomrecError
from oomrec.core.memscope import WorkingSet, own_cgroups, stat_value, usage_name

_PREFIX = "oomrec-"
_OURS = re.compile(r"oomrec-(\d+)-(?:\d+|probe)")
_STAT_EVERY = 8
SCOPE_ENV = "OOMREC_CELL_SCOPE"
_SCOPES = ("cgroup", "tree")
_counter = itertools.count(1)


@dataclass(frozen=True, slots=True)
class _Place:
    """Where cell cgroups go: a parent directory and its version."""

    parent: Path
    version: int


class CellCgroup:
    """One cell's cgroup: made before the cell, read after it, removed."""

    def __init__(self, path: Path, version: int) -> None:
        self.path = path
        self.version = version
        self._procs = os.open(path / "cgroup.procs", os.O_WRONLY)
        try:
            # The guard reads it every check: memory.stat every _STAT_EVERY of them.
            self._working = WorkingSet(path, version, stat_every=_STAT_EVERY)
        except OSError:
            os.close(self._procs)
            raise

    @property
    def procs_fd(self) -> int:
        """The cgroup's procs file, open for writing: a process that writes `0` to it joins."""
        return self._procs

    def join(self) -> None:
        """Move the calling process in: run between fork and exec (Popen's preexec_fn), so it
        does only a write to a descriptor opened before the fork."""
        os.write(self._procs, b"0")

    def set_limit(self, limit: int) -> bool:
        """A hard memory limit on the cell (a probe's): past it the kernel's OOM killer acts
        inside the cell, not on the host. Whether it was set."""
        name = "memory.max" if self.version == 2 else "memory.limit_in_bytes"
        try:
            (self.path / name).write_text(str(limit))
        except OSError:
            return False
        return True

    def working_set(self) -> int | None:
        """What the cell uses now, less page cache the kernel may drop first."""
        return self._working.read()

    def peak(self) -> int | None:
        name = "memory.peak" if self.version == 2 else "memory.max_usage_in_bytes"
        return _read_int(self.path / name)

    def oom_kills(self) -> int | None:
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        try:
            text = (self.path / name).read_bytes()
        except OSError:
            return None
        if b"oom_kill " not in text:
            return None
        return stat_value(b"\n" + text, b"oom_kill ")

    def describe(self) -> str:
        return f"the cell's cgroup {self.path.name} (v{self.version})"

    def remove(self) -> None:
        """Kill whatever of the cell is still in its cgroup (only the cell's processes can be:
        one that escaped the tree walk is caught here), then remove the cgroup."""
        with contextlib.suppress(OSError):
            os.close(self._procs)
        self._working.close()
        for _ in range(3):
            pids = [int(p) for p in _read_text(self.path / "cgroup.procs").split() if p.isdigit()]
            if not pids:
                break
            for pid in pids:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.05)
        _rmdir(self.path)


def make() -> CellCgroup | None:
    """A cgroup for the next cell, or None where none can be made (see unavailable())."""
    place = _chosen_place(strict=False)
    if isinstance(place, str):
        return None
    path = place.parent / f"{_PREFIX}{os.getpid()}-{next(_counter)}"
    try:
        path.mkdir()
    except OSError:
        return None
    try:
        return CellCgroup(path, place.version)
    except OSError:
        _rmdir(path)
        return None


def unavailable() -> str | None:
    """Why cells cannot have cgroups of their own here, or None when they can. OomrecError
    when OOMREC_CELL_SCOPE is neither cgroup nor tree."""
    place = _chosen_place(strict=True)
    return place if isinstance(place, str) else None


def describe_mode() -> str:
    """The header's line on where a cell's evidence comes from."""
    why = unavailable()
    if why is None:
        place = _place()
        assert isinstance(place, _Place)
        return f"a memory cgroup per cell (v{place.version}, under {place.parent})"
    return f"the cell's process tree and the kernel log (no cgroup per cell: {why})"


def _chosen_place(strict: bool) -> _Place | str:
    """_place(), unless OOMREC_CELL_SCOPE asks for the process tree (read each time: it is the
    operator's to change between runs of one process, as the tests do)."""
    raw = os.environ.get(SCOPE_ENV, "")
    value = raw.strip().lower() or "cgroup"
    if value not in _SCOPES:
        if strict:
            raise OomrecError(
                f"{SCOPE_ENV}={raw[:40]!r} is not cgroup or tree; unset it (a cgroup per cell "
                "where one can be made) or set it to tree (each cell's process tree)"
            )
        value = "cgroup"
    if value == "tree":
        return f"{SCOPE_ENV}=tree"
    return _place()


@functools.cache
def _place() -> _Place | str:
    """Where cell cgroups can be made, tried once per process (and leftovers cleaned there);
    or why they cannot."""
    own = own_cgroups()
    if not own:
        return "no /proc/self/cgroup (not Linux)"
    tried: list[str] = []
    for cg in own:
        parent = cg.path
        if parent is None:
            continue
        if cg.version == 2 and "memory" not in _read_text(parent / "cgroup.subtree_control"):
            tried.append(f"v2: the memory controller is not delegated below {parent}")
            continue
        why = _probe(parent, cg.version)
        if why is None:
            _clean_leftovers(parent)
            return _Place(parent, cg.version)
        tried.append(f"v{cg.version}: {why}")
    return "; ".join(tried) or "no memory cgroup controller mounted"


def _probe(parent: Path, version: int) -> str | None:
    """None when a child cgroup can be made and a process moved into it here."""
    test = parent / f"{_PREFIX}{os.getpid()}-probe"
    try:
        test.mkdir()
    except OSError as exc:
        return f"cannot make a cgroup under {parent} ({exc.strerror})"
    try:
        if not (test / usage_name(version)).exists() or not (test / "cgroup.procs").exists():
            return f"{parent} has no memory controller files"
        if not os.access(test / "cgroup.procs", os.W_OK):
            return f"cannot move processes into cgroups under {parent}"
        return None
    finally:
        _rmdir(test)


def _clean_leftovers(parent: Path) -> None:
    """Remove the cell cgroups of oomrec processes that died without removing them."""
    with contextlib.suppress(OSError):
        for entry in parent.iterdir():
            # Only names oomrec gives: another tool's `oomrec-...` cgroup is not ours to remove.
            match = _OURS.fullmatch(entry.name)
            if match is None or not entry.is_dir():
                continue
            pid = int(match[1])
            if pid == os.getpid() or _alive(pid):
                continue
            if not _read_text(entry / "cgroup.procs").strip():
                _rmdir(entry, tries=1)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _rmdir(path: Path, tries: int = 100) -> None:
    # The cell's last process may take a moment to leave once killed.
    for _ in range(tries):
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.01)


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="ascii", errors="replace")
    except OSError:
        return ""


def _read_int(path: Path) -> int | None:
    text = _read_text(path).strip()
    return int(text) if text.isdigit() else None
