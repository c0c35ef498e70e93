"""The memory limit that really binds this process: the host's, or an enclosing cgroup's.

A Slurm `--mem` job, a `docker run --memory` container or a systemd slice puts oomrec inside a
memory cgroup whose limit is far under the host's RAM. The kernel OOM-kills there while the
host's MemAvailable still shows gigabytes free, so the guard's `--min-available`, a limit given
as `N%`, and the memory a record says it ran out at must all use the tightest limit: that of
this process's cgroup or of any cgroup above it (cgroup v2 `memory.max`, v1
`memory.limit_in_bytes`), or the host's when none is tighter.

What is available inside a cgroup is its limit less its working set: what it uses
(`memory.current`, v1 `memory.usage_in_bytes`) less the page cache the kernel can drop first
(`inactive_file` of its `memory.stat`), as kubelet and docker count it.
"""

from __future__ import annotations

import contextlib
import functools
import os
from dataclasses import dataclass
from pathlib import Path

from oomrec.core.shown import show_bytes

# v1 writes "no limit" as the largest page-aligned 63-bit number; anything this large is none.
_UNLIMITED = 1 << 60


@dataclass(frozen=True, slots=True)
class CgroupLimit:
    """The tightest memory limit among this process's cgroup and its ancestors."""

    limit: int
    path: Path
    version: int

    def describe(self) -> str:
        return f"cgroup {self.path} (v{self.version})"


@dataclass(frozen=True, slots=True)
class OwnCgroup:
    """This process's cgroup in one memory hierarchy, as `/proc/self/cgroup` names it."""

    version: int
    # The path below the hierarchy's root, as the kernel (and its log) names it: `/a/b`.
    rel: str

    @property
    def root(self) -> Path | None:
        """Where the hierarchy is mounted, None where it is not."""
        return _mounts().get(self.version)

    @property
    def path(self) -> Path | None:
        """The cgroup's directory (the mount's root inside a cgroup namespace)."""
        root = self.root
        if root is None:
            return None
        here = root / self.rel.strip().lstrip("/")
        return here if here.is_dir() else root


@functools.cache
def own_cgroups() -> tuple[OwnCgroup, ...]:
    """This process's memory cgroups, in `/proc/self/cgroup`'s order: the v1 memory
    controller's and the v2 unified one's; none where it cannot be read (not Linux)."""
    try:
        lines = Path("/proc/self/cgroup").read_text(encoding="utf-8").splitlines()
    except OSError:
        return ()
    found = []
    for line in lines:
        if line.count(":") < 2:
            continue
        _, controllers, rel = line.split(":", 2)
        if "memory" in controllers.split(","):
            found.append(OwnCgroup(1, rel.strip() or "/"))
        elif controllers == "":
            found.append(OwnCgroup(2, rel.strip() or "/"))
    return tuple(found)


@functools.cache
def _mounts() -> dict[int, Path]:
    try:
        mounts = Path("/proc/self/mountinfo").read_text(encoding="utf-8").splitlines()
    except OSError:
        return {}
    found = {1: mount_point(mounts, "cgroup", "memory"), 2: mount_point(mounts, "cgroup2", None)}
    return {version: root for version, root in found.items() if root is not None}


def usage_name(version: int) -> str:
    """The file of a cgroup's memory usage in bytes."""
    return "memory.current" if version == 2 else "memory.usage_in_bytes"


# The memory.stat line of the page cache the kernel drops first; v1's hierarchical total counts
# the cgroups below too, as its usage does.
_INACTIVE = {1: b"total_inactive_file ", 2: b"inactive_file "}


@functools.cache
def enclosing_limit() -> CgroupLimit | None:
    """This process's binding cgroup memory limit, or None where no cgroup limits it (or
    cgroups cannot be read: not Linux, no memory controller mounted)."""
    names = {1: "memory.limit_in_bytes", 2: "memory.max"}
    found = [
        limit
        for cg in own_cgroups()
        if cg.root is not None
        and cg.path is not None
        and (limit := _walk(cg.path, cg.root, names[cg.version], cg.version)) is not None
    ]
    return min(found, key=lambda c: c.limit) if found else None


def host_ram() -> int:
    """This host's RAM in bytes: the one reading of it (the record's memory, the guard's and the
    probe's limits). sysconf reads what psutil's total reads (the kernel's totalram) without
    importing psutil, which `check` and `record add` do not otherwise need."""
    try:
        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        ram = 0
    if ram > 0:
        return int(ram)
    import psutil

    return int(psutil.virtual_memory().total)


