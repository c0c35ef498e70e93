"""Classifying a finished cell: the runner's own row first, else its exit status and output."""

from __future__ import annotations

import csv
import re
import signal
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oomrec.classify import (
    SIGNATURES,
    CellCsv,
    match_signature,
    read_cell_csv,
    verdict_from_exit,
    verdict_from_row,
)
from oomrec.schema import HEADER_14, HEADER_15, line_token
from tests.conftest import SHARED_CORPUS

# The bash harness's is_oom_failure() regex (bench_decode.sh, version B), matched with grep -qiE.
HARNESS_REGEX = (
    r"out of memory|out-of-memory|insufficient memory|failed to allocate|cannot allocate memory|"
    r"unable to allocate|bad_alloc|memory allocation of [0-9]|greater than the maximum allowed "
    r"buffer size|metal::malloc|CUDA_ERROR_OUT_OF_MEMORY|cudaErrorMemoryAllocation|"
    r"cuMemAlloc failed"
)

# One real message per row of ../shared/docs/oom-signatures.md, with the ecosystem it names.
DOC_SIGNATURES = [
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", "PyTorch CUDA"),
    ("HIP out of memory. Tried to allocate 1.50 GiB (GPU 0; 64 GiB total)", "PyTorch on ROCm"),
    ("XPU out of memory. Tried to allocate 512.00 MiB", "PyTorch on Intel XPU"),
    ("RuntimeError: MPS backend out of memory (MPS allocated: 17 GB)", "PyTorch on Apple MPS"),
    ("RuntimeError: CUDA error: out of memory", "PyTorch outside"),
    ("RuntimeError: HIP error: out of memory", "PyTorch outside"),
    ("[enforce fail at alloc_cpu.cpp:114] DefaultCPUAllocator: can't allocate memory", "CPU"),
    (
        "[metal::malloc] Attempting to allocate 137438953472 bytes which is greater than the "
        "maximum allowed buffer size of 77309411328 bytes.",
        "MLX on Metal",
    ),
    ("[metal::malloc] Resource limit (499000) exceeded.", "buffer count"),
    ("[malloc] Unable to allocate 4294967296 bytes.", "MLX allocator"),
    (
        "Error: command buffer exited with error status. "
        "kIOGPUCommandBufferCallbackErrorOutOfMemory",
        "Metal",
    ),
    ("Insufficient Memory (00000008:kIOGPUCommandBufferCallbackErrorOutOfMemory)", "Metal"),
    ("ggml_cuda_host_malloc: cudaMalloc failed: out of memory", "llama.cpp"),
    ("ggml_backend_cuda_buffer_type_alloc_buffer: failed to allocate CUDA0 buffer", "llama.cpp"),
    ("llama_new_context_with_model: failed to allocate compute buffers", "llama.cpp"),
    ("ValueError: No available memory for the cache blocks. Try increasing", "vLLM"),
    ("CUDA_ERROR_OUT_OF_MEMORY: out of memory", "CUDA driver"),
    ("cudaErrorMemoryAllocation", "CUDA runtime"),
    ("cuMemAlloc failed (error 2)", "CUDA driver"),
    ("hipErrorOutOfMemory", "HIP runtime"),
    ("RuntimeError: CUBLAS_STATUS_ALLOC_FAILED when calling cublasCreate(handle)", "cuBLAS"),
    ("RESOURCE_EXHAUSTED: Out of memory while trying to allocate 8.00GiB.", "JAX"),
    ("Traceback (most recent call last):\n  ...\nMemoryError", "Python"),
    ("terminate called after throwing an instance of 'std::bad_alloc'", "C++"),
    ("mmap: Cannot allocate memory", "ENOMEM"),
    ("memory allocation of 68719476736 bytes failed", "Rust"),
]

NOT_OOM = [
    "cuDNN error: CUDNN_STATUS_NOT_SUPPORTED. This error may appear if you passed in a "
    "non-contiguous input.",
    "RuntimeError: Invalid buffer size: 80.00 GB",
    "Error: command buffer exited with error status. "
    "kIOGPUCommandBufferCallbackErrorImpactingInteractivity",
    "ValueError: Free memory on device (10.1/79.2 GiB) on startup is less than desired GPU "
    "memory utilization (0.9, 71.3 GiB).",
    "CUDA error: invalid launch config; grid dimension 70000 exceeds the maximum",
    "zoom level 3 exceeds the frame limit of the KV cache",
    "Segmentation fault (core dumped)",
]


@pytest.mark.parametrize(("text", "ecosystem"), DOC_SIGNATURES)
def test_every_documented_signature_is_oom_and_named(text: str, ecosystem: str) -> None:
    found = match_signature(text)
    assert found is not None, text
    assert ecosystem.lower() in found[0].ecosystem.lower()
    verdict = verdict_from_exit(1, f"loading...\n{text}\n")
    assert verdict.token == "SKIP:oom"
    assert found[0].ecosystem in verdict.reason


def test_every_signature_in_the_table_is_exercised() -> None:
    samples = [text for text, _ in DOC_SIGNATURES]
    harness = [
        "out of memory", "out-of-memory", "insufficient memory", "failed to allocate",
        "unable to allocate", "bad_alloc", "memory allocation of 1", "metal::malloc",
        "greater than the maximum allowed buffer size",
    ]  # fmt: skip
    for sig in SIGNATURES:
        assert any(sig.pattern.search(s) for s in samples + harness), sig.pattern.pattern


