"""One sweep over a fleet: a Slurm job array (through submitit) with one task per shard.

Each task works in the repository it was given: `record pull` (every host's OOMs, so none is
launched again), its shard of the sweep (`--shard I/N`: the models split by a stable hash, every
length of a model in one task, so the backstop works), then `record push` (its own OOMs, for
the next task anywhere). submitit is an optional extra (`pip install 'oomrec[slurm]'`), imported
only here; without Slurm its local executor runs the same tasks as subprocesses.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from oomrec.core.errors import OomrecError

CLUSTERS = ("auto", "local", "slurm")
# Sweep options a fleet sets itself: one per task.
_OWNED = ("--shard", "--output", "--json", "--demo", "--allow-empty")


@dataclass(frozen=True)
class ShardTask:
    repo: str
    shard: int
    shards: int
    remote: str | None
    sweep_args: tuple[str, ...]
    # Sweep even when the pull fails (the other hosts' records unknown): --offline.
    offline: bool = False


# The exit status a step gets that did not run (the pull before it failed).
NOT_RUN = 3


@dataclass
class ShardResult:
    shard: int
    shards: int
    host: str
    steps: dict[str, int] = field(default_factory=dict)
    output: str | None = None
    cells: int = 0
    log: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(code == 0 for code in self.steps.values())


def check_sweep_args(args: Sequence[str]) -> None:
    for arg in args:
        name = arg.split("=", 1)[0]
        if name in _OWNED:
            raise OomrecError(
                f"fleet submit sets {name} itself (each task writes its own shard's CSV); drop "
                f"it from the sweep arguments"
            )


def run_shard(task: ShardTask) -> dict[str, Any]:
    """One array task: pull, sweep this shard, push. Runs on the compute node."""
    result = ShardResult(task.shard, task.shards, socket.gethostname())
    oomrec = [sys.executable, "-m", "oomrec"]
    if task.remote:
        pulled = _step(result, "pull", [*oomrec, "record", "pull", task.remote], task.repo)
        if pulled.returncode != 0:
            if not task.offline:
                # Without the other hosts' records this task could launch a cell another host
                # has already seen run out of memory: it launches nothing.
                result.steps["sweep"] = NOT_RUN
                result.log.append(
                    f"sweep: not run: record pull {task.remote} failed, so the other hosts' "
                    "OOMs are unknown here (fleet submit --offline sweeps anyway)"
                )
                return asdict(result)
            result.log.append("sweep: --offline: sweeping without the other hosts' records")
    shard = f"{task.shard}/{task.shards}"
    done = _step(
        result,
        "sweep",
        # A shard may hold no model of a short list: not an error for the fleet.
        [*oomrec, "sweep", *task.sweep_args, "--shard", shard, "--allow-empty", "--json"],
        task.repo,
    )
    try:
        summary = json.loads(done.stdout)
        result.output = summary.get("output")
        result.cells = len(summary.get("cells", []))
    except ValueError:
        pass
    if task.remote:
        _step(result, "push", [*oomrec, "record", "push", task.remote], task.repo)
    return asdict(result)


def _step(
    result: ShardResult, name: str, argv: list[str], cwd: str
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False)
    result.steps[name] = done.returncode
    tail = [line for line in done.stderr.splitlines() if line.strip()][-3:]
    result.log += [f"{name}: {line}" for line in tail]
    return done


def submit(
    tasks: Sequence[ShardTask],
    folder: Path,
    *,
    cluster: str = "auto",
    partition: str | None = None,
    timeout_min: int = 24 * 60,
    gpus_per_task: int = 1,
) -> list[Any]:
    """Submit one job per task as one array; returns submitit's jobs (job_id, result())."""
    try:
        import submitit
    except ImportError:
        raise OomrecError("fleet submit needs submitit: pip install 'oomrec[slurm]'") from None
    if cluster not in CLUSTERS:
        raise OomrecError(f"--cluster {cluster!r}: use one of {', '.join(CLUSTERS)}")
    if cluster == "slurm" and shutil.which("sbatch") is None:
        raise OomrecError(
            "--cluster slurm: no Slurm here (no sbatch on PATH); submit from a Slurm login "
            "node, or pass --cluster local to run the tasks on this machine"
        )
    executor = submitit.AutoExecutor(
        folder=str(folder / "%j"), cluster=None if cluster == "auto" else cluster
    )
    params: dict[str, Any] = {
        "name": "oomrec-sweep",
        "timeout_min": timeout_min,
        "slurm_array_parallelism": len(tasks),
    }
    if executor.cluster == "slurm":
        # One GPU per task: a GPU never runs two cells at once.
        params["slurm_gpus_per_task"] = gpus_per_task
        if partition:
            params["slurm_partition"] = partition
    executor.update_parameters(**params)
    return list(executor.map_array(run_shard, list(tasks)))


def tasks_for(
    repo: Path,
    shards: int,
    remote: str | None,
    sweep_args: Sequence[str],
    offline: bool = False,
) -> list[ShardTask]:
    if not 1 <= shards <= 4096:
        raise OomrecError(f"--shards {shards}: give 1 to 4096")
    check_sweep_args(sweep_args)
    check_sweep_locally(repo, shards, sweep_args)
    return [
        ShardTask(str(repo), i, shards, remote, tuple(sweep_args), offline)
        for i in range(1, shards + 1)
    ]


def check_sweep_locally(repo: Path, shards: int, sweep_args: Sequence[str]) -> None:
    """The tasks' sweep arguments, tried here as a dry run of the first shard before anything
    is queued: a typo (`--lenghts`) is found now, not after the queue wait."""
    done = subprocess.run(
        [sys.executable, "-m", "oomrec", "sweep", *sweep_args, "--shard", f"1/{shards}",
         "--allow-empty", "--dry-run", "--json"],
        cwd=repo, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        said = lines[-1].removeprefix("oomrec: error: ") if lines else f"exit {done.returncode}"
        raise OomrecError(f"the sweep arguments would fail in every task: {said}")


def default_folder(repo: Path) -> Path:
    return repo / "benchmarks" / ".oomrec-fleet"


def environment_note() -> str:
    """Where the tasks' Python comes from: the submitting one (a shared filesystem on Slurm)."""
    return f"tasks run {sys.executable} (it must be on a filesystem the compute nodes share)"
