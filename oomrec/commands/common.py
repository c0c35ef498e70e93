"""What several verbs share: reading the record with its warnings, the judged-record entry."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from oomrec.core.records import Loaded, OomRecord, RecordFile

if TYPE_CHECKING:
    from oomrec.staleness.verdict import Fix, Judgement
    from oomrec.store.archive import ArchivedLine


def record_warnings(
    loaded: Loaded, record_file: RecordFile | None = None
) -> tuple[list[ArchivedLine], list[str]]:
    """The record's warnings (one line each), and with `record_file` its archive's too, with
    the archived records read for them (so a verb need not read the archive again)."""
    warnings = [str(warning) for warning in loaded.warnings]
    if record_file is None:
        return [], warnings
    from oomrec.store import archive

    parked, archive_warnings = archive.read(record_file, loaded)
    return parked, warnings + archive_warnings


def judged_entry(
    lineno: int, record: OomRecord, judgement: Judgement, fix: Fix | None = None
) -> dict[str, Any]:
    """A judged record line in JSON: where, what, its status at HEAD and the fix behind it
    (`fix`, else the first fix of the judgement)."""
    fix = fix or (judgement.fixes[0] if judgement.fixes else None)
    return {
        "line": lineno,
        "record": record.to_dict(),
        "status": judgement.status.value,
        "fix": fix.sha if fix else None,
        "subject": fix.subject if fix else None,
        "globs": list(fix.globs) if fix else [],
        "reason": judgement.reason or None,
    }
