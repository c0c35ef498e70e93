"""Short hardware tags (`gb10`, `m1ultra`, `v100`, `strixhalo-gfx1151`), named as the bash
harness names its CSV files, so a record, a CSV `hardware` column and a filename agree; and the
memory the host's accelerator can address, which scopes a record as much as the tag does.

An OOM observed on one machine says nothing about another, so records carry both.
"""

from __future__ import annotations

import csv
import os
import re
import subprocess
from functools import cache, lru_cache

from oomrec.core import nvidia
from oomrec.core.errors import OomrecError
from oomrec.core.memscope import host_total
from oomrec.core.probe import PROBE_TIMEOUT_S
from oomrec.core.probe import probe as _probe
from oomrec.core.units import GIB, MAX_INT, MIB

HARDWARE_ENV = "OOMREC_HARDWARE"
MEM_ENV = "OOMREC_MEM_BYTES"
BACKEND_ENV = "OOMREC_BACKEND"
BACKENDS = ("cuda", "rocm", "metal", "cpu")
MAX_FALLBACK_LEN = 20
# Hardware names are short; what follows this many characters is not read, which bounds the
# work on any input.
MAX_INPUT_LEN = 256
_NVIDIA_SMI = ("nvidia-smi", "--query-gpu=name", "--format=csv,noheader")
_ROCMINFO = ("rocminfo",)
_ROCM_VRAM = ("rocm-smi", "--showmeminfo", "vram", "--csv")
_SYSCTL_BRAND = ("sysctl", "-n", "machdep.cpu.brand_string")
_SYSCTL_MEM = ("sysctl", "-n", "hw.memsize")

# AMD parts whose filename tag names the product as well as the gfx target.
_GFX_NAMES = {"gfx1151": "strixhalo-gfx1151"}
# Accelerators that address host RAM: their memory is the host's.
_UNIFIED_TAGS = frozenset({"gb10", "strixhalo-gfx1151"})
_NVIDIA_BRAND = frozenset({"nvidia", "tesla", "geforce", "quadro"})
# Not `unknown`, which reads back as "no hardware".
_UNKNOWN_HOST = "unknown-host"

# Each pattern has one quantifier per run of characters (none nested, none adjacent over the
# same characters), so matching stays linear on any text.
_APPLE = re.compile(
    r"(?:^|[_\s-])(?:apple[_\s-]*)?m([0-9]{1,4})[_\s-]*(ultra|max|pro)?(?:[_\s-]|$)"
)
_APPLE_TAG = re.compile(r"m[0-9]{1,4}(?:ultra|max|pro)?")
_GFX = re.compile(r"gfx([0-9]{1,6}[a-z]?)")
_SEP = re.compile(r"[_\s-]+")
_MODEL_TOKEN = re.compile(r"[a-z]*[0-9][a-z0-9]*")
_UNSAFE = re.compile(r"[^a-z0-9.-]+")
_SIZE = re.compile(r"([0-9]{1,19})[ \t]*([kmgt]i?b?|b)?", re.IGNORECASE)
_UNITS = {"": 1, "b": 1, "k": 1024, "m": MIB, "g": GIB, "t": 1024 * GIB}
# A tag normalizes to itself; a few passes reach that from any input.
_MAX_PASSES = 4


@lru_cache(maxsize=1024)
def normalize(text: str | None) -> str | None:
    """The short tag for a CSV `hardware` value or a filename host token; None for nothing.

    `NVIDIA_GB10_CUDA13.0_122GB` -> `gb10`, `Apple_M1_Ultra_128GB` -> `m1ultra`,
    `NVIDIA_Tesla_V100-PCIE-32GB_CUDA12.9_755GB` -> `v100`,
    `AMD_Radeon_8060S_Graphics_gfx1151_ROCm10.0.0_96GB` -> `strixhalo-gfx1151`.

    A fixed point: normalize(normalize(x)) == normalize(x), so a tag written to the record
    reads back as itself.
    """
    tag = text
    for _ in range(_MAX_PASSES):
        if tag is None:
            return None
        again = _tag(tag)
        if again == tag:
            return tag
        tag = again
    # Not settled: no tag, so a record carrying it applies everywhere (the safe side).
    return None


