"""`oomrec record prune` and `record restore`: move records between the record and its archive."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from oomrec.cli.app import RecordOption, record_app
from oomrec.cli.common import open_record, print_warnings
from oomrec.cli.output import info
from oomrec.cli.render import SCREENFUL, Listing, plural, print_records, verb
from oomrec.fixes import trailer_key
from oomrec.hardware import option_tag
from oomrec.stale import Status

if TYPE_CHECKING:
    from oomrec.prune import PrunePlan


@record_app.command("prune")
def record_prune(
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
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="List every record, not a screenful.")
    ] = False,
    record: RecordOption = None,
) -> None:
    """Archive the records that no longer apply at HEAD (a fix in effect here lifts them).

    Nothing is deleted: records move to RECORD.archive with the fix and the time, the sweep
    still reads the archive (an archived record that applies again still pre-skips), and
    `oomrec record restore` moves them back.

    Example: oomrec record prune --since 1a2b3c4 --dry-run
    """
    from oomrec import prune

    tag = option_tag(hardware)
    record_file, settings = open_record(record)
    key = trailer_key(settings)
    loaded = record_file.load()
    print_warnings(loaded)
    plan = prune.plan(record_file, key, since, model or (), tag, loaded)
    moved = (
        [row.line.text for row in plan.going]
        if dry_run
        else [line.text for line in prune.apply(record_file, plan)]
    )
    # With --print-removed stdout carries the archived lines alone; the report goes to stderr.
    report = sys.stderr if print_removed else sys.stdout
    if plan.going:
        what = "would archive" if dry_run else "archived"
        print_records(
            Listing(
                [row.record for row in plan.going],
                title=f"{record_file.shown_as}: {what}",
                extra=[
                    (
                        "why",
                        [
                            f"no longer applies: {row.fix.describe()}" if row.fix else ""
                            for row in plan.going
                        ],
                    )
                ],
            ),
            limit=None if verbose else SCREENFUL,
            stream=report,
        )
    applies = len(plan.staying)
    unknown = plan.count(Status.UNKNOWN)
    scope = f" by fix {plan.since.short}" if plan.since else ""
    done = "dry run: would archive" if dry_run else "archived"
    summary = (
        f"{done} {plural(len(moved), 'record')} lifted{scope}; kept {applies} that "
        f"{verb(applies, 'applies', 'apply')} at HEAD ({unknown} because git cannot prove "
        "otherwise)"
    )
    if moved and not dry_run:
        summary += f"; undo with: oomrec record restore --fix {_fix_arg(plan)}"
    info(summary, err=print_removed)
    if print_removed:
        sys.stdout.write("".join(f"{text}\n" for text in moved))


def _fix_arg(plan: PrunePlan) -> str:
    if plan.since is not None:
        return plan.since.short
    fixes = {row.fix.short for row in plan.going if row.fix}
    return fixes.pop() if len(fixes) == 1 else "FIX (or --all)"


@record_app.command("restore")
def record_restore(
    fix: Annotated[
        str | None,
        typer.Option("--fix", metavar="FIX", help="The records archived for this fix (or a copy)."),
    ] = None,
    everything: Annotated[bool, typer.Option("--all", help="Every archived record.")] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Show what would move back; change nothing.")
    ] = False,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="List every record, not a screenful.")
    ] = False,
    record: RecordOption = None,
) -> None:
    """Move archived records back into the record.

    By default the archived records that apply again at HEAD (their fix was reverted, or this
    branch does not have it); --fix FIX those archived for FIX; --all every one.

    Example: oomrec record restore --fix 1a2b3c4
    """
    from oomrec import prune

    record_file, settings = open_record(record)
    key = trailer_key(settings)
    back, stay = prune.restore_plan(record_file, key, fix, everything)
    if not dry_run:
        prune.restore(record_file, back)
    if back:
        shown = [row for row in back if row.line.record is not None]
        print_records(
            Listing(
                [row.line.record for row in shown if row.line.record is not None],
                title=f"{record_file.shown_as}: {'would restore' if dry_run else 'restored'}",
                extra=[
                    ("archived", [row.line.archived_at for row in shown]),
                    ("status at HEAD", [str(row.judgement) for row in shown]),
                ],
            ),
            limit=None if verbose else SCREENFUL,
        )
    done = "dry run: would restore" if dry_run else "restored"
    stays = verb(len(stay), "stays", "stay")
    info(f"{done} {plural(len(back), 'record')}; {len(stay)} {stays} archived")
