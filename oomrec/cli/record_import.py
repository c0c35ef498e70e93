"""`oomrec record import-csv`: backfill the record from a repository's benchmark CSVs."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer

from oomrec.backfill import (
    ImportReport,
    commit_columns,
    default_paths,
    import_csvs,
)
from oomrec.bulk import no_cycle_collection
from oomrec.cli.app import RecordOption, record_app
from oomrec.cli.common import open_record, print_warnings
from oomrec.cli.output import info
from oomrec.cli.render import SCREENFUL, Listing, print_json, print_records
from oomrec.errors import OomrecError
from oomrec.hardware import detect, option_tag
from oomrec.records import evidence_key


@record_app.command("import-csv")
def record_import_csv(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(
            metavar="PATH",
            help="CSV files and folders (searched for *.csv). Default: benchmarks/ under the "
            "git top level.",
            show_default=False,
        ),
    ] = None,
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
    model, length, hardware, commit, from any CSV) is not added again. Many candidate rows are
    parsed with polars, from $OOMREC_POLARS_MIN_ROWS rows (default: the measured break-even).

    Example: oomrec record import-csv benchmarks/ --all-hardware --dry-run
    """
    if hardware is not None and all_hardware:
        raise OomrecError("--hardware and --all-hardware exclude each other; pick one")
    tag = None if all_hardware else (option_tag(hardware) or detect())
    record_file, settings = open_record(record, writing=True)
    columns = commit_columns(settings)
    loaded = record_file.load()
    print_warnings(loaded)
    with no_cycle_collection():
        report = import_csvs(
            paths or default_paths(settings),
            root=settings.base,
            in_git=settings.repo_root is not None,
            existing=loaded.records,
            hardware=tag,
            commit_columns=columns,
        )
        would_add = len(report.new)
        if not dry_run and report.new:
            # Presence is checked again inside the append lock: an import running at the same
            # time may have added some of these since the record was read above.
            report.written(record_file.append_new(report.new, unless_present=evidence_key))
        _print_warnings(report)
        if as_json:
            # One shape for a dry run and a real one: what is new, and what was written.
            print_json(
                {
                    **report.to_dict(),
                    "would_add": would_add,
                    "added": 0 if dry_run else len(report.new),
                    "dry_run": dry_run,
                    "record": record_file.shown_as,
                }
            )
        else:
            _print_report(report, record_file.shown_as, dry_run=dry_run, verbose=verbose)


# Warnings of one kind shown on stderr before the rest are only counted: a corpus of a million
# broken rows must not print a million lines (--json lists them all).
MAX_WARNINGS = 20


def _print_warnings(report: ImportReport) -> None:
    _warn([str(bad) for bad in report.bad_rows], "SKIP:oom rows not imported")
    _warn([str(note) for note in report.row_notes], "SKIP:oom rows imported with a note")
    _warn(
        [
            f"{source}: git has no commit adding it; its rows without a commit column get "
            "commit 'unknown', which prune keeps; commit the file before importing it"
            for source in report.no_adding_commit
        ],
        "files without an adding commit",
    )
    _warn(
        [
            f"{source}: git blame failed ({problem}); its rows without a commit column get "
            "commit 'unknown', which prune keeps"
            for source, problem in report.blame_failed
        ],
        "files git could not blame",
    )
    _warn(
        [
            f"{source}:{lineno}: SKIP:oom row not committed yet; without a commit column it gets "
            "commit 'unknown', which prune keeps; commit the file before importing it"
            for source, lineno in report.uncommitted_rows
        ],
        "rows not committed yet",
    )


def _warn(lines: Sequence[str], what: str) -> None:
    for text in lines[:MAX_WARNINGS]:
        typer.echo(f"warning: {text}", err=True)
    if len(lines) > MAX_WARNINGS:
        typer.echo(
            f"warning: ... and {len(lines) - MAX_WARNINGS} more {what} (--json lists them all)",
            err=True,
        )


def _print_report(report: ImportReport, record_name: str, *, dry_run: bool, verbose: bool) -> None:
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
    count("left out: other hardware", sum(report.other_hardware.values()))
    if report.other_hardware:
        tags = ", ".join(f"{tag} {n}" for tag, n in sorted(report.other_hardware.items()))
        line(
            f"only rows of hardware {report.hardware} (and untagged rows) are imported; left out: "
            f"{tags}; pass --hardware TAG or --all-hardware to import them"
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