def _lowered(text: str) -> str:
    return text[: MAX_INPUT_LEN * 2].strip()[:MAX_INPUT_LEN].lower()


def _tag(text: str) -> str | None:
    lowered = _lowered(text)
    if not lowered or lowered == "unknown":
        return None
    if _APPLE_TAG.fullmatch(lowered):
        return lowered
    gfx = _GFX.search(lowered)
    if gfx:
        target = f"gfx{gfx.group(1)}"
        return _GFX_NAMES.get(target, target)
    apple = _APPLE.search(lowered) if lowered.startswith("apple") else None
    if apple:
        return f"m{apple.group(1)}{apple.group(2) or ''}"
    if lowered.startswith("nvidia") or lowered in ("gb10", "v100"):
        return _nvidia_tag(lowered)
    return _fallback(lowered)


def _nvidia_tag(lowered: str) -> str | None:
    tokens = [t for t in _SEP.split(lowered) if t]
    while tokens and tokens[0] in _NVIDIA_BRAND:
        tokens.pop(0)
    for i, token in enumerate(tokens):
        following = tokens[i + 1] if i + 1 < len(tokens) else ""
        if token in ("rtx", "gtx") and _is_model(following):
            return token + following
        if _is_model(token):
            return token
    return _fallback(lowered)


def _is_model(token: str) -> bool:
    # A memory size (`64gb`) or a toolkit version (`cuda13.0`) names no GPU.
    return (
        len(token) <= MAX_FALLBACK_LEN
        and _MODEL_TOKEN.fullmatch(token) is not None
        and _memory_token(token) is None
    )


def _memory_token(token: str) -> int | None:
    """`122gb` -> 122; None for any other token."""
    digits = token[:-2]
    if token.endswith("gb") and digits.isascii() and digits.isdigit() and len(digits) <= 6:
        return int(digits)
    return None


def _fallback(lowered: str) -> str | None:
    # The harness's fallback is the lowercased full string, cut to 20 characters; oomrec also
    # drops the memory size (unless nothing else is left) and anything unsafe in a filename.
    cleaned = _UNSAFE.sub("_", lowered).strip("_")
    trimmed = _without_memory_suffix(cleaned) or cleaned
    return trimmed[:MAX_FALLBACK_LEN].rstrip("_") or None


def _without_memory_suffix(text: str) -> str:
    if not text.endswith("gb"):
        return text
    head = text[:-2]
    number = head.rstrip("0123456789")
    return text if number == head else number.rstrip("_-")


def memory_from_text(text: str) -> int | None:
    """The accelerator memory a harness hardware string names, in bytes; None if it names none.

    Unified memory (GB10, Strix Halo, Apple, a CPU) is the host RAM suffix:
    `NVIDIA_GB10_CUDA13.0_122GB` -> 122 GiB. A discrete GPU is its own size, never the host's:
    `NVIDIA_Tesla_V100-PCIE-32GB_CUDA12.9_755GB` -> 32 GiB, `NVIDIA_GeForce_RTX_4090_64GB` ->
    None. The harness writes GiB and calls them GB.
    """
    lowered = _lowered(text)
    tokens = [t for t in _SEP.split(lowered) if t]
    sizes = [(i, size) for i, t in enumerate(tokens) if (size := _memory_token(t)) is not None]
    if not sizes:
        return None
    discrete = normalize(lowered) not in _UNIFIED_TAGS and (
        lowered.startswith("nvidia") or "radeon" in lowered or _GFX.search(lowered) is not None
    )
    if not discrete:
        return sizes[-1][1] * GIB
    # The last token is the host RAM the harness appends; a size before it is the GPU's.
    own = [size for i, size in sizes if i < len(tokens) - 1]
    return own[0] * GIB if own else None


