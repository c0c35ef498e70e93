"""Running one cell: an argv from a template (never a shell), its own process group, a timeout,
the child's peak RSS and the tail of its combined output.

The template is split once, as a shell would split it, and each argument is filled with
`str.format`-style placeholders. The filled argv is executed directly, so whatever a model name
holds (`;`, `$(...)`, spaces) reaches the runner as one literal argument and runs nothing.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import resource
import select
import selectors
import shlex
import shutil
import signal
import string
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oomrec.core.errors import OomrecError
from oomrec.core.shown import shorten
from oomrec.sweep.cell import accel, cellscope, oomkill, proctree
from oomrec.sweep.cell.defaults import PLACEHOLDERS
from oomrec.sweep.cell.guard import CHECK_S, GRACE_S, AvailableMemory, GuardLimits, GuardStop
from oomrec.sweep.cell.oomkill import KillEvidence
from oomrec.sweep.cell.proctree import Leftovers
from oomrec.sweep.cell.signatures import SignatureHit, SignatureScanner

# Each placeholder (named once, in defaults.py) with a value of its type, to try a template's
# format specs before any cell.
_SAMPLE_VALUES: dict[str, object] = dict(
    zip(PLACEHOLDERS, ("m", "./models/m", 512, 32, 4, "cell.csv", 0, 0), strict=True)
)
_MAX_WIDTH = 4096
OUTPUT_TAIL_BYTES = 64 * 1024
# After the runner exits, how long its output pipe may stay open (held by a process that left
# its group) before oomrec stops reading.
_DRAIN_S = 1.0
_READ_CHUNK = 65536
# On Ctrl-C or SIGTERM the runner's group gets SIGINT, as the harness's runner gets Ctrl-C from
# the terminal, so its own trap (cleanup, a partial row) runs; it is killed only if it has not
# ended this long after. 10 s: a runner's cleanup (removing temp files, writing its row, a GPU
# context torn down) takes a second or two; a runner that ignores SIGINT must not hold a
# sweep the user stopped for long.
INTERRUPT_GRACE_S = 10.0
# waitid(WNOWAIT) lets oomrec kill what is left of the group while the leader is still a zombie,
# so its pid (the group id) cannot have been reused; macOS gains waitid only in Python 3.13.
_HAS_WAITID = hasattr(os, "waitid") and hasattr(os, "WNOWAIT")


@dataclass(frozen=True)
class RunnerTemplate:
    """A runner command line with placeholders, split and validated once."""

    text: str
    args: tuple[str, ...]

    @classmethod
    def parse(cls, text: str, where: str = "--runner") -> RunnerTemplate:
        """Split `text` like a shell and check every placeholder; OomrecError when unusable."""
        try:
            args = tuple(shlex.split(text))
        except ValueError as exc:
            raise OomrecError(
                f"{where} {text!r}: cannot split it ({exc}); fix its quoting"
            ) from None
        if not args:
            raise OomrecError(f"{where} is empty; give the command that runs one cell")
        for arg in args:
            _check_placeholders(arg, where)
        return cls(text, args)

    def fill(self, values: Mapping[str, object]) -> list[str]:
        return [arg.format_map(values) for arg in self.args]

    def uses(self, placeholder: str) -> bool:
        """Whether any argument names `placeholder` (then the runner does what it stands for)."""
        return any(
            name == placeholder
            for arg in self.args
            for _, name, _, _ in string.Formatter().parse(arg)
            if name is not None
        )

    def anchored(self, base: Path) -> RunnerTemplate:
        """The template with a relative program path (`scripts/x.sh`) made absolute under `base`,
        so a runner configured for the repository root runs from any directory in it."""
        program = self.args[0]
        if "/" not in program or Path(program).is_absolute() or _names_placeholder(program):
            return self
        return RunnerTemplate(self.text, (str(base / program), *self.args[1:]))

    def check_executable(self, where: str = "--runner") -> None:
        """OomrecError unless the program exists and is executable (when it has no placeholder).

        A program path with a `/` is taken from the cwd, a bare name is looked up on PATH.
        """
        program = self.args[0]
        if _names_placeholder(program):
            return
        if "/" not in program:
            if shutil.which(program) is None:
                raise OomrecError(
                    f"{where}: {program!r} is not an executable on PATH; give its path"
                )
            return
        path = Path(program)
        if path.is_dir():
            raise OomrecError(f"{where}: {program} is a directory, not a program; give its path")
        if not path.is_file():
            raise OomrecError(f"{where}: {program} does not exist; give the program's path")
        if not os.access(path, os.X_OK):
            raise OomrecError(f"{where}: {program} is not executable; run chmod +x {program}")


def _check_placeholders(arg: str, where: str) -> None:
    try:
        parsed = [
            (name, spec) for _, name, spec, _ in string.Formatter().parse(arg) if name is not None
        ]
        fields = [name for name, _ in parsed]
    except ValueError as exc:
        raise OomrecError(
            f"{where}: bad braces in {arg!r} ({exc}); write {{{{ and }}}} for literal braces"
        ) from None
    for name in fields:
        if name not in PLACEHOLDERS:
            raise OomrecError(
                f"{where}: unknown placeholder {{{name}}} in {arg!r}; "
                f"use {', '.join('{' + p + '}' for p in PLACEHOLDERS)}"
            )
    for name, spec in parsed:
        # A width or precision of millions of characters would fill memory, not an argument.
        if any(len(n) > 4 or int(n) > _MAX_WIDTH for n in re.findall(r"\d+", spec or "")):
            raise OomrecError(
                f"{where}: the format spec {{{name}:{shorten(spec or '')}}} asks for a width over "
                f"{_MAX_WIDTH}; use a smaller one"
            )
    try:
        arg.format_map(_SAMPLE_VALUES)
    except (ValueError, TypeError, OverflowError) as exc:
        raise OomrecError(f"{where}: cannot fill {arg!r} ({exc}); check its format spec") from None


def _names_placeholder(arg: str) -> bool:
    return any(name is not None for _, name, _, _ in string.Formatter().parse(arg))


@dataclass(frozen=True)
class CellRun:
    """How one launched cell ended."""

    argv: tuple[str, ...]
    # As subprocess reports it: negative when killed by that signal.
    returncode: int
    timed_out: bool
    # The last OUTPUT_TAIL_BYTES of the output, for display only: signatures are matched over
    # the whole stream as it is read.
    output_tail: str
    # The peak RSS of the cell's process tree, None when unknown.
    peak_rss_bytes: int | None
    seconds: float
    # The OOM-kill counters before and after the cell.
    kills: KillEvidence
    # The first allocator message in the whole output, if any.
    signature: SignatureHit | None = None
    # What was left of the cell's process tree when it ended, and killed.
    leftovers: Leftovers = field(default_factory=Leftovers)
    # Why the program could not be started at all, or None.
    exec_error: str | None = None
    # The memory guard stopped the cell (it was still running when the guard signalled it).
    guard_stop: GuardStop | None = None
    # The (virtual size, RLIMIT_AS) of the process that came closest to its address-space
    # limit in a sample, None when no process of the cell had one.
    address_space: tuple[int, int] | None = None


def run_cell(
    argv: list[str],
    timeout: float | None,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    guard: GuardLimits | None = None,
    echo: Callable[[bytes], None] | None = None,
    hard_limit: int | None = None,
    live: Callable[[bytes], None] | None = None,
) -> CellRun:
    """Run `argv` in a new session (its own process group) and wait for it.

    The runner gets oomrec's stdin, as the harness's does; its stdout and stderr are read
    through two pipes and both scanned for allocator messages. `echo`: each chunk of either
    stream as it is read (`oomrec run` passes it through live); `live`: each chunk of its
    stderr (a sweep shows it, as the harness leaves the runner's stderr on the terminal and its
    stdout in /dev/null). What either raises (a closed pipe) stops it, never the cell.
    `hard_limit`: bytes the cell's own cgroup is capped at (a probe's), where it has one.

    On timeout the whole group is killed. With a `guard` on, the tree's memory and the host's
    available memory are checked every CHECK_S; a breach sends SIGTERM to every process of the
    tree, then SIGKILL after GRACE_S. When the runner exits, whatever it left running is
    killed too, in its group or not (this process is the child subreaper meanwhile, on Linux),
    so no stray process holds memory into the next cell. An exception raised while waiting
    (KeyboardInterrupt on SIGINT/SIGTERM) first sends SIGINT to the runner's group and waits
    up to INTERRUPT_GRACE_S for it to end (its output still read), then kills the tree, reaps
    the child and propagates.
    """
    before = oomkill.read_counters()
    log = oomkill.KernelLog()
    start = time.perf_counter()
    floor = _maxrss_bytes(resource.getrusage(resource.RUSAGE_SELF))
    watchdog = proctree.watchdog()
    tree = proctree.ProcessTree()
    subreaper = proctree.set_subreaper(True)
    scope = cellscope.make()
    if scope is not None and hard_limit is not None:
        scope.set_limit(hard_limit)
    try:
        proc = _spawn(argv, None if env is None else dict(env), cwd, scope)
    except (OSError, subprocess.SubprocessError) as exc:
        if subreaper:
            proctree.set_subreaper(False)
        log.close()
        if scope is not None:
            scope.remove()
        evidence = oomkill.compare(before, before)
        return CellRun(
            tuple(argv), 127, False, "", None, 0.0, evidence, exec_error=start_error(exc)
        )
    assert proc.stdout is not None and proc.stderr is not None
    # The child was forked from oomrec as it was at that moment: its wait4 peak can be ours up
    # to our high-water mark then, which may have grown since the first reading.
    floor = max(floor, _maxrss_bytes(resource.getrusage(resource.RUSAGE_SELF)))
    tree.launched(proc.pid)
    watchdog.arm(proc.pid)
    watcher = _ExitWatcher(proc.pid)
    streams = {
        proc.stdout.fileno(): _Stream(SignatureScanner(), None),
        proc.stderr.fileno(): _Stream(SignatureScanner(), live),
    }
    tail = bytearray()
    deadline = None if timeout is None else time.monotonic() + timeout
    watch = _GuardWatch(guard, tree, watcher, scope) if guard is not None and guard.on else None
    cell_peak = cell_kills = None
    try:
        try:
            timed_out = _pump(streams, watcher, tree, tail, deadline, watch, echo)
        except KeyboardInterrupt:
            _interrupt(streams, watcher, tree, tail, watch, echo)
            raise
    finally:
        _kill_group(proc.pid)
        tree.kill_all()
        watchdog.disarm()
        status, rusage = watcher.reap()
        proc.returncode = os.waitstatus_to_exitcode(status)
        proc.stdout.close()
        proc.stderr.close()
        tree.close()
        if watch is not None:
            watch.close()
        if subreaper:
            proctree.set_subreaper(False)
        if scope is not None:
            cell_peak, cell_kills = scope.peak(), scope.oom_kills()
            scope.remove()
    hits = []
    for stream in streams.values():
        stream.scanner.close()
        if stream.scanner.hit is not None:
            hits.append(stream.scanner.hit)
    seconds = time.perf_counter() - start
    # The cgroup's peak counts each page once; the tree's sum of RSS counts shared ones twice.
    peaks = (
        [cell_peak]
        if cell_peak
        else [p for p in (tree.peak, _peak_bytes(rusage, floor)) if p is not None]
    )
    kills = oomkill.compare(
        before,
        oomkill.read_counters(),
        log.kills(),
        tree.pids,
        cell_cgroup=None if scope is None else scope.describe(),
        cell_kills=cell_kills,
    )
    return CellRun(
        argv=tuple(argv),
        returncode=proc.returncode,
        timed_out=timed_out,
        output_tail=bytes(tail).decode("utf-8", errors="replace"),
        peak_rss_bytes=max(peaks) if peaks else None,
        seconds=seconds,
        kills=kills,
        signature=hits[0] if hits else None,
        leftovers=tree.leftovers,
        guard_stop=None if watch is None else watch.stop,
        address_space=tree.address_space,
    )


@dataclass
class _Stream:
    """One of the runner's output pipes: its scanner, and who sees it live (None: nobody)."""

    scanner: SignatureScanner
    live: Callable[[bytes], None] | None


