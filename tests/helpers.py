"""Small helpers several test modules share: record lines, process liveness, a dry-run sweep."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def line(model: str, length: int, commit: str, hardware: str = "gb10") -> str:
    return f"{model},{length},2026-07-03,{commit},,benchmarks/cuda_gb10.csv,{hardware}"


def write(path: Path, lines: list[str]) -> bytes:
    path.write_text("".join(f"{text}\n" for text in lines), encoding="utf-8")
    return path.read_bytes()


def alive(pid: int) -> bool:
    """True while `pid` runs; a zombie waiting for a (possibly non-reaping) init is gone."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state not in ("Z", "X")


def gone(pid: int) -> bool:
    """True once `pid` has died; SIGKILL is delivered at once but a process takes a moment to go."""
    deadline = time.monotonic() + 10
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def dry_run_verdicts(
    cli: Callable[..., Any], where: Path, models: str = "gemma-4-31b", lengths: str = "4096 8192"
) -> tuple[dict[str, Any], list[str]]:
    """A dry-run sweep of `models` at `lengths` (default gemma-4-31b at 4096 and 8192 tokens)
    in `where` (the cwd): its JSON plan, and each cell's verdict in order."""
    for model in models.split():
        (where / "models" / model).mkdir(parents=True, exist_ok=True)
    result = cli(
        "sweep",
        "--models",
        models,
        "--lengths",
        lengths,
        "--runner",
        f"{sys.executable} -c pass",
        "--dry-run",
        "--json",
    )
    assert result.exit_code == 0, result.stderr
    plan = json.loads(result.stdout)
    return plan, [cell["verdict"] for cell in plan["cells"]]


class Today:
    """Today's date as oomrec writes it (YYYY-MM-DD), read each time it is used: a constant
    taken when the module is imported goes stale for a test run that crosses midnight."""

    def __str__(self) -> str:
        from datetime import date

        return date.today().isoformat()

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)

    def __eq__(self, other: object) -> bool:
        return str(self) == other if isinstance(other, str) else NotImplemented

    def __hash__(self) -> int:
        return hash(str(self))


TODAY = Today()
