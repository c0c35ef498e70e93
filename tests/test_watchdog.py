"""The watchdog that kills the running cell's process group when oomrec dies: what it kills is
what the slot says at the moment the pipe closes, armed or disarmed."""

from __future__ import annotations

import os
import subprocess

from oomrec.sweep.cell.proctree import Watchdog


def _group() -> subprocess.Popen[bytes]:
    return subprocess.Popen(["sleep", "60"], start_new_session=True)


def _die(watchdog: Watchdog) -> None:
    """This process's death as the watchdog sees it: the pipe's end of file."""
    assert watchdog._proc is not None
    os.close(watchdog._fd)
    assert watchdog._proc.wait(timeout=60) is not None


def test_an_armed_watchdog_kills_the_group_when_the_pipe_closes() -> None:
    cell = _group()
    watchdog = Watchdog()
    assert watchdog.alive
    watchdog.arm(cell.pid)
    _die(watchdog)
    assert cell.wait(timeout=60) == -9


def test_a_disarmed_watchdog_kills_nothing_and_the_last_arm_wins() -> None:
    first, second = _group(), _group()
    try:
        watchdog = Watchdog()
        watchdog.arm(first.pid)
        watchdog.disarm()
        _die(watchdog)
        assert first.poll() is None
        again = Watchdog()
        # A longer group id, then a shorter one: the fixed width leaves no digit of the first.
        again.arm(10**6 + first.pid)
        again.arm(second.pid)
        _die(again)
        assert second.wait(timeout=60) == -9
        assert first.poll() is None
    finally:
        for proc in (first, second):
            proc.kill()
            proc.wait()
