"""The built-in demo: a runner simulating a few models, and where `oomrec sweep --demo` writes.

`python -m oomrec.sweep.demo MODEL_PATH --prompt-tokens N --output CELL.csv` plays one benchmark
cell of a synthetic model whose memory grows with the prompt: it caps its own address space
(RLIMIT_AS), then really allocates and touches the model's weights and its KV cache. Small cells
fit and write a harness-format CSV row with measured timings; large ones fail allocation for real
(MemoryError, exit 1), so the whole path (classification, backstop, record, a second sweep
pre-skipping) runs on any machine, with no model and no GPU. Each decode token takes at least
DECODE_S, so a cell holds its memory as a real one does and a memory guard can see it.

This module is what every demo cell imports, so it imports little.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import time
import zlib
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from oomrec import __version__
from oomrec.core.schema import HEADER_15
from oomrec.core.units import MIB

PAGE = 4096
# What a demo cell may allocate on top of what the interpreter already maps.
BUDGET_MIB = 192
DEMO_DIR = Path("oomrec-demo")
PROMPT = "Hello, how are you today?"
# What one decode token takes, at least: a cell holds its memory for a while, as a real one does,
# so a memory guard (`--max-cell-memory 100M`) sees it.
DECODE_S = 0.003


@dataclass(frozen=True)
class DemoModel:
    name: str
    weights_mib: int
    kv_kib_per_token: int

    def kv_mib(self, tokens: int) -> float:
        return tokens * self.kv_kib_per_token / 1024


# Under BUDGET_MIB and the harness's ladder (512 2048 8192 32768), pico fits everywhere, mid
# runs out of memory at 32768 (288 MiB), moe at 8192 (256 MiB): the backstop then skips its
# 32768 cell. Every cell is 64 MiB or more from the limit, so the outcome holds on any machine.
MODELS = (
    DemoModel("pico-lm-4bit", weights_mib=8, kv_kib_per_token=1),
    DemoModel("mid-lm-8bit", weights_mib=32, kv_kib_per_token=8),
    DemoModel("moe-lm-bf16", weights_mib=64, kv_kib_per_token=24),
)
BY_NAME = {m.name: m for m in MODELS}


@dataclass(frozen=True)
class DemoLayout:
    """Where a demo sweep reads and writes: everything under one visible directory."""

    models_dir: Path
    output: Path
    record: Path


def layout(root: Path, hardware: str, day: str) -> DemoLayout:
    bench = root / "benchmarks"
    return DemoLayout(
        models_dir=root / "models",
        output=bench / f"cpu_{hardware}_longprompt_{day}.csv",
        record=bench / ".oom-record",
    )


def set_up(demo: DemoLayout) -> None:
    """Create the demo's model directories (empty: the runner knows each model by name)."""
    for model in MODELS:
        (demo.models_dir / model.name).mkdir(parents=True, exist_ok=True)


def runner_template(hardware: str) -> str:
    """The demo runner's command line, as a `--runner` template."""
    return (
        f"{shlex.quote(sys.executable)} -m oomrec.sweep.demo {{model_path}} "
        "--prompt-tokens {length} "
        "--max-tokens {max_tokens} --warmup-tokens {warmup_tokens} --output {cell_csv} "
        f"--hardware {shlex.quote(hardware)}"
    )


