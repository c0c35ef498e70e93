"""Did the kernel's OOM killer kill this cell? Its log first, its counters where no log is.

A SIGKILL alone proves nothing (a manual `kill -9`, `timeout -s KILL`, a scheduler's time limit
all give it), and the counters cannot tell whose OOM they counted: `/proc/vmstat oom_kill` is
the whole machine's, and oomrec's own cgroup's (v2 `memory.events`, v1 `memory.oom_control`)
counts whatever else runs in it. On a shared host or a cluster node other processes OOM all the
time. So:

- the kernel log (`/dev/kmsg`, where readable: root, or `kernel.dmesg_restrict=0`) is read from
  the cell's start to its end; each OOM kill in it names the killed pid and its memory cgroup
  (`oom-kill:...task_memcg=...,pid=N`, `Killed process N`). A kill of one of the cell's
  processes is the proof; a kill in oomrec's own cgroup (or one below it) of a pid oomrec never
  saw may be a short-lived process of the cell: unconfirmed, taken as OOM (a missed OOM is the
  worse error); kills elsewhere are another cgroup's and never evidence;
- without the log, the counters are compared across the cell, and a growth is only
  unconfirmed: it cannot be tied to the cell.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass
from pathlib import Path

_VMSTAT = Path("/proc/vmstat")
_KMSG = "/dev/kmsg"
# Linux's /dev/kmsg is character device 1, 11 (Documentation/admin-guide/devices.txt).
_KMSG_DEVICE = os.makedev(1, 11)
_CGROUP_ROOTS = (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/unified"))
_V1_MEMORY_ROOT = Path("/sys/fs/cgroup/memory")


@dataclass(frozen=True, slots=True)
class OomCounters:
    """The readable counters at one moment: (where, count) pairs."""

    values: tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True)
class LoggedKill:
    """One OOM kill the kernel logged: the pid, its command and memory cgroup when said."""

    pid: int
    command: str = ""
    memcg: str | None = None


@dataclass(frozen=True, slots=True)
class KillEvidence:
    """What the counters and the kernel log say about a cell: which counters grew (by how
    much), which were readable; the log's OOM kills during the cell (None: no log to read), and
    which of them were of the cell's processes or might be (in oomrec's own cgroup)."""

    grew: tuple[tuple[str, int], ...]
    readable: tuple[str, ...]
    logged: tuple[LoggedKill, ...] | None = None
    of_cell: tuple[LoggedKill, ...] = ()
    maybe_cell: tuple[LoggedKill, ...] = ()
    # The cell's own cgroup (cellscope.py) and its oom_kill count, where it had one: proof
    # either way, since only the cell's processes were in it.
    cell_cgroup: str | None = None
    cell_kills: int | None = None

    @property
    def by_cgroup(self) -> bool:
        return self.cell_cgroup is not None and self.cell_kills is not None

    @property
    def confirmed(self) -> bool:
        """The cell's own cgroup counted an OOM kill, or the kernel log names a process of the
        cell (one that moved itself out of the cell's cgroup, say) as killed by the OOM killer."""
        return bool(self.by_cgroup and self.cell_kills) or bool(self.of_cell)

    @property
    def unconfirmed(self) -> bool:
        """An OOM kill that may have been the cell's: without a cgroup of the cell's own, a pid
        oomrec never saw in its own cgroup, or, with no log to read, a counter that grew."""
        if self.confirmed or self.by_cgroup:
            return False
        if self.logged is not None:
            return bool(self.maybe_cell)
        return bool(self.grew)

    @property
    def unreadable(self) -> bool:
        return not self.by_cgroup and self.logged is None and not self.readable

    def describe(self) -> str:
        if self.by_cgroup and self.cell_kills:
            return f"the kernel's OOM killer killed a process in {self.cell_cgroup}"
        if self.of_cell:
            kill = self.of_cell[0]
            return f"the kernel's OOM killer killed pid {kill.pid} ({kill.command}), the cell's"
        if self.by_cgroup:
            logged = "" if self.logged is None else ", and the kernel log names none of its pids"
            return f"no OOM kill in {self.cell_cgroup} (oom_kill 0){logged}"
        if self.maybe_cell:
            kill = self.maybe_cell[0]
            return (
                f"the kernel's OOM killer killed pid {kill.pid} ({kill.command}) in oomrec's own "
                "cgroup, a process oomrec did not see in the cell"
            )
        if self.logged is not None:
            if self.logged:
                return (
                    f"the kernel log names no process of the cell ({len(self.logged)} OOM "
                    "kill(s) in other cgroups meanwhile)"
                )
            return "the kernel log has no OOM kill during the cell"
        if self.grew:
            growth = ", ".join(f"{where} oom_kill +{delta}" for where, delta in self.grew)
            return (
                f"an OOM-kill counter grew ({growth}) and no kernel log is readable to tell whose"
            )
        if self.readable:
            return f"no OOM kill counted ({', '.join(self.readable)} oom_kill unchanged)"
        return "no OOM-kill counter or kernel log readable here, so not confirmed"


def read_counters() -> OomCounters:
    """Every OOM-kill counter readable now."""
    values = []
    for where, path in _sources():
        count = _read_count(path)
        if count is not None:
            values.append((where, count))
    return OomCounters(tuple(values))


def compare(
    before: OomCounters,
    after: OomCounters,
    logged: tuple[LoggedKill, ...] | None = None,
    cell_pids: frozenset[int] = frozenset(),
    cell_cgroup: str | None = None,
    cell_kills: int | None = None,
) -> KillEvidence:
    """Counters readable both times and which of them grew; with the kernel log's kills during
    the cell (`logged`), which were of `cell_pids` or may have been (in oomrec's cgroup); with
    the cell's own cgroup (`cell_cgroup`), the OOM kills it counted (`cell_kills`)."""
    then = dict(before.values)
    both = [(where, count - then[where]) for where, count in after.values if where in then]
    of_cell: tuple[LoggedKill, ...] = ()
    maybe: tuple[LoggedKill, ...] = ()
    if logged is not None:
        of_cell = tuple(k for k in logged if k.pid in cell_pids)
        own = own_memcg()
        maybe = tuple(
            k
            for k in logged
            if k.pid not in cell_pids and (k.memcg is None or own is None or _within(k.memcg, own))
        )
    return KillEvidence(
        grew=tuple((where, delta) for where, delta in both if delta > 0),
        readable=tuple(where for where, _ in both),
        logged=logged,
        of_cell=of_cell,
        maybe_cell=maybe,
        cell_cgroup=cell_cgroup,
        cell_kills=cell_kills,
    )


def _within(memcg: str, own: str) -> bool:
    own = own.rstrip("/")
    return own == "" or memcg == own or memcg.startswith(own + "/")


def own_memcg() -> str | None:
    """oomrec's memory cgroup as the kernel log names it (`/a/b`), None when unknown: the v1
    memory controller's where there is one, else the v2 one."""
    from oomrec.core.memscope import own_cgroups

    own = sorted(own_cgroups(), key=lambda cg: cg.version)
    return own[0].rel if own else None


_KILLED = re.compile(rb"Killed process (\d+) \(([^)]*)\)")
_OOM_KILL = re.compile(rb"oom-kill:.*?task_memcg=([^,]*),task=([^,]*),pid=(\d+)")


class KernelLog:
    """The kernel log from now on (`/dev/kmsg`), read for the OOM killer's lines at the end of
    a cell; `kills()` is None where it cannot be read or lost records meanwhile."""

    def __init__(self) -> None:
        self._fd: int | None = None
        try:
            self._fd = os.open(_KMSG, os.O_RDONLY | os.O_NONBLOCK)
            # Only the kernel's log device is the kernel's word (not a file bound over it).
            if os.fstat(self._fd).st_rdev != _KMSG_DEVICE:
                raise OSError("not the kernel log device")
            os.lseek(self._fd, 0, os.SEEK_END)
        except OSError:
            self.close()

    def kills(self) -> tuple[LoggedKill, ...] | None:
        """The OOM kills logged since this was made; closes the log."""
        if self._fd is None:
            return None
        found: dict[int, LoggedKill] = {}
        try:
            while True:
                try:
                    record = os.read(self._fd, 8192)
                except BlockingIOError:
                    break
                except BrokenPipeError:
                    # Records were overwritten before they were read: one may have been ours.
                    return None
                if not record:
                    break
                _, _, text = record.partition(b";")
                if b"oom-kill:" in text:
                    m = _OOM_KILL.search(text)
                    if m:
                        pid = int(m[3])
                        found[pid] = LoggedKill(pid, m[2].decode(errors="replace"), _str(m[1]))
                elif b"Killed process" in text:
                    m = _KILLED.search(text)
                    if m and int(m[1]) not in found:
                        found[int(m[1])] = LoggedKill(int(m[1]), m[2].decode(errors="replace"))
        except OSError:
            return None
        finally:
            self.close()
        return tuple(found.values())

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _str(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")


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
