"""Every flag of a sweep, declared once (flag, metavar, help), as the Annotated types `sweep`
declares its parameters with and `run` reuses for the flags it shares (sqlite-utils shares its
options between commands the same way). Each parameter is named as its SweepOptions field, so
the options are made from the parameters by name (sweep.options.from_given); the defaults the
help shows are the code's (core/settings.py, sweep/cell/defaults.py).

Typer takes a parameter's default from the signature (`= None`), never from here."""

from pathlib import Path
from typing import Annotated

import typer

from oomrec.core.settings import (
    DEFAULT_LENGTHS,
    DEFAULT_REFINE_STEP,
    DEFAULT_TIMEOUT_S,
    shown_default,
)
from oomrec.sweep.cell.defaults import PLACEHOLDERS

ModelsOption = Annotated[
    list[str] | None,
    typer.Option(
        "--models",
        metavar="MODELS",
        help='Model directory names, space-separated: "A B C"; repeatable (all count).',
    ),
]
LengthsOption = Annotated[
    list[str] | None,
    typer.Option(
        "--lengths",
        metavar="LENGTHS",
        help="Prompt lengths in tokens, space-separated; repeatable (all count). Default: "
        f'"{" ".join(map(str, DEFAULT_LENGTHS))}".',
    ),
]
RunnerOption = Annotated[
    str | None,
    typer.Option(
        "--runner",
        metavar="TEMPLATE",
        help="The command for one cell, run without a shell; placeholders: "
        + " ".join(f"{{{name}}}" for name in PLACEHOLDERS)
        + f". Default: {shown_default('runner')}.",
    ),
]
ModelsDirOption = Annotated[
    str | None,
    typer.Option(
        "--models-dir",
        metavar="DIR",
        help=f"Where model directories are. Default: ./{shown_default('models_dir')}.",
    ),
]
OutputOption = Annotated[
    Path | None,
    typer.Option(
        "--output",
        help=f"The aggregate CSV (replaced). Default: {shown_default('output')}.",
        dir_okay=False,
    ),
]
TimeoutOption = Annotated[
    str | None,
    typer.Option(
        "--timeout",
        metavar="DURATION",
        help="How long before a cell's process group is killed: seconds or 30m, 1h30m. "
        f"Default: {DEFAULT_TIMEOUT_S:g}.",
    ),
]
CooldownOption = Annotated[
    str,
    typer.Option(
        "--cooldown",
        metavar="DURATION",
        help="Wait after each launched cell, seconds or 2m (passed to a runner template "
        "that names {cooldown}, which then waits instead).",
    ),
]
BigCooldownOption = Annotated[
    str,
    typer.Option(
        "--big-cooldown",
        metavar="DURATION",
        help="Extra wait after a cell of a model over 10 GiB of *.safetensors (passed to a "
        "runner template that names {big_cooldown}), as the harness's flag.",
    ),
]
MaxTokensOption = Annotated[
    int, typer.Option("--max-tokens", min=1, help="Decode tokens per cell.")
]
WarmupTokensOption = Annotated[
    int, typer.Option("--warmup-tokens", min=0, help="Warmup decode tokens per cell.")
]
FakeOomOption = Annotated[
    str | None,
    typer.Option(
        "--fake-oom",
        metavar="MODEL:LEN[,...]",
        help="Testing hook: do not launch these cells, treat them as true OOMs. "
        "Default: $MLXCEL_BENCH_FAKE_OOM.",
    ),
]
IgnoreRecordOption = Annotated[
    bool,
    typer.Option(
        "--ignore-record",
        help="Launch cells the record would pre-skip (new OOMs are still recorded). Also "
        "$MLXCEL_BENCH_IGNORE_OOM_RECORD=1 or $OOMREC_IGNORE_RECORD=1.",
    ),
]
IgnoreGuardRecordsOption = Annotated[
    bool,
    typer.Option(
        "--ignore-guard-records",
        help="Launch cells that only memory-guard records (kind guard) would pre-skip, as "
        "after raising the guard's limits; records of OOMs seen still apply.",
    ),
]
ProbeUndecidedOption = Annotated[
    bool,
    typer.Option(
        "--probe-undecided",
        help="Also probe records a fix may have lifted (git cannot prove its change is in "
        "the tree): each runs alone under the guard, and its outcome decides.",
    ),
]
ResumeOption = Annotated[
    bool,
    typer.Option(
        "--resume",
        help="Continue the CSV instead of replacing it: cells done with the same commit and "
        "runner are not run again (true OOMs never are); rows of another commit or runner "
        "run again.",
    ),
]
ResumeKeepOption = Annotated[
    bool,
    typer.Option(
        "--resume-keep",
        help="As --resume, but keep the rows of another commit or runner.",
    ),
]
RerunFailedOption = Annotated[
    bool, typer.Option("--rerun-failed", help="With --resume, run FAIL:* cells again.")
]
ShardOption = Annotated[
    str | None,
    typer.Option(
        "--shard",
        metavar="I/N",
        help="Run only the models of shard I of N (by a stable hash of the model name; "
        "every length of a model stays in one shard, so the backstop works).",
    ),
]
MaxCellMemoryOption = Annotated[
    str | None,
    typer.Option(
        "--max-cell-memory",
        metavar="SIZE",
        help="Memory guard: stop a cell (SIGTERM to its whole process tree, SIGKILL 1 s "
        "later) as soon as its summed RSS passes SIZE (110G, 512M, 85% of this host's "
        "memory, off); it is SKIP:oom_guard and recorded. Default: off.",
    ),
]
MinAvailableOption = Annotated[
    str | None,
    typer.Option(
        "--min-available",
        metavar="SIZE",
        help="Memory guard: stop a cell as soon as the available memory that binds (the "
        "host's, or an enclosing cgroup's) falls under SIZE (6G, 5%, off) while it runs. "
        "Default: off.",
    ),
]
MaxCellGpuMemoryOption = Annotated[
    str | None,
    typer.Option(
        "--max-cell-gpu-memory",
        metavar="SIZE",
        help="Memory guard on each NVIDIA GPU (NVML: oomrec[nvidia]): stop a cell whose "
        "processes hold more than SIZE on one device (40G, 90% of its memory, off). "
        "Default: off.",
    ),
]
MinGpuAvailableOption = Annotated[
    str | None,
    typer.Option(
        "--min-gpu-available",
        metavar="SIZE",
        help="Memory guard on each NVIDIA GPU (NVML): stop a cell as soon as a device's "
        "free memory falls under SIZE (2G, 3%, off). Default: off.",
    ),
]
RefineOption = Annotated[
    int,
    typer.Option(
        "--refine",
        metavar="N",
        show_default=False,
        help="After the ladder, find each model's frontier between its largest length "
        "that ran and its smallest that ran out of memory (or was stopped by the guard): "
        "up to N more cells by bisection, as normal cells (record, backstop and guard "
        "apply). Use it with the memory guard on, which stops each probe before the "
        "machine nears OOM. Default: 0 (off).",
    ),
]
RefineStepOption = Annotated[
    str | None,
    typer.Option(
        "--refine-step",
        metavar="TOKENS",
        help=f"Probe lengths are multiples of this (256, 1k). Default: {DEFAULT_REFINE_STEP}.",
    ),
]
AllowEmptyOption = Annotated[
    bool,
    typer.Option(
        "--allow-empty",
        help="Exit 0 when no cell can run (every model or the models dir missing, an "
        "empty shard), leaving a CSV that holds the header, as the harness does; by default "
        "that is a usage error (exit 2).",
    ),
]
DemoOption = Annotated[
    bool,
    typer.Option(
        "--demo",
        help="Sweep the built-in synthetic models under a real memory limit, in "
        "./oomrec-demo/ (no models, no GPU needed).",
    ),
]
