"""A small, real history of harness CSVs for the HTML report's browser test and the docs'
screenshots: two machine classes, three models, four lengths, runs over two months, an OOM
that a fix commit (with an `OOM-Fix:` trailer) takes out of play, a contradicted OOM, a
timeout and a failure. Each run's CSV is committed on its own date, so the fix falls
between the runs it separates."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from oomrec.core.schema import HEADER_15
from tests.gitrepo import IDENTITY

GB10 = ("cuda_gb10", "NVIDIA_GB10_CUDA13.0_122GB")
M3 = ("metal_m3ultra", "Apple_M3_Ultra_512GB")
MODELS = ("gemma-4-31b-it-4bit", "qwen3-30b-a3b-4bit", "llama-3.1-8b-instruct-4bit")
LENGTHS = (512, 2048, 8192, 32768)
# date -> machine -> model -> length -> token ("" ran); a cell not named ran.
RUNS: dict[str, dict[tuple[str, str], dict[str, dict[int, str]]]] = {
    "2026-06-02": {
        GB10: {MODELS[0]: {32768: "SKIP:oom"}, MODELS[1]: {32768: "SKIP:oom"}},
        M3: {},
    },
    "2026-06-16": {
        GB10: {MODELS[0]: {8192: "SKIP:oom", 32768: "SKIP:oom_backstop"}, MODELS[1]: {}},
        M3: {MODELS[2]: {32768: "FAIL:timeout"}},
    },
    "2026-07-01": {GB10: {MODELS[1]: {32768: "FAIL:bench"}}},
    "2026-07-20": {GB10: {}, M3: {MODELS[0]: {32768: "SKIP:oom"}}},
}
FIX_DATE = "2026-06-24"
FIX_SUBJECT = "Chunk the prefill of long prompts"


def _row(model: str, length: int, day: str, hardware: str, token: str) -> str:
    # prompt_tokens .. decode_tok_s: measured where the cell ran, empty where it did not.
    timing = ",,,,," if token else f"{length},32,{length / 10:.1f},10.0,320.0,100.0"
    line = f'{model},./models/{model}/,{timing},{day},{hardware},0.31.0,release,32,"Hi",{length}'
    return line + (f",{token}" if token else "")


def _commit(repo: Path, message: str, day: str) -> None:
    stamp = f"{day}T12:00:00+00:00"
    env = {**os.environ, **IDENTITY, "GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp}
    subprocess.run(["git", "add", "-A"], cwd=repo, env=env, check=True)
    subprocess.run(
        ["git", "commit", "-q", "--allow-empty", "-m", message], cwd=repo, env=env, check=True
    )


def build(repo: Path) -> Path:
    """The history in `repo` (a new folder); returns its `benchmarks/` folder."""
    repo.mkdir(parents=True)
    env = {**os.environ, **IDENTITY}
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, env=env, check=True)
    bench = repo / "benchmarks"
    bench.mkdir()
    _commit(repo, "Start", "2026-06-01")
    for day, machines in RUNS.items():
        if day > FIX_DATE and not (repo / ".fixed").exists():
            (repo / ".fixed").write_text("")
            _commit(repo, f"{FIX_SUBJECT}\n\nOOM-Fix: gemma-4-*", FIX_DATE)
        for (prefix, hardware), tokens in machines.items():
            rows = [
                _row(model, n, day, hardware, tokens.get(model, {}).get(n, ""))
                for model in MODELS
                for n in LENGTHS
            ]
            (bench / f"{prefix}_{day}_longprompt.csv").write_text(
                HEADER_15 + "\n" + "\n".join(rows) + "\n"
            )
        _commit(repo, f"Benchmarks of {day}", day)
    return bench
