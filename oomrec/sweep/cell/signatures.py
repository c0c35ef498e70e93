"""The allocator messages that mean a cell ran out of memory, matched over a whole output stream.

One table, each entry with its ecosystem (see ../shared/docs/oom-signatures.md for where each
comes from). The runner's output is untrusted and may be gigabytes long, so the patterns are
bytes literals with at most one bounded quantifier (no nesting: linear time), and the scanner
matches chunk by chunk as the output is pumped, keeping only a small overlap so a message split
across two chunks still matches; memory stays bounded however long the output is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# The longest text any pattern can match, plus the words after it that a generic match needs
# to see before it can be judged (`failed to allocate a free port`).
MAX_MATCH = 256
CONTEXT = 64
_KEEP = MAX_MATCH + CONTEXT
# Every pattern holds one of these (lowercase) words; output without any cannot match.
ANCHORS = (b"memory", b"alloc", b"exhausted", b"buffer")


@dataclass(frozen=True, slots=True)
class Signature:
    """An allocator message that means the cell ran out of memory."""

    pattern: re.Pattern[bytes]
    ecosystem: str
    # "size-limit": one buffer over an API's cap, not memory pressure; still a capacity failure
    # that a longer prompt only makes worse, so it is an OOM for the backstop, as in the harness.
    kind: str = "oom"
    # A generic "could not allocate" says nothing about memory: it must not be about a port,
    # a file descriptor, a thread... (see _NOT_MEMORY).
    generic: bool = False


def _sig(pattern: str, ecosystem: str, kind: str = "oom", *, generic: bool = False) -> Signature:
    # Case-insensitive by matching a lowercase pattern against lowercased output: re.IGNORECASE
    # costs ~7 ms per MiB and pattern, a case-sensitive literal search a fraction of that.
    # (No pattern uses an uppercase escape such as \S or \W, which lowercasing would change.)
    return Signature(re.compile(pattern.lower().encode()), ecosystem, kind, generic)


# Specific messages first, so a match names the ecosystem it came from; the bash harness's own
# alternatives last (every one of them, so oomrec matches at least what the harness matches
# whenever it is about memory).
SIGNATURES: tuple[Signature, ...] = (
    _sig(r"CUDA out of memory\. Tried to allocate", "PyTorch CUDA caching allocator"),
    _sig(r"HIP out of memory\. Tried to allocate", "PyTorch on ROCm"),
    _sig(r"XPU out of memory\.", "PyTorch on Intel XPU"),
    _sig(r"MPS backend out of memory", "PyTorch on Apple MPS"),
    _sig(r"CUDA error: out of memory", "PyTorch outside the caching allocator"),
    _sig(r"HIP error: out of memory", "PyTorch outside the caching allocator"),
    _sig(r"DefaultCPUAllocator: can't allocate memory", "PyTorch CPU"),
    _sig(r"\[metal::malloc\][^\n]{0,200}maximum allowed buffer size", "MLX on Metal", "size-limit"),
    _sig(r"\[metal::malloc\] Resource limit \(", "MLX on Metal (buffer count)"),
    _sig(r"\[malloc\] Unable to allocate", "MLX allocator"),
    _sig(r"kIOGPUCommandBufferCallbackErrorOutOfMemory", "Apple Metal command buffer"),
    _sig(r"Insufficient Memory \(00000008", "Apple Metal command buffer"),
    _sig(r"cudaMalloc failed: out of memory", "llama.cpp / ggml"),
    _sig(r"failed to allocate CUDA[0-9]{0,3} buffer", "llama.cpp / ggml"),
    _sig(r"failed to allocate compute buffers", "llama.cpp / ggml"),
    _sig(r"Device memory allocation of size [0-9]{1,20} failed", "llama.cpp / ggml-vulkan"),
    _sig(r"ErrorOutOfDeviceMemory", "Vulkan (vulkan.hpp)"),
    _sig(r"VK_ERROR_OUT_OF_DEVICE_MEMORY", "Vulkan"),
    _sig(r"ErrorOutOfHostMemory", "Vulkan (vulkan.hpp)"),
    _sig(r"VK_ERROR_OUT_OF_HOST_MEMORY", "Vulkan"),
    _sig(r"No available memory for the cache blocks", "vLLM"),
    _sig(r"CUDA_ERROR_OUT_OF_MEMORY", "CUDA driver"),
    _sig(r"cudaErrorMemoryAllocation", "CUDA runtime"),
    _sig(r"cuMemAlloc failed", "CUDA driver"),
    _sig(r"hipErrorOutOfMemory", "HIP runtime"),
    _sig(r"CUBLAS_STATUS_ALLOC_FAILED", "cuBLAS"),
    _sig(r"RESOURCE_EXHAUSTED: Out of memory while trying to allocate", "JAX / XLA"),
    _sig(r"OOM when allocating tensor", "TensorFlow"),
    _sig(r"ResourceExhaustedError", "TensorFlow"),
    # Also Java's and torch's OutOfMemoryError.
    _sig(r"MemoryError\b", "Python host allocation"),
    _sig(r"std::bad_alloc", "C++ host allocation"),
    _sig(r"Cannot allocate memory", "host allocation (ENOMEM)"),
    _sig(r"memory allocation of [0-9]{1,20} bytes failed", "Rust global allocator"),
    _sig(r"out of memory", "generic (bash harness)"),
    _sig(r"out-of-memory", "generic (bash harness)"),
    _sig(r"insufficient memory", "generic (bash harness)"),
    _sig(r"failed to allocate", "generic (bash harness)", generic=True),
    _sig(r"unable to allocate", "generic (bash harness)", generic=True),
    _sig(r"bad_alloc", "C++ host allocation (bash harness)"),
    _sig(r"memory allocation of [0-9]", "generic (bash harness)"),
    _sig(r"greater than the maximum allowed buffer size", "MLX on Metal", "size-limit"),
    _sig(r"metal::malloc", "MLX on Metal (bash harness)"),
)

# What a generic "failed to allocate X" may allocate that is not memory. The first word after
# the verb that is not a filler decides; anything else (memory, a buffer, bytes, a tensor, an
# unknown word) stays an OOM, because a missed OOM is the worse error.
# Singular: a word is looked up without its plural "s".
# fmt: off
_NOT_MEMORY = frozenset((
    "port", "file", "fd", "descriptor", "thread", "handle", "socket", "pty", "tty", "terminal",
    "inode", "irq", "interrupt", "pid", "uid", "gid", "ip", "lease", "semaphore", "mutex", "timer",
))
_FILLER = frozenset((
    "a", "an", "the", "one", "new", "free", "another", "any", "more", "additional", "extra",
    "available", "unused", "tcp", "udp", "unix", "local", "network", "listening", "ephemeral",
    "open",
))
# fmt: on
_WORD = re.compile(rb"[a-z0-9]{1,32}")


def _about_memory(after: bytes) -> bool:
    """Whether the (lowercased) text after a generic "failed to allocate" may be about memory."""
    line = after.split(b"\n", 1)[0]
    if b"memory" in line:
        return True
    for word in _WORD.findall(line)[:6]:
        text = word.decode("ascii")
        if text in _FILLER or text.isdigit():
            continue
        return text.removesuffix("s") not in _NOT_MEMORY
    return True


@dataclass(frozen=True, slots=True)
class SignatureHit:
    """A signature found in the output, with the text it matched."""

    signature: Signature
    text: str

    def describe(self) -> str:
        return f"{self.text!r} ({self.signature.ecosystem}, {self.signature.kind})"


class SignatureScanner:
    """Matches the table over a byte stream fed chunk by chunk, in bounded memory.

    `hit` is the first match of the first signature in table order that the stream holds, so a
    specific message wins over a generic one wherever it came in the output.
    """

    def __init__(self) -> None:
        self._carry = b""
        self._best = len(SIGNATURES)
        self._hit: SignatureHit | None = None

    def feed(self, chunk: bytes, *, final: bool = False) -> None:
        if self._best == 0:
            return  # nothing can come before the table's first signature
        data = self._carry + chunk
        lowered = data.lower()
        # Every match holds an anchor, and a plain log (most output) holds none: four
        # substring searches then spare the forty patterns.
        if not any(anchor in lowered for anchor in ANCHORS):
            self._carry = b"" if final else data[-_KEEP:]
            return
        # A match is judged only with CONTEXT bytes after it (or at the end of the stream);
        # one ending later is found again next time, since the carry holds all of it.
        limit = len(data) if final else len(data) - CONTEXT
        # Only signatures before the best one found so far can change the verdict.
        for index, sig in enumerate(SIGNATURES[: self._best]):
            hit = _first_match(sig, data, lowered, limit)
            if hit is not None:
                self._best = index
                self._hit = hit
                break
        self._carry = b"" if final else data[-_KEEP:]

    def close(self) -> None:
        """The stream ended: judge what the carry still holds."""
        self.feed(b"", final=True)

    @property
    def hit(self) -> SignatureHit | None:
        return self._hit


def _first_match(sig: Signature, data: bytes, lowered: bytes, limit: int) -> SignatureHit | None:
    """The first match of `sig` ending by `limit` that counts; its text as the output wrote it."""
    pos = 0
    while True:
        found = sig.pattern.search(lowered, pos)
        if found is None or found.end() > limit:
            return None
        start, end = found.span()
        if not sig.generic or _about_memory(lowered[end : end + CONTEXT]):
            return SignatureHit(sig, data[start:end].decode("utf-8", errors="replace"))
        pos = start + 1


def match_signature(output: str | bytes) -> SignatureHit | None:
    """The signature a whole output matches (as a scan of the stream would find it), or None."""
    scanner = SignatureScanner()
    data = output if isinstance(output, bytes) else output.encode("utf-8", "surrogateescape")
    scanner.feed(data)
    scanner.close()
    return scanner.hit
