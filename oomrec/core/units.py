"""The units and bounds every module counts in, defined once: a GiB and a MiB in bytes, and the
largest number a record, a provenance file or a size holds (a 64-bit signed integer, what the
harness's bash arithmetic can compare); the UTC stamp stored files carry. Imports no oomrec
module."""

from __future__ import annotations

from datetime import UTC, datetime

MIB = 1024 * 1024
GIB = 1024 * MIB
MAX_INT = 2**63 - 1


def utc_stamp(when: datetime | None = None) -> str:
    """A moment as the archive and the retraction events write it (`2026-07-03T14:05:09Z`):
    UTC, to the second, so that stamps of every host compare as text."""
    return (when or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")


# A cell's peak that grew by more than this share between two commits is a memory regression
# (report/regressions.py; `report --regression-threshold`).
DEFAULT_REGRESSION_THRESHOLD = 0.10