def _interrupt(
    streams: dict[int, _Stream],
    watcher: _ExitWatcher,
    tree: proctree.ProcessTree,
    tail: bytearray,
    watch: _GuardWatch | None,
    echo: Callable[[bytes], None] | None,
) -> None:
    """oomrec was interrupted: SIGINT to the runner's group, as the harness's runner gets
    Ctrl-C, and its output read until it ends or INTERRUPT_GRACE_S pass (then it is killed). A
    second Ctrl-C kills it at once."""
    if watcher.poll():
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(watcher.pid, signal.SIGINT)
    with contextlib.suppress(KeyboardInterrupt):
        _pump(streams, watcher, tree, tail, time.monotonic() + INTERRUPT_GRACE_S, watch, echo)


def _pump(
    streams: dict[int, _Stream],
    watcher: _ExitWatcher,
    tree: proctree.ProcessTree,
    tail: bytearray,
    deadline: float | None,
    watch: _GuardWatch | None = None,
    echo: Callable[[bytes], None] | None = None,
) -> bool:
    """Read the child's output (each stream scanned for signatures, their tail kept) until it
    exits and its pipes close, sampling the tree's memory (and guarding it) meanwhile; True on
    timeout."""
    timed_out = False
    open_fds = set(streams)
    drain_until: float | None = None
    # Not at once: a child between fork and exec may still show oomrec's own memory as its RSS.
    # The guard cannot wait that long, and need not: Popen returns once the runner has exec'd.
    next_sample = time.monotonic() + (proctree.SAMPLE_S if watch is None else CHECK_S)
    next_check = next_sample if watch is not None else math.inf
    with selectors.DefaultSelector() as sel:
        for fd in open_fds:
            sel.register(fd, selectors.EVENT_READ)
        if not watcher.exited:
            sel.register(watcher.fileno(), selectors.EVENT_READ)
        while True:
            now = time.monotonic()
            wait: float | None = None
            if watcher.exited:
                if not open_fds:
                    return timed_out
                if drain_until is None:
                    # Leftovers would hold the pipe open; the leader is a zombie until reaped,
                    # so its group id cannot have been reused.
                    tree.kill_all()
                    _kill_group(watcher.pid)
                    drain_until = now + _DRAIN_S
                wait = drain_until - now
                if wait <= 0:
                    return timed_out
            else:
                if now >= next_sample:
                    walked = tree.sample()
                    next_sample = now + proctree.SAMPLE_S
                    if watch is not None:
                        watch.check(walked, now)
                        next_check = now + CHECK_S
                elif watch is not None and now >= next_check:
                    watch.check(None, now)
                    next_check = now + CHECK_S
                wait = min(next_sample, next_check) - now
                if deadline is not None:
                    if deadline <= now:
                        _kill_group(watcher.pid)
                        timed_out = True
                        deadline = None
                        continue
                    wait = min(wait, deadline - now)
            for key, _ in sel.select(wait):
                if key.fd in open_fds:
                    stream = streams[key.fd]
                    chunk = os.read(key.fd, _READ_CHUNK)
                    if chunk:
                        stream.scanner.feed(chunk)
                        tail += chunk
                        del tail[:-OUTPUT_TAIL_BYTES]
                        if echo is not None:
                            try:
                                echo(chunk)
                            except (OSError, ValueError):
                                # The reader went away: the cell and its evidence go on.
                                echo = None
                        if stream.live is not None:
                            try:
                                stream.live(chunk)
                            except (OSError, ValueError):
                                stream.live = None
                    else:
                        sel.unregister(key.fd)
                        open_fds.discard(key.fd)
                else:
                    sel.unregister(key.fd)
                    watcher.ready()


