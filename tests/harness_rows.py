"""Harness-layout CSV rows for the import tests: the headers the harness writes and rows in them."""

from __future__ import annotations

from oomrec.core import schema

H14 = schema.HEADER_14
H15 = schema.HEADER_15
H17 = H15.replace("mlx_version", "mlxcel_version") + ",mlxcel_commit,mlx_commit"
ROCM = H17 + ",mlx_rocm_overlay_commit,hip_version"
# A one-off layout with a peak column and no trailing tokens of its own design.
PEAK_LAYOUT = (
    "model,prompt_tokens,generated_tokens,prefill_chunk,prefill_ms,prefill_tok_s,decode_ms,"
    "decode_tok_s,mlx_peak_gb,sys_peak_gb,date,hardware,mlxcel_version,build_type,notes"
)
SPEC_LAYOUT = (
    "pairing,kind,batch,block_size,tok_s,speedup_vs_baseline,acceptance_rate,mean_accepted_len,"
    "status,date,hardware,mlxcel_version,max_tokens,prompt,mlxcel_commit,mlx_commit"
)
GB10 = "NVIDIA_GB10_122GB"
PROMPT = "Hello, how are you today?"
SHA = "9bef3f2334c4048d8540aa392ef030c97d4dad2c"


def row(
    model: str,
    token: str,
    *,
    layout: str = H15,
    length: str = "",
    tokens: str = "",
    date: str = "2026-07-03",
    hardware: str = GB10,
    commit: str = "",
    gap: bool = False,
    prompt: str = PROMPT,
) -> str:
    """A metric-less harness row in `layout`, as the harness writes it (prompt in quotes)."""
    values = {
        "model": model,
        "model_path": f"./models/{model}",
        "prompt_tokens": tokens,
        "date": date,
        "hardware": hardware,
        "mlx_version": "0.3.3",
        "mlxcel_version": "0.3.3",
        "build_type": "release",
        "max_tokens": "32",
        "prompt": f'"{prompt}"',
        "prompt_target_len": length,
        "mlxcel_commit": commit,
        "mlx_commit": "9a795735",
    }
    cells = [values.get(name, "") for name in layout.split(",")]
    return ",".join(cells) + (",," if gap else ",") + token


def ok_row(model: str, length: int, *, layout: str = H15) -> str:
    """A success row: metrics filled in, no token."""
    values = {
        "model": model,
        "model_path": f"./models/{model}",
        "prompt_tokens": str(length),
        "generated_tokens": "32",
        "prefill_ms": "155.78",
        "date": "2026-07-03",
        "hardware": GB10,
        "prompt": f'"{PROMPT}"',
        "prompt_target_len": str(length),
    }
    return ",".join(values.get(name, "1.0") for name in layout.split(","))


def csv_text(header: str, *rows: str) -> str:
    return "\n".join([header, *rows]) + "\n"
