"""Asking a system tool about this host (nvidia-smi, rocminfo, sysctl): its output, once per
process, or None. core/hardware and core/nvidia both ask through it."""

from __future__ import annotations

import subprocess
from functools import cache

# A tool that does not answer in this long (a wedged driver) is taken as absent.
PROBE_TIMEOUT_S = 5.0


@cache
def probe(argv: tuple[str, ...]) -> str | None:
    """The stripped output of `argv`, None when it cannot run, fails, times out or prints
    nothing. Cached: a sweep asks for the tag, the memory and the backend, and each would
    otherwise run nvidia-smi / rocminfo again, up to PROBE_TIMEOUT_S apiece."""
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    out = done.stdout.strip()
    return out if done.returncode == 0 and out else None