class _GuardWatch:
    """The memory guard of one running cell: checks its budget, stops its tree on a breach.
    With a cgroup of the cell's own, the cell's memory is that cgroup's working set."""

    def __init__(
        self,
        limits: GuardLimits,
        tree: proctree.ProcessTree,
        watcher: _ExitWatcher,
        scope: cellscope.CellCgroup | None = None,
    ):
        self.limits = limits
        self.tree = tree
        self.watcher = watcher
        self.scope = scope
        self.stop: GuardStop | None = None
        self._kill_at = math.inf
        self._tree_figure = True
        self._next_exact = -math.inf
        self._available = AvailableMemory() if limits.min_available_bytes is not None else None
        self._gpu = _nvml() if limits.gpu else None

    def cell_bytes(self, walked: int | None) -> int:
        """The cell's memory now: its cgroup's working set where it has one, else the tree's,
        each page once (`walked` by a walk just made, else re-read from the processes it
        found)."""
        if self.scope is not None:
            working = self.scope.working_set()
            if working is not None:
                self._tree_figure = False
                return working
        self._tree_figure = True
        return walked if walked is not None else self.tree.quick_rss()

    def check(self, walked: int | None, now: float) -> None:
        # Measured first, stopped or not: reading the tree's RSS also keeps its peak.
        cell_bytes = self.cell_bytes(walked)
        if self.stop is not None:
            if now >= self._kill_at:
                self._kill_at = math.inf
                _kill_group(self.watcher.pid)
                self.tree.signal_all(signal.SIGKILL)
            return
        available = None if self._available is None else self._available.read()
        reason = self.limits.breach(cell_bytes, available)
        over = self.limits.breach(cell_bytes, None) is not None
        if over and self._tree_figure and self.tree.estimated:
            # The figure may count a fork's shared pages twice: read them once before stopping,
            # at most once a walk (a PSS read of a big runner takes ms; a runner forking in a
            # loop would have one every check), so such a stop may wait for the next walk.
            if now < self._next_exact:
                # Unconfirmed: the cell's figure stops nothing yet, the host's floor still does.
                reason = self.limits.breach(0, available)
            else:
                self._next_exact = now + proctree.SAMPLE_S
                cell_bytes = self.tree.exact()
                reason = self.limits.breach(cell_bytes, available)
        if reason is None and self._gpu is not None and walked is not None:
            # NVML's queries take ~0.1-1 ms: once a walk (every proctree.SAMPLE_S), not per check.
            reason = self._gpu_breach()
        # A runner that has already exited finished by itself: its own exit is its verdict.
        if reason is None or self.watcher.poll():
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.watcher.pid, signal.SIGTERM)
        self.tree.signal_all(signal.SIGTERM)
        self.stop = GuardStop(reason, cell_bytes, available, now)
        self._kill_at = now + GRACE_S

    def _gpu_breach(self) -> str | None:
        assert self._gpu is not None
        pids = self.tree.pids
        for device, used, free in zip(
            self._gpu.devices, self._gpu.used_by(pids), self._gpu.free(), strict=True
        ):
            name = f"GPU {device.index} ({device.name})"
            reason = self.limits.gpu_breach(name, device.total, used, free)
            if reason is not None:
                return reason
        return None

    def close(self) -> None:
        if self._available is not None:
            self._available.close()


