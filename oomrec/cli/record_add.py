"""`oomrec record add`: append one record by hand."""

from typing import Annotated

import typer

from oomrec.cli.apps import RecordOption, record_app
from oomrec.cli.common import print_messages
from oomrec.cli.output import info
from oomrec.cli.render import print_json


@record_app.command("add")
def add_command(
    model: Annotated[str, typer.Argument(metavar="MODEL", help="The model's directory name.")],
    length: Annotated[
        str,
        typer.Argument(metavar="LENGTH", help="The length in tokens that OOMed (32768 or 32k)."),
    ],
    commit: Annotated[
        str | None,
        typer.Option(
            "--commit", metavar="REV", help="The code revision it OOMed on. Default: HEAD."
        ),
    ] = None,
    hardware: Annotated[
        str | None,
        typer.Option(
            "--hardware", metavar="TAG", help="Hardware tag, e.g. gb10. Default: this host's."
        ),
    ] = None,
    any_hardware: Annotated[
        bool,
        typer.Option("--any-hardware", help="Record no hardware: the record applies to all."),
    ] = False,
    source: Annotated[
        str,
        typer.Option(
            "--source", metavar="TEXT", help="Where the OOM was seen (a CSV path, a note)."
        ),
    ] = "manual",
    mem: Annotated[
        str | None,
        typer.Option(
            "--mem",
            metavar="SIZE",
            help="Memory the accelerator could address, e.g. 96GiB or bytes. Default: this "
            "host's, when the hardware is this host's.",
        ),
    ] = None,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json", help="Print a JSON object: the record line and whether it was added."
        ),
    ] = False,
    record: RecordOption = None,
) -> None:
    """Append an OOM record by hand.

    Example: oomrec record add llama-3.1-8b 32768 --commit HEAD~2 --hardware gb10
    """
    from oomrec.commands.record_add import record_add

    result = record_add(
        model=model,
        length=length,
        record=record,
        commit=commit,
        hardware=hardware,
        any_hardware=any_hardware,
        source=source,
        mem=mem,
    )
    print_messages(result)
    if as_json:
        print_json(result.to_json())
    elif result.added:
        info(f"added to {result.record}: {result.line}")
    else:
        info(f"already recorded in {result.record}: {result.line}")
