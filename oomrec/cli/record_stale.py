"""`oomrec record stale`: which records no longer apply at HEAD, which archived ones apply
again, and what is wrong with the fix trailers."""

from typing import TYPE_CHECKING, Annotated

import typer

from oomrec.cli.apps import RecordOption, VerboseOption, record_app
from oomrec.cli.common import print_messages
from oomrec.cli.output import info
from oomrec.cli.render import SCREENFUL, Listing, plural, print_json, print_records, verb
from oomrec.core.errors import EXIT_FOUND

if TYPE_CHECKING:
    from oomrec.commands.record_stale import StaleResult


@record_app.command("stale")
def stale_command(
    range_: Annotated[
        str | None,
        typer.Option(
            "--range",
            metavar="A..B",
            help="Only fixes with a copy or revert in this range. Default: all of HEAD's history.",
            show_default=False,
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON object.")] = False,
    exit_code: Annotated[
        bool,
        typer.Option(
            "--exit-code",
            help="Exit 1 when a record no longer applies or an archived one applies again.",
        ),
    ] = False,
    verbose: VerboseOption = False,
    record: RecordOption = None,
) -> None:
    """List the records a fix lifted at HEAD (to verify by a probe), the archived ones that
    apply again, and the undecided ones (a fix git cannot prove in effect).

    A fix commit (trailer `OOM-Fix: <model glob>`) in effect at HEAD and not where the record
    was measured lifts it: a hypothesis until a run of the cell, under the guard, proves it
    (`oomrec sweep` probes it; `oomrec run MODEL LENGTH -- CMD` runs one). A revert takes a fix
    out of effect. Also warns about fix trailers that cannot work as written. Exit status 0
    either way, unless --exit-code.

    Example: oomrec record stale --range v1.2..HEAD --exit-code
    """
    from oomrec.commands.record_stale import record_stale

    result = record_stale(record=record, range_=range_)
    print_messages(result)
    if as_json:
        print_json(result.to_json())
    else:
        _print_report(result, verbose=verbose)
    if exit_code and result.found:
        raise typer.Exit(EXIT_FOUND)


def _print_report(result: "StaleResult", *, verbose: bool) -> None:
    from oomrec.report.text import contradiction_lines
    from oomrec.store import archive

    gone, back, unknown = result.no_longer_apply, result.apply_again, result.unknown
    for title, rows in (
        (f"{result.record}: lifted at HEAD, not yet verified (probes)", gone),
        (f"{result.record}{archive.SUFFIX}: archived, apply again at HEAD", back),
        ("undecided: apply because git cannot prove otherwise", unknown),
    ):
        if rows:
            print_records(
                Listing(
                    [row.record for row in rows],
                    title=title,
                    extra=[
                        ("line", [str(row.line) for row in rows]),
                        ("status", [str(row.judgement) for row in rows]),
                    ],
                ),
                limit=None if verbose else SCREENFUL,
            )
    for line in contradiction_lines(result.contradicted):
        typer.echo(line)
    for regression in result.regressions:
        typer.echo(f"regression: {regression.line()}")
    if gone:
        info(
            "verify: oomrec sweep (probes each under the guard), or one cell: oomrec run "
            "MODEL LENGTH -- CMD; or take them out of play unverified: oomrec record prune"
        )
    if unknown:
        info(
            "verify: oomrec sweep --probe-undecided (probes them under the guard), or one "
            "cell: oomrec run MODEL LENGTH --probe-undecided -- CMD"
        )
    if back:
        info("run: oomrec record restore (the sweep pre-skips their cells already)")
    for row in result.shared_no_longer_apply[:SCREENFUL]:
        rec = row.record
        info(
            f"shared by {row.host}: {rec.model} @ {rec.prompt_target_len} {row.judgement} (judged "
            "when read; prune never touches another host's records)"
        )
    info(
        f"{plural(len(gone), 'record')} lifted, unverified, "
        f"{plural(len(back), 'archived record')} {verb(len(back), 'applies', 'apply')} again, "
        f"{len(unknown)} {verb(len(unknown), 'applies', 'apply')} because git cannot say "
        "(at HEAD)"
    )