def _nvml() -> accel.Nvml | None:
    found = accel.nvml()
    return None if isinstance(found, str) else found


class _ExitWatcher:
    """Tells the reading loop, through a file descriptor, that the child has exited (unreaped).

    On Linux a pidfd becomes readable at the exit itself; elsewhere a thread blocks in waitid
    (or wait4) and writes to a pipe. Starting a thread costs ~1 ms per cell on a busy machine,
    more than all of oomrec's own per-cell work, so the pidfd comes first.
    """

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.exited = False
        self._reaped: tuple[int, int, Any] | None = None
        self._thread: threading.Thread | None = None
        # A pidfd (one descriptor), else a pipe the waiting thread writes to (two).
        self._fds: tuple[int, ...]
        try:
            self._fds = (os.pidfd_open(pid),)
        except (AttributeError, OSError):
            self._fds = os.pipe()
            self._thread = threading.Thread(target=self._wait, name=f"oomrec-{pid}", daemon=True)
            self._thread.start()

    def fileno(self) -> int:
        return self._fds[0]

    def ready(self) -> None:
        """The descriptor became readable: the child has exited."""
        self.exited = True

    def poll(self) -> bool:
        """Whether the child has exited, without blocking (the descriptor is left readable)."""
        if not self.exited:
            readable, _, _ = select.select([self._fds[0]], [], [], 0)
            self.exited = bool(readable)
        return self.exited

    def _wait(self) -> None:
        if _HAS_WAITID:
            os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOWAIT)
        else:
            self._reaped = os.wait4(self.pid, 0)
        os.write(self._fds[1], b"x")

    def reap(self) -> tuple[int, Any]:
        """Wait for the exit and reap the child: its wait status and rusage. Closes the fds."""
        if self._thread is not None:
            self._thread.join()
        for fd in self._fds:
            os.close(fd)
        _, status, rusage = self._reaped or os.wait4(self.pid, 0)
        return status, rusage


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


