"""`oomrec record import-csv`: backfill the record from a repository's benchmark CSVs."""

from typing import TYPE_CHECKING, Annotated

import typer

from oomrec.cli.apps import CsvPathsArgument, RecordOption, record_app
from oomrec.cli.common import print_messages
from oomrec.cli.output import info
from oomrec.cli.render import SCREENFUL, Listing, print_json, print_records

if TYPE_CHECKING:
    from oomrec.importer.backfill import ImportReport


@record_app.command("import-csv")
def import_command(
    paths: CsvPathsArgument = None,
    hardware: Annotated[
        str | None,
        typer.Option(
            "--hardware",
            metavar="TAG",
            help="Import rows of this hardware tag. Default: this host's.",
        ),
    ] = None,
    all_hardware: Annotated[
        bool, typer.Option("--all-hardware", help="Import rows of every hardware, each tagged.")
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Show what would be added; write nothing.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    verbose: Annotated[
        bool,
        typer.Option(
            "--verbose",
            "-v",
            help="List the skipped files under each reason, and every new record.",
        ),
    ] = False,
    record: RecordOption = None,
) -> None:
    """Turn the SKIP:oom rows of existing benchmark CSVs into OOM records; safe to rerun.

    Only rows whose last field is exactly SKIP:oom count. A row already in the record (same
    model, length, hardware, commit, from any CSV) is not added again.

    Example: oomrec record import-csv benchmarks/ --all-hardware --dry-run
    """
    from oomrec.commands.record_import import record_import_csv
    from oomrec.core.gcpause import no_cycle_collection

    with no_cycle_collection():
        result = record_import_csv(
            paths=paths or (),
            record=record,
            hardware=hardware,
            all_hardware=all_hardware,
            dry_run=dry_run,
        )
        print_messages(result)
        if as_json:
            print_json(result.to_json())
        else:
            _print_report(result.report, result.record, dry_run=dry_run, verbose=verbose)


def _print_report(
    report: "ImportReport", record_name: str, *, dry_run: bool, verbose: bool
) -> None:
    def line(text: str) -> None:
        info(text)

    def count(label: str, n: int, indent: int = 0) -> None:
        line(f"{' ' * indent}{label:<{28 - indent}}{n:>8}")

    count("files read", report.files_read)
    count("files skipped", sum(len(paths) for paths in report.files_skipped.values()))
    for reason, paths in sorted(report.files_skipped.items()):
        count(reason, len(paths), indent=2)
        if verbose:
            for path in paths:
                line(f"    {path}")
    count("data rows", report.data_rows)
    count("SKIP:oom rows", report.oom_rows)
    skipped_rows = report.rows_skipped
    count("SKIP:oom rows skipped", sum(skipped_rows.values()))
    for reason, n in sorted(skipped_rows.items()):
        count(reason, n, indent=2)
    count("would add" if dry_run else "records added", len(report.new))
    count("already in the record", report.already_present)
    if report.retracted:
        count("left out: retracted", report.retracted)
    count("left out: other hardware", sum(report.other_hardware.values()))
    if report.other_hardware:
        tags = ", ".join(f"{tag} {n}" for tag, n in sorted(report.other_hardware.items()))
        line(
            f"only rows of hardware {report.hardware} (and untagged rows) are imported; left out: "
            f"{tags}; pass --hardware TAG or --all-hardware to import them"
        )
    if report.retracted:
        line(
            "rows whose records were retracted (record retract) are not imported again; "
            "oomrec record restore --retracted brings the records back"
        )
    for rec in report.shortest_prompt:
        where = f" on {rec.hardware}" if rec.hardware else ""
        line(
            f"{rec.model} ran out of memory at the shortest prompt{where} ({rec.source_csv}): "
            "every length of it will be skipped"
        )
    if report.new:
        verb = "would add to" if dry_run else "added to"
        print_records(
            Listing(report.new, title=f"{verb} {record_name}"),
            limit=None if verbose else SCREENFUL,
        )
    else:
        info(f"nothing new; {record_name} is unchanged")