def parse_size(text: str) -> int | None:
    """`103079215104`, `96GiB`, `96 GB`, `96G` -> bytes (GB and GiB are both 1024**3, as the
    harness writes them); None when it is not a size, is 0, or is over 2**63 - 1."""
    match = _SIZE.fullmatch(text.strip())
    if match is None:
        return None
    value = int(match.group(1)) * _UNITS[(match.group(2) or "")[:1].lower()]
    return value if 0 < value <= MAX_INT else None


def _system() -> str:
    """`platform.system()`, from os.uname where there is one (platform's import is ~2 ms of
    every start-up that asks for this host's tag)."""
    if hasattr(os, "uname"):
        return os.uname().sysname
    import platform

    return platform.system()


def _machine() -> str:
    """`platform.machine()`, from os.uname where there is one."""
    if hasattr(os, "uname"):
        return os.uname().machine
    import platform

    return platform.machine()


def detect_memory() -> int | None:
    """The memory this host's accelerator can address, in bytes; None when it cannot be told.

    `$OOMREC_MEM_BYTES` wins (bytes, or e.g. `96GiB`; `unknown` records no memory, so records
    apply whatever the memory). Discrete CUDA/ROCm GPUs: device memory (core/nvidia's reading,
    `rocm-smi`); unified memory (GB10, Strix Halo, Apple) and CPUs: host RAM, or the limit of an
    enclosing memory cgroup where that is tighter (oomrec/core/memscope.py).
    """
    override = os.environ.get(MEM_ENV, "").strip()
    if override.lower() == "unknown":
        return None
    if override:
        size = parse_size(override)
        if size is None:
            raise OomrecError(
                f"{MEM_ENV}={override[:40]!r} is not a memory size; give bytes or e.g. 96GiB"
            )
        return size
    return _probed_memory()


@cache
def _probed_memory() -> int | None:
    # Cached: asked once per process, and a probe can take seconds.
    if _system() == "Darwin":
        return _positive_int(_probe(_SYSCTL_MEM))
    if _system() == "Linux" and detect() not in _UNIFIED_TAGS:
        gpus = nvidia.devices()
        if gpus:
            # The device a one-GPU cell runs on, read as the guard reads it (core/nvidia); one
            # of no known total is sized as the host, as before.
            total = gpus[0].total
            return total if total is not None else host_total()
        if _probe(_ROCMINFO):
            vram = _rocm_vram()
            if vram is not None:
                return vram
    return host_total()


def _rocm_vram() -> int | None:
    out = _probe(_ROCM_VRAM)
    rows = list(csv.reader(out.splitlines())) if out else []
    if len(rows) < 2:
        return None
    header = [h.lower() for h in rows[0]]
    column = next((i for i, h in enumerate(header) if "total" in h and "used" not in h), None)
    if column is None or len(rows[1]) <= column:
        return None
    return _positive_int(rows[1][column])


def _positive_int(text: str | None) -> int | None:
    digits = (text or "").strip()
    if not (digits.isascii() and digits.isdigit()) or len(digits) > 19:
        return None
    value = int(digits)
    return value if 0 < value <= MAX_INT else None


def detect() -> str:
    """This host's tag. `$OOMREC_HARDWARE` wins; never fails (no GPU is the normal case here).

    Always a fixed point of normalize(), so the records written here apply here.
    """
    override = os.environ.get(HARDWARE_ENV, "").strip()
    if override:
        return normalize(override) or _UNKNOWN_HOST
    system = _system()
    if system == "Darwin":
        brand = _probe(_SYSCTL_BRAND)
        if brand:
            return normalize(brand) or _UNKNOWN_HOST
    if system == "Linux":
        gpus = nvidia.devices()
        if gpus:
            return normalize("NVIDIA " + gpus[0].name) or _UNKNOWN_HOST
        rocm = _probe(_ROCMINFO)
        if rocm:
            gfx = _GFX.search(rocm.lower())
            if gfx:
                return normalize(gfx.group(0)) or _UNKNOWN_HOST
        cpu = _cpu_model_name()
        if cpu:
            return normalize(cpu) or _UNKNOWN_HOST
    return normalize(_machine()) or _UNKNOWN_HOST


