"""Short hardware tags (`gb10`, `m1ultra`, `v100`, `strixhalo-gfx1151`), named as the bash
harness names its CSV files, so a record, a CSV `hardware` column and a filename agree.

An OOM observed on one machine says nothing about another, so records carry this tag.
"""

from __future__ import annotations

import os
import platform
import re
import subprocess
from functools import cache, lru_cache

from oomrec.errors import OomrecError

HARDWARE_ENV = "OOMREC_HARDWARE"
MAX_FALLBACK_LEN = 20
_PROBE_TIMEOUT_S = 5.0
_NVIDIA_SMI = ("nvidia-smi", "--query-gpu=name", "--format=csv,noheader")
_ROCMINFO = ("rocminfo",)
_SYSCTL_BRAND = ("sysctl", "-n", "machdep.cpu.brand_string")

# AMD parts whose filename tag names the product as well as the gfx target.
_GFX_NAMES = {"gfx1151": "strixhalo-gfx1151"}

_APPLE = re.compile(r"(?:^|[_\s-])(?:apple[_\s-]*)?m(\d+)[_\s-]*(ultra|max|pro)?(?:[_\s-]|$)")
_APPLE_TAG = re.compile(r"m\d+(?:ultra|max|pro)?")
_GFX = re.compile(r"gfx(\d+[a-z]?)")
_NVIDIA_PREFIX = re.compile(r"^(?:nvidia[_\s-]*)?(?:tesla[_\s-]*|geforce[_\s-]*|quadro[_\s-]*)?")
_NVIDIA_MODEL = re.compile(r"(rtx|gtx)[_\s-]*(\w*?\d+\w*?)(?=[_\s-]|$)|([a-z]*\d+[a-z0-9]*)")
_MEM_SUFFIX = re.compile(r"[_\s-]*\d+gb$")


@lru_cache(maxsize=1024)
def normalize(text: str | None) -> str | None:
    """The short tag for a CSV `hardware` value or a filename host token; None for nothing.

    `NVIDIA_GB10_CUDA13.0_122GB` -> `gb10`, `Apple_M1_Ultra_128GB` -> `m1ultra`,
    `NVIDIA_Tesla_V100-PCIE-32GB_CUDA12.9_755GB` -> `v100`,
    `AMD_Radeon_8060S_Graphics_gfx1151_ROCm10.0.0_96GB` -> `strixhalo-gfx1151`.
    """
    if text is None:
        return None
    lowered = text.strip().lower()
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


def _nvidia_tag(lowered: str) -> str:
    rest = _NVIDIA_PREFIX.sub("", lowered, count=1)
    match = _NVIDIA_MODEL.search(rest)
    if match is None:
        return _fallback(lowered)
    if match.group(1):
        return f"{match.group(1)}{match.group(2)}"
    return match.group(3)


def _fallback(lowered: str) -> str:
    # The harness's fallback is the lowercased full string, cut to 20 characters; oomrec also
    # drops the memory size and anything unsafe in a filename.
    cleaned = _MEM_SUFFIX.sub("", lowered)
    cleaned = re.sub(r"[^a-z0-9.-]+", "_", cleaned).strip("_")
    return cleaned[:MAX_FALLBACK_LEN].rstrip("_") or "unknown"


def detect() -> str:
    """This host's tag. `$OOMREC_HARDWARE` wins; never fails (no GPU is the normal case here)."""
    override = os.environ.get(HARDWARE_ENV, "").strip()
    if override:
        return normalize(override) or "unknown"
    system = platform.system()
    if system == "Darwin":
        brand = _probe(_SYSCTL_BRAND)
        if brand:
            return normalize(brand) or "unknown"
    if system == "Linux":
        gpu = _probe(_NVIDIA_SMI)
        if gpu:
            return normalize("NVIDIA " + gpu.splitlines()[0]) or "unknown"
        rocm = _probe(_ROCMINFO)
        if rocm:
            gfx = _GFX.search(rocm.lower())
            if gfx:
                return normalize(gfx.group(0)) or "unknown"
        cpu = _cpu_model_name()
        if cpu:
            return _fallback(cpu.lower())
    return _fallback(platform.machine().lower() or "unknown")


@cache
def _probe(argv: tuple[str, ...]) -> str | None:
    # Cached: a sweep asks for both the tag (detect) and the backend (detect_backend), and each
    # would otherwise run nvidia-smi / rocminfo again, up to a 5 s timeout apiece.
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=_PROBE_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    out = done.stdout.strip()
    return out if done.returncode == 0 and out else None


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
    """This host's compute backend as the harness names CSV files: cuda, rocm, metal or cpu."""
    if _probe(_NVIDIA_SMI):
        return "cuda"
    if _probe(_ROCMINFO):
        return "rocm"
    if platform.system() == "Darwin":
        return "metal"
    return "cpu"


def option_tag(given: str | None) -> str | None:
    """A `--hardware` value as a tag (None when not given); OomrecError when it names none."""
    if given is None:
        return None
    tag = normalize(given)
    if tag is None:
        raise OomrecError(f"--hardware {given!r} names no hardware; give a tag such as gb10")
    return tag
