"""`oomrec record retract`: take back records that were a mistake."""

from typing import Annotated

import typer

from oomrec.cli.apps import RecordOption, record_app
from oomrec.cli.common import print_messages
from oomrec.cli.output import info
from oomrec.cli.render import plural, print_json


@record_app.command("retract")
def retract_command(
    model: Annotated[str, typer.Argument(metavar="MODEL", help="The model's directory name.")],
    length: Annotated[
        str,
        typer.Argument(metavar="LENGTH", help="The length in tokens recorded (32768 or 32k)."),
    ],
    reason: Annotated[
        str,
        typer.Option(
            "--reason", metavar="TEXT", help="Why the record was a mistake (kept in the archive)."
        ),
    ],
    hardware: Annotated[
        str | None,
        typer.Option("--hardware", metavar="TAG", help="Only the records of this hardware tag."),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Show what would be retracted; change nothing.")
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print a JSON object: the records retracted.")
    ] = False,
    record: RecordOption = None,
) -> None:
    """Take back the records of MODEL at LENGTH that were a mistake, so the next sweep
    launches the cell.

    Nothing is deleted: the records move to the archive with the reason (`record list
    --archived` shows it) and `record restore --retracted` brings them back. Other hosts'
    shared records of the cell are retracted too; `record push` publishes the retraction, so
    other hosts stop applying it as well. For an OOM a code change fixed, commit the fix with
    an `OOM-Fix:` trailer instead.

    Example: oomrec record retract llama 512 --reason "typo: meant 5120"
    """
    from oomrec.commands.record_retract import record_retract

    result = record_retract(
        model=model,
        length=length,
        reason=reason,
        hardware=hardware,
        record=record,
        dry_run=dry_run,
    )
    print_messages(result)
    if as_json:
        print_json(result.to_json())
        return
    done = "dry run: would retract" if dry_run else "retracted"
    for text in result.local:
        info(f"{done}: {text}")
    for text in result.shared:
        info(f"{done} (shared): {text}")
    if result.count:
        info(
            f"{done} {plural(result.count, 'record')} ({result.reason}); undo with: oomrec "
            "record restore --retracted"
        )
