"""Hardware tags: normalize() on every value the real harness wrote, and detect()."""

from __future__ import annotations

import csv
import re
import subprocess
import sys

import pytest

from oomrec.hardware import detect, normalize
from tests.conftest import SHARED_CORPUS


@pytest.mark.parametrize(
    ("text", "tag"),
    [
        ("NVIDIA_GB10_122GB", "gb10"),
        ("NVIDIA_GB10_CUDA13.0_122GB", "gb10"),
        ("Apple_M1_Ultra_128GB", "m1ultra"),
        ("Apple_M1_Ultra", "m1ultra"),
        ("Apple_M5_Max_128GB", "m5max"),
        ("Apple M3 Ultra", "m3ultra"),
        ("Apple M2", "m2"),
        ("NVIDIA_Tesla_V100-PCIE-32GB_CUDA12.9_755GB", "v100"),
        ("AMD_Radeon_8060S_Graphics_gfx1151_ROCm10.0.0_96GB", "strixhalo-gfx1151"),
        ("NVIDIA GeForce RTX 4090", "rtx4090"),
        ("NVIDIA H100 80GB HBM3", "h100"),
        # Filename host tokens map to themselves.
        ("gb10", "gb10"),
        ("v100", "v100"),
        ("m1ultra", "m1ultra"),
        ("m5max", "m5max"),
        ("strixhalo-gfx1151", "strixhalo-gfx1151"),
        # The harness's fallback: lowercased, sanitized, at most 20 characters.
        ("Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz", "intel_r_xeon_r_plati"),
        ("", None),
        ("unknown", None),
    ],
)
def test_normalize(text: str, tag: str | None) -> None:
    assert normalize(text) == tag


def _corpus_hardware_values() -> set[str]:
    values: set[str] = set()
    for path in (SHARED_CORPUS / "benchmarks").rglob("*.csv"):
        with path.open(newline="", encoding="utf-8-sig", errors="replace") as fh:
            rows = csv.reader(fh)
            header = next(rows, [])
            if "hardware" not in header:
                continue
            at = header.index("hardware")
            values.update(row[at] for row in rows if len(row) > at and row[at])
    return values


def _corpus_filename_tokens() -> set[str]:
    names = (p.name for p in (SHARED_CORPUS / "benchmarks").glob("*.csv"))
    return {m.group(1) for n in names if (m := re.match(r"(?:cuda|metal|rocm|pylm)_([^_]+)_", n))}


@pytest.mark.skipif(not SHARED_CORPUS.is_dir(), reason="../shared/data/mlxcel-benchmarks absent")
def test_every_hardware_value_in_the_real_corpus_matches_its_filename_tag() -> None:
    values = _corpus_hardware_values()
    assert len(values) >= 7
    tags = {value: normalize(value) for value in values}
    assert tags == {
        "Apple_M1_Ultra_128GB": "m1ultra",
        "Apple_M1_Ultra": "m1ultra",
        "Apple_M5_Max_128GB": "m5max",
        "NVIDIA_GB10_122GB": "gb10",
        "NVIDIA_GB10_CUDA13.0_122GB": "gb10",
        "NVIDIA_Tesla_V100-PCIE-32GB_CUDA12.9_755GB": "v100",
        "AMD_Radeon_8060S_Graphics_gfx1151_ROCm10.0.0_96GB": "strixhalo-gfx1151",
    }
    # Every CSV value's tag is a host token some filename uses, and each token is its own tag.
    tokens = _corpus_filename_tokens()
    assert set(tags.values()) <= tokens
    assert {normalize(t) for t in tokens} == tokens


def test_detect_honours_the_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OOMREC_HARDWARE", "NVIDIA_GB10_122GB")
    assert detect() == "gb10"


def test_detect_without_a_gpu_never_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OOMREC_HARDWARE")
    # A real subprocess, so nothing of this test process's state is involved.
    done = subprocess.run(
        [sys.executable, "-c", "from oomrec.hardware import detect; print(detect())"],
        capture_output=True,
        text=True,
        check=True,
    )
    tag = done.stdout.strip()
    assert re.fullmatch(r"[a-z0-9._-]{1,20}", tag), tag
    assert normalize(tag) == tag
