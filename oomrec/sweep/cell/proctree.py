"""A cell's whole process tree: its memory peak, and its end with the cell.

A runner may start children, which may call `setsid` and leave its process group (killing the
group misses them) or outlive it (then init adopts them). On Linux oomrec makes itself the child
subreaper while a cell runs (`PR_SET_CHILD_SUBREAPER`), so orphans of the cell become oomrec's
children instead of init's, and the tree can be walked from oomrec; elsewhere the processes seen
in the tree while sampling are remembered. At the end of the cell every one left is killed.

The peak is that of the tree's memory, sampled every SAMPLE_S seconds; on Linux the tree is
walked through /proc/PID/task/TID/children, 0.2-0.3% of a core in all
(benchmarks/perf/bench_runner.py). Where the cell has no cgroup of its own (cellscope), the tree's
memory counts each page once, as a cgroup would (see `_Dedup`): processes that share one address
space (vfork, CLONE_VM) count once, and pages a fork shares with its parent count once (PSS).
A process that lives less than a sample is covered by `wait4`'s ru_maxrss for the direct child
(see runner.py). With the memory guard on, the
processes the last walk found are re-read between walks through their /proc/PID/statm
(`quick_rss`), and a watchdog kills the cell's process group if oomrec dies while it runs.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import psutil

SAMPLE_S = 0.2
_PROC_CHILDREN = os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/children")
_STATM = os.path.exists(f"/proc/{os.getpid()}/statm")
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_PR_SET_CHILD_SUBREAPER = 36
# kcmp(2): do two processes share one address space? (x86_64, aarch64; elsewhere never asked.)
_KCMP = {"x86_64": 312, "aarch64": 272}.get(os.uname().machine if hasattr(os, "uname") else "")
_KCMP_VM = 1
# PSS costs ~12 us per MiB mapped (benchmarks/perf/bench_guard.py): a read that took t waits
# _PSS_SPACING * t before the next one, so PSS stays near 0.5% of a core at most.
_PSS_SPACING = 200
# A process under this counts its whole RSS (it can overstate by no more): a shell, a `sleep`,
# a tool's one-off call are not worth a PSS read.
_PSS_FROM_BYTES = 16 << 20
# The watchdog waits for end of file on its stdin, the pipe (this process gone), then reads the
# group to kill from the slot, its stdout (dash redirects only fds 0-9, so the slot cannot keep
# its own number). dash's kill takes `-s KILL --`, not `-KILL --`.
_WATCHDOG = (
    'while read -r _; do :; done; read -r g <&1 || g=0; [ "${g:-0}" = 0 ] || kill -s KILL -- "-$g"'
)
_SLOT_WIDTH = 16
# Enough rounds for a chain of processes adopted one generation at a time as parents die.
_KILL_ROUNDS = 20


class Watchdog:
    """A `sh` that outlives this process to kill the running cell's process group if this
    process dies (a SIGKILL, a crash), so no orphan of the cell keeps its memory.

    One per oomrec process, started before the first cell's ProcessTree (so no tree counts it as
    the cell's) and reused. It sleeps on a pipe only this process holds until end of file (this
    process died), then kills the group the slot names, `0` none. The slot is a small memory
    file both share: per cell, two `pwrite`s of fixed width, which wake nothing (a line down
    the pipe woke the shell at each cell's start, ~0.5 ms of it, bench_sweep_overhead.py). A
    process that left the group (setsid) is out of its reach.
    """

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None
        self._fd = -1
        self._slot = -1
        try:
            self._slot = _memory_file()
            # The slot's page is made now, so a later write allocates nothing (a full disk,
            # a cgroup at its limit cannot make arming fail).
            self._put(0)
            read_end, self._fd = os.pipe()
        except OSError:
            self._close_slot()
            return
        try:
            self._proc = subprocess.Popen(
                ["sh", "-c", _WATCHDOG],
                stdin=read_end,
                stdout=self._slot,
                stderr=subprocess.DEVNULL,
                # Away from the terminal's Ctrl-C: the sweep handles that and disarms it.
                start_new_session=True,
            )
        except OSError:
            os.close(self._fd)
            self._close_slot()
        finally:
            os.close(read_end)

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def arm(self, pgid: int) -> None:
        if self._proc is not None:
            with contextlib.suppress(OSError):
                self._put(pgid)

    def disarm(self) -> None:
        """The cell is over (its group killed, its leader not yet reaped, so the group id cannot
        name another process's group meanwhile)."""
        self.arm(0)

    def _put(self, pgid: int) -> None:
        # Fixed width, at offset 0: the shell's one read at the end sees one whole value.
        os.pwrite(self._slot, f"{pgid:>{_SLOT_WIDTH - 1}}\n".encode("ascii"), 0)

    def _close_slot(self) -> None:
        if self._slot >= 0:
            with contextlib.suppress(OSError):
                os.close(self._slot)
            self._slot = -1


def _memory_file() -> int:
    """A file in memory (Linux's memfd), else an unlinked temporary file: an fd only."""
    if hasattr(os, "memfd_create"):
        with contextlib.suppress(OSError):
            return os.memfd_create("oomrec-watchdog", os.MFD_CLOEXEC)
    import tempfile

    fd, path = tempfile.mkstemp(prefix="oomrec-watchdog.")
    os.unlink(path)
    return fd


_watchdog: Watchdog | None = None


def watchdog() -> Watchdog:
    """This process's watchdog, (re)started when there is none running."""
    global _watchdog
    if _watchdog is None or not _watchdog.alive:
        _watchdog = Watchdog()
    return _watchdog


def set_subreaper(on: bool) -> bool:
    """Make this process the child subreaper (Linux); False where that is not available."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        return bool(_libc().prctl(_PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) == 0)
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
        # /proc/PID/statm of each member, kept open: the guard re-reads them many times a second,
        # and a descriptor stays bound to its process, so a reused pid is never read as the cell's.
        self._statm: dict[int, int] = {}
        self._killed: set[int] = set()
        self._escaped: set[int] = set()
        # Each process's RLIMIT_AS (0: none), and the (virtual size, limit) of the process that
        # came closest to its limit in a sample: a runner killed by SIGSEGV there ran out of
        # address space (MLX's CPU build segfaults when an allocation fails under `ulimit -v`).
        self._as_limits: dict[int, int] = {}
        self.address_space: tuple[int, int] | None = None
        self._dedup = _Dedup()

    def launched(self, root: int) -> None:
        """The runner started as `root`, the leader of its own process group."""
        self.root = root

    def sample(self) -> int:
        """Walk the tree, add its memory now to the peak, and return it; note how close each
        process came to its address-space limit."""
        total = 0
        members = self._members()
        for proc in members:
            with contextlib.suppress(psutil.Error):
                info = proc.memory_info()
                total += info.rss
                self._note_address_space(proc, info.vms)
        if not _STATM:
            self._add_to_peak(total)
            return total
        self._track({proc.pid for proc in members})
        return self._measure(walked=True)

    def quick_rss(self) -> int:
        """The memory of the processes the last walk found, without walking (the guard's
        check: ~3 us a process on Linux); a process started since is seen at the next walk."""
        if not _STATM:
            total = 0
            for proc in list(self._seen.values()):
                with contextlib.suppress(psutil.Error):
                    total += proc.memory_info().rss
            self._add_to_peak(total)
            return total
        return self._measure(walked=False)

    @property
    def estimated(self) -> bool:
        """Whether the last figure counts shared pages from an older PSS reading (or, where a
        process sharing pages has gone since, not at all): `exact()` before acting on it."""
        return self._dedup.estimated

    def exact(self) -> int:
        """The memory of the processes the last walk found, each page once, read now (PSS of
        each address space: ~12 us per MiB; the guard asks before it stops a cell)."""
        return self._measure(walked=False, force=True)

    def _measure(self, walked: bool, force: bool = False) -> int:
        statm: dict[int, bytes] = {}
        for pid, fd in list(self._statm.items()):
            try:
                statm[pid] = os.pread(fd, 128, 0)
            except OSError:
                # Gone: a dead process's statm cannot be read.
                os.close(fd)
                del self._statm[pid]
        total = self._dedup.measure(statm, walked, force)
        if not self._dedup.estimated:
            self._add_to_peak(total)
        return total

    def signal_all(self, signum: int) -> None:
        """Send `signum` to every process of the tree (the guard's SIGTERM)."""
        for proc in self._members():
            with contextlib.suppress(psutil.Error, OSError):
                proc.send_signal(signum)

    def close(self) -> None:
        for fd in self._statm.values():
            os.close(fd)
        self._statm.clear()

    def _add_to_peak(self, total: int) -> None:
        if total and (self.peak is None or total > self.peak):
            self.peak = total

    def _track(self, pids: set[int]) -> None:
        for pid in pids - self._statm.keys():
            with contextlib.suppress(OSError):
                self._statm[pid] = os.open(f"/proc/{pid}/statm", os.O_RDONLY)

    def _note_address_space(self, proc: psutil.Process, vms: int) -> None:
        limit = self._as_limits.get(proc.pid)
        if limit is None:
            limit = self._as_limits[proc.pid] = _address_space_limit(proc)
        if limit > 0:
            ratio = vms / limit
            if self.address_space is None or ratio > self.address_space[0] / self.address_space[1]:
                self.address_space = (vms, limit)

    @property
    def pids(self) -> frozenset[int]:
        """Every process seen in the cell: the runner and what the walks found."""
        return frozenset({self.root, *self._seen}) - {-1}

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


class _Dedup:
    """The memory of a set of processes with each page counted once, from their statm lines.

    The summed RSS counts a page once per process that maps it: a child between fork and exec
    (or a vfork child, which shares the very address space) shows its parent's whole RSS, and a
    600M guard stopped a 412 MiB runner at "825 MiB" as it ran `sh -c`. So:
    - processes whose statm lines are the same byte for byte are asked with kcmp(2) whether they
      share one address space, and each address space counts once (exactly);
    - where two or more address spaces remain, pages a fork shares with its parent are counted
      once by PSS (smaps_rollup): each process's excess (RSS - PSS) is read at most every
      `_PSS_SPACING` times what the last read took and subtracted from its later RSS readings
      (processes under `_PSS_FROM_BYTES` count in full).
    A process that shared pages and has gone leaves the others' excess stale (their PSS rose):
    then the figure is the plain sum (the safe side) and `estimated` until the next PSS read.
    """

    def __init__(self) -> None:
        self._excess: dict[int, int] = {}
        self._next_pss = 0.0
        self.estimated = False

    def measure(self, statm: dict[int, bytes], walked: bool, force: bool) -> int:
        rss: dict[int, int] = {}
        for pid, line in statm.items():
            try:
                rss[pid] = int(line.split()[1]) * _PAGE
            except (ValueError, IndexError):
                continue
        distinct = _one_per_address_space(statm, rss)
        if len(distinct) < 2:
            self._excess.clear()
            self.estimated = False
            return sum(rss[pid] for pid in distinct)
        if self._excess.keys() - distinct.keys():
            # A process that shared pages with the others has gone: their excess is stale.
            self._excess.clear()
        now = time.monotonic()
        if force or (walked and now >= self._next_pss):
            excess = _excess([p for p in distinct if rss[p] >= _PSS_FROM_BYTES], rss)
            if excess is not None:
                self._excess = excess
            self._next_pss = time.monotonic() + _PSS_SPACING * (time.monotonic() - now)
        # A process with no reading yet counts its whole RSS: the safe side, but not exact.
        self.estimated = any(
            pid not in self._excess and rss[pid] >= _PSS_FROM_BYTES for pid in distinct
        )
        return sum(max(0, rss[pid] - self._excess.get(pid, 0)) for pid in distinct)


def _one_per_address_space(statm: dict[int, bytes], rss: dict[int, int]) -> dict[int, None]:
    """The pids of `rss`, one per address space (an ordered set)."""
    kept: dict[int, None] = {}
    by_line: dict[bytes, list[int]] = {}
    for pid in rss:
        same = by_line.setdefault(statm[pid], [])
        if not any(_same_address_space(pid, other) for other in same):
            kept[pid] = None
            same.append(pid)
    return kept


def _same_address_space(a: int, b: int) -> bool:
    """kcmp(2) says `a` and `b` share one address space; False where it cannot say (count
    twice: the safe side)."""
    if _KCMP is None:
        return False
    try:
        return bool(_libc().syscall(_KCMP, a, b, _KCMP_VM, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def _excess(pids: list[int], rss: dict[int, int]) -> dict[int, int] | None:
    """Each process's RSS less its PSS (what it shares with others), None where PSS cannot be
    read here (no smaps_rollup: before Linux 4.14)."""
    excess: dict[int, int] = {}
    for pid in pids:
        try:
            with open(f"/proc/{pid}/smaps_rollup", "rb") as fh:
                data = fh.read()
        except (FileNotFoundError, ProcessLookupError):
            if not os.path.exists(f"/proc/{os.getpid()}/smaps_rollup"):
                return None
            # Gone since its statm was read (a fork that exec'd and exited): it holds nothing.
            excess[pid] = rss[pid]
            continue
        except OSError:
            # Not ours to read: its whole RSS counts.
            data = b""
        excess[pid] = 0
        start = data.find(b"\nPss:")
        if start >= 0:
            with contextlib.suppress(ValueError):
                pss = int(data[start + 5 : data.index(b"kB", start)]) * 1024
                excess[pid] = max(0, rss[pid] - pss)
    return excess


_LIBC: ctypes.CDLL | None = None


def _libc() -> ctypes.CDLL:
    """This process's C library, loaded once (prctl twice a cell, kcmp per shared statm)."""
    global _LIBC
    if _LIBC is None:
        _LIBC = ctypes.CDLL(None, use_errno=True)
    return _LIBC


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


def _address_space_limit(proc: psutil.Process) -> int:
    """The process's soft RLIMIT_AS in bytes, 0 when it has none or it cannot be read."""
    try:
        soft, _ = proc.rlimit(psutil.RLIMIT_AS)
    except (psutil.Error, AttributeError, OSError):
        return 0
    return soft if 0 < soft < (1 << 62) else 0


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
