"""The staleness verdict: was an OOM record observed on code that already had a fix?

For a record at commit R and a fix commit F:

- stale: R does not contain F (F is neither R nor an ancestor of R). The OOM was measured on code
  without the fix: R predates F, or sits on a branch that never merged it.
- current: R contains F. The fix was in, and it still ran out of memory.
- unknown: git cannot say; the reason says why. Nothing unknown is pruned unless asked.

A `<hex>-dirty` commit is judged by `<hex>`. Verdicts come in batch: all record commits are
resolved in one git call, and each fix costs one ancestry walk (two more in a shallow clone),
however many records there are. `record prune`, `record stale`, `record list` and the hooks all
judge through this module.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from oomrec import gitutil
from oomrec.fixes import SHORT_SHA, FixCommit
from oomrec.records import UNKNOWN_COMMIT, OomRecord

if TYPE_CHECKING:
    import git

Status = Literal["stale", "current", "unknown"]
STALE: Status = "stale"
CURRENT: Status = "current"
UNKNOWN: Status = "unknown"

# git resolves an object name from 4 hex digits up; 64 is a SHA-256 object name.
_HEX = re.compile(r"[0-9a-fA-F]{4,64}")
_DIRTY = "-dirty"
_UNSHALLOW = "git fetch --unshallow, then retry"


@dataclass(frozen=True, slots=True)
class Verdict:
    status: Status
    # unknown: why git cannot say. stale/current: which commit stood in for a `-dirty` one.
    reason: str = ""

    def __str__(self) -> str:
        if self.status == UNKNOWN:
            return f"unknown: {self.reason}"
        return f"{self.status} ({self.reason})" if self.reason else self.status


@dataclass(frozen=True, slots=True)
class _Commit:
    """A record's commit field as git will see it: hex to resolve, or why there is none."""

    hex: str | None
    note: str = ""
    unknown: str = ""


def _read_commit(text: str) -> _Commit:
    value = text.strip()
    if not value or value.lower() == UNKNOWN_COMMIT:
        return _Commit(None, unknown="no commit recorded")
    base = value.removesuffix(_DIRTY)
    if not _HEX.fullmatch(base):
        return _Commit(None, unknown=f"{value!r} is not a commit SHA")
    note = f"{value} judged by {base}" if base != value else ""
    return _Commit(base.lower(), note)


class Judge:
    """Verdicts for many record commits (their text as written) against one fix at a time."""

    def __init__(self, repo: git.Repo, commits: Iterable[str]) -> None:
        self._repo = repo
        self._commits = {text: _read_commit(text) for text in set(commits)}
        self._resolved = gitutil.resolve_many(
            repo, {c.hex for c in self._commits.values() if c.hex is not None}
        )
        self._shallow = gitutil.shallow_commits(repo)

    def against(self, fix: str) -> dict[str, Verdict]:
        """Each commit text's verdict against the fix commit `fix` (a full SHA)."""
        shas = {r.sha for r in self._resolved.values() if r.sha is not None}
        containing = gitutil.descendants_among(self._repo, [fix], shas - {fix}) | (shas & {fix})
        cut_off = self._cut_off(fix, shas - containing)
        return {
            text: self._verdict(commit, fix, containing, cut_off)
            for text, commit in self._commits.items()
        }

    def _cut_off(self, fix: str, candidates: Collection[str]) -> set[str]:
        """The candidates whose history, walked down to the fix's, runs into a shallow cut.

        Below a cut git knows no parents, so the fix may be there: "does not contain the fix" is
        unproven for them. A candidate whose walk reaches no cut is judged on complete history,
        and "contains the fix" is proven whenever the walk finds it, cut or not.
        """
        if not self._shallow or not candidates:
            return set()
        cuts = gitutil.not_reachable_from(self._repo, fix, self._shallow)
        if not cuts:
            return set()
        return (set(candidates) & cuts) | gitutil.descendants_among(self._repo, cuts, candidates)

    def _verdict(
        self, commit: _Commit, fix: str, containing: set[str], cut_off: set[str]
    ) -> Verdict:
        if commit.hex is None:
            return Verdict(UNKNOWN, commit.unknown)
        resolved = self._resolved[commit.hex]
        if resolved.sha is None:
            return Verdict(UNKNOWN, self._unresolved(commit.hex, resolved.problem))
        if resolved.sha in containing:
            return Verdict(CURRENT, commit.note)
        if resolved.sha in cut_off:
            return Verdict(
                UNKNOWN,
                f"shallow clone: the history of {commit.hex} is cut off before fix "
                f"{fix[:SHORT_SHA]} could be found ({_UNSHALLOW})",
            )
        return Verdict(STALE, commit.note)

    def _unresolved(self, hex_: str, problem: str | None) -> str:
        if problem == "missing" and self._shallow:
            return f"shallow clone: commit {hex_} is not in the fetched history ({_UNSHALLOW})"
        if problem == "missing":
            return f"commit {hex_} not in this repository (rebased away or from another clone?)"
        if problem == "ambiguous":
            return f"short SHA {hex_} is ambiguous in this repository (record the full SHA)"
        return f"{hex_} is a {problem}, not a commit"


@dataclass(frozen=True)
class FixJudgement:
    """One fix against the records its globs match: their positions in the records given, the
    glob each of their models matched, and the verdict for each of their commits.

    Per commit and per model, not per record: a record file has many lines, few commits.
    """

    fix: FixCommit
    indices: list[int]
    globs: dict[str, str]
    verdicts: dict[str, Verdict]

    def verdict_of(self, record: OomRecord) -> Verdict:
        return self.verdicts[record.commit]

    def count(self, records: Sequence[OomRecord], status: Status) -> int:
        """How many of the matched records have this verdict."""
        verdicts = self.verdicts
        return sum(1 for i in self.indices if verdicts[records[i].commit].status == status)


def judge_fixes(
    repo: git.Repo, fixes: Sequence[FixCommit], records: Sequence[OomRecord]
) -> list[FixJudgement]:
    """Each fix (in the order given) against the records whose model one of its globs matches.
    One resolve for all record commits, then one walk per fix that matches any record."""
    models = {rec.model for rec in records}
    matched: list[tuple[FixCommit, list[int], dict[str, str]]] = []
    for fix in fixes:
        # Match each distinct model once: a record has thousands of lines, a few dozen models.
        globs = {model: glob for model in models if (glob := fix.glob_for(model))}
        indices = [i for i, rec in enumerate(records) if rec.model in globs]
        if indices:
            matched.append((fix, indices, globs))
    if not matched:
        return []
    judge = Judge(repo, {records[i].commit for _, indices, _ in matched for i in indices})
    return [
        FixJudgement(fix, indices, globs, judge.against(fix.sha)) for fix, indices, globs in matched
    ]


def record_statuses(judgements: Sequence[FixJudgement], records: Sequence[OomRecord]) -> list[str]:
    """Each record's status: `stale: fix abc1234` (the first fix that made it stale), else
    `unknown: why` (a fix applies but git cannot say), else `active`."""
    stale: list[str | None] = [None] * len(records)
    unknown: dict[int, str] = {}
    for judgement in judgements:
        stale_text = f"stale: fix {judgement.fix.short}"
        for i in judgement.indices:
            if stale[i] is not None:
                continue
            verdict = judgement.verdict_of(records[i])
            if verdict.status == STALE:
                stale[i] = stale_text
            elif verdict.status == UNKNOWN:
                unknown.setdefault(i, str(verdict))
    return [text or unknown.get(i) or "active" for i, text in enumerate(stale)]
