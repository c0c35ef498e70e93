"""Whether an OOM record still applies: judged at a commit (HEAD by default) by the fixes in
effect there. The one rule, used by the sweep, `record list`, `stale`, `prune`, `restore` and
the hooks.

Principle: when in doubt, the record applies; only proof takes it out of play.

- A **fix** is a commit whose trailer block holds `OOM-Fix: <glob>[, <glob>...]`.
- Its **copies** are one fix: the fix itself; a commit that says `(cherry picked from commit F)`;
  a trailer commit with the same `git patch-id --stable` (amend, reword, rebase, a clean pick
  without -x); a commit whose trailer block holds the same `OOM-Fix-Id: <name>`.
- A **revert** (`This reverts commit <sha>.`) of a copy has depth 1, a revert of that revert
  depth 2, and so on. A fix is **in effect at X** iff X's history (X and its ancestors) holds a
  copy of it and the deepest revert of it there has an even depth (0: none): a revert cancels
  the fix, a revert of the revert restores it.
- A record of model m measured at commit R **no longer applies at X** iff some fix whose globs
  (those of its copies in X's history) match m is in effect at X and not in effect at R.
- Otherwise it applies, and "unknown" is a way of applying: no commit recorded, a commit not in
  this repository or ambiguous, a shallow history cut off where the fix could hide, or a
  `-dirty` commit (the uncommitted change may have been the fix: a dirty tree can prove that a
  record still applies, never that it no longer does).

A record is judged with the events in the history of X and of its own commit only (a view of
the History per set of events the records' commits bring beyond X's), so judging one record
or all of them gives it the same verdict. A copy counts only with the whole fix: where the
copies in a commit's history leave out a file that the fix (its copies, the commits they were
picked from, every commit naming its fix id) changes, the fix is undecided there.

Cost: a fixed number of git processes however many records: one `cat-file --batch-check` to
resolve the record commits, one `git log` for the event commits, one `rev-list --parents` for
the commit graph, and a `diff-tree | patch-id` pair for the fix commits (asked once for all
views); with fix ids, one `git log --all` for the commits naming them. The graph is walked once
in Python, carrying per commit a bit set of the events in its history.
"""

from __future__ import annotations

import contextlib
import copy
import posixpath
from bisect import bisect_left
from collections.abc import Collection, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from enum import StrEnum
from fnmatch import fnmatchcase
from pathlib import Path
from typing import TYPE_CHECKING, Any

from oomrec.core.errors import OomrecError
from oomrec.core.provenance import SIDECAR_SUFFIX
from oomrec.core.records import OomRecord, read_commit, short_commit
from oomrec.staleness.content import Snapshots, State, Verdict, combine
from oomrec.staleness.fixlog import Event, first_match

if TYPE_CHECKING:
    import git

_UNSHALLOW = "git fetch --unshallow, then retry"


class Status(StrEnum):
    APPLIES = "applies"
    # Applies, because git cannot prove otherwise; the judgement says why.
    UNKNOWN = "unknown"
    # A fix is in effect (graph and tree): a hypothesis until a run of the cell verifies it
    # (sweep/planner.record_state); the record stays in play meanwhile, as a probe.
    LIFTED = "lifted, unverified"


@dataclass(frozen=True)
class Fix:
    """One fix and all its copies, as seen from the commit things are judged at."""

    sha: str
    subject: str
    globs: tuple[str, ...]
    copies: tuple[str, ...]

    @property
    def short(self) -> str:
        return short_commit(self.sha)

    def describe(self) -> str:
        return f"fix {self.short} ({self.subject})"


@dataclass(frozen=True)
class Judgement:
    status: Status
    # LIFTED: the fixes that take the record out of play; UNKNOWN: the fix git could not judge.
    fixes: tuple[Fix, ...] = ()
    reason: str = ""

    @property
    def applies(self) -> bool:
        return self.status != Status.LIFTED

    def __str__(self) -> str:
        if self.status == Status.LIFTED:
            return f"lifted, unverified: {self.fixes[0].describe()}"
        if self.status == Status.UNKNOWN:
            return f"applies (unknown: {self.reason})"
        # Applies although a fix is in the history: the tree says why.
        return f"applies ({self.reason})" if self.reason else "applies"


APPLIES = Judgement(Status.APPLIES)


@dataclass(frozen=True)
class _Pending:
    """A record the graph would lift, waiting for the content check: where it was measured
    and the fixes that would lift it."""

    sha: str
    fixes: tuple[tuple[str, Fix], ...]
    roots: tuple[str, ...]


# A History's first pass over some records (_graph_pass): per (commit, model) a judgement or a
# _Pending, the keys in the records' order, and the fixes in effect where they are judged.
_GraphPass = tuple[
    "dict[tuple[str, str], Judgement | _Pending]",
    "list[tuple[str, str]]",
    "list[tuple[str, Fix]]",
]

# A fix lifts a record when its change is here (present, or a declared fix) and was not where
# the record was measured.
_LIFTS_HERE = frozenset({State.PRESENT, State.DECLARED})
_LIFTS_THERE = frozenset({State.ABSENT, State.DECLARED})


class _Classes:
    """Union-find over commit SHAs: which commits are copies of one fix."""

    def __init__(self) -> None:
        self._up: dict[str, str] = {}

    def find(self, x: str) -> str:
        up = self._up
        root = x
        while up.get(root, root) != root:
            root = up[root]
        while up.get(x, x) != root:
            up[x], x = root, up[x]
        return root

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self._up[ra] = rb


