"""The options of one cell that `sweep` and `run` share: the same flags, the same help, declared
once (as apps.RecordOption is)."""

from typing import Annotated

import typer

TimeoutOption = Annotated[
    str | None,
    typer.Option(
        "--timeout",
        metavar="DURATION",
        help="How long before a cell's process group is killed: seconds or 30m, 1h30m. "
        "Default: 1800.",
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
