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

import functools
import os
from dataclasses import dataclass
from pathlib import Path

# v1 writes "no limit" as the largest page-aligned 63-bit number; anything this large is none.
_UNLIMITED = 1 << 60


@dataclass(frozen=True, slots=True)
class CgroupLimit:
    """The tightest memory limit among this process's cgroup and its ancestors."""

    limit: int
    path: Path
    version: int

    @property
    def usage_file(self) -> Path:
        return self.path / ("memory.current" if self.version == 2 else "memory.usage_in_bytes")

    @property
    def stat_file(self) -> Path:
        return self.path / "memory.stat"

    @property
    def inactive_key(self) -> bytes:
        # v1's hierarchical total counts the cgroups below too, as its usage does.
        return b"inactive_file " if self.version == 2 else b"total_inactive_file "

    def describe(self) -> str:
        return f"cgroup {self.path} (v{self.version})"


@functools.cache
def enclosing_limit() -> CgroupLimit | None:
    """This process's binding cgroup memory limit, or None where no cgroup limits it (or
    cgroups cannot be read: not Linux, no memory controller mounted)."""
    try:
        own = Path("/proc/self/cgroup").read_text(encoding="utf-8").splitlines()
        mounts = Path("/proc/self/mountinfo").read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    found: list[CgroupLimit] = []
    for line in own:
        if line.count(":") < 2:
            continue
        _, controllers, rel = line.split(":", 2)
        if controllers == "":
            root = mount_point(mounts, "cgroup2", None)
            limit = _walk(root, rel, "memory.max", 2) if root else None
        elif "memory" in controllers.split(","):
            root = mount_point(mounts, "cgroup", "memory")
            limit = _walk(root, rel, "memory.limit_in_bytes", 1) if root else None
        else:
            continue
        if limit is not None:
            found.append(limit)
    return min(found, key=lambda c: c.limit) if found else None


def host_ram() -> int:
    """This host's RAM in bytes."""
    import psutil

    return int(psutil.virtual_memory().total)


def binding_total(host: int) -> int:
    """The memory a cell can have here: the host's `host` bytes, or a tighter cgroup limit."""
    scope = enclosing_limit()
    return min(host, scope.limit) if scope is not None else host


def describe_binding(host: int) -> str:
    """Which limit binds, for the sweep's header."""
    from oomrec.records import show_bytes

    scope = enclosing_limit()
    if scope is None or scope.limit >= host:
        return f"{show_bytes(host)}, this host's (no memory cgroup around oomrec is tighter)"
    return f"{show_bytes(scope.limit)}, the limit of {scope.describe()} (host: {show_bytes(host)})"


def cgroup_binds(host: int) -> bool:
    scope = enclosing_limit()
    return scope is not None and scope.limit < host


class CgroupAvailable:
    """What the binding cgroup has left, read through descriptors kept open (the guard reads
    it every few ms): its limit less its usage less its inactive page cache."""

    def __init__(self, scope: CgroupLimit) -> None:
        self.scope = scope
        self._fds: tuple[int, int] | None = None
        try:
            usage = os.open(scope.usage_file, os.O_RDONLY)
        except OSError:
            return
        try:
            stat = os.open(scope.stat_file, os.O_RDONLY)
        except OSError:
            os.close(usage)
            return
        self._fds = (usage, stat)

    def read(self) -> int | None:
        if self._fds is None:
            return None
        usage_fd, stat_fd = self._fds
        try:
            usage = int(os.pread(usage_fd, 64, 0))
            stat = os.pread(stat_fd, 8192, 0)
        except (OSError, ValueError):
            return None
        inactive = stat_value(stat, self.scope.inactive_key)
        return max(0, self.scope.limit - max(0, usage - inactive))

    def close(self) -> None:
        if self._fds is not None:
            for fd in self._fds:
                os.close(fd)
            self._fds = None


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


def _walk(root: Path, rel: str, name: str, version: int) -> CgroupLimit | None:
    """The tightest `name` limit from this process's cgroup up to the mount's root."""
    here = root / rel.strip().lstrip("/")
    if not here.is_dir():
        # A cgroup namespace shows this process's cgroup as the root of the mount.
        here = root
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
