"""The units and bounds every module counts in, defined once: a GiB and a MiB in bytes, and the
largest number a record, a provenance file or a size holds (a 64-bit signed integer, what the
harness's bash arithmetic can compare). Imports nothing."""

from __future__ import annotations

MIB = 1024 * 1024
GIB = 1024 * MIB
MAX_INT = 2**63 - 1
