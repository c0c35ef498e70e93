"""`oomrec check`: may this cell launch here and now? (The plain forms are answered without
Typer, by cli/check_plain.py; this is the command's help and every other form.)"""

from typing import Annotated

import typer

from oomrec.cli import output
from oomrec.cli.apps import RecordOption, app


@app.command("check")
def check_command(
    model: Annotated[
        str, typer.Argument(metavar="MODEL", help="The model's directory name under ./models.")
    ],
    length: Annotated[
        str,
        typer.Argument(metavar="LENGTH", help="The prompt length in tokens (32768 or 32k)."),
    ],
    as_json: Annotated[
        bool,
        typer.Option("--json", help="Print a JSON object: the verdict, the reason, the record."),
    ] = False,
    record: RecordOption = None,
) -> None:
    """May this cell launch here and now? Exit 0 yes, 1 no (a record applies: the line says
    which and why), 3 only as a probe (a fix lifted a record, no run has verified it: the line
    gives the `oomrec run` that does), 2 usage. The sweep's own decision for one cell, on this
    host's hardware and memory, with the record judged at HEAD; put it in front of a hand run.

    Example: oomrec check gemma-4-31b-it-4bit 32768 && scripts/bench_decode.sh ...
    """
    from oomrec.cli.check_plain import render
    from oomrec.commands.check import check

    result = check(model=model, length=length, record=record)
    status = render(result, as_json, quiet=output.STATE.quiet)
    if status:
        raise typer.Exit(status)
