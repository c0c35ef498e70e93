"""`oomrec record prune` and `record restore`: move records between the record and its archive."""

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from oomrec.cli.apps import RecordOption, VerboseOption, record_app
from oomrec.cli.common import print_messages
from oomrec.cli.output import info
from oomrec.cli.render import SCREENFUL, Listing, plural, print_json, print_records, verb
from oomrec.core.errors import OomrecError

if TYPE_CHECKING:
    from oomrec.commands.record_prune import PruneResult


@record_app.command("prune")
def prune_command(
    since: Annotated[
        str | None,
        typer.Option(
            "--since",
            "--before-commit",
            metavar="FIX",
            help="Only the records this fix commit (and its copies) took out of play.",
            show_default=False,
        ),
    ] = None,
    model: Annotated[
        list[str] | None,
        typer.Option(
            "--model",
            metavar="GLOB",
            help="Only models matching this glob (repeatable); with --since FIX where FIX has "
            "no OOM-Fix trailer, the models FIX fixed.",
        ),
    ] = None,
    hardware: Annotated[
        str | None,
        typer.Option("--hardware", metavar="TAG", help="Only records of this hardware tag."),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Show what would move; change nothing.")
    ] = False,
    print_removed: Annotated[
        bool,
        typer.Option(
            "--print-removed",
            help="Print the archived lines verbatim on stdout (the report goes to stderr).",
        ),
    ] = False,
    verbose: VerboseOption = False,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json", help="Print a JSON object: the records archived (or that would be)."
        ),
    ] = False,
    record: RecordOption = None,
) -> None:
    """Archive the records that no longer apply at HEAD (a fix in effect here lifts them).

    Nothing is deleted: records move to RECORD.archive with the fix and the time, the sweep
    still reads the archive (an archived record that applies again still pre-skips), and
    `oomrec record restore` moves them back.

    Example: oomrec record prune --since 1a2b3c4 --dry-run
    """
    if as_json and print_removed:
        raise OomrecError("--json and --print-removed exclude each other; pick one")
    from oomrec.commands.record_prune import record_prune

    result = record_prune(
        record=record, since=since, models=model or (), hardware=hardware, dry_run=dry_run
    )
    print_messages(result)
    if as_json:
        print_json(result.to_json())
        return
    # With --print-removed stdout carries the archived lines alone; the report goes to stderr.
    report = sys.stderr if print_removed else sys.stdout
    if result.going:
        what = "would archive" if dry_run else "archived"
        print_records(
            Listing(
                [row.record for row in result.going],
                title=f"{result.record}: {what}",
                extra=[
                    (
                        "why",
                        [
                            f"lifted, unverified: {row.fix.describe()}" if row.fix else ""
                            for row in result.going
                        ],
                    )
                ],
            ),
            limit=None if verbose else SCREENFUL,
            stream=report,
        )
    moved = result.moved
    scope = f" by fix {result.since.short}" if result.since else ""
    done = "dry run: would archive" if dry_run else "archived"
    summary = (
        f"{done} {plural(len(moved), 'record')} lifted{scope}; kept {result.kept} that "
        f"{verb(result.kept, 'applies', 'apply')} at HEAD ({result.kept_unknown} because git "
        "cannot prove otherwise)"
    )
    if moved and not dry_run:
        summary += f"; undo with: oomrec record restore --fix {_fix_arg(result)}"
    info(summary, err=print_removed)
    if print_removed:
        sys.stdout.write("".join(f"{text}\n" for text in moved))


def _fix_arg(result: "PruneResult") -> str:
    if result.since is not None:
        return result.since.short
    fixes = result.fixes
    return fixes.pop() if len(fixes) == 1 else "FIX (or --all)"


@record_app.command("restore")
def restore_command(
    fix: Annotated[
        str | None,
        typer.Option("--fix", metavar="FIX", help="The records archived for this fix (or a copy)."),
    ] = None,
    everything: Annotated[bool, typer.Option("--all", help="Every archived record.")] = False,
    retracted: Annotated[
        bool, typer.Option("--retracted", help="The records taken back by `record retract`.")
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Show what would move back; change nothing.")
    ] = False,
    verbose: VerboseOption = False,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json", help="Print a JSON object: the records restored (or that would be)."
        ),
    ] = False,
    record: RecordOption = None,
) -> None:
    """Move archived records back into the record.

    By default the archived records that apply again at HEAD (their fix was reverted, or this
    branch does not have it); --fix FIX those archived for FIX; --retracted those taken back
    by `record retract` (published by `record push` too); --all every one.

    Example: oomrec record restore --fix 1a2b3c4
    """
    from oomrec.commands.record_prune import record_restore

    result = record_restore(
        record=record, fix=fix, everything=everything, retracted=retracted, dry_run=dry_run
    )
    print_messages(result)
    if as_json:
        print_json(result.to_json())
        return
    if result.back:
        shown = [row for row in result.back if row.line.record is not None]
        print_records(
            Listing(
                [row.line.record for row in shown if row.line.record is not None],
                title=f"{result.record}: {'would restore' if dry_run else 'restored'}",
                extra=[
                    ("archived", [row.line.archived_at for row in shown]),
                    ("status at HEAD", [str(row.judgement) for row in shown]),
                ],
            ),
            limit=None if verbose else SCREENFUL,
        )
    done = "dry run: would restore" if dry_run else "restored"
    stays = verb(result.stay, "stays", "stay")
    info(f"{done} {plural(len(result.back), 'record')}; {result.stay} {stays} archived")
