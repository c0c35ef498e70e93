"""`fleet submit`: one sweep over a fleet, one array task per shard (submitit)."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oomrec.commands import Result
from oomrec.core.errors import OomrecError
from oomrec.store.locations import find_repo_root


@dataclass(kw_only=True)
class SubmitResult(Result):
    jobs: list[str]
    folder: str
    # Each task's result when waited for (`sweep.fleet` task results: shard, host, steps, ...).
    results: list[dict[str, Any]] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        """Whether a waited-for task had a step that did not exit 0."""
        return any(code != 0 for r in self.results for code in r["steps"].values())

    def json_body(self) -> dict[str, Any]:
        return {"jobs": self.jobs, "folder": self.folder, "results": self.results}


def fleet_submit(
    sweep_args: list[str],
    *,
    shards: int = 2,
    remote: str | None = "origin",
    cluster: str = "auto",
    partition: str | None = None,
    timeout_min: int = 24 * 60,
    folder: Path | None = None,
    wait: bool = False,
    offline: bool = False,
) -> SubmitResult:
    """Submit one task per shard (each pulls records, sweeps its shard, pushes records); with
    `wait`, wait for them all."""
    from oomrec.sweep import fleet

    root = find_repo_root()
    if root is None:
        raise OomrecError("fleet submit runs tasks in a repository: run it inside one")
    tasks = fleet.tasks_for(root, shards, remote or None, sweep_args, offline)
    from oomrec.store.exclude import exclude_folder

    where = folder or fleet.default_folder(root)
    notices = [fleet.environment_note()]
    said = exclude_folder(where)
    if said:
        notices.append(said)
    try:
        jobs = fleet.submit(
            tasks, where, cluster=cluster, partition=partition, timeout_min=timeout_min
        )
        results = [job.result() for job in jobs] if wait else []
    finally:
        # submitit makes the folder pattern itself, `%j` and all (again as it waits), though
        # each job writes to its own folder: the empty literal one goes.
        with contextlib.suppress(OSError):
            (where / "%j").rmdir()
    return SubmitResult(
        jobs=[str(job.job_id) for job in jobs],
        folder=str(where),
        results=results,
        notices=notices,
    )
