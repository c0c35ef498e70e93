"""`oomrec report`: the OOM frontier of the benchmark CSVs and the record, as a picture."""

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from oomrec.cli import ending
from oomrec.cli.apps import CsvPathsArgument, RecordOption, app
from oomrec.cli.common import print_messages
from oomrec.cli.output import console as output_console
from oomrec.cli.output import info
from oomrec.core.units import DEFAULT_REGRESSION_THRESHOLD as DEFAULT_THRESHOLD

if TYPE_CHECKING:
    from oomrec.commands.report import ReportResult


@app.command("report")
def report_command(
    paths: CsvPathsArgument = None,
    machine: Annotated[
        str | None,
        typer.Option(
            "--machine",
            metavar="TAG",
            help="A model x length grid of this machine class (its tag, e.g. gb10, or its id, "
            "e.g. 'gb10 122GB'), one glyph per outcome.",
            show_default=False,
        ),
    ] = None,
    html: Annotated[
        Path | None,
        typer.Option(
            "--html",
            metavar="FILE",
            help="Also write one self-contained HTML page (opens offline).",
            show_default=False,
            dir_okay=False,
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    regression_threshold: Annotated[
        float,
        typer.Option(
            "--regression-threshold",
            metavar="SHARE",
            min=0.0,
            help="A cell's peak that grew by more than this share between two commits (0.1: "
            "10%) is a memory regression.",
        ),
    ] = DEFAULT_THRESHOLD,
    record: RecordOption = None,
) -> None:
    """Show the OOM frontier: per model and machine class, the largest length that ran, the
    smallest that ran out of memory (since which commit, and whether a fix took it out of
    play), what was never tried, and OOMs that a later run contradicts (never dropped for it).

    Example: oomrec report --machine gb10 --html frontier.html
    """
    from oomrec.commands.report import report

    result = report(
        paths or (), record=record, machine=machine, html=html, threshold=regression_threshold
    )
    print_messages(result)
    if result.empty and not as_json:
        # A header and nothing under it would look like a report of nothing wrong.
        info(
            f"nothing to show: no benchmark row in the {result.report.files_read} CSV file(s) "
            f"under {', '.join(result.searched)}, and no OOM record in {result.record}",
            err=True,
        )
    _show(result, html, as_json)
    ending.output_done()


def _show(done: "ReportResult", html: Path | None, as_json: bool) -> None:
    result, chosen = done.report, done.machine
    if html is not None:
        from oomrec.report.html import write_html

        write_html(result, html)
        info(f"wrote {html}", err=True)
    if as_json:
        from oomrec.cli.jsonout import write_result

        write_result(done)
        return
    from oomrec.cli.output import styled
    from oomrec.report import text as report_text

    if not styled(sys.stdout):
        lines = (
            report_text.grid_lines(result, chosen)
            if chosen is not None
            else report_text.matrix_lines(result)
        )
        for line in lines:
            typer.echo(line)
        for line in report_text.contradiction_lines(result.contradictions):
            typer.echo(line)
        for line in report_text.regression_lines(result):
            typer.echo(line)
        return
    from oomrec.cli import report_tables

    console = output_console()
    if chosen is not None:
        for table in report_tables.grid_tables(result, chosen, console.width):
            console.print(table)
        for line in report_text.legend_lines():
            console.print(line, markup=False, highlight=False)
        if not report_text.is_matrix(result, chosen):
            console.print(report_text.RUNS_NOTE, markup=False, highlight=False)
    else:
        for table in report_tables.matrix_tables(result, console.width):
            console.print(table)
    for line in report_text.contradiction_lines(result.contradictions):
        console.print(line, markup=False, highlight=False)
    for line in report_text.regression_lines(result):
        console.print(line, markup=False, highlight=False)
