"""`oomrec fleet submit`: one sweep over a fleet, as a Slurm job array (submitit)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from oomrec.cli.apps import fleet_app
from oomrec.cli.render import print_json
from oomrec.core.errors import OomrecError
from oomrec.store.locations import display_path, find_repo_root


@fleet_app.command("submit")
def fleet_submit(
    sweep_args: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="-- SWEEP_ARGS...",
            help='Arguments for `oomrec sweep` in every task (after --), e.g. --models "A B".',
            show_default=False,
        ),
    ] = None,
    shards: Annotated[int, typer.Option("--shards", metavar="N", help="How many tasks.")] = 2,
    remote: Annotated[
        str,
        typer.Option(
            "--remote",
            metavar="REMOTE",
            help="Pull records from it before, push after; '' to share nothing.",
        ),
    ] = "origin",
    cluster: Annotated[
        str,
        typer.Option(
            "--cluster",
            metavar="auto|slurm|local",
            help="Slurm when srun is there (auto), or local subprocesses.",
        ),
    ] = "auto",
    partition: Annotated[
        str | None, typer.Option("--partition", metavar="NAME", help="The Slurm partition.")
    ] = None,
    timeout_min: Annotated[
        int, typer.Option("--timeout-min", metavar="MINUTES", help="Time limit per task.")
    ] = 24 * 60,
    folder: Annotated[
        Path | None,
        typer.Option(
            "--folder",
            metavar="PATH",
            help="Job files and logs. Default: benchmarks/.oomrec-fleet (a shared filesystem "
            "on Slurm).",
        ),
    ] = None,
    wait: Annotated[
        bool, typer.Option("--wait", help="Wait for every task and print where its CSV is.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON object.")] = False,
) -> None:
    """Submit one array task per shard: each pulls records, sweeps its shard, pushes records.

    Models are split by a stable hash of their names (every length of a model in one task, so
    the backstop works); each task writes its own CSV (..._shardIofN.csv) and runs on one GPU.

    Example: oomrec fleet submit --shards 4 --wait -- --models "A B C D" --lengths "512 8192"
    """
    from oomrec.sweep import fleet

    root = find_repo_root()
    if root is None:
        raise OomrecError("fleet submit runs tasks in a repository: run it inside one")
    tasks = fleet.tasks_for(root, shards, remote or None, sweep_args or [])
    where = folder or fleet.default_folder(root)
    jobs = fleet.submit(tasks, where, cluster=cluster, partition=partition, timeout_min=timeout_min)
    ids = [str(job.job_id) for job in jobs]
    results = [job.result() for job in jobs] if wait else []
    if as_json:
        print_json({"schema_version": 1, "jobs": ids, "folder": str(where), "results": results})
    else:
        typer.echo(f"submitted {len(ids)} task(s): {' '.join(ids)} (logs: {display_path(where)})")
        typer.echo(fleet.environment_note(), err=True)
        for result in results:
            steps = ", ".join(f"{name} {code}" for name, code in result["steps"].items())
            typer.echo(
                f"shard {result['shard']}/{result['shards']} on {result['host']}: "
                f"{result['cells']} cells, {result['output'] or 'no CSV'} ({steps})"
            )
    if results and not all(all(c == 0 for c in r["steps"].values()) for r in results):
        raise typer.Exit(1)