# Joins the cell's cgroup (its procs file, named by path as the first argument: dash reads no
# descriptor above 9, and a descriptor passed on would leak into the runner), then runs the
# runner in its place with oomrec's stdin, as the harness gives its runner. The runner's argv
# follows as "$@": a fixed script with positional arguments, so nothing in them is parsed.
_JOIN_THEN_EXEC = 'echo 0 > "$1" || exit 125; shift; exec "$@"'
_SH = "/bin/sh"


def start_error(exc: OSError | subprocess.SubprocessError) -> str:
    """Why a runner did not start, in words: exec's own error (`No such file or directory`),
    or what Popen says when the cgroup join between fork and exec failed (a SubprocessError,
    which has no strerror)."""
    return (exc.strerror if isinstance(exc, OSError) else None) or str(exc)


def _spawn(
    argv: list[str],
    env: dict[str, str] | None,
    cwd: Path | None,
    scope: cellscope.CellCgroup | None,
    shell: str = _SH,
) -> subprocess.Popen[bytes]:
    """The runner, started in its own session and, with a `scope`, in the cell's cgroup before
    it runs, so every process it starts is in it too.

    Joining from Python between fork and exec (preexec_fn) makes subprocess fork the whole
    oomrec process instead of vforking: 3-6 ms per cell, more than all else oomrec does per
    cell. A shell joins instead and execs the runner (~1 ms). Popen's own exec errors (no such
    runner, not executable, not a program) are raised before the shell starts, as Popen would
    raise them, so a runner that cannot start is still told apart from one that fails."""
    common: dict[str, Any] = {
        "stdout": subprocess.PIPE,
        "stderr": subprocess.PIPE,
        "start_new_session": True,
        "env": env,
        "cwd": cwd,
    }
    if scope is None:
        return subprocess.Popen(argv, **common)
    if not os.access(shell, os.X_OK):
        return subprocess.Popen(argv, preexec_fn=scope.join, **common)
    _check_executable(argv[0], env, cwd)
    procs = str(scope.path / "cgroup.procs")
    return subprocess.Popen([shell, "-c", _JOIN_THEN_EXEC, "sh", procs, *argv], **common)


