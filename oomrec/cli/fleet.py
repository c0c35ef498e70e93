"""`oomrec fleet submit`: one sweep over a fleet, as a Slurm job array (submitit)."""

from pathlib import Path
from typing import Annotated

import typer

from oomrec.cli.apps import fleet_app
from oomrec.cli.common import print_messages


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
    offline: Annotated[
        bool,
        typer.Option(
            "--offline",
            help="Sweep even in a task whose record pull failed (without the other hosts' "
            "OOMs); by default such a task launches nothing.",
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON object.")] = False,
) -> None:
    """Submit one array task per shard: each pulls records, sweeps its shard, pushes records.

    Models are split by a stable hash of their names (every length of a model in one task, so
    the backstop works); each task writes its own CSV (..._shardIofN.csv) and runs on one GPU.

    Example: oomrec fleet submit --shards 4 --wait -- --models "A B" --lengths 512
    """
    from oomrec.cli.jsonout import write_result
    from oomrec.commands.fleet import fleet_submit as submit
    from oomrec.store.locations import display_path

    result = submit(
        sweep_args or [],
        shards=shards,
        remote=remote or None,
        cluster=cluster,
        partition=partition,
        timeout_min=timeout_min,
        folder=folder,
        wait=wait,
        offline=offline,
    )
    if as_json:
        write_result(result)
    else:
        where = display_path(Path(result.folder))
        typer.echo(f"submitted {len(result.jobs)} task(s): {' '.join(result.jobs)} (logs: {where})")
        print_messages(result)
        for task in result.results:
            steps = ", ".join(f"{name} {code}" for name, code in task["steps"].items())
            typer.echo(
                f"shard {task['shard']}/{task['shards']} on {task['host']}: "
                f"{task['cells']} cells, {task['output'] or 'no CSV'} ({steps})"
            )
    if result.failed:
        raise typer.Exit(1)