@pytest.mark.parametrize("text", NOT_OOM)
def test_the_documented_non_oom_messages_do_not_match(text: str) -> None:
    assert match_signature(text) is None
    assert verdict_from_exit(1, text).token == "FAIL:bench"


@settings(max_examples=300, deadline=None)
@given(
    before=st.text(max_size=40),
    hit=st.from_regex(re.compile(HARNESS_REGEX, re.IGNORECASE), fullmatch=True),
    after=st.text(max_size=40),
)
def test_whatever_the_harness_regex_matches_oomrec_matches(
    before: str, hit: str, after: str
) -> None:
    text = before + hit + after
    assert re.search(HARNESS_REGEX, text, re.IGNORECASE)
    assert match_signature(text) is not None, text


@pytest.mark.parametrize(
    ("returncode", "output", "timed_out", "token"),
    [
        (124, "CUDA out of memory. Tried to allocate 1 GiB", False, "FAIL:timeout"),
        (-signal.SIGKILL, "", True, "FAIL:timeout"),
        (-signal.SIGKILL, "", False, "SKIP:oom"),
        (137, "", False, "SKIP:oom"),
        (134, "terminate called after throwing an instance of 'std::bad_alloc'", False, "SKIP:oom"),
        (134, "Aborted (core dumped)", False, "FAIL:bench"),
        (-signal.SIGSEGV, "Segmentation fault", False, "FAIL:bench"),
        (1, "", False, "FAIL:bench"),
        (0, "all good", False, "FAIL:no_output"),
        (0, "out of memory", False, "FAIL:no_output"),
    ],
)
def test_verdict_from_exit(returncode: int, output: str, timed_out: bool, token: str) -> None:
    assert verdict_from_exit(returncode, output, timed_out=timed_out).token == token


def test_sigkill_reason_says_whether_the_cgroup_confirms_it() -> None:
    assert "not readable" in verdict_from_exit(-9, "", oom_kills_delta=None).reason
    assert "grew by 1" in verdict_from_exit(-9, "", oom_kills_delta=1).reason
    assert "did not grow" in verdict_from_exit(137, "", oom_kills_delta=0).reason


OK = (
    'm,./models/m,512,32,1.0,2.0,3.0,4.0,2026-07-03,hw,0.3.3,release,32,"Hello, how are you today?"'
)
SKIPPED = 'm,./models/m,,,,,,,2026-07-03,hw,0.3.3,release,32,"Hello, how are you today?"'


@pytest.mark.parametrize(
    ("row", "token"),
    [
        (OK + ",512", "ok"),
        (OK, "ok"),
        (SKIPPED + ",32768,SKIP:oom", "SKIP:oom"),
        (SKIPPED + ",,FAIL:bench", "FAIL:bench"),
        (SKIPPED + ",,,SKIP:oom_estimate", "SKIP:oom_estimate"),
        (SKIPPED + ",FAIL:warmup", "FAIL:warmup"),
        ('m,./m,,,,,,,2026-07-03,,,,32,"say "no, SKIP:oom" here",512,FAIL:bench\r', "FAIL:bench"),
        ('m,./m,1,2,3,4,5,6,2026-07-03,,,,32,"ends, SKIP:oom"', "ok"),
    ],
)
def test_verdict_from_row_reads_the_last_field(row: str, token: str) -> None:
    assert verdict_from_row(row).token == token


def test_read_cell_csv(tmp_path: Path) -> None:
    assert read_cell_csv(tmp_path / "missing.csv") == CellCsv(None, ())
    path = tmp_path / "cell.csv"
    path.write_bytes(b"")
    assert read_cell_csv(path) == CellCsv(None, ())
    path.write_bytes(f"\ufeff{HEADER_15}\r\nrow one\r\n\r\nrow two".encode())
    assert read_cell_csv(path) == CellCsv(HEADER_15, ("row one", "row two"))
    path.write_text(HEADER_14 + "\n")
    assert read_cell_csv(path) == CellCsv(HEADER_14, ())


def test_trailing_tokens_of_the_real_harness_csvs_match_the_manifest() -> None:
    if not SHARED_CORPUS.is_dir():
        pytest.skip(f"reference corpus not found at {SHARED_CORPUS}")
    with (SHARED_CORPUS / "MANIFEST.tsv").open(newline="") as fh:
        manifest = list(csv.DictReader(fh, delimiter="\t"))
    checked = 0
    for entry in manifest:
        # The bench_decode family: 14, 15, 17 columns and the ROCm variants.
        if not entry["header_line"].startswith("model,model_path,prompt_tokens,"):
            continue
        text = (SHARED_CORPUS / entry["path"]).read_text(encoding="utf-8")
        rows = [line for line in text.splitlines()[1:] if line.strip()]
        found = {line_token(row) for row in rows} - {None}
        expected = {t for t in entry["trailing_tokens"].split(";") if t}
        assert found == expected, entry["path"]
        # Every row is either a success or carries a token: the runner's verdict is never lost.
        assert {verdict_from_row(row).token for row in rows} <= expected | {"ok"}
        checked += 1
    assert checked >= 100
