"""`record import-csv`: backfill the record from a repository's benchmark CSVs (the reading is
oomrec.importer.backfill's); safe to rerun."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from oomrec.commands import Result
from oomrec.commands.common import record_warnings
from oomrec.core.errors import OomrecError
from oomrec.core.gcpause import no_cycle_collection
from oomrec.core.hardware import detect, option_tag
from oomrec.core.records import OomRecord, evidence_key
from oomrec.importer.backfill import ImportReport, commit_columns, default_paths, import_csvs
from oomrec.store import archive
from oomrec.store.locations import Settings, open_record

if TYPE_CHECKING:
    from oomrec.store.retractions import Event

# Warnings of one kind listed before the rest are only counted: a corpus of a million broken
# rows must not make a million lines (the JSON lists them all).
MAX_WARNINGS = 20


@dataclass(kw_only=True)
class ImportResult(Result):
    """What the import found (`report`; its `new` is what was written in a real run, what
    would be in a dry run) and how many new records it found (`would_add`)."""

    record: str
    dry_run: bool
    report: ImportReport
    would_add: int

    @property
    def added(self) -> int:
        """The records written: none in a dry run."""
        return 0 if self.dry_run else len(self.report.new)

    def json_body(self) -> dict[str, Any]:
        # One shape for a dry run and a real one: what is new, and what was written.
        return {
            **self.report.to_dict(),
            "would_add": self.would_add,
            "added": self.added,
            "dry_run": self.dry_run,
            "record": self.record,
        }


def record_import_csv(
    *,
    paths: Sequence[Path] = (),
    record: Path | None = None,
    hardware: str | None = None,
    all_hardware: bool = False,
    dry_run: bool = False,
) -> ImportResult:
    """Turn the `SKIP:oom` rows of the CSVs under `paths` (default: `benchmarks/` under the git
    top level) into records not yet in the record, and append them unless `dry_run`.

    Only rows of `hardware` (default: this host's tag) and untagged ones, or every row with
    `all_hardware`.
    """
    if hardware is not None and all_hardware:
        raise OomrecError("--hardware and --all-hardware exclude each other; pick one")
    tag = None if all_hardware else (option_tag(hardware) or detect())
    notices: list[str] = []
    record_file, settings = open_record(record, writing=True, on_notice=notices.append)
    columns = commit_columns(settings)
    loaded = record_file.load()
    # The archive holds evidence too: records a fix lifted or a probe verified (not re-added
    # from their rows), and retractions (evidence taken back: never re-added, until restored).
    parked, warnings = record_warnings(loaded, record_file)
    with no_cycle_collection():
        report = import_csvs(
            paths or default_paths(settings),
            root=settings.base,
            in_git=settings.repo_root is not None,
            existing=loaded.records,
            hardware=tag,
            commit_columns=columns,
            archived=[x.record for x in archive.in_play(parked) if x.record is not None],
            events=archive.events(parked),
            shared=(lambda: _shared(warnings)) if settings.repo_root is not None else None,
            models_dir=_models_dir(settings),
        )
        would_add = len(report.new)
        if not dry_run and report.new:
            # Presence is checked again inside the append lock: an import running at the same
            # time may have added some of these since the record was read above.
            report.written(record_file.append_new(report.new, unless_present=evidence_key))
    return ImportResult(
        warnings=warnings + _report_warnings(report),
        notices=notices,
        record=record_file.shown_as,
        dry_run=dry_run,
        report=report,
        would_add=would_add,
    )


def _shared(warnings: list[str]) -> tuple[list[OomRecord], list[Event]]:
    """Other hosts' published records and retraction events (git notes, as `record pull`
    fetched them): evidence held there is not added here, and what they took back is not
    brought back from its row."""
    from oomrec.store.noterefs import refs_present

    if not refs_present()[0]:
        # Nothing shared: no GitPython, no notes reader (as `oomrec check`).
        return [], []
    from oomrec.store import gitrepo, notes

    repo = gitrepo.open_repo()
    if repo is None:
        return [], []
    # As the sweep reads them: each host's own records, taken back only by their own host or
    # an admin host (store/owners.py).
    owned = notes.read_owned(repo, detect(), warnings)
    return [line.record for line in owned.applying if line.record is not None], owned.events


def _models_dir(settings: Settings) -> Path | None:
    """The models dir a sweep uses by default (`models_dir` in [tool.oomrec], else `models`):
    where a row's `model_path` names a nested model."""
    configured = settings.get("models_dir")
    return settings.base / configured if isinstance(configured, str) and configured else None


def _report_warnings(report: ImportReport) -> list[str]:
    """The rows and files the user should look at, at most MAX_WARNINGS of each kind."""
    return [
        *_capped([str(bad) for bad in report.bad_rows], "SKIP:oom rows not imported"),
        *_capped([str(note) for note in report.row_notes], "SKIP:oom rows imported with a note"),
        *_capped(
            [
                f"{source}: git has no commit adding it; its rows without a commit column get "
                "commit 'unknown', which prune keeps; commit the file before importing it"
                for source in report.no_adding_commit
            ],
            "files without an adding commit",
        ),
        *_capped(
            [
                f"{source}: git blame failed ({problem}); its rows without a commit column get "
                "commit 'unknown', which prune keeps"
                for source, problem in report.blame_failed
            ],
            "files git could not blame",
        ),
        *_capped(
            [
                f"{source}:{lineno}: SKIP:oom row not committed yet; without a commit column it "
                "gets commit 'unknown', which prune keeps; commit the file before importing it"
                for source, lineno in report.uncommitted_rows
            ],
            "rows not committed yet",
        ),
    ]


def _capped(lines: Sequence[str], what: str) -> list[str]:
    out = [f"warning: {text}" for text in lines[:MAX_WARNINGS]]
    if len(lines) > MAX_WARNINGS:
        out.append(
            f"warning: ... and {len(lines) - MAX_WARNINGS} more {what} (--json lists them all)"
        )
    return out
