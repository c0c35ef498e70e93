"""The OOM signatures: one table, each entry with its ecosystem, matched over a whole stream."""

from __future__ import annotations

import itertools
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oomrec.sweep.cell.signatures import (
    ANCHORS,
    MAX_MATCH,
    SIGNATURES,
    Signature,
    SignatureHit,
    SignatureScanner,
    match_signature,
)
from tests.profiles import examples

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

# Beyond the document: Vulkan backends and TensorFlow, as they print it.
NEW_SIGNATURES = [
    (
        "ggml_vulkan: Device memory allocation of size 4294967296 failed.",
        "llama.cpp / ggml-vulkan",
    ),
    (
        "terminate called after throwing an instance of 'vk::OutOfDeviceMemoryError'\n"
        "  what():  vk::Device::allocateMemory: ErrorOutOfDeviceMemory",
        "Vulkan (vulkan.hpp)",
    ),
    ("vkAllocateMemory failed: VK_ERROR_OUT_OF_DEVICE_MEMORY", "Vulkan"),
    ("vk::Device::createBuffer: ErrorOutOfHostMemory", "Vulkan (vulkan.hpp)"),
    ("vkCreateDevice returned VK_ERROR_OUT_OF_HOST_MEMORY", "Vulkan"),
    (
        "tensorflow.python.framework.errors_impl.ResourceExhaustedError: {{function_node "
        "__wrapped__MatMul_device_/job:localhost}} OOM when allocating tensor with "
        "shape[32768,32768] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by "
        "allocator GPU_0_bfc [Op:MatMul]",
        "TensorFlow",
    ),
    ("Resource exhausted: OOM when allocating tensor with shape[8,4096,4096]", "TensorFlow"),
    ("tensorflow.python.framework.errors_impl.ResourceExhaustedError: failed", "TensorFlow"),
]

# What the generic "failed/unable to allocate" must still catch: it is about memory.
GENERIC_MEMORY = [
    "ggml_gallocr_reserve_n: failed to allocate Metal buffer of size 1073741824",
    "error: failed to allocate 4096 bytes",
    "Failed to allocate memory for the port mapping table",
    "unable to allocate the KV cache (need 12.0 GiB)",
    "Unable to allocate 3.00 GiB for an array with shape (32768, 24576) and data type float32",
    "fatal: failed to allocate",
    "failed to allocate file-backed memory for the weights",
]

# Allocations that are not memory: they must never match.
NOT_MEMORY = [
    "Error: failed to allocate a free port for the server",
    "RuntimeError: failed to allocate a free port after 100 attempts",
    "Failed to allocate file descriptor: too many open files",
    "unable to allocate file descriptors for the pipe",
    "pthread: failed to allocate thread (EAGAIN)",
    "unable to allocate threads for the pool",
    "Failed to allocate handle",
    "failed to allocate a new socket",
    "unable to allocate a pty: No such device",
    "Failed to allocate IP address from the pool",
    "failed to allocate TCP port 8080",
    "failed to allocate inode",
    "unable to allocate an IRQ vector",
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
    assert ecosystem.lower() in found.signature.ecosystem.lower()
    assert found.signature.ecosystem in found.describe()


def test_every_signature_in_the_table_is_exercised() -> None:
    samples = [text for text, _ in DOC_SIGNATURES + NEW_SIGNATURES]
    harness = [
        "out of memory", "out-of-memory", "insufficient memory", "failed to allocate",
        "unable to allocate", "bad_alloc", "memory allocation of 1", "metal::malloc",
        "greater than the maximum allowed buffer size",
    ]  # fmt: skip
    for sig in SIGNATURES:
        assert any(sig.pattern.search(s.encode().lower()) for s in samples + harness), (
            sig.pattern.pattern
        )


@pytest.mark.parametrize("text", NOT_OOM)
def test_the_documented_non_oom_messages_do_not_match(text: str) -> None:
    assert match_signature(text) is None


@pytest.mark.parametrize(("text", "ecosystem"), NEW_SIGNATURES)
def test_vulkan_and_tensorflow_are_oom_and_named(text: str, ecosystem: str) -> None:
    found = match_signature(f"loading weights...\n{text}\nexiting\n")
    assert found is not None, text
    assert found.signature.ecosystem == ecosystem


@pytest.mark.parametrize("text", GENERIC_MEMORY)
def test_a_generic_allocation_failure_of_memory_is_oom(text: str) -> None:
    found = match_signature(text)
    assert found is not None, text


@pytest.mark.parametrize("text", NOT_MEMORY)
def test_allocations_that_are_not_memory_never_match(text: str) -> None:
    assert match_signature(f"starting...\n{text}\n") is None


def test_a_non_memory_allocation_does_not_hide_a_real_one_after_it() -> None:
    text = "failed to allocate a free port\n" * 50 + "failed to allocate 64 MiB\n"
    found = match_signature(text)
    assert found is not None
    assert found.text == "failed to allocate"


# Words a generic allocation of something that is not memory names; random text around a
# harness match must not be one of them (the harness, unlike oomrec, matches those too).
_NOT_MEMORY_WORDS = re.compile(
    r"port|file|fd|descriptor|thread|handle|socket|pty|tty|terminal|inode|irq|interrupt|pid|"
    r"uid|gid|ip|lease|semaphore|mutex|timer",
    re.IGNORECASE,
)


@settings(max_examples=examples(300), deadline=None)
@given(
    before=st.text(max_size=40),
    hit=st.from_regex(re.compile(HARNESS_REGEX, re.IGNORECASE), fullmatch=True),
    after=st.text(max_size=40).filter(lambda t: not _NOT_MEMORY_WORDS.search(t)),
)
def test_whatever_the_harness_regex_matches_oomrec_matches(
    before: str, hit: str, after: str
) -> None:
    text = before + hit + after
    assert re.search(HARNESS_REGEX, text, re.IGNORECASE)
    assert match_signature(text) is not None, text


def _scan(chunks: list[bytes]) -> SignatureHit | None:
    scanner = SignatureScanner()
    for chunk in chunks:
        scanner.feed(chunk)
    scanner.close()
    return scanner.hit


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        (b"[metal::malloc] Attempting to allocate 8 bytes which is greater than the maximum "
         b"allowed buffer size of 4 bytes.", "MLX on Metal"),
        (b"ggml_vulkan: Device memory allocation of size 4294967296 failed.",
         "llama.cpp / ggml-vulkan"),
        (b"Failed to allocate memory for the port mapping", "generic (bash harness)"),
        (b"Error: failed to allocate a free port", None),
    ],
)  # fmt: skip
def test_a_message_split_anywhere_across_chunks_is_judged_as_a_whole(
    message: bytes, expected: str | None
) -> None:
    noise = b"x" * 1000 + b"\n"
    data = noise + message + b"\n" + noise
    for cut in range(len(noise) - 5, len(noise) + len(message) + 80):
        hit = _scan([data[:cut], data[cut:]])
        assert (hit and hit.signature.ecosystem) == (expected or None), cut


