"""`oomrec record prune --since FIX`: remove the records a memory fix made stale."""

from __future__ import annotations

import sys
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from oomrec.cli.app import RecordOption, record_app
from oomrec.cli.common import open_record, print_warnings
from oomrec.cli.render import (
    MAX_TABLE_ROWS,
    more_rows,
    record_table,
    short_commit,
    stdout_console,
)
from oomrec.errors import OomrecError
from oomrec.fixes import SHORT_SHA
from oomrec.hardware import option_tag


@record_app.command("prune")
def record_prune(
    since: Annotated[
        str,
        typer.Option(
            "--since",
            "--before-commit",
            metavar="FIX",
            help="The fix commit: records measured on code without it go.",
            show_default=False,
        ),
    ],
    model: Annotated[
        list[str] | None,
        typer.Option("--model", help="Only models matching this glob (repeatable)."),
    ] = None,
    hardware: Annotated[
        str | None, typer.Option("--hardware", help="Only records of this hardware tag.")
    ] = None,
    prune_unknown: Annotated[
        bool,
        typer.Option(
            "--prune-unknown", help="Also remove records git cannot judge (each with its reason)."
        ),
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Show what would go; change nothing.")
    ] = False,
    print_removed: Annotated[
        bool,
        typer.Option(
            "--print-removed",
            help="Print the removed lines verbatim on stdout (the report goes to stderr), so "
            "`>> RECORD` restores them.",
        ),
    ] = False,
    record: RecordOption = None,
) -> None:
    """Remove the records observed on code that did not have fix FIX yet.

    A record is stale when its commit does not contain FIX (it predates FIX, or is on a branch
    that never merged it); records whose commit git cannot judge are kept unless --prune-unknown.

    Example: oomrec record prune --since 1a2b3c4 --model 'gemma-4-*' --dry-run
    """
    from oomrec import gitutil, prune
    from oomrec.stale import CURRENT, UNKNOWN

    tag = option_tag(hardware)
    record_file, _ = open_record(record)
    repo = gitutil.open_repo()
    head = gitutil.head_sha(repo)
    if repo is None or head is None:
        raise OomrecError(
            "record prune needs git history: run it inside the repository that holds the fix commit"
        )
    fix = gitutil.resolve_commit(repo, since)
    loaded = record_file.load()
    print_warnings(loaded)
    plan = prune.plan(repo, loaded, fix, head, model or (), tag, prune_unknown)
    fix_short = fix[:SHORT_SHA]
    if not plan.head_has_fix:
        typer.echo(
            f"warning: HEAD ({head[:SHORT_SHA]}) does not contain fix {fix_short}: this checkout "
            "runs without the fix",
            err=True,
        )
    going = plan.rows(going=True)
    if dry_run:
        removed_texts = [line.text for line, _, _ in going]
    else:
        removed_texts = [line.text for line in prune.apply(record_file, plan.texts())]

    report = Console(file=sys.stderr, soft_wrap=True) if print_removed else stdout_console()
    kept_unknown = plan.rows(going=False, status=UNKNOWN)
    # Unknown records first: they are the ones a cut-off table must not hide.
    shown = [(False, row) for row in kept_unknown] + [(True, row) for row in going]
    if shown:
        gone, kept = ("would go", "would stay") if dry_run else ("pruned", "kept")
        table = record_table(
            [rec for _, (_, rec, _) in shown[:MAX_TABLE_ROWS]],
            title=f"{record_file.shown_as}: records against fix {fix_short}",
            extra=("result", "why"),
            extra_values=[
                (gone if goes else kept, escape(_why(str(verdict), rec.commit, fix_short)))
                for goes, (_, rec, verdict) in shown[:MAX_TABLE_ROWS]
            ],
        )
        report.print(table, highlight=False)
        more = more_rows(len(shown), "--print-removed")
        if more:
            report.print(more, highlight=False, markup=False)
    current = len(plan.rows(going=False, status=CURRENT))
    if dry_run:
        summary = (
            f"dry run: would prune {len(removed_texts)}, keep {current} current, keep "
            f"{len(kept_unknown)} unknown; {record_file.shown_as} is unchanged"
        )
    else:
        summary = (
            f"pruned {len(removed_texts)}, kept {current} current, kept {len(kept_unknown)} unknown"
        )
    report.print(summary, highlight=False, markup=False)
    if print_removed:
        sys.stdout.write("".join(f"{text}\n" for text in removed_texts))


def _why(verdict: str, commit: str, fix_short: str) -> str:
    if verdict.startswith("stale"):
        return verdict.replace("stale", f"stale: {short_commit(commit)} lacks fix {fix_short}", 1)
    return verdict
