"""A cell's whole process tree: its memory peak, and its end with the cell.

A runner may start children, which may call `setsid` and leave its process group (killing the
group misses them) or outlive it (then init adopts them). On Linux oomrec makes itself the child
subreaper while a cell runs (`PR_SET_CHILD_SUBREAPER`), so orphans of the cell become oomrec's
children instead of init's, and the tree can be walked from oomrec; elsewhere the processes seen
in the tree while sampling are remembered. At the end of the cell every one left is killed.

The peak is that of the tree's summed RSS, sampled with psutil every SAMPLE_S seconds; on Linux
the tree is walked through /proc/PID/task/TID/children, 0.2-0.3% of a core in all
(benchmarks/perf/bench_runner.py). A process that lives less than a sample is covered by
`wait4`'s ru_maxrss for the direct child (see runner.py).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass

import psutil

SAMPLE_S = 0.2
_PROC_CHILDREN = os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/children")
_PR_SET_CHILD_SUBREAPER = 36
# Enough rounds for a chain of processes adopted one generation at a time as parents die.
_KILL_ROUNDS = 20


def set_subreaper(on: bool) -> bool:
    """Make this process the child subreaper (Linux); False where that is not available."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


@dataclass(frozen=True, slots=True)
class Leftovers:
    """What was killed at the end of a cell: how many processes, and how many of them had left
    the runner's process group (setsid)."""

    killed: int = 0
    escaped: int = 0

    def describe(self) -> str | None:
        if not self.killed:
            return None
        noun = "process" if self.killed == 1 else "processes"
        text = f"killed {self.killed} leftover {noun} of the cell"
        if self.escaped:
            text += f" ({self.escaped} had left its process group)"
        return text


class ProcessTree:
    """The processes of one cell: the runner (`root`), its descendants, and orphans adopted by
    this process while the cell runs."""

    def __init__(self) -> None:
        """Made before the runner starts: children this process already has are not the cell's."""
        self.root = -1
        self.peak: int | None = None
        self._me = os.getpid()
        self._before = {
            (pid, _created(proc))
            for pid in _children_map()(self._me)
            if (proc := _process(pid)) is not None
        }
        self._seen: dict[int, psutil.Process] = {}
        self._killed: set[int] = set()
        self._escaped: set[int] = set()

    def launched(self, root: int) -> None:
        """The runner started as `root`, the leader of its own process group."""
        self.root = root

    def sample(self) -> None:
        """Add the tree's current summed RSS to the peak."""
        total = 0
        for proc in self._members():
            with contextlib.suppress(psutil.Error):
                total += proc.memory_info().rss
        if total and (self.peak is None or total > self.peak):
            self.peak = total

    @property
    def leftovers(self) -> Leftovers:
        return Leftovers(len(self._killed), len(self._escaped))

    def kill_all(self) -> None:
        """Kill every process of the tree but the root (reaped by its waiter), reap adopted
        ones, until none is left."""
        for _ in range(_KILL_ROUNDS):
            # Only new ones: one already killed and still alive is stuck in the kernel (a wedged
            # driver), and waiting for it again would stall the sweep.
            targets = [
                p
                for p in self._members()
                if p.pid != self.root and p.pid not in self._killed and _alive(p)
            ]
            if not targets:
                break
            for proc in targets:
                with contextlib.suppress(psutil.Error, OSError):
                    if os.getpgid(proc.pid) != self.root:
                        self._escaped.add(proc.pid)
                    proc.send_signal(signal.SIGKILL)
                    self._killed.add(proc.pid)
            psutil.wait_procs(targets, timeout=1.0)
            self._reap_adopted()
        self._reap_adopted()

    def _members(self) -> list[psutil.Process]:
        """The cell's processes now: the descendants of this process's new children (the runner
        and adopted orphans), and those seen before that still run (where there is no
        subreaper, an orphan's new parent is init)."""
        children = _children_map()
        found: dict[int, psutil.Process] = {}
        queue = list(children(self._me))
        while queue:
            pid = queue.pop()
            if pid in found:
                continue
            proc = self._seen.get(pid) or _process(pid)
            if proc is None or (pid, _created(proc)) in self._before:
                continue
            found[pid] = proc
            queue.extend(children(pid))
        for pid, proc in list(self._seen.items()):
            if pid not in found and proc.is_running():
                found[pid] = proc
        self._seen.update(found)
        return list(found.values())

    def _reap_adopted(self) -> None:
        """Reap orphans this process adopted as subreaper (never the root: its waiter does)."""
        for pid in list(self._seen):
            if pid == self.root:
                continue
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(pid, os.WNOHANG)


def _children_map() -> Callable[[int], list[int]]:
    """pid -> its children's pids: Linux's /proc/PID/task/TID/children (~20 us for a small tree),
    else one scan of every process (~2 ms). The former may miss a child forked at that instant:
    harmless for a memory sample, and when killing, its parent's death makes it this
    subreaper's child, found by the next round."""
    if _PROC_CHILDREN:
        return _proc_children
    ppids: dict[int, list[int]] = {}
    for proc in psutil.process_iter(["ppid"]):
        ppids.setdefault(proc.info["ppid"], []).append(proc.pid)
    return lambda pid: ppids.get(pid, [])


def _proc_children(pid: int) -> list[int]:
    pids: list[int] = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children", encoding="ascii") as fh:
                pids.extend(int(child) for child in fh.read().split())
    except OSError:
        pass
    return pids


def _process(pid: int) -> psutil.Process | None:
    try:
        return psutil.Process(pid)
    except psutil.Error:
        return None


def _created(proc: psutil.Process) -> float | None:
    try:
        return proc.create_time()
    except psutil.Error:
        return None


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False
