"""`report`: the OOM frontier of the benchmark CSVs and the record (report.frontier builds it)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from oomrec.commands import Result
from oomrec.commands.common import record_warnings
from oomrec.core.errors import OomrecError
from oomrec.core.units import DEFAULT_REGRESSION_THRESHOLD
from oomrec.store.locations import display_path, open_record

if TYPE_CHECKING:
    from oomrec.report.frontier import Machine, Report


@dataclass(kw_only=True)
class ReportResult(Result):
    report: Report
    # The CSV files and folders read, as the user would name them.
    searched: list[str]
    record: str
    # The class `machine=` named (its grid is wanted), if any.
    machine: Machine | None = None

    @property
    def empty(self) -> bool:
        return not self.report.models

    def json_body(self) -> dict[str, Any]:
        body = self.report.to_json()
        body.pop("schema_version", None)
        return body


def report(
    paths: Sequence[Path] = (),
    *,
    record: Path | None = None,
    machine: str | None = None,
    html: Path | None = None,
    threshold: float = DEFAULT_REGRESSION_THRESHOLD,
) -> ReportResult:
    """The frontier over the CSVs under `paths` (default: benchmarks/) and the record, every
    OOM judged at HEAD. `machine` must name a class of the result (its id or unique tag);
    `html`, where a page will be written, must not be an input of the report; `threshold`: the
    share a cell's peak may grow by between two commits before it is a memory regression."""
    from oomrec.core.gcpause import no_cycle_collection
    from oomrec.importer.backfill import default_paths
    from oomrec.report.frontier import gather, record_lines

    record_file, settings = open_record(record)
    loaded = record_file.load()
    parked, warnings = record_warnings(loaded, record_file)
    kept = record_lines(record_file, loaded, parked)
    # Only the evidence is read from here on: the lines' texts and tuples go.
    del loaded, parked
    searched = list(paths) or default_paths(settings)
    if html is not None:
        from oomrec.report.html import target_problem

        problem = target_problem(html, searched, record_file)
        if problem:
            raise OomrecError(problem)
    # The collector stays off to the end: the scan leaves many young objects, and the first
    # collection after it would walk them all again.
    with no_cycle_collection():
        built = gather(searched, kept, settings, threshold)
    if built.oom_rows_left_out:
        n = built.oom_rows_left_out
        warnings.append(
            f"warning: {n} SKIP:oom {'row has' if n == 1 else 'rows have'} no model or length "
            "the report can place, and are left out; `oomrec record import-csv --dry-run` "
            "names each"
        )
    chosen = None
    if machine is not None:
        chosen = built.machine(machine.strip())
        if chosen is None:
            known = ", ".join(repr(m.id) for m in built.machines) or "none"
            raise OomrecError(
                f"--machine {machine!r} names no machine class of these CSVs and the record; "
                f"give one of: {known}"
            )
    return ReportResult(
        warnings=warnings,
        report=built,
        searched=[display_path(p) for p in searched],
        record=record_file.shown_as,
        machine=chosen,
    )