@settings(max_examples=examples(60), deadline=None)
@given(
    cuts=st.lists(st.integers(min_value=0, max_value=3000), max_size=12),
    at=st.integers(min_value=0, max_value=2500),
)
def test_any_chunking_finds_what_the_whole_output_has(cuts: list[int], at: int) -> None:
    data = b"y" * at + b"\nRuntimeError: CUDA error: out of memory\n" + b"z" * 400
    bounds = sorted({0, len(data), *(c for c in cuts if c < len(data))})
    chunks = [data[a:b] for a, b in itertools.pairwise(bounds)]
    hit = _scan(chunks)
    assert hit is not None
    assert hit.signature.ecosystem == "PyTorch outside the caching allocator"


def test_a_specific_message_wins_over_an_earlier_generic_one() -> None:
    chunks = [b"warning: out of memory soon?\n", b"." * 200_000, b"\nhipErrorOutOfMemory\n"]
    hit = _scan(chunks)
    assert hit is not None
    assert hit.signature.ecosystem == "HIP runtime"


def _repeats(tree: object, depth: int = 0) -> int:
    """The deepest nesting of repeats in a parsed pattern."""
    deepest = depth
    for op, arg in tree:  # type: ignore[attr-defined]
        name = str(op)
        subs: list[object] = []
        if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            deepest = max(deepest, _repeats(arg[2], depth + 1))
            continue
        if name == "SUBPATTERN":
            subs = [arg[-1]]
        elif name == "BRANCH":
            subs = list(arg[1])
        elif name in ("ASSERT", "ASSERT_NOT"):
            subs = [arg[1]]
        for sub in subs:
            deepest = max(deepest, _repeats(sub, depth))
    return deepest


@pytest.mark.parametrize("sig", SIGNATURES, ids=lambda s: s.pattern.pattern.decode())
def test_every_pattern_is_linear_time_and_fits_the_overlap(sig: Signature) -> None:
    from re import _parser  # type: ignore[attr-defined]

    pattern = sig.pattern
    tree = _parser.parse(pattern.pattern, pattern.flags)
    assert _repeats(tree) <= 1, "nested quantifiers"
    assert tree.getwidth()[1] <= MAX_MATCH


@pytest.mark.parametrize("sig", SIGNATURES, ids=lambda s: s.pattern.pattern.decode())
def test_every_pattern_holds_an_anchor_word(sig: Signature) -> None:
    # The scanner skips output with no anchor: a pattern without one would never be tried.
    assert any(anchor in sig.pattern.pattern for anchor in ANCHORS)
    assert not re.search(rb"\\[A-Z]", sig.pattern.pattern), "lowercasing changed an escape"


_FRAGMENTS = [
    *(text for text, _ in DOC_SIGNATURES + NEW_SIGNATURES),
    *NOT_MEMORY,
    *GENERIC_MEMORY,
    "failed to allocate ", "unable to allocate", " a free ", "port", "memory", "\n", " ",
    "MetaL::MaLLoc", "x" * 300,
]  # fmt: skip


@settings(max_examples=examples(150), deadline=None)
@given(
    parts=st.lists(st.sampled_from(_FRAGMENTS) | st.text(max_size=30), max_size=12),
    cuts=st.lists(st.integers(min_value=0, max_value=4000), max_size=10),
)
def test_the_verdict_does_not_depend_on_how_the_output_was_chunked(
    parts: list[str], cuts: list[int]
) -> None:
    data = "".join(parts).encode("utf-8", "surrogatepass")
    bounds = sorted({0, len(data), *(c for c in cuts if c < len(data))})
    whole = _scan([data])
    chunked = _scan([data[a:b] for a, b in itertools.pairwise(bounds)])
    assert (whole and (whole.signature, whole.text)) == (
        chunked and (chunked.signature, chunked.text)
    )
