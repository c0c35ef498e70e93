"""The kernel's OOM-kill counters, read before and after a cell: did the OOM killer act?

A SIGKILL alone proves nothing (a manual `kill -9`, `timeout -s KILL`, a scheduler's time limit
all give it). Linux counts its OOM kills in `/proc/vmstat` (`oom_kill`, the whole machine), in
cgroup v2 `memory.events` and in cgroup v1 `memory.oom_control` (`oom_kill`, oomrec's own cgroup,
which its cells share); whichever of them are readable are compared across the cell.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

_VMSTAT = Path("/proc/vmstat")
_CGROUP_ROOTS = (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/unified"))
_V1_MEMORY_ROOT = Path("/sys/fs/cgroup/memory")


@dataclass(frozen=True, slots=True)
class OomCounters:
    """The readable counters at one moment: (where, count) pairs."""

    values: tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True)
class KillEvidence:
    """What the counters say about a cell: which grew (by how much), which were readable."""

    grew: tuple[tuple[str, int], ...]
    readable: tuple[str, ...]

    @property
    def confirmed(self) -> bool:
        return bool(self.grew)

    @property
    def unreadable(self) -> bool:
        return not self.readable

    def describe(self) -> str:
        if self.grew:
            growth = ", ".join(f"{where} oom_kill +{delta}" for where, delta in self.grew)
            return f"the kernel's OOM killer acted ({growth})"
        if self.readable:
            return f"no OOM kill counted ({', '.join(self.readable)} oom_kill unchanged)"
        return "no OOM-kill counter readable here, so not confirmed"


def read_counters() -> OomCounters:
    """Every OOM-kill counter readable now."""
    values = []
    for where, path in _sources():
        count = _read_count(path)
        if count is not None:
            values.append((where, count))
    return OomCounters(tuple(values))


def compare(before: OomCounters, after: OomCounters) -> KillEvidence:
    """Counters readable both times, and which of them grew."""
    then = dict(before.values)
    both = [(where, count - then[where]) for where, count in after.values if where in then]
    return KillEvidence(
        grew=tuple((where, delta) for where, delta in both if delta > 0),
        readable=tuple(where for where, _ in both),
    )


def _read_count(path: Path) -> int | None:
    try:
        text = path.read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if key == "oom_kill" and value.strip().isdigit():
            return int(value)
    return None


@functools.cache
def _sources() -> tuple[tuple[str, Path], ...]:
    sources: list[tuple[str, Path]] = [("/proc/vmstat", _VMSTAT)]
    try:
        lines = Path("/proc/self/cgroup").read_text(encoding="utf-8").splitlines()
    except OSError:
        return tuple(sources)
    for line in lines:
        if line.count(":") < 2:
            continue
        _, controllers, rel = line.split(":", 2)
        rel = rel.strip().lstrip("/")
        if controllers == "":
            # cgroup v2; a cgroup namespace mounts oomrec's own cgroup at the root.
            path = _first_file([root / rel / "memory.events" for root in _CGROUP_ROOTS])
            if path is not None:
                sources.append(("cgroup v2 memory.events", path))
        elif "memory" in controllers.split(","):
            roots = (_V1_MEMORY_ROOT / rel, _V1_MEMORY_ROOT)
            path = _first_file([root / "memory.oom_control" for root in roots])
            if path is not None:
                sources.append(("cgroup v1 memory.oom_control", path))
    return tuple(sources)


def _first_file(paths: list[Path]) -> Path | None:
    return next((p for p in paths if p.is_file()), None)