@dataclass
class _Class:
    # (sha, bit) of each copy, newest first as git log lists them.
    members: list[tuple[str, int]] = field(default_factory=list)
    # (bit, depth) of each member (depth 0) and each revert in the chain.
    events: list[tuple[int, int]] = field(default_factory=list)
    cut_mask: int = 0
    # The bits of all its events, and each bit's depth. Bits follow the commits' topological
    # order, so the highest bit of a history's mask is its newest event.
    all_bits: int = 0
    depth_of: dict[int, int] = field(default_factory=dict)

    def in_effect(self, mask: int) -> bool:
        """The newest copy or revert in the history decides: a copy or an even-depth revert
        (a revert of a revert) puts the fix in effect, an odd-depth one takes it out. (The
        deepest revert deciding would read F, revert, revert of the revert, revert of F again
        as in effect.)"""
        seen = mask & self.all_bits
        if not seen:
            return False
        return self.depth_of[seen.bit_length() - 1] % 2 == 0


class History:
    """The git facts that decide which fixes are in effect at the commits asked about."""

    def __init__(
        self,
        repo: git.Repo,
        key: str,
        record_commits: Iterable[str],
        at: Sequence[str] = ("HEAD",),
        extra_fixes: dict[str, tuple[str, ...]] | None = None,
        extra_tips: Collection[str] = (),
        content: bool = True,
    ) -> None:
        """Gather everything in a fixed number of git calls. `at`: the revisions records will
        be judged at. `extra_fixes`: commits to treat as fixes of these globs although they
        carry no trailer (`record prune --since X --model GLOB`). `content=False` judges by the
        graph alone: only benchmarks/perf/bench_stale.py's baseline asks for it."""
        # GitPython costs ~0.17 s to import: `oomrec --help` and the sweep's module never pay it.
        from oomrec.staleness import eventcache
        from oomrec.store import gitrepo as gitutil

        self.repo = repo
        self.key = key
        self._content = content
        self._snapshots: Snapshots | None = None
        # commit -> fix class (root) -> whether its change is in that commit's tree.
        self._states: dict[str, dict[str, Verdict]] = {}
        # Shared by this History and its views (_view): git answers that do not depend on
        # which events are judged. "dirty": the paths of the fixes' changes that the work
        # tree changes from HEAD ("") or hides from git (why), see _dirty_paths.
        self._shared: dict[str, Any] = {"dirty": None, "patches": {}, "files": {}, "ids": None}
        # commit -> its `_states` entry, with the classes whose copies there are partial
        # made undecided (_states_at).
        self._partial: dict[str, dict[str, Verdict]] = {}
        # fix class -> every path the whole fix changes, and the copies it knows of.
        self._extent: dict[str, tuple[frozenset[bytes], dict[str, frozenset[bytes]]]] = {}
        # (the revision judged at, the events allowed) -> the History that judges with them.
        self._views: dict[tuple[str, int], History] = {}
        self._event_masks: dict[str, int] | None = None
        # The same per group of commits with the same blobs at the fixes' paths.
        self._group_states: dict[int, dict[str, Verdict]] = {}
        self._commits = {text: read_commit(text) for text in set(record_commits)}
        self._at = {rev: gitutil.resolve_commit(repo, rev) for rev in at}
        extra = extra_fixes or {}
        hexes = {c.hex for c in self._commits.values() if c.hex is not None}
        self._resolved = gitutil.resolve_many(repo, hexes)
        self._cut_commits = gitutil.shallow_commits(repo)
        tips = {r.sha for r in self._resolved.values() if r.sha is not None}
        tips |= set(self._at.values()) | set(extra) | set(extra_tips)
        # The graph walk and the log both read the whole history: run them side by side.
        with ThreadPoolExecutor(max_workers=1) as pool:
            graph = pool.submit(gitutil.parents, repo, tips)
            # Shallow, or a history replaced under the same SHAs: the cache cannot vouch.
            uncached = bool(self._cut_commits) or gitutil.history_replaced(repo)
            found = eventcache.events(repo, tips, key, shallow=uncached)
            self._graph = graph.result()
        # The cache may know events of earlier tips: keep those in this history.
        walked = {row[0] for row in self._graph}
        self.events = {e.sha: e for e in found if e.sha in walked}
        for sha, globs in extra.items():
            old = self.events.get(sha)
            subject = old.subject if old else _subject(repo, sha)
            self.events[sha] = Event(
                sha,
                subject,
                globs,
                (),
                (),
                old.reverts if old else (),
                mainline=old.mainline if old else None,
            )
        self._build()

    # -- building -----------------------------------------------------------------------

    def _build(self) -> None:

        events = self.events
        classes = _Classes()
        fix_shas = [sha for sha, e in events.items() if e.globs]
        by_prefix = _PrefixIndex(events)
        # Copies: the same fix-id, the same patch, a cherry-pick of a fix.
        first_of_id: dict[str, str] = {}
        for sha, e in events.items():
            for fix_id in e.fix_ids:
                classes.union(sha, first_of_id.setdefault(fix_id.casefold(), sha))
        first_of_patch: dict[str, str] = {}
        trailer_shas = [sha for sha, e in events.items() if e.globs or e.fix_ids]
        revert_shas = [sha for sha, e in events.items() if e.reverts]
        # Without patch-ids an amended fix would look like another fix: nothing is lifted then.
        self._doubt = ""
        patches: dict[str, str] = {}
        if len(trailer_shas) > 1 or (trailer_shas and revert_shas):
            try:
                patches = self._patch_ids([*trailer_shas, *revert_shas])
            except OomrecError as exc:
                self._doubt = f"cannot compare the fixes' patches ({exc})"
            for sha in trailer_shas:
                if sha in patches:
                    classes.union(sha, first_of_patch.setdefault(patches[sha], sha))
        for sha, e in events.items():
            for source in e.picked_from:
                target = by_prefix.get(source)
                if target is not None and not e.reverts:
                    classes.union(sha, target)
        fix_roots = {classes.find(sha) for sha in fix_shas}
        self._undeclarable = _undeclarable(events, self._graph)
        # Depth 0: every copy of a class that has a fix; reverts get the depth of their chain.
        # A commit may stand for several fixes: a revert of a merge reverts all it brought in.
        entries: dict[str, list[tuple[str, int]]] = {}
        for sha in events:
            root = classes.find(sha)
            if root in fix_roots and not events[sha].reverts:
                entries[sha] = [(root, 0)]
        for sha in events:
            self._revert_entries(sha, by_prefix, entries, set())
        if entries:
            self._reverts_by_patch(entries, patches, by_prefix)
        graph = self._graph if entries else []
        self._order = {row[0]: n for n, row in enumerate(graph)}
        self._index(entries, graph)
        if self._merge_reverts(entries, graph, by_prefix):
            self._index(entries, graph)

    def _patch_ids(self, shas: Sequence[str], reverse: bool = False) -> dict[str, str]:
        """gitutil.patch_ids, each commit asked once for this History and all its views."""
        from oomrec.store import gitrepo as gitutil

        memo: dict[tuple[str, bool], str | None] = self._shared["patches"]
        missing = [sha for sha in dict.fromkeys(shas) if (sha, reverse) not in memo]
        if missing:
            found = gitutil.patch_ids(self.repo, missing, reverse=reverse)
            for sha in missing:
                memo[(sha, reverse)] = found.get(sha)
        out = {sha: memo[(sha, reverse)] for sha in shas}
        return {sha: patch for sha, patch in out.items() if patch is not None}

    def _reverts_by_patch(
        self,
        entries: dict[str, list[tuple[str, int]]],
        patches: dict[str, str],
        by_prefix: _PrefixIndex,
    ) -> None:
        """Reverts whose message names a commit that is not a copy here (a backported revert
        names the original's SHA, a rebased one the pre-rebase SHA): a revert's patch is the
        reverse of its target's, a revert of a revert has the target's own patch."""

        lost = [
            sha
            for sha, e in self.events.items()
            if e.reverts and sha not in entries and sha in patches and not e.mainline
        ]
        if not lost:
            return
        known = [sha for sha in entries if len(entries[sha]) == 1]
        try:
            reverse = self._patch_ids(known, reverse=True)
        except OomrecError:
            return
        by_reverse: dict[str, list[tuple[str, int]]] = {}
        by_forward: dict[str, list[tuple[str, int]]] = {}
        for sha in known:
            if sha in reverse:
                by_reverse.setdefault(reverse[sha], entries[sha])
            if sha in patches:
                by_forward.setdefault(patches[sha], entries[sha])
        changed = True
        while changed:
            changed = False
            for sha in lost:
                if sha in entries:
                    continue
                patch = patches[sha]
                if patch in by_reverse:
                    entries[sha] = [(root, d + 1) for root, d in by_reverse[patch]]
                elif patch in by_forward:
                    # The same patch as a copy (it restores the fix: even) or as a revert.
                    entries[sha] = [(root, d if d % 2 else d + 2) for root, d in by_forward[patch]]
                else:
                    continue
                changed = True
        for sha in self.events:
            if sha not in entries:
                self._revert_entries(sha, by_prefix, entries, set())

    def _index(self, entries: dict[str, list[tuple[str, int]]], graph: list[list[str]]) -> None:
        """Give each (commit, fix) entry a bit, in the commits' topological order, and each
        commit the bits of its history."""
        self._classes: dict[str, _Class] = {}
        bits: dict[str, int] = {}
        n = 0
        order = self._order
        for sha in sorted(entries, key=lambda s: order.get(s, -1)):
            for root, d in entries[sha]:
                cls = self._classes.setdefault(root, _Class())
                cls.events.append((n, d))
                cls.all_bits |= 1 << n
                cls.depth_of[n] = d
                if d == 0:
                    cls.members.append((sha, n))
                bits[sha] = bits.get(sha, 0) | 1 << n
                n += 1
        for cls in self._classes.values():
            # Newest first, as the log lists them: _fix names a fix by its newest copy.
            cls.members.reverse()
        for i, sha in enumerate(sorted(self._cut_commits)):
            bits[sha] = bits.get(sha, 0) | 1 << (n + i)
        self._all_cuts = ((1 << len(self._cut_commits)) - 1) << n
        self._masks = _masks(graph, bits)
        for cls in self._classes.values():
            for sha, _ in cls.members:
                cls.cut_mask |= self._masks.get(sha, 0) & self._all_cuts

    def _merge_reverts(
        self,
        entries: dict[str, list[tuple[str, int]]],
        graph: list[list[str]],
        by_prefix: _PrefixIndex,
    ) -> bool:
        """Reverts of merge commits (`git revert -m N M`): each cancels the fixes that M brought
        in from the side it reverted (in effect at M, not at the kept parent: the one its
        message names after `reversing changes made to`, else the first). Returns whether any
        was found."""
        candidates = [(s, e) for s, e in self.events.items() if e.reverts and s not in entries]
        if not candidates:
            return False
        parents = {row[0]: row[1:] for row in graph}
        found = False
        for sha, event in candidates:
            for target_text in event.reverts:
                target = by_prefix.get(target_text) or target_text
                merged = parents.get(target, ())
                if len(merged) < 2:
                    continue
                kept = merged[0]
                if event.mainline:
                    named = [p for p in merged if p.startswith(event.mainline)]
                    kept = named[0] if len(named) == 1 else kept
                at_merge = set(self._effective_roots(self._masks.get(target, 0)))
                before = set(self._effective_roots(self._masks.get(kept, 0)))
                brought = sorted(at_merge - before)
                if brought:
                    entries[sha] = [(root, 1) for root in brought]
                    found = True
                    break
        if found:
            # Reverts of those reverts, and so on.
            for sha in self.events:
                if sha not in entries:
                    self._revert_entries(sha, by_prefix, entries, set())
        return found

    def _revert_entries(
        self,
        sha: str,
        by_prefix: _PrefixIndex,
        entries: dict[str, list[tuple[str, int]]],
        seen: set[str],
    ) -> list[tuple[str, int]] | None:
        if sha in entries:
            return entries[sha]
        event = self.events.get(sha)
        if event is None or not event.reverts or sha in seen:
            return None
        seen.add(sha)
        for target_text in event.reverts:
            target = by_prefix.get(target_text)
            found = self._revert_entries(target, by_prefix, entries, seen) if target else None
            if found:
                entries[sha] = [(root, d + 1) for root, d in found]
                return entries[sha]
        return None

    # -- asking -------------------------------------------------------------------------

    def sha_at(self, rev: str = "HEAD") -> str:
        return self._at[rev]

    def _effective_roots(self, mask: int) -> list[str]:
        return [root for root, cls in self._classes.items() if cls.in_effect(mask)]

    def _fix(self, root: str, mask: int) -> Fix:
        cls = self._classes[root]
        everyone = [sha for sha, _ in cls.members]
        present = [sha for sha, bit in cls.members if mask >> bit & 1] or everyone
        with_globs = [s for s in present if self.events[s].globs] or present
        # The globs of the copies in this history: an amend that narrowed them wins.
        globs = tuple(dict.fromkeys(g for s in with_globs for g in self.events[s].globs))
        # The newest copy in this history names the fix: a pick on a branch, not its original.
        newest = with_globs[0]
        return Fix(newest, self.events[newest].subject, globs, tuple(everyone))

    def judge(self, records: Sequence[OomRecord], at: str = "HEAD") -> list[Judgement]:
        """Each record's judgement at revision `at` (one of those given when loading).

        A record's judgement depends only on the history of `at` and of its own commit: the
        events (copies, reverts) found in other records' histories are left out, so `check`
        (one model's records) and the sweep (all of them) agree. Records whose commits bring
        the same events beyond `at`'s history are judged together, by one view."""
        at_sha = self._at[at]
        masks = self._events_by_commit()
        allowed_at = masks.get(at_sha, 0)
        if self._view(at_sha, allowed_at) is self:
            # Every event is in the history of `at` (the common case): one view, this one.
            return self._judge(records, at)
        extra_of: dict[str, int] = {}
        groups: dict[int, list[int]] = {}
        for n, rec in enumerate(records):
            extra = extra_of.get(rec.commit)
            if extra is None:
                info = self._commit_info(rec.commit)
                sha = info if isinstance(info, str) else info[0]
                extra = extra_of[rec.commit] = masks.get(sha, 0) & ~allowed_at
            groups.setdefault(extra, []).append(n)
        passes = []
        for extra, indices in groups.items():
            view = self._view(at_sha, allowed_at | extra)
            passes.append((indices, view, view._graph_pass([records[n] for n in indices], at)))
        # The trees of every view's commits in one batch (the views share the Snapshots).
        shas = {
            p.sha for *_, (cache, _, _) in passes for p in cache.values() if isinstance(p, _Pending)
        }
        if shas and self._content:
            with contextlib.suppress(OomrecError):
                self._ensure_snapshots().group_of({at_sha, *shas})
        out: list[Judgement | None] = [None] * len(records)
        for indices, view, graph_pass in passes:
            for n, got in zip(indices, view._finish(graph_pass, at), strict=True):
                out[n] = got
        return out  # type: ignore[return-value]

    def _events_by_commit(self) -> dict[str, int]:
        """Per commit, the bit set of the events (all of them, in any class or none) in its
        history."""
        if self._event_masks is None:
            order = {row[0]: n for n, row in enumerate(self._graph)}
            ordered = sorted(self.events, key=lambda sha: order.get(sha, -1))
            self._event_bits = {sha: 1 << n for n, sha in enumerate(ordered)}
            self._event_masks = _masks(self._graph, self._event_bits)
        return self._event_masks

    def _view(self, at_sha: str, allowed: int) -> History:
        """This History with only the events in `allowed` (the histories of the commit judged
        at and of the records' commits): itself when that is every event."""
        self._events_by_commit()
        bits = self._event_bits
        if all(allowed & bit for bit in bits.values()):
            return self
        key = (at_sha, allowed)
        view = self._views.get(key)
        if view is None:
            # Its classes split this History's (fewer events, fewer links), so its copies are
            # among those whose changes this History reads: one Snapshots serves both.
            self._ensure_snapshots()
            view = copy.copy(self)
            view.events = {sha: e for sha, e in self.events.items() if allowed & bits[sha]}
            view._states = {}
            view._partial = {}
            view._extent = {}
            view._group_states = {}
            view._views = {}
            view._event_masks = {}
            view._build()
            self._views[key] = view
        return view

    def _judge(self, records: Sequence[OomRecord], at: str = "HEAD") -> list[Judgement]:
        """Each record's judgement at revision `at`, with this History's events.

        Two passes: the graph names, per record, the fixes that would lift it; then the trees
        of `at` and of those records' commits are read in one batch, and only a fix whose
        change is present at `at` and absent where the record was measured lifts it."""
        return self._finish(self._graph_pass(records, at), at)

    def _finish(self, graph_pass: _GraphPass, at: str) -> list[Judgement]:
        """The second pass: settle the records the graph would lift, from the trees."""
        cache, keys, at_fixes = graph_pass
        pending = [(k, p) for k, p in cache.items() if isinstance(p, _Pending)]
        if pending:
            self._settle_all(pending, cache, at, self._at[at], [root for root, _ in at_fixes])
        return [cache[key] for key in keys]  # type: ignore[misc]

    def _graph_pass(self, records: Sequence[OomRecord], at: str) -> _GraphPass:
        """The first pass: per record, its judgement, or the fixes that would lift it
        (_Pending) when the trees must say."""
        at_sha = self._at[at]
        at_mask = self._masks.get(at_sha, 0)
        at_fixes = [(root, self._fix(root, at_mask)) for root in self._effective_roots(at_mask)]
        keys: list[tuple[str, str]] = [(rec.commit, rec.model) for rec in records]
        cache: dict[tuple[str, str], Judgement | _Pending] = {}
        if not at_fixes:
            return dict.fromkeys(keys, APPLIES), keys, at_fixes
        # Per model, the fixes in effect at `at` that match it. What the graph says depends only
        # on the model and the set of copies and reverts in the record commit's history (its
        # mask), which commits between two such events share: decided once per (mask, model).
        matching: dict[str, list[tuple[str, Fix]]] = {}
        per_commit: dict[str, tuple[str, int, bool] | str] = {}
        per_mask: dict[tuple[int, str], tuple[tuple[str, Fix], ...] | Judgement] = {}
        for rec, key in zip(records, keys, strict=True):
            if key in cache:
                continue
            fixes = matching.get(rec.model)
            if fixes is None:
                fixes = matching[rec.model] = [
                    (root, fix) for root, fix in at_fixes if first_match(fix.globs, rec.model)
                ]
            if not fixes:
                cache[key] = APPLIES
                continue
            info = per_commit.get(rec.commit)
            if info is None:
                info = per_commit[rec.commit] = self._commit_info(rec.commit)
            if isinstance(info, str):
                cache[key] = Judgement(Status.UNKNOWN, (fixes[0][1],), info)
                continue
            sha, mask, dirty = info
            graph = per_mask.get((mask, rec.model))
            if graph is None:
                graph = per_mask[(mask, rec.model)] = self._graph_verdict(mask, fixes)
            if isinstance(graph, Judgement):
                cache[key] = graph if graph.status == Status.APPLIES else self._shallow(graph, sha)
            elif self._doubt:
                cache[key] = Judgement(Status.UNKNOWN, (graph[0][1],), self._doubt)
            elif dirty:
                cache[key] = Judgement(
                    Status.UNKNOWN,
                    (graph[0][1],),
                    f"{rec.commit.strip()} was measured on uncommitted changes, which may hold "
                    f"{graph[0][1].describe()}",
                )
            elif not self._content:
                cache[key] = Judgement(Status.LIFTED, tuple(fix for _, fix in graph))
            else:
                cache[key] = _Pending(sha, graph, tuple(root for root, _ in graph))
        return cache, keys, at_fixes

    def _commit_info(self, commit_text: str) -> tuple[str, int, bool] | str:
        """A record's commit as (full SHA, the mask of its history, dirty), or why it is none."""
        commit = self._commits.get(commit_text) or read_commit(commit_text)
        if commit.hex is None:
            return commit.unknown or "no commit recorded"
        resolved = self._resolved.get(commit.hex)
        if resolved is None or resolved.sha is None:
            problem = resolved.problem if resolved else "missing"
            return self._unresolved(commit.hex, problem)
        return resolved.sha, self._masks.get(resolved.sha, 0), commit.dirty

    def _graph_verdict(
        self, mask: int, matching: list[tuple[str, Fix]]
    ) -> tuple[tuple[str, Fix], ...] | Judgement:
        """What the graph says of a record whose history has `mask`: APPLIES, UNKNOWN (a
        shallow cut hides where the fix could be: see _shallow), or the fixes that would lift
        it."""
        lifting = [(root, fix) for root, fix in matching if not self._classes[root].in_effect(mask)]
        if not lifting:
            return APPLIES
        cuts = mask & self._all_cuts
        provable = tuple(
            (root, fix) for root, fix in lifting if cuts & ~self._classes[root].cut_mask == 0
        )
        if not provable:
            return Judgement(Status.UNKNOWN, (lifting[0][1],))
        return provable

    @staticmethod
    def _shallow(graph: Judgement, sha: str) -> Judgement:
        fix = graph.fixes[0]
        return Judgement(
            Status.UNKNOWN,
            (fix,),
            f"shallow clone: the history of {sha} is cut off where {fix.describe()} could be "
            f"({_UNSHALLOW})",
        )

    def _settle_all(
        self,
        pending: list[tuple[tuple[str, str], _Pending]],
        cache: dict[tuple[str, str], Judgement | _Pending],
        at: str,
        at_sha: str,
        roots: list[str],
    ) -> None:
        """Replace each pending verdict in `cache` by its judgement, from the trees."""
        # Every fix in effect at `at`, at every commit asked about: judged per group of commits
        # with the same blobs, that costs less than knowing which fixes each commit needs.
        self._read_states({at_sha, *(p.sha for _, p in pending)}, set(roots))
        here = self._states_at(at_sha)
        lifts: dict[int, frozenset[str]] = {}
        judged: dict[int, Judgement] = {}
        for key, p in pending:
            there = self._states_at(p.sha)
            # The common case first: present here, absent (or declared) where measured.
            ok = lifts.get(id(there))
            if ok is None:
                ok = lifts[id(there)] = frozenset(
                    r
                    for r in roots
                    if there[r].state in _LIFTS_THERE and here[r].state in _LIFTS_HERE
                )
            if ok.issuperset(p.roots):
                # One judgement per set of fixes: records lifted alike share it.
                lifted = judged.get(id(p.fixes))
                if lifted is None:
                    lifted = judged[id(p.fixes)] = self._lifted(
                        tuple(fix for _, fix in p.fixes), at
                    )
                cache[key] = lifted
            else:
                cache[key] = self._settle(p, at, at_sha)

    # -- the content check --------------------------------------------------------------

    def _read_states(self, commits: Collection[str], roots: set[str]) -> None:
        """The state of each fix class in `roots` at each of `commits`, in one batch: commits
        are read once, and judged once per group of equal blobs at the fixes' paths. Each
        commit's entry in `_states` is its group's dict (shared, so a commit costs a lookup)."""

        states = self._states
        todo = [c for c in commits if c not in states or not roots <= states[c].keys()]
        if not todo:
            return
        try:
            snaps = self._ensure_snapshots()
            changes = snaps.changes
            groups = snaps.group_of(todo)
            copies = {
                root: [sha for sha, _ in self._classes[root].members if sha in changes]
                for root in roots
            }
            asked: dict[int, set[str]] = {}
            for g in set(groups.values()):
                left = roots - self._group_states.get(g, {}).keys()
                if left:
                    asked[g] = set(left)
            snaps.verdicts(
                {g: {sha for r in left for sha in copies[r]} for g, left in asked.items()}
            )
        except OomrecError as exc:
            why = Verdict(State.UNDECIDED, f"cannot read the fix's change ({exc})")
            for c in todo:
                states[c] = dict.fromkeys(roots, why)
            return
        for g, left in asked.items():
            at_g = self._group_states.setdefault(g, {})
            for root in left:
                shas = copies[root]
                if len(shas) == 1:
                    at_g[root] = self._copy_verdict(snaps.verdict(g, shas[0]), shas[0])
                elif shas:
                    at_g[root] = combine([self._copy_verdict(snaps.verdict(g, s), s) for s in shas])
                else:
                    at_g[root] = Verdict(State.UNDECIDED, "no patch to compare")
        for c in todo:
            states[c] = self._group_states[groups[c]]

    # -- partial copies -------------------------------------------------------------------

    def _states_at(self, commit: str) -> dict[str, Verdict]:
        """`_states[commit]` (read by _read_states), with each fix class whose copies in the
        commit's history carry only part of the fix made undecided: a pick with a file put
        back, a backport that copied the fix id, one part of a fix split over two commits."""
        got = self._partial.get(commit)
        if got is None:
            got = states = self._states[commit]
            for root in states:
                why = self._uncovered(commit, root)
                if why is not None:
                    if got is states:
                        got = dict(states)
                    got[root] = Verdict(State.UNDECIDED, why)
            self._partial[commit] = got
        return got

    def _uncovered(self, commit: str, root: str) -> str | None:
        """Why the copies of fix class `root` in `commit`'s history (those after the newest
        revert there) do not carry every file of the fix, or None when they do (or there are
        none: the tree decides then)."""
        full, files = self._fix_extent(root)
        cls = self._classes[root]
        mask = self._masks.get(commit, 0)
        cancelled = [bit for bit, depth in cls.events if depth % 2 and mask >> bit & 1]
        since = max(cancelled, default=-1)
        carried: set[bytes] = set()
        newest = ""
        for sha, bit in cls.members:
            if mask >> bit & 1 and bit > since:
                carried |= files.get(sha, frozenset())
                newest = newest or sha
        missing = sorted(full - carried)
        if not carried:
            return None
        problem = self._shared.get("extent_problem")
        if isinstance(problem, str) and problem:
            # Not knowing the whole fix is doubt: the record applies.
            return problem
        if not missing:
            return None
        shown = missing[0].decode("utf-8", "backslashreplace")
        return (
            f"the copy {short_commit(newest)} carries only part of the fix: no copy in this "
            f"history changes {shown}, which the fix changes (a partial pick or backport, or "
            "one part of a fix split over several commits?)"
        )

    def _fix_extent(self, root: str) -> tuple[frozenset[bytes], dict[str, frozenset[bytes]]]:
        """Every path fix class `root` changes, and the paths each of its copies changes. The
        fix is all its copies here, the commits they were picked from, and every commit on
        any ref naming one of its fix ids: none of that depends on which records are judged."""
        got = self._extent.get(root)
        if got is not None:
            return got
        from oomrec.store import gitrepo as gitutil

        changes = self._ensure_snapshots().changes
        memo: dict[str, frozenset[bytes] | None] = self._shared["files"]
        members = [sha for sha, _ in self._classes[root].members]
        related: set[str] = set()
        ids = {i.casefold() for sha in members for i in self.events[sha].fix_ids}
        if ids:
            if self._shared["ids"] is None:
                from git.exc import GitCommandError

                try:
                    from oomrec.staleness import fixgit

                    self._shared["ids"] = fixgit.commits_with_ids(self.repo, self.key)
                except GitCommandError as exc:
                    self._shared["ids"] = {}
                    self._shared["extent_problem"] = f"cannot list the fix id's commits ({exc})"
            for sha, names in self._shared["ids"].items():
                if ids & {n.casefold() for n in names}:
                    related.add(sha)
        for sha in members:
            related.update(p for p in self.events[sha].picked_from if len(p) in (40, 64))
        unknown = [sha for sha in related if sha not in changes and sha not in memo]
        if unknown:
            try:
                read = gitutil.changed_paths(self.repo, unknown)
            except OomrecError as exc:
                read = {}
                self._shared["extent_problem"] = f"cannot read what the fix's parts change ({exc})"
            for sha in unknown:
                memo[sha] = read.get(sha)

        def paths(sha: str) -> frozenset[bytes] | None:
            if sha in changes:
                return frozenset(f.path for f in changes[sha].files)
            return memo.get(sha)

        files = {sha: paths(sha) or frozenset() for sha in members}
        full: set[bytes] = set()
        for sha in [*members, *related]:
            full |= paths(sha) or frozenset()
        got = self._extent[root] = (frozenset(full), files)
        return got

    def _ensure_snapshots(self) -> Snapshots:
        """The fixes' changes (of every copy this History knows), read once."""
        from oomrec.staleness import content

        if self._snapshots is None:
            shas = {sha for cls in self._classes.values() for sha, _ in cls.members}
            self._snapshots = content.Snapshots(self.repo, content.read_changes(self.repo, shas))
        return self._snapshots

    def _lifted(self, fixes: tuple[Fix, ...], at: str) -> Judgement:
        """Lifted by `fixes`; at HEAD, unknown while the work tree changes a file they
        changed, or git is told not to look at one (what runs is the work tree, whose change
        the tree check did not see)."""
        dirty = self._dirty_paths(fixes) if at == "HEAD" else []
        if dirty:
            path, why = dirty[0]
            if why:
                text = (
                    f"{path}, which {fixes[0].describe()} changed, is {why}: git does not see "
                    "what the work tree holds there (git update-index --no-assume-unchanged "
                    "--no-skip-worktree, or git sparse-checkout disable, then check again)"
                )
            else:
                text = (
                    f"the work tree changes {path}, which {fixes[0].describe()} changed: what "
                    "runs is not HEAD's tree (commit or stash it, then check again)"
                )
            return Judgement(Status.UNKNOWN, (fixes[0],), text)
        return Judgement(Status.LIFTED, fixes)

    def _dirty_paths(self, fixes: Sequence[Fix]) -> list[tuple[str, str]]:
        """The paths these fixes' copies change that the work tree (or the index) changes from
        HEAD, with "" as why, or that git is told not to look at, with why: a record is judged
        at HEAD, but what a sweep runs is the work tree. One `git status` and one `git
        ls-files` per History; none in a bare repository."""
        if self._snapshots is None or self.repo.working_tree_dir is None:
            return []
        changes = self._snapshots.changes
        paths = {
            f.path.decode("utf-8", "surrogateescape")
            for fix in fixes
            for sha in fix.copies
            if sha in changes
            for f in changes[sha].files
        }
        # oomrec's own outputs (the record, provenance, its CSVs) are not code: a fix that
        # committed some does not stop applying while the next sweep writes them. Any other
        # file counts, a CSV the code reads (a tuning table) too.
        paths = {p for p in paths if not _is_oomrec_output(p)}
        if self._shared["dirty"] is None:
            from oomrec.store import gitrepo as gitutil

            every = {
                f.path.decode("utf-8", "surrogateescape")
                for change in changes.values()
                for f in change.files
            }
            try:
                state = gitutil.work_tree(Path(self.repo.working_tree_dir), every)
                self._shared["dirty"] = {**dict.fromkeys(state.changed, ""), **state.hidden}
            except OomrecError as exc:
                self._shared["dirty"] = dict.fromkeys(every, f"unreadable by git status ({exc})")
        dirty: dict[str, str] = self._shared["dirty"]
        return sorted((p, dirty[p]) for p in paths if p in dirty)

    def _copy_verdict(self, verdict: Verdict, sha: str) -> Verdict:
        """A copy that changes no file is declared (its place in history decides) unless it is
        a merge or a pick: their change is what they brought, and none is no proof."""
        why = self._undeclarable.get(sha) if verdict.state == State.DECLARED else None
        return verdict if why is None else Verdict(State.UNDECIDED, why)

    def _settle(self, pending: _Pending, at: str, at_sha: str) -> Judgement:
        """A record the graph would lift: lifted by the fixes whose change is present at `at`
        and absent where it was measured; otherwise it applies, unknown when the tree cannot
        say (the reason names the fix and the file)."""
        where = "HEAD" if at == "HEAD" else short_commit(at_sha)
        lifted: list[Fix] = []
        unknown: tuple[Fix, str] | None = None
        kept: tuple[Fix, str] | None = None
        for root, fix in pending.fixes:
            here = self._states_at(at_sha)[root]
            there = self._states_at(pending.sha)[root]
            if here.state == State.ABSENT:
                kept = kept or (
                    fix,
                    f"{fix.describe()} is in {where}'s history but its change is not in "
                    f"{where}'s tree (merged with -s ours, or reverted by hand?)",
                )
            elif here.state == State.UNDECIDED:
                unknown = unknown or (
                    fix,
                    f"{where}'s tree may not hold the change of {fix.describe()}: {here.reason}",
                )
            elif there.state == State.PRESENT:
                kept = kept or (
                    fix,
                    f"measured at {short_commit(pending.sha)} on code that already had the "
                    f"change of {fix.describe()}",
                )
            elif there.state == State.UNDECIDED:
                unknown = unknown or (
                    fix,
                    f"cannot tell whether {short_commit(pending.sha)} had the change of "
                    f"{fix.describe()}: {there.reason}",
                )
            else:
                lifted.append(fix)
        if lifted:
            return self._lifted(tuple(lifted), at)
        if unknown is not None:
            return Judgement(Status.UNKNOWN, (unknown[0],), unknown[1])
        assert kept is not None
        return Judgement(Status.APPLIES, (kept[0],), kept[1])

    def _unresolved(self, hex_: str, problem: str | None) -> str:
        if problem == "missing" and self._cut_commits:
            return f"shallow clone: commit {hex_} is not in the fetched history ({_UNSHALLOW})"
        if problem == "missing":
            return f"commit {hex_} not in this repository (rebased away or from another clone?)"
        if problem == "ambiguous":
            return f"short SHA {hex_} is ambiguous in this repository (record the full SHA)"
        return f"{hex_} is a {problem}, not a commit"

    def fix_of(self, sha: str) -> tuple[str, Fix] | None:
        """The fix that commit `sha` is a copy of (its class and how HEAD's history shows it)."""
        head_mask = self._masks.get(self._at.get("HEAD", ""), 0)
        for root, cls in self._classes.items():
            if any(member == sha for member, _ in cls.members):
                return root, self._fix(root, head_mask)
        return None

    def in_effect_at(self, root: str, rev: str = "HEAD") -> bool:
        """Whether the fix `root` (from fix_of) is in effect at revision `rev`: in its history
        as the graph reads it, and its change not absent from its tree."""
        sha = self._at[rev]
        if root not in self._effective_roots(self._masks.get(sha, 0)):
            return False
        if not self._content:
            return True
        self._read_states([sha], {root})
        return self._states_at(sha)[root].state != State.ABSENT