def _check_executable(program: str, env: Mapping[str, str] | None, cwd: Path | None) -> None:
    """Raise the OSError exec would raise for `program`: not found (searched on the PATH the
    runner gets, as Popen searches it), not executable, or neither a script nor a binary."""
    import errno

    if os.sep in program:
        path = program if cwd is None or os.path.isabs(program) else os.path.join(cwd, program)
    else:
        found = shutil.which(program, path=os.pathsep.join(os.get_exec_path(env)))
        if found is None:
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)
        path = found if cwd is None or os.path.isabs(found) else os.path.join(cwd, found)
    if not os.path.exists(path):
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)
    if os.path.isdir(path) or not os.access(path, os.X_OK):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), program)
    try:
        with open(path, "rb") as handle:
            magic = handle.read(4)
    except OSError:
        # Executable but not readable (mode 0711): exec can still run a binary.
        return
    if not (magic.startswith(b"#!") or magic == b"\x7fELF"):
        # A shell would run it as a script where exec refuses it.
        raise OSError(errno.ENOEXEC, os.strerror(errno.ENOEXEC), program)


def _maxrss_bytes(rusage: Any) -> int:
    # ru_maxrss is in KiB on Linux, in bytes on macOS.
    return int(rusage.ru_maxrss) * (1 if sys.platform == "darwin" else 1024)


def _peak_bytes(rusage: Any, floor: int) -> int | None:
    """The child's peak RSS, or None when it may be ours: a child that fork+execs keeps the
    parent's high-water mark in its ru_maxrss, so only a peak above our own is the child's."""
    peak = _maxrss_bytes(rusage)
    return peak if peak > floor else None