class _Limit:
    """The memory cap: RLIMIT_AS where the kernel enforces it (Linux), a budget check elsewhere."""

    def __init__(self, budget_mib: int) -> None:
        self.budget = budget_mib * MIB
        self.used = 0
        self.kernel = sys.platform.startswith("linux")
        if self.kernel:
            import resource

            pages = int(Path("/proc/self/statm").read_text().split()[0])
            mapped = pages * os.sysconf("SC_PAGESIZE")
            _, hard = resource.getrlimit(resource.RLIMIT_AS)
            soft = mapped + self.budget
            if hard != resource.RLIM_INFINITY:
                soft = min(soft, hard)
            resource.setrlimit(resource.RLIMIT_AS, (soft, hard))

    def how(self) -> str:
        if self.kernel:
            return f"RLIMIT_AS = mapped + {self.budget // MIB} MiB"
        return f"budget {self.budget // MIB} MiB, enforced by the demo (no RLIMIT_AS here)"

    def allocate(self, nbytes: int) -> bytearray:
        """Allocate and touch every page, so the memory is really resident."""
        if not self.kernel and self.used + nbytes > self.budget:
            raise MemoryError(f"demo budget of {self.budget // MIB} MiB exceeded")
        buf = bytearray(nbytes)
        buf[::PAGE] = b"\x01" * len(range(0, nbytes, PAGE))
        self.used += nbytes
        return buf


def benchmark(args: argparse.Namespace) -> int:
    """One cell, as a harness runner does it: allocate, prefill, decode, write its CSV row."""
    name = Path(args.model_path.rstrip("/")).name
    model = BY_NAME.get(name)
    if model is None:
        known = ", ".join(BY_NAME)
        print(f"[demo] unknown demo model {name!r}; the demo models are {known}", file=sys.stderr)
        return 2
    tokens = args.prompt_tokens
    limit = _Limit(args.budget_mib)
    print(f"[demo] {name} @ {tokens} tokens, {limit.how()}", flush=True)
    try:
        weights = limit.allocate(model.weights_mib * MIB)
        start = time.perf_counter()
        kv = limit.allocate(int(model.kv_mib(tokens) * MIB))
        # "Prefill": every 512 prompt tokens read a MiB of the weights (the cache is written).
        for chunk in range(max(1, tokens // 512)):
            offset = (chunk * MIB) % len(weights)
            zlib.crc32(memoryview(weights)[offset : offset + MIB])
        prefill_s = time.perf_counter() - start
        for _ in range(args.warmup_tokens):
            zlib.crc32(memoryview(weights)[: 64 * 1024])
        start = time.perf_counter()
        for step in range(args.max_tokens):
            # "Decode": one token reads a slice of the weights and appends to the cache.
            zlib.crc32(memoryview(weights)[: 256 * 1024])
            time.sleep(DECODE_S)
            if kv:
                kv[(step * PAGE) % len(kv)] = step & 0xFF
        decode_s = time.perf_counter() - start
    except MemoryError:
        need = model.weights_mib + model.kv_mib(tokens)
        print(
            f"[demo] MemoryError: cannot allocate {need:.0f} MiB for {name} at {tokens} tokens "
            f"(weights {model.weights_mib} MiB + KV cache {model.kv_mib(tokens):.0f} MiB; "
            f"{limit.how()})",
            file=sys.stderr,
            flush=True,
        )
        return 1
    row = [
        name,
        args.model_path,
        str(tokens),
        str(args.max_tokens),
        f"{prefill_s * 1000:.2f}",
        f"{tokens / prefill_s:.2f}",
        f"{decode_s * 1000:.2f}",
        f"{args.max_tokens / decode_s:.2f}" if decode_s > 0 else "",
        date.today().isoformat(),
        args.hardware,
        f"oomrec-demo-{__version__}",
        "demo",
        str(args.max_tokens),
        f'"{PROMPT}"',
        str(tokens),
    ]
    Path(args.output).write_text(HEADER_15 + "\n" + ",".join(row) + "\n", encoding="utf-8")
    print(f"[demo] wrote {args.output}", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m oomrec.sweep.demo",
        description="One benchmark cell of a synthetic model, under a real memory limit.",
    )
    parser.add_argument("model_path", help=f"a path ending in a demo model: {', '.join(BY_NAME)}")
    parser.add_argument("--prompt-tokens", type=int, required=True)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--warmup-tokens", type=int, default=4)
    parser.add_argument("--output", required=True, help="the cell CSV to write")
    parser.add_argument("--hardware", default="demo", help="the CSV's hardware column")
    parser.add_argument("--budget-mib", type=int, default=BUDGET_MIB)
    return benchmark(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
