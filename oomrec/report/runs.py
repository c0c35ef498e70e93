"""The report's grid folded, so every view grows with the cells that hold a fact, not with
models x lengths: per model and machine class, the lengths it was tried at in runs of one
outcome (`Run`), and the lengths of the class's axis it was never tried at as ranges.

A grid of many models, each tried at lengths of its own (random prompt lengths), has a union of
lengths as wide as its rows: drawn as a matrix it is models x rows, almost all "never tried".
Folded, a model tried at k lengths is at most k runs and k + 1 untried ranges. A run keeps each
OOM and each success boundary: its ends are lengths the model was tried at, and a length with
another outcome always starts a new run (tests/test_report_runs.py expands them back).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple

from oomrec.core.rowfacts import Outcome

if TYPE_CHECKING:
    from oomrec.report.folded import Machine

# A class's grid is drawn as a matrix (a column per length) while it has at most this many
# slots per cell that holds a fact, or at most MATRIX_ALWAYS slots: a dense grid reads best as a
# matrix, and a small one costs nothing. Past both, each model's runs are drawn instead.
MATRIX_FILL = 4
MATRIX_ALWAYS = 4096


class Run(NamedTuple):
    """Consecutive lengths a model was tried at (on one machine class) with one outcome: from
    `start` to `end`, `size` lengths. `flagged`: the OOMs in it are contradicted."""

    start: int
    end: int
    outcome: Outcome
    flagged: bool
    size: int


def fold(
    grid: Mapping[tuple[str, Machine, int], tuple[Outcome, bool]],
) -> dict[tuple[str, Machine], list[Run]]:
    """The grid's cells as runs, per (model, class), in the grid's order. The grid must be
    sorted by (model, class, length), as frontier.build leaves it."""
    out: dict[tuple[str, Machine], list[Run]] = {}
    key: tuple[str, Machine] | None = None
    runs: list[Run] = []
    for (model, machine, length), (outcome, flagged) in grid.items():
        if key != (model, machine):
            key = (model, machine)
            runs = out.setdefault(key, [])
        last = runs[-1] if runs else None
        if last is not None and last.outcome == outcome and last.flagged == flagged:
            runs[-1] = Run(last.start, length, outcome, flagged, last.size + 1)
        else:
            runs.append(Run(length, length, outcome, flagged, 1))
    return out


def untried(axis: Sequence[int], tried: Iterable[int]) -> tuple[tuple[int, int], ...]:
    """The lengths of `axis` (sorted, distinct) not in `tried`, as (first, last) ranges of
    consecutive axis lengths: at most one range more than the tried lengths on the axis. Found
    by bisection: an index of a million-length axis would outweigh the report."""
    where: list[int] = []
    lo = 0
    # In order, each search starts where the last one ended: it stays in a short stretch of a
    # long axis (a random grid's lengths), not across the whole list each time.
    for n in sorted(tried):
        i = bisect_left(axis, n, lo)
        if i < len(axis) and axis[i] == n:
            if not where or where[-1] != i:
                where.append(i)
            lo = i
    out = []
    start = 0
    for i in [*where, len(axis)]:
        if i > start:
            out.append((axis[start], axis[i - 1]))
        start = i + 1
    return tuple(out)


def as_matrix(models: int, lengths: int, filled: int) -> bool:
    """Whether a class's grid of `models` rows and `lengths` columns, `filled` of its slots
    holding a fact, is drawn as a matrix (else as runs): see MATRIX_FILL."""
    slots = models * lengths
    return slots <= MATRIX_ALWAYS or slots <= MATRIX_FILL * filled