def binding_total(host: int) -> int:
    """The memory a cell can have here: the host's `host` bytes, or a tighter cgroup limit."""
    scope = enclosing_limit()
    return min(host, scope.limit) if scope is not None else host


def host_total() -> int:
    """The memory that binds here, in bytes: this host's RAM, or the limit of a memory cgroup
    around oomrec where that is tighter (a Slurm or docker job). What a record's memory is,
    what a percentage limit is a share of, what a probe's floor is taken from."""
    return binding_total(host_ram())


def describe_binding(host: int) -> str:
    """Which limit binds, for the sweep's header."""
    scope = enclosing_limit()
    if scope is None or scope.limit >= host:
        return f"{show_bytes(host)}, this host's (no memory cgroup around oomrec is tighter)"
    return f"{show_bytes(scope.limit)}, the limit of {scope.describe()} (host: {show_bytes(host)})"


def cgroup_binds(host: int) -> bool:
    scope = enclosing_limit()
    return scope is not None and scope.limit < host


class WorkingSet:
    """A cgroup's working set, its usage less its inactive page cache, read through descriptors
    kept open (the guard reads it every few ms). memory.stat is a page of text the kernel makes
    on each read; with `stat_every` N it is re-read every Nth time (that cache changes slowly)."""

    def __init__(self, path: Path, version: int, stat_every: int = 1) -> None:
        """OSError when the cgroup's files cannot be opened."""
        self._usage = os.open(path / usage_name(version), os.O_RDONLY)
        try:
            self._stat = os.open(path / "memory.stat", os.O_RDONLY)
        except OSError:
            os.close(self._usage)
            raise
        self._fds: tuple[int, ...] = (self._usage, self._stat)
        self._key = _INACTIVE[version]
        self._every = stat_every
        self._inactive = 0
        self._reads = 0

    def read(self) -> int | None:
        if not self._fds:
            return None
        try:
            usage = int(os.pread(self._usage, 64, 0))
            if self._reads % self._every == 0:
                self._inactive = stat_value(os.pread(self._stat, 8192, 0), self._key)
        except (OSError, ValueError):
            return None
        self._reads += 1
        return max(0, usage - self._inactive)

    def close(self) -> None:
        for fd in self._fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fds = ()


class CgroupAvailable:
    """What the binding cgroup has left: its limit less its working set."""

    def __init__(self, scope: CgroupLimit) -> None:
        self.scope = scope
        try:
            self._working: WorkingSet | None = WorkingSet(scope.path, scope.version)
        except OSError:
            self._working = None

    def read(self) -> int | None:
        used = self._working.read() if self._working is not None else None
        return None if used is None else max(0, self.scope.limit - used)

    def close(self) -> None:
        if self._working is not None:
            self._working.close()
            self._working = None


def stat_value(stat: bytes, key: bytes) -> int:
    """The number after `key` (`b"inactive_file "`) in a memory.stat-style text, 0 if absent."""
    at = stat.find(b"\n" + key)
    start = at + 1 + len(key) if at >= 0 else (len(key) if stat.startswith(key) else -1)
    if start < 0:
        return 0
    end = stat.find(b"\n", start)
    try:
        return int(stat[start : end if end >= 0 else None])
    except ValueError:
        return 0


def mount_point(mounts: list[str], fstype: str, option: str | None) -> Path | None:
    """Where `/proc/self/mountinfo` lines `mounts` mount a `fstype` with `option`."""
    for line in mounts:
        fields = line.split(" - ", 1)
        if len(fields) != 2 or len(fields[1].split()) < 3:
            continue
        kind, _, options = fields[1].split()[:3]
        if kind == fstype and (option is None or option in options.split(",")):
            return Path(fields[0].split()[4])
    return None


def _walk(here: Path, root: Path, name: str, version: int) -> CgroupLimit | None:
    """The tightest `name` limit from the cgroup `here` up to the mount's `root`."""
    best: CgroupLimit | None = None
    while True:
        limit = _read_limit(here / name)
        if limit is not None and (best is None or limit < best.limit):
            best = CgroupLimit(limit, here, version)
        if here == root or root not in here.parents:
            return best
        here = here.parent


def _read_limit(path: Path) -> int | None:
    try:
        text = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    if not text.isdigit():
        return None  # "max" (v2): no limit
    value = int(text)
    return value if 0 < value < _UNLIMITED else None