class _PrefixIndex:
    """Full event SHAs by the (possibly short) SHA a message names."""

    def __init__(self, events: Collection[str]) -> None:
        self._full = set(events)
        self._sorted = sorted(events)

    def get(self, text: str) -> str | None:
        text = text.lower()
        if text in self._full:
            return text
        i = bisect_left(self._sorted, text)
        hits: list[str] = []
        while i < len(self._sorted) and self._sorted[i].startswith(text) and len(hits) < 2:
            hits.append(self._sorted[i])
            i += 1
        return hits[0] if len(hits) == 1 else None


def _undeclarable(events: dict[str, Event], graph: list[list[str]]) -> dict[str, str]:
    """The fix commits that cannot be declared fixes when they change no file, and why: a merge
    that brought nothing to its first parent (`merge -s ours` of the fix's branch, the trailer
    on the merge) and a cherry-pick (of a change the branch had already, or a conflict resolved
    to ours). Only a plain empty commit declares a fix outside the tree."""
    out: dict[str, str] = {}
    for row in graph:
        event = events.get(row[0])
        if event is not None and (event.globs or event.fix_ids) and len(row) > 2:
            out[row[0]] = (
                "it is a merge that brought no change to its first parent (merged with -s ours?)"
            )
    for sha, event in events.items():
        if (event.globs or event.fix_ids) and event.picked_from and sha not in out:
            out[sha] = (
                "it is a cherry-pick that changes no file (the change was there already, or a "
                "conflict was resolved to ours)"
            )
    return out