def _cpu_model_name() -> str | None:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                if key.strip() == "model name" and value.strip():
                    return value.strip()
    except OSError:
        return None
    return None


def detect_backend() -> str:
    """This host's compute backend as the harness names CSV files: cuda, rocm, metal or cpu.
    `$OOMREC_BACKEND` wins (a container without nvidia-smi); OomrecError when it names none."""
    override = os.environ.get(BACKEND_ENV, "").strip().lower()
    if override:
        if override not in BACKENDS:
            raise OomrecError(
                f"{BACKEND_ENV}={override[:40]!r} is not a backend; give one of "
                f"{', '.join(BACKENDS)}, or unset it"
            )
        return override
    if _probe(_NVIDIA_SMI):
        return "cuda"
    if _probe(_ROCMINFO):
        return "rocm"
    if _system() == "Darwin":
        return "metal"
    return "cpu"


# How the harness's detect_hardware_short names a few chips in its file names; any other chip
# name is lowercased, its spaces and commas made `_`, and cut to 20 characters.
_HARNESS_CHIPS = (("M1 Ultra", "m1ultra"), ("M5 Max", "m5max"), ("GB10", "gb10"))
_HARNESS_NVIDIA = ("nvidia-smi",)


def harness_file_parts() -> tuple[str, str]:
    """(backend, hardware) of the harness's default CSV name, `{backend}_{hw}_longprompt_...`,
    computed as bench_longprompt.sh does: `cuda` where `nvidia-smi` runs on Linux, else `metal`
    (a CPU-only or ROCm host too); the GPU's name (the CPU brand string on macOS), empty when
    there is none. `$OOMREC_BACKEND` names the backend instead. Not cached: one sweep asks once,
    and a test's PATH may change between in-process runs.

    Records keep the short tags (detect); only the file is named as the harness names it, so
    the two tools' CSVs of one host and day are one file.
    """
    system = _system()
    if os.environ.get(BACKEND_ENV, "").strip():
        backend = detect_backend()
    else:
        backend = "cuda" if system == "Linux" and _exits_zero(_HARNESS_NVIDIA) else "metal"
    if system == "Darwin":
        chip = _first_line(_SYSCTL_BRAND) or "unknown"
    else:
        chip = _first_line(_NVIDIA_SMI) or ""
    for needle, tag in _HARNESS_CHIPS:
        if needle in chip:
            return backend, tag
    # `tr '[:upper:] ' '[:lower:]_' | tr ',' '_' | cut -c1-20`; a `/` (which the harness would
    # take as a folder) is made `_` too.
    hw = "".join(c.lower() if "A" <= c <= "Z" else "_" if c in " ,/" else c for c in chip)
    return backend, hw[:MAX_FALLBACK_LEN]


def _exits_zero(argv: tuple[str, ...]) -> bool:
    try:
        done = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=PROBE_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def _first_line(argv: tuple[str, ...]) -> str:
    """The first line of the command's output whatever its exit (`cmd 2>/dev/null | head -1`)."""
    try:
        done = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=PROBE_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    lines = done.stdout.splitlines()
    return lines[0] if lines else ""


def unified(tag: str) -> bool:
    """Whether a host of this tag addresses its accelerator's memory as host RAM (or has no
    accelerator): then host memory is the memory a cell can run out of."""
    return tag in _UNIFIED_TAGS


def option_tag(given: str | None) -> str | None:
    """A `--hardware` value as a tag (None when not given); OomrecError when it names none."""
    if given is None:
        return None
    tag = normalize(given)
    if tag is None:
        raise OomrecError(f"--hardware {given!r} names no hardware; give a tag such as gb10")
    return tag
