"""What a finished cell was: the runner's own verdict when it wrote a row, else its exit and output.

Only `SKIP:oom` feeds the backstop and the record, so this module errs towards "not OOM": a
timeout is never OOM, and a non-zero exit is OOM only when the output carries a known allocator
message or the process was SIGKILLed by someone other than oomrec (usually the kernel's OOM
killer). See ../shared/docs/oom-signatures.md for where each signature comes from.
"""

from __future__ import annotations

import re
import signal
from dataclasses import dataclass
from pathlib import Path

from oomrec.schema import FAIL_BENCH, FAIL_NO_OUTPUT, FAIL_TIMEOUT, SUCCESS, TRUE_OOM, line_token

# `timeout(1)` exits 124 when it expires.
TIMEOUT_STATUS = 124
# A shell reports a child killed by SIGKILL as 128 + 9.
SHELL_SIGKILL_STATUS = 128 + signal.SIGKILL


@dataclass(frozen=True, slots=True)
class Signature:
    """An allocator message that means the cell ran out of memory."""

    pattern: re.Pattern[str]
    ecosystem: str
    # "size-limit": one buffer over an API's cap, not memory pressure; still a capacity failure
    # that a longer prompt only makes worse, so it is an OOM for the backstop, as in the harness.
    kind: str = "oom"


def _sig(pattern: str, ecosystem: str, kind: str = "oom") -> Signature:
    return Signature(re.compile(pattern, re.IGNORECASE), ecosystem, kind)


# Specific messages first, so a match names the ecosystem it came from; the bash harness's own
# alternatives last (every one of them, so oomrec matches at least what the harness matches).
SIGNATURES: tuple[Signature, ...] = (
    _sig(r"CUDA out of memory\. Tried to allocate", "PyTorch CUDA caching allocator"),
    _sig(r"HIP out of memory\. Tried to allocate", "PyTorch on ROCm"),
    _sig(r"XPU out of memory\.", "PyTorch on Intel XPU"),
    _sig(r"MPS backend out of memory", "PyTorch on Apple MPS"),
    _sig(r"(?:CUDA|HIP) error: out of memory", "PyTorch outside the caching allocator"),
    _sig(r"DefaultCPUAllocator: can't allocate memory", "PyTorch CPU"),
    _sig(r"\[metal::malloc\][^\n]*maximum allowed buffer size", "MLX on Metal", "size-limit"),
    _sig(r"\[metal::malloc\] Resource limit \(", "MLX on Metal (buffer count)"),
    _sig(r"\[malloc\] Unable to allocate", "MLX allocator"),
    _sig(r"kIOGPUCommandBufferCallbackErrorOutOfMemory", "Apple Metal command buffer"),
    _sig(r"Insufficient Memory \(00000008", "Apple Metal command buffer"),
    _sig(r"cudaMalloc failed: out of memory", "llama.cpp / ggml"),
    _sig(r"failed to allocate CUDA\d* buffer", "llama.cpp / ggml"),
    _sig(r"failed to allocate compute buffers", "llama.cpp / ggml"),
    _sig(r"No available memory for the cache blocks", "vLLM"),
    _sig(r"CUDA_ERROR_OUT_OF_MEMORY", "CUDA driver"),
    _sig(r"cudaErrorMemoryAllocation", "CUDA runtime"),
    _sig(r"cuMemAlloc failed", "CUDA driver"),
    _sig(r"hipErrorOutOfMemory", "HIP runtime"),
    _sig(r"CUBLAS_STATUS_ALLOC_FAILED", "cuBLAS"),
    _sig(r"RESOURCE_EXHAUSTED: Out of memory while trying to allocate", "JAX / XLA"),
    _sig(r"\bMemoryError\b", "Python host allocation"),
    _sig(r"std::bad_alloc", "C++ host allocation"),
    _sig(r"Cannot allocate memory", "host allocation (ENOMEM)"),
    _sig(r"memory allocation of \d+ bytes failed", "Rust global allocator"),
    _sig(r"out of memory", "generic (bash harness)"),
    _sig(r"out-of-memory", "generic (bash harness)"),
    _sig(r"insufficient memory", "generic (bash harness)"),
    _sig(r"failed to allocate", "generic (bash harness)"),
    _sig(r"unable to allocate", "generic (bash harness)"),
    _sig(r"bad_alloc", "C++ host allocation (bash harness)"),
    _sig(r"memory allocation of [0-9]", "generic (bash harness)"),
    _sig(r"greater than the maximum allowed buffer size", "MLX on Metal", "size-limit"),
    _sig(r"metal::malloc", "MLX on Metal (bash harness)"),
)


