"""Hardware tags: normalize() on every value the real harness wrote, and detect()."""

from __future__ import annotations

import csv
import re
import subprocess
import sys
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oomrec.core.errors import OomrecError
from oomrec.core.hardware import detect, detect_memory, memory_from_text, normalize
from oomrec.core.records import OomRecord, format_line, parse_line
from oomrec.core.units import GIB
from tests.conftest import SHARED_CORPUS
from tests.profiles import examples


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
        [sys.executable, "-c", "from oomrec.core.hardware import detect; print(detect())"],
        capture_output=True,
        text=True,
        check=True,
    )
    tag = done.stdout.strip()
    assert re.fullmatch(r"[a-z0-9._-]{1,20}", tag), tag
    assert normalize(tag) == tag


_hardware_words = st.sampled_from(
    ["nvidia", "NVIDIA", "apple", "Apple", "m1", "M3", "ultra", "max", "gb10", "gfx1151", "rtx",
     "geforce", "tesla", "jetson", "orin", "64gb", "122GB", "cuda13.0", "unknown", "v100",
     "4090", "K", "\u212a", "\u0661", "İ", "_", "-", " ", ".", ""]
)  # fmt: skip
_hardware_text = st.one_of(
    st.text(max_size=60),
    st.lists(_hardware_words, max_size=8).map("_".join),
    st.lists(_hardware_words, max_size=8).map(" ".join),
    st.lists(_hardware_words, max_size=8).map("".join),
)


@settings(max_examples=examples(400))
@given(_hardware_text)
def test_tags_are_a_fixed_point(text: str) -> None:
    tag = normalize(text)
    assert normalize(tag) == tag
    if tag is not None:
        assert re.fullmatch(r"[a-z0-9._-]{1,40}", tag), tag


@pytest.mark.parametrize(
    ("text", "tag"),
    [
        # Once written as `64gb` and read back as another tag, so the host's own OOMs never
        # applied on it.
        ("NVIDIA Jetson AGX Orin 64GB", "nvidia_jetson_agx_or"),
        ("NVIDIA Jetson AGX Orin", "nvidia_jetson_agx_or"),
        ("64gb", "64gb"),
        ("unknown_64gb", None),
    ],
)
def test_tags_that_once_did_not_read_back_as_themselves(text: str, tag: str | None) -> None:
    assert normalize(text) == tag
    assert normalize(tag) == tag


@pytest.mark.parametrize("name", ["NVIDIA Jetson AGX Orin 64GB", "İntel K", "!!!", "unknown"])
def test_the_hosts_own_tag_reads_back_as_itself(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    monkeypatch.setenv("OOMREC_HARDWARE", name)
    tag = detect()
    assert normalize(tag) == tag
    assert parse_line(f"m,1,2026-01-01,unknown,,s.csv,{tag}").hardware == tag
    assert (
        parse_line(format_line(OomRecord("m", 1, "2026-01-01", "x", None, "s", tag))).hardware
        == tag
    )


_adversarial = st.builds(
    lambda head, unit, n, tail: head + unit * n + tail,
    st.sampled_from(["nvidia rtx", "nvidia ", "apple m", "NVIDIA_", "gfx", "", "x "]),
    st.sampled_from(["1", "1 ", "a1", "_1", "-", " ", "1gb", "gfx1", "m1_", "rtx "]),
    st.integers(min_value=1_000, max_value=20_000),
    st.sampled_from(["", "x", "!", "gb", " ultra", "_122GB"]),
)


@settings(max_examples=examples(40), deadline=None)
@given(_adversarial)
def test_long_adversarial_hardware_text_takes_no_time(text: str) -> None:
    # A guard against exponential or quadratic blowup, not a performance claim: `nvidia rtx`
    # and 1,500 digits once took 12 s. Generous on purpose, for loaded CI machines.
    normalize.cache_clear()
    started = time.perf_counter()
    normalize(text)
    memory_from_text(text)
    assert time.perf_counter() - started < 0.5


@pytest.mark.parametrize(
    ("text", "gib"),
    [
        # Unified memory: the host RAM the harness appends.
        ("NVIDIA_GB10_CUDA13.0_122GB", 122),
        ("NVIDIA_GB10_122GB", 122),
        ("Apple_M1_Ultra_128GB", 128),
        ("AMD_Radeon_8060S_Graphics_gfx1151_ROCm10.0.0_96GB", 96),
        ("Intel_Xeon_512GB", 512),
        # Discrete GPUs: their own size, never the host's.
        ("NVIDIA_Tesla_V100-PCIE-32GB_CUDA12.9_755GB", 32),
        ("NVIDIA H100 80GB HBM3", 80),
        ("NVIDIA_GeForce_RTX_4090_CUDA12.4_64GB", None),
        ("Apple_M1_Ultra", None),
        ("", None),
    ],
)
def test_memory_from_hardware_text(text: str, gib: int | None) -> None:
    assert memory_from_text(text) == (None if gib is None else gib * GIB)


def test_detect_memory_honours_the_override_and_refuses_nonsense(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OOMREC_MEM_BYTES", "96GiB")
    assert detect_memory() == 96 * GIB
    monkeypatch.setenv("OOMREC_MEM_BYTES", "103079215104")
    assert detect_memory() == 96 * GIB
    for bad in ("lots", "0", "9" * 5000, "-5GB", "1e9"):
        monkeypatch.setenv("OOMREC_MEM_BYTES", bad)
        with pytest.raises(OomrecError, match="OOMREC_MEM_BYTES="):
            detect_memory()


def test_detect_memory_without_override_is_a_positive_size(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OOMREC_HARDWARE")
    monkeypatch.delenv("OOMREC_MEM_BYTES")
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from oomrec.core.hardware import detect_memory; print(detect_memory())",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert int(done.stdout) > 0
