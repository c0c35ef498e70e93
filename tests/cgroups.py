"""A memory-limited cgroup for a test, so the kernel's OOM killer really acts; skips when the
machine does not let the test make one (not root, no memory controller, not Linux)."""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass(frozen=True)
class MemoryCgroup:
    path: Path

    @property
    def procs(self) -> Path:
        """Write a pid (or 0: the writer itself) here to move that process in."""
        return self.path / "cgroup.procs"

    def remove(self) -> None:
        # The last member may take a moment to leave once killed.
        for _ in range(100):
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.05)


def make_memory_cgroup(limit: int) -> MemoryCgroup:
    """A child of this process's own cgroup whose memory is limited to `limit` bytes."""
    tried: list[str] = []
    for make in (_v2, _v1):
        try:
            return make(limit)
        except (OSError, ValueError) as exc:
            tried.append(f"{make.__name__.strip('_')}: {exc}")
    pytest.skip(f"cannot make a memory-limited cgroup here ({'; '.join(tried)})")


def _own(controller: str) -> str:
    """This process's cgroup path for `controller` ("" for cgroup v2)."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, rel = line.split(":", 2)
        if controllers == controller or controller in controllers.split(","):
            return rel.strip().lstrip("/")
    raise ValueError(f"no {controller or 'v2'} line in /proc/self/cgroup")


def _mount(fstype: str, option: str | None) -> Path:
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split(" - ", 1)
        if len(fields) != 2:
            continue
        point = Path(fields[0].split()[4])
        kind, _, options = fields[1].split()[:3]
        if kind == fstype and (option is None or option in options.split(",")):
            return point
    raise ValueError(f"no {fstype} mount with {option or 'any option'}")


def _child(parent: Path) -> Path:
    path = parent / f"oomrec-test-{os.getpid()}-{time.monotonic_ns()}"
    path.mkdir()
    return path


def _v2(limit: int) -> MemoryCgroup:
    parent = _mount("cgroup2", None) / _own("")
    if "memory" not in (parent / "cgroup.subtree_control").read_text().split():
        (parent / "cgroup.subtree_control").write_text("+memory")
    path = _child(parent)
    try:
        (path / "memory.max").write_text(str(limit))
        with contextlib.suppress(FileNotFoundError):
            (path / "memory.swap.max").write_text("0")
    except OSError:
        path.rmdir()
        raise
    return MemoryCgroup(path)


def _v1(limit: int) -> MemoryCgroup:
    root = _mount("cgroup", "memory")
    parent = root / _own("memory")
    if not parent.is_dir():
        parent = root
    path = _child(parent)
    try:
        (path / "memory.limit_in_bytes").write_text(str(limit))
        with contextlib.suppress(FileNotFoundError):
            (path / "memory.memsw.limit_in_bytes").write_text(str(limit))
    except OSError:
        path.rmdir()
        raise
    return MemoryCgroup(path)