def _is_oomrec_output(path: str) -> bool:
    """Whether a repo-relative path is one oomrec writes, never code: the record and the files
    beside it, a provenance sidecar and its journal, a sweep's or `oomrec run`'s CSV."""
    from oomrec.core.provenance import JOURNAL_SUFFIX
    from oomrec.core.records import SIDE_SUFFIXES
    from oomrec.store.locations import DEFAULT_RECORD, RUN_LOG_TAG, SWEEP_CSV_TAG

    name = posixpath.basename(path)
    record = DEFAULT_RECORD.name
    if name == record or any(name == record + suffix for suffix in SIDE_SUFFIXES):
        return True
    if name.endswith((SIDECAR_SUFFIX, SIDECAR_SUFFIX + JOURNAL_SUFFIX)):
        return True
    return name.endswith(".csv") and (
        f"_{SWEEP_CSV_TAG}_" in name or name.endswith(f"_{RUN_LOG_TAG}.csv")
    )


def _masks(graph: list[list[str]], bits: dict[str, int]) -> dict[str, int]:
    """Per commit, the bit set of the events in its history (and the shallow cuts it reaches);
    `graph` lists every parent before its children."""
    masks: dict[str, int] = {}
    get = masks.get
    for row in graph:
        mask = bits.get(row[0], 0)
        for parent in row[1:]:
            mask |= get(parent, 0)
        masks[row[0]] = mask
    return masks


