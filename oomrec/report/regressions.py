"""Memory regressions: a cell that ran at a commit A and ran out of memory (or was stopped by
the memory guard) at a later commit B on the same machine class, or whose peak (the sweep's
provenance files keep it) grew past a threshold from A to B. Something in A..B made it
worse; git says which commits those are. Evidence only: the CSVs' rows (with the commits they
were measured at), the provenance files and the record; nothing is re-run.

"Later" is git's, not the calendar's: B must descend from A. A stop at a commit that does not
descend from the run (an older commit, another branch) is no regression: it may be the fix's
other side, which `contradicted` names instead.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from oomrec.core import gitrun
from oomrec.core.records import read_commit, short_commit
from oomrec.core.rowfacts import Outcome
from oomrec.core.shown import show_bytes
from oomrec.core.units import DEFAULT_REGRESSION_THRESHOLD
from oomrec.report.folded import CellKey, CellRows, Machine, Seen
from oomrec.report.peaks import Peak

# At most this many (A, B) pairs of commits git has are asked of it (one short command each,
# ~3 ms): a corpus with more cells that ran at one commit and stopped at another is told how
# many were left. Commits git does not have are found in one call and cost no pair.
MAX_PAIRS = 200


@dataclass(frozen=True, slots=True)
class Regression:
    """A cell that ran at `ran.commit` and was stopped (`state`: oom or guard) at the later
    `stopped.commit`, the first commit descending from the run where it was seen stopped;
    `commits`: how many commits A..B holds."""

    model: str
    machine: Machine
    length: int
    ran: Seen
    stopped: Seen
    state: str
    commits: int
    # A peak that grew (`state` "peak"): the peaks at A and at B.
    peak_before: int | None = None
    peak_after: int | None = None

    @property
    def range(self) -> str:
        return f"{short_commit(self.ran.commit)}..{short_commit(self.stopped.commit)}"

    def line(self) -> str:
        """The regression in one line, as the text report and `record stale` say it."""
        n = f"{self.commits} commit{'s' if self.commits != 1 else ''}"
        if self.state == "peak":
            return (
                f"{self.model} at {self.length} on {self.machine.id}: peak "
                f"{show_bytes(self.peak_before or 0)} at {short_commit(self.ran.commit)}, "
                f"{show_bytes(self.peak_after or 0)} at {short_commit(self.stopped.commit)}; "
                f"regression in {self.range} ({n}), first seen at "
                f"{short_commit(self.stopped.commit)}"
            )
        what = "out of memory" if self.state == "oom" else "stopped by the memory guard"
        return (
            f"{self.model} at {self.length} on {self.machine.id}: ran at "
            f"{short_commit(self.ran.commit)} ({self.ran.where}), {what} at "
            f"{short_commit(self.stopped.commit)} ({self.stopped.where}); regression in "
            f"{self.range} ({n}), first seen at {short_commit(self.stopped.commit)}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "machine": self.machine.id,
            "length": self.length,
            "state": self.state,
            "range": f"{self.ran.commit}..{self.stopped.commit}",
            "commits": self.commits,
            "first_seen": self.stopped.commit,
            "ran": self.ran.to_dict(),
            "stopped": self.stopped.to_dict(),
            "peak_before": self.peak_before,
            "peak_after": self.peak_after,
        }


@dataclass(frozen=True, slots=True)
class Stop:
    """A sighting of a cell stopped: where, and whether by the guard."""

    key: CellKey
    seen: Seen
    guard: bool


def find(
    cells: Mapping[CellKey, CellRows],
    stops: Iterable[Stop],
    root: Path | None,
    peaks: Mapping[CellKey, Sequence[Peak]] | None = None,
    threshold: float = DEFAULT_REGRESSION_THRESHOLD,
) -> tuple[list[Regression], int]:
    """The regressions among `cells` (the CSVs' rows, which hold the runs) and `stops` (every
    OOM and guard stop in play, from rows and records), and the cells whose peak (`peaks`, from
    the provenance files) grew by more than `threshold` between a commit and a later one; asked
    of the git repository at `root`; and how many pairs were left unasked past MAX_PAIRS.
    None: no repository, no regression."""
    if root is None:
        return [], 0
    by_cell: dict[CellKey, list[Stop]] = {}
    for stop in stops:
        if _sha(stop.seen.commit) is not None:
            by_cell.setdefault(stop.key, []).append(stop)
    asked = _Ancestry(root)
    # Every commit a pair may name, asked of git in one call (runs, stops, peaks).
    asked.learn(
        [stop.seen.commit for held in by_cell.values() for stop in held]
        + [ran.commit for key in by_cell if key in cells for ran in _runs(cells[key])]
        + [peak.commit for held in (peaks or {}).values() for peak in held]
    )
    found: list[Regression] = []
    left = 0
    for key in sorted(by_cell, key=lambda k: (k[0], k[1].id, k[2])):
        cell = cells.get(key)
        if cell is None:
            continue
        runs = _runs(cell)
        if not runs:
            continue
        best: tuple[Stop, Seen, int] | None = None
        for stop in sorted(by_cell[key], key=lambda s: (s.seen.date or "", s.seen.where)):
            for ran in runs:
                count, unasked = asked.between(ran.commit, stop.seen.commit)
                left += unasked
                if count is not None and (best is None or count < best[2]):
                    best = (stop, ran, count)
        if best is not None:
            stop, ran, count = best
            model, machine, length = key
            state = "guard" if stop.guard else "oom"
            found.append(Regression(model, machine, length, ran, stop.seen, state, count))
    for key in sorted(peaks or {}, key=lambda k: (k[0], k[1].id, k[2])):
        grown, unasked = _grown(key, (peaks or {})[key], threshold, asked)
        left += unasked
        if grown is not None:
            found.append(grown)
    return found, left


def _grown(
    key: CellKey, runs: Sequence[Peak], threshold: float, asked: _Ancestry
) -> tuple[Regression | None, int]:
    """The tightest pair of a cell's runs (fewest commits between them) where the later one's
    peak grew by more than `threshold`; and how many pairs were left unasked."""
    best: tuple[Peak, Peak, int] | None = None
    left = 0
    for before in runs:
        for after in runs:
            if after.peak_bytes <= before.peak_bytes * (1 + threshold):
                continue
            count, unasked = asked.between(before.commit, after.commit)
            left += unasked
            if count is not None and (best is None or count < best[2]):
                best = (before, after, count)
    if best is None:
        return None, left
    before, after, count = best
    model, machine, length = key
    return (
        Regression(
            model,
            machine,
            length,
            Seen(before.where, None, before.commit),
            Seen(after.where, None, after.commit),
            "peak",
            count,
            before.peak_bytes,
            after.peak_bytes,
        ),
        left,
    )


def _runs(cell: CellRows) -> list[Seen]:
    runs = [cell.latest.get(Outcome.RAN), cell.first.get(Outcome.RAN)]
    return [r for r in dict.fromkeys(runs) if r is not None and _sha(r.commit) is not None]


@lru_cache(maxsize=1 << 16)
def _sha(commit: str) -> str | None:
    # A `-dirty` sighting ran on uncommitted changes: no commit range can be said of it.
    # Cached: a corpus names few commits, each asked of for every pair it is in.
    field = read_commit(commit)
    return None if field.dirty else field.hex


class _Ancestry:
    """git's answers on pairs of commits, each asked once; a commit git does not have (the
    commit columns of CSVs copied from elsewhere) is found in one call for all and never asked
    of in a pair."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.known: dict[tuple[str, str], int | None] = {}
        # Each commit field asked of -> the commit git names by it (None: git has none).
        self.commits: dict[str, str | None] = {}

    def learn(self, commits: Iterable[str]) -> None:
        """Which of `commits` git has, asked in one `cat-file --batch-check`."""
        known = self.commits
        new = sorted({h for c in commits if (h := _sha(c)) is not None and h not in known})
        if not new:
            return
        done = gitrun.run(
            ["-C", str(self.root), "cat-file", "--batch-check=%(objectname) %(objecttype)"],
            input="".join(f"{h}\n" for h in new),
            capture_output=True,
            text=True,
        )
        # One line per commit asked, in order; a line missing (git failed) is no commit.
        lines = done.stdout.splitlines() if done.returncode == 0 else []
        for i, asked in enumerate(new):
            name, _, kind = (lines[i] if i < len(lines) else "").partition(" ")
            self.commits[asked] = name if kind == "commit" else None

    def between(self, before: str, after: str) -> tuple[int | None, int]:
        """How many commits before..after holds when `after` descends from `before` (None when
        it does not, git cannot say, or either is no plain commit); and 1 when the pair was
        left unasked past MAX_PAIRS, else 0."""
        a, b = _sha(before), _sha(after)
        if a is None or b is None or a == b:
            return None, 0
        if a not in self.commits or b not in self.commits:
            self.learn((a, b))
        full_a, full_b = self.commits.get(a), self.commits.get(b)
        if full_a is None or full_b is None or full_a == full_b:
            return None, 0
        if len(self.known) >= MAX_PAIRS and (full_a, full_b) not in self.known:
            return None, 1
        return self.descends(full_a, full_b), 0

    def descends(self, a: str, b: str) -> int | None:
        """How many commits A..B holds when B descends from A (A an ancestor of B); None when
        it does not, or git cannot say (a commit it does not have)."""
        if (a, b) not in self.known:
            self.known[(a, b)] = self._ask(a, b)
        return self.known[(a, b)]

    def _ask(self, a: str, b: str) -> int | None:
        # One call: `A...B --left-right` counts A's commits B lacks (none: A is B's ancestor)
        # and B's that A lacks (A..B). `--end-of-options`: never read as an option.
        argv = ["-C", str(self.root), "rev-list", "--count", "--left-right"]
        counted = gitrun.run(
            [*argv, "--end-of-options", f"{a}...{b}"],
            capture_output=True,
            text=True,
        )
        left, _, right = counted.stdout.strip().partition("\t")
        if counted.returncode != 0 or not (left.isdigit() and right.isdigit()):
            return None
        return int(right) if int(left) == 0 else None


def stops_of(
    cells: Mapping[CellKey, CellRows], evidence: Sequence[tuple[CellKey, Seen, bool, bool]]
) -> list[Stop]:
    """Every stop sighting: the CSVs' guard rows (their first and latest) and the evidence
    given as (cell, seen, guard, in play); OOMs a fix took out of play are no regression."""
    out = [
        Stop(key, seen, True)
        for key, cell in cells.items()
        for seen in dict.fromkeys((cell.first.get(Outcome.GUARD), cell.latest.get(Outcome.GUARD)))
        if seen is not None
    ]
    out += [Stop(key, seen, guard) for key, seen, guard, applies in evidence if applies]
    return out
