"""`oomrec record list`: the records, sorted by model then length, with whether each applies."""

from typing import Annotated

import typer

from oomrec.cli.apps import RecordOption, record_app
from oomrec.cli.common import print_messages
from oomrec.cli.output import info, styled
from oomrec.cli.render import Listing, plural, print_json, print_records


@record_app.command("list")
def list_command(
    model: Annotated[
        list[str] | None,
        typer.Option(
            "--model", metavar="GLOB", help="Only models matching this glob (repeatable: any)."
        ),
    ] = None,
    hardware: Annotated[
        str | None,
        typer.Option("--hardware", metavar="TAG", help="Only records of this hardware tag."),
    ] = None,
    archived: Annotated[
        bool,
        typer.Option("--archived", help="List the archived records (RECORD.archive) instead."),
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print a JSON object: the records under `records`.")
    ] = False,
    no_git: Annotated[
        bool,
        typer.Option("--no-git", help="Skip the status column (which reads git history)."),
    ] = False,
    record: RecordOption = None,
) -> None:
    """List the OOM records, sorted by model then length.

    Inside a git repository a status column says whether each record applies at HEAD:
    `applies`, `applies (unknown: why)` when git cannot prove otherwise, or `no longer applies:
    fix abc1234 (subject)` when a fix in effect at HEAD (trailer `OOM-Fix: <model glob>`)
    lifts it.

    Example: oomrec record list --model 'gemma-4-*' --hardware gb10
    """
    from oomrec.commands.record_list import record_list

    result = record_list(
        record=record, models=model or (), hardware=hardware, archived=archived, git=not no_git
    )
    print_messages(result)
    if as_json:
        print_json(result.to_json())
        return
    if not result.records:
        # With a filter, what matched nothing is the filter, not the file.
        asked = [
            *(f"--model {glob}" for glob in model or ()),
            *([f"--hardware {hardware}"] * bool(hardware)),
        ]
        matching = f" matching {' '.join(asked)}" if asked else ""
        info(f"no OOM records{matching} in {result.record}", err=True)
        return
    title = f"{result.record}: {plural(len(result.records), 'record')}"
    if not styled():
        # Off a terminal stdout carries only records, so `| wc -l` and `| grep -c` count them.
        info(title, err=True)
    print_records(
        Listing(
            result.records,
            title=title if styled() else None,
            extra=((("from", result.origins),) if result.shared else ())
            + ((("status", result.statuses),) if result.statuses else ()),
        )
    )