def match_signature(output: str) -> tuple[Signature, str] | None:
    """The first signature the output matches, with the text it matched; None when none does."""
    for sig in SIGNATURES:
        found = sig.pattern.search(output)
        if found:
            return sig, found.group(0)
    return None


@dataclass(frozen=True, slots=True)
class Verdict:
    """A cell's classification: its token (`ok` for success) and why, in a few words."""

    token: str
    reason: str

    @property
    def is_true_oom(self) -> bool:
        return self.token == TRUE_OOM


@dataclass(frozen=True, slots=True)
class CellCsv:
    """What a runner wrote to its cell CSV: the header line and the data rows, without endings."""

    header: str | None
    rows: tuple[str, ...]


def read_cell_csv(path: Path) -> CellCsv:
    """The cell CSV as written; a missing or empty file has no header and no rows."""
    try:
        text = path.read_bytes().decode("utf-8", errors="surrogateescape")
    except FileNotFoundError:
        return CellCsv(None, ())
    lines = [line.removesuffix("\r") for line in text.removeprefix("\ufeff").split("\n")]
    lines = [line for line in lines if line.strip()]
    if not lines:
        return CellCsv(None, ())
    return CellCsv(lines[0], tuple(lines[1:]))


def verdict_from_row(row: str) -> Verdict:
    """The runner's own verdict: its row's trailing token, or success when the row has none."""
    token = line_token(row)
    if token is None:
        return Verdict(SUCCESS, "row written by the runner")
    return Verdict(token, "token written by the runner")


def verdict_from_exit(
    returncode: int,
    output: str,
    *,
    timed_out: bool = False,
    oom_kills_delta: int | None = None,
) -> Verdict:
    """The verdict for a cell that wrote no row, from how it ended and what it printed.

    `returncode` is as `subprocess` reports it (negative: killed by that signal); `timed_out`
    means oomrec killed it; `oom_kills_delta` is how much the cgroup's `oom_kill` count grew
    during the cell, None when unreadable.
    """
    if timed_out:
        return Verdict(FAIL_TIMEOUT, "killed by oomrec after --timeout")
    if returncode == TIMEOUT_STATUS:
        return Verdict(FAIL_TIMEOUT, f"exit {TIMEOUT_STATUS} (timeout)")
    if returncode in (-signal.SIGKILL, SHELL_SIGKILL_STATUS):
        how = "killed by SIGKILL" if returncode < 0 else f"exit {returncode} (SIGKILL)"
        return Verdict(TRUE_OOM, f"{how}, not by oomrec; {_cgroup_note(oom_kills_delta)}")
    if returncode != 0:
        how = _describe_status(returncode)
        found = match_signature(output)
        if found is None:
            return Verdict(FAIL_BENCH, f"{how}, no out-of-memory message in its output")
        sig, text = found
        return Verdict(TRUE_OOM, f"{how}, output has {text!r} ({sig.ecosystem}, {sig.kind})")
    return Verdict(FAIL_NO_OUTPUT, "exit 0 without a result row")


def _describe_status(returncode: int) -> str:
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exit {returncode}"


def _cgroup_note(delta: int | None) -> str:
    if delta is None:
        return "cgroup v2 memory.events not readable, OOM killer not confirmed"
    if delta > 0:
        return f"cgroup memory.events oom_kill grew by {delta}: the OOM killer confirmed"
    return "cgroup memory.events oom_kill did not grow: not confirmed as the OOM killer"