def _subject(repo: git.Repo, sha: str) -> str:
    return str(repo.git.log("-1", "--format=%s", "--no-show-signature", sha))


def open_history(
    key: str,
    commits: Iterable[str],
    at: Sequence[str] = ("HEAD",),
    extra_fixes: dict[str, tuple[str, ...]] | None = None,
) -> History | None:
    """The history of the repository around the cwd, or None outside git or before its first
    commit (no fix can be in effect there: every record applies)."""
    repo = repo_with_head()
    if repo is None:
        return None
    return History(repo, key, commits, at=at, extra_fixes=extra_fixes)


def repo_with_head() -> git.Repo | None:
    """The repository around the cwd, None outside git or before its first commit. Importing
    GitPython is most of its cost (~0.09 s): the report pays it in a thread beside its scan."""
    from oomrec.store import gitrepo as gitutil

    repo = gitutil.open_repo()
    if repo is None or gitutil.head_sha(repo) is None:
        return None
    return repo


def judge_all(history: History | None, records: Sequence[OomRecord]) -> list[Judgement]:
    """Each record's judgement at HEAD; all apply without a history."""
    if history is None:
        return [APPLIES] * len(records)
    return history.judge(records)


def hygiene(history: History, models: Collection[str]) -> list[str]:
    """What is wrong with the fix trailers in the history, for `record stale` to warn about."""
    out: list[str] = []
    for sha, event in history.events.items():
        short = short_commit(sha)
        for glob in event.globs:
            if " " in glob.strip():
                out.append(
                    f"commit {short}: {history.key} glob {glob!r} holds a space; separate "
                    "globs with commas"
                )
            elif models and not any(fnmatchcase(m, glob) for m in models):
                folded = [m for m in models if fnmatchcase(m.casefold(), glob.casefold())]
                if folded:
                    out.append(
                        f"commit {short}: {history.key} glob {glob!r} matches no model, but "
                        f"would match {folded[0]!r} ignoring case (globs are case-sensitive)"
                    )
        for line in event.loose:
            out.append(
                f"commit {short}: {line!r} is not in the trailer block, so it fixes nothing; "
                f"make it a trailer: git commit --amend --trailer '{line.strip()}' (or put it "
                "in the message's last paragraph)"
            )
    return out
