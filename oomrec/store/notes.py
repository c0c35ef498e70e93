"""Shared records: OOM records that travel between machines in git notes.

Each host writes only its own notes ref, `refs/notes/oomrec/<host-id>`: one note per record
commit (the full SHA), holding that commit's record lines, sorted. Pushes of a host's own ref
fast-forward; a rejected push (two clones with one host-id) is merged (with only the lines
this host may have written: store/owners.py) and retried. `oomrec remote setup` adds a fetch
refspec that brings every host's ref into `refs/notes/remotes/<remote>/oomrec/`, so a plain
`git fetch` updates them and never touches a local ref.

Reading is a fixed number of git processes however many hosts and records: one
`for-each-ref`, then every notes tree and blob through GitPython's one persistent
`cat-file --batch`. What is read is judged by who may have written it (store/owners.py).

Only evidence another machine can judge is published: a record with a hardware tag and a known
memory size, measured at a commit that is on a branch of the remote. The rest stays local and
`record push` says why.
"""

from __future__ import annotations

import os
import re
import socket
import time
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from oomrec.core import gitrun, lock
from oomrec.core.errors import OomrecError
from oomrec.core.hardware import detect_memory
from oomrec.core.records import (
    KIND_FAKE,
    NotARecord,
    OomRecord,
    RecordFile,
    evidence_key,
    parse_line,
    read_commit,
    short_commit,
)
from oomrec.core.shown import visible
from oomrec.store import owners
from oomrec.store.locations import load_settings
from oomrec.store.noterefs import KEPT_PREFIX, LOCAL_PREFIX, REMOTES_PREFIX, host_of, in_namespace
from oomrec.store.retractions import (
    NOTE_RESTORED,
    NOTE_RETRACTED,
    Event,
    from_the_future,
    parse_note_line,
)

if TYPE_CHECKING:
    import git

HOST_ENV = "OOMREC_HOST"
PUSH_TRIES = 3
_FULL_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


def host_id(hardware: str) -> str:
    """This host's id: its hardware tag, `-`, and `$OOMREC_HOST` or else the short host name
    (`$OOMREC_HOST` that starts with the tag and `-` is the whole id). Always the tag first:
    readers take a ref's lines as its host's only when they carry that tag (store/owners.py)."""
    override = os.environ.get(HOST_ENV, "").strip()
    name = owners.safe_id(override or socket.gethostname().split(".")[0])
    if override and not name:
        raise OomrecError(
            f"{HOST_ENV}={override!r} is not a usable host id; use letters and digits"
        )
    tag = owners.safe_id(hardware)
    if name == tag or name.startswith(f"{tag}-"):
        return name
    return owners.safe_id(f"{tag}-{name}")


def local_ref(host: str) -> str:
    return f"{LOCAL_PREFIX}{host}"


def tracking_prefix(remote: str) -> str:
    return f"{REMOTES_PREFIX}{remote}/oomrec/"


def kept_ref(remote: str, tip: str, host: str) -> str:
    """Where an old tip of host `host`'s notes that lost lines is kept: read, never pruned."""
    return f"{KEPT_PREFIX}{remote}/{tip[:12]}/oomrec/{host}"


def refspec(remote: str) -> str:
    return f"+{LOCAL_PREFIX}*:{tracking_prefix(remote)}*"


@dataclass(frozen=True, slots=True)
class NoteLine:
    """A record line read from a host's notes: `host` as shown (escaped), `owner` as the ref
    names it (what the ownership rules compare)."""

    host: str
    ref: str
    commit: str
    text: str
    record: OomRecord | None
    owner: str = ""


# -- reading ------------------------------------------------------------------------------


def note_refs(repo: git.Repo, warnings: list[str] | None = None) -> list[tuple[str, str]]:
    """(ref, host id) of every host's notes ref: this clone's and every remote's fetched ones,
    each known by its exact name (noterefs.host_of).

    A ref in those namespaces that names no host (`.../oomrec/x/oomrec/gb10-honest`: pushed
    nested, it is not gb10-honest's) is not read, with one warning naming it. A notes ref is a
    commit: one that points at anything else (a blob, a tree, a tag: someone pushed garbage
    there) is left out the same way; git itself leaves out a ref whose object is missing. The
    other hosts' refs are read as ever."""
    out = repo.git.for_each_ref(
        "--format=%(objecttype) %(refname)", LOCAL_PREFIX, REMOTES_PREFIX, KEPT_PREFIX
    )
    found = []
    for line in out.split("\n"):
        kind, _, ref = line.partition(" ")
        if not in_namespace(ref):
            continue
        host = host_of(ref)
        # A ref name another host pushed may hold a terminal's escapes (git allows them).
        shown = visible(ref)
        if host is None:
            if warnings is not None:
                warnings.append(
                    f"warning: {shown} is not a host's notes ref (a host's is "
                    f"{LOCAL_PREFIX}<host>, one name): its records are not read (delete it: "
                    f"git update-ref -d {shown})"
                )
            continue
        if kind != "commit":
            if warnings is not None:
                warnings.append(
                    f"warning: {shown} points at a {kind or 'missing object'}, not a notes "
                    f"commit: its records are not read (delete it: git update-ref -d {shown})"
                )
            continue
        found.append((ref, host))
    return found


def read_refs(repo: git.Repo, refs: Sequence[str]) -> dict[str, dict[str, str]]:
    """The notes of notes refs, {ref: {annotated commit SHA: note text}}: their trees level by
    level (a notes tree fans out as `ab/cdef...` when it grows), then every note blob, each
    level in ONE `git cat-file --batch`."""
    from oomrec.store import gitrepo as gitutil

    notes: dict[str, dict[str, str]] = {ref: {} for ref in refs}
    # (ref, path so far, object name) of the trees still to read.
    trees = [(ref, "", f"{ref}^{{tree}}") for ref in refs]
    blobs: list[tuple[str, str, str]] = []
    # A SHA-256 tree's ids are 32 bytes: read as 20, a fanned-out notes tree lost whole subtrees.
    id_size = gitutil.object_id_size(repo) if refs else 20
    while trees:
        read = gitutil.read_objects(repo, [name for _, _, name in trees])
        deeper = []
        for (ref, prefix, _), found in zip(trees, read, strict=True):
            if found is None or found[0] != "tree":
                continue
            for mode, name, sha in _tree_entries(found[1], id_size):
                path = prefix + name
                if mode == b"40000":
                    deeper.append((ref, path, sha))
                elif _FULL_SHA.fullmatch(path):
                    blobs.append((ref, path, sha))
        trees = deeper
    contents = gitutil.read_objects(repo, [sha for _, _, sha in blobs])
    for (ref, path, _), found in zip(blobs, contents, strict=True):
        if found is not None and found[0] == "blob":
            notes[ref][path] = found[1].decode("utf-8", errors="surrogateescape")
    return notes


def read_ref(repo: git.Repo, ref: str) -> dict[str, str]:
    """The notes of one notes ref: {annotated commit SHA: note text}."""
    return read_refs(repo, [ref])[ref]


def _tree_entries(data: bytes, id_size: int) -> list[tuple[bytes, str, str]]:
    from oomrec.store import gitrepo as gitutil

    return [
        (mode, name.decode("ascii", errors="replace"), oid.hex())
        for mode, name, oid in gitutil.tree_entries(data, id_size)
    ]


def read_all(
    repo: git.Repo, skip_host: str | None = None, warnings: list[str] | None = None
) -> list[NoteLine]:
    """Every line in every host's notes ref (each distinct line once per host: a line is its
    host's claim, and another host's copy of it is another's), in ref order. `skip_host`: this
    host's own local ref, whose lines are copies of the local record. What cannot be read is
    said in `warnings`."""
    seen: set[tuple[str, str]] = set()
    lines: list[NoteLine] = []
    refs = [
        (ref, host) for ref, host in note_refs(repo, warnings) if ref != local_ref(skip_host or "")
    ]
    everything = read_refs(repo, [ref for ref, _ in refs])
    for ref, host in refs:
        # Shown in listings and log lines as it is named, escaped once, here.
        shown = visible(host)
        for commit, text in everything[ref].items():
            for raw in text.split("\n"):
                raw = raw.strip("\r")
                if not raw.strip() or (host, raw) in seen:
                    continue
                seen.add((host, raw))
                try:
                    record: OomRecord | None = parse_line(raw)
                except NotARecord:
                    record = None
                lines.append(NoteLine(shown, ref, commit, raw, record, host))
    return lines


def shared(
    known: Iterable[OomRecord],
    hardware: str,
    warnings: list[str] | None = None,
    local_events: Iterable[Event] = (),
) -> list[NoteLine]:
    """The record lines other hosts published (and this one fetched) that apply as evidence
    (read_owned: each host's own, not taken back), less the evidence `known` already holds
    (the local record and archive: the same evidence key, however the line is written), each
    evidence once; [] outside git. Reads no git when no notes ref exists beyond a loose
    `for-each-ref`."""
    from oomrec.store import gitrepo as gitutil

    repo = gitutil.open_repo()
    if repo is None:
        return []
    seen = {evidence_key(record) for record in known}
    lines = []
    for line in read_owned(repo, hardware, warnings, local_events).applying:
        assert line.record is not None
        key = evidence_key(line.record)
        if key not in seen:
            seen.add(key)
            lines.append(line)
    return lines


@dataclass
class Owned:
    """The shared notes as the ownership rules (store/owners.py) leave them."""

    # Record lines their host may have written and published, not taken back: every host's.
    applying: list[NoteLine] = field(default_factory=list)
    # What took back the evidence of which no line applies any more: the retractions and
    # restores of it that may take back a line read (this clone's own left out).
    events: list[Event] = field(default_factory=list)
    # Record lines each host's refs carry as its own (shown names), taken back or not.
    by_host: dict[str, int] = field(default_factory=dict)


def read_owned(
    repo: git.Repo,
    hardware: str,
    warnings: list[str] | None = None,
    local_events: Iterable[Event] = (),
    *,
    skip_own: bool = True,
) -> Owned:
    """Every host's notes (this host's own local ref too unless `skip_own`), each line judged
    by who may have written it:

    - a line applies only if `record push` would have published it (`why_local`): a line no
      publisher writes (no hardware tag, no memory, faked, an unknown or dirty commit, or no
      record at all) came from elsewhere;
    - and only in the ref of a host of its kind (owners.not_its_own): a line of another tag,
      or under this host's id of more memory than it has, is no measurement of the ref's host.

    The others are kept aside where they are (never applied, never deleted), counted per ref in
    one warning. A line is taken back when its latest retraction event, among those that may
    take it back (owners.Standing: its own host's, an admin host's, `local_events`: this
    clone's archive's), is a retraction; events that may take back no line read are said per
    ref, and retractions stamped in the future are left out, said once."""
    # The settings of the repository read, wherever the caller stands.
    settings = load_settings(Path(repo.working_dir))
    admins = owners.admin_hosts(settings.tool, settings.source)
    me = owners.Machine(host_id(hardware), detect_memory())
    own_ref = local_ref(me.host)
    read = read_all(repo, skip_host=me.host if skip_own else None, warnings=warnings)
    aside: dict[str, dict[str, int]] = {}
    owned: list[NoteLine] = []
    events: list[tuple[str | None, Event]] = [(None, event) for event in local_events]
    event_refs: dict[int, str] = {}
    for line in read:
        if line.text.startswith((NOTE_RETRACTED, NOTE_RESTORED)):
            event = parse_note_line(line.text)
            if event is not None:
                # This clone's own published events are its archive's: they apply as those do.
                events.append((None if line.ref == own_ref else line.owner, event))
                event_refs[id(event)] = line.ref
            continue
        if line.record is None:
            why = "not a record line"
        else:
            why = why_local(line.record) or owners.not_its_own(
                line.owner, line.record, me, own_ref=line.ref == own_ref
            )
        if why:
            by_why = aside.setdefault(line.ref, {})
            by_why[why] = by_why.get(why, 0) + 1
            continue
        owned.append(line)
    result = Owned()
    for line in owned:
        result.by_host[line.host] = result.by_host.get(line.host, 0) + 1
    standing = owners.Standing(events, admins)
    future: list[Event] = []
    if not standing.by_key:
        result.applying = owned
    else:
        carried = {(x.owner, evidence_key(x.record)) for x in owned if x.record is not None}
        trusted = [event for by, event in standing.trusted(carried) if by is not None]
        future = from_the_future(trusted)
        result.applying = [
            x for x in owned if x.record is not None and not standing.hides(x.owner, x.record)
        ]
        held = {evidence_key(x.record) for x in result.applying if x.record is not None}
        result.events = [e for e in trusted if evidence_key(e.record) not in held]
        ids = {id(event) for event in trusted}
        for by, event in events:
            if by is not None and id(event) not in ids:
                by_why = aside.setdefault(event_refs[id(event)], {})
                by_why[_NOT_THEIRS] = by_why.get(_NOT_THEIRS, 0) + 1
    if warnings is not None:
        if future:
            warnings.append(
                f"warning: {len(future)} retraction(s) in shared notes are stamped in the "
                f"future (the first: {visible(future[0].stamp)}); left out, so the records "
                "they name apply"
            )
        for ref, by_why in aside.items():
            said = "; ".join(f"{n} {why}" for why, n in by_why.items())
            warnings.append(
                f"warning: {visible(ref)}: lines no publisher writes, not applied ({said})"
            )
    return result


_NOT_THEIRS = (
    "retraction(s) or restore(s) of records another host published (only that host, or one "
    f"[tool.oomrec] {owners.ADMIN_KEY} names, takes a record back)"
)


# -- publishing ---------------------------------------------------------------------------


@dataclass
class PushPlan:
    host: str
    remote: str
    # This host's hardware tag and memory: the remote's lines under its id must be of its tag
    # (its id starts with it) and no larger memory to be merged (owners.not_its_own).
    hardware: str | None = None
    mem: int | None = None
    # Full commit SHA -> the record lines to publish for it.
    publish: dict[str, list[str]] = field(default_factory=dict)
    kept_back: list[tuple[str, str]] = field(default_factory=list)

    @property
    def count(self) -> int:
        return sum(len(lines) for lines in self.publish.values())


def plan_push(
    repo: git.Repo,
    record_file: RecordFile,
    host: str,
    remote: str,
    hardware: str | None = None,
    mem: int | None = None,
) -> PushPlan:
    """Which local records can go to `remote`, and why the others stay local."""
    from oomrec.store import archive
    from oomrec.store import gitrepo as gitutil

    check_remote(repo, remote)
    plan = PushPlan(host, remote, hardware, mem)
    loaded = record_file.load()
    candidates: list[tuple[str, OomRecord]] = []
    for line in loaded.lines:
        rec = line.record
        if rec is None:
            continue
        why = why_local(rec)
        if why:
            plan.kept_back.append((line.text, why))
        else:
            candidates.append((line.text, rec))
    # Retractions (and their undoing) of records another host can judge travel with them, so
    # other hosts stop applying a record taken back here. One another host cannot judge was
    # never published: its retraction stays local too, silently.
    for event in archive.events(archive.load(record_file, loaded)):
        if not why_local(event.record):
            candidates.append((event.note_line(), event.record))
    resolved = gitutil.resolve_many(repo, {rec.commit.lower() for _, rec in candidates})
    shas = {r.sha for r in resolved.values() if r.sha}
    off_remote = gitutil.not_on_remote(repo, shas, remote)
    for text, rec in candidates:
        found = resolved.get(rec.commit.lower())
        if found is None or found.sha is None:
            plan.kept_back.append((text, f"commit {rec.commit} is not in this repository"))
        elif found.sha in off_remote:
            why = f"commit {short_commit(rec.commit)} is on no branch of {remote} (push it first)"
            plan.kept_back.append((text, why))
        else:
            plan.publish.setdefault(found.sha, []).append(text)
    return plan


def why_local(rec: OomRecord) -> str:
    """Why `rec` stays on this machine ("" when another can judge it): the one rule `record
    push` publishes by and every reader of shared records applies by."""
    if rec.kind == KIND_FAKE:
        return "faked with --fake-oom (no OOM was seen)"
    if not rec.hardware:
        return "no hardware tag (it would apply to every machine)"
    if rec.mem_bytes is None:
        return "memory unknown (it would apply to machines of any size)"
    commit = read_commit(rec.commit)
    if commit.hex is None:
        return commit.unknown
    if commit.dirty:
        return "measured on uncommitted changes"
    return ""


def writing(repo: git.Repo) -> AbstractContextManager[None]:
    """The lock (in the repository's git dir) a writer of this clone's notes refs holds;
    lock.LockTimeout after 300 s."""
    return lock.holding(Path(repo.common_dir, "oomrec-notes.lock"), 300)


def write_notes(repo: git.Repo, plan: PushPlan) -> int:
    """Merge the plan's lines into this host's notes ref, in one `git fast-import`. Returns how
    many lines were new (0: nothing written, the ref unchanged).

    Call it under `writing(repo)` (as `push` too): two writers of one clone (a fleet's shards
    on one machine) would both read the same tip, and the second's fast-import then fails to
    create or move the ref (`cannot lock ref ... reference already exists`)."""
    ref = local_ref(plan.host)
    old_tip = _tip(repo, ref)
    current = read_ref(repo, ref) if old_tip else {}
    bodies: dict[str, set[str]] = {}
    new = 0
    for sha, lines in plan.publish.items():
        before = _lines(current.get(sha, ""))
        union = before | set(lines)
        if union != before:
            new += len(union - before)
            bodies[sha] = union
    if not bodies:
        return 0
    message = f"oomrec: {new} record line(s) from {plan.host}"
    _commit_notes(repo, ref, [old_tip] if old_tip else [], bodies, message)
    return new


def _lines(text: str) -> set[str]:
    return {line for line in text.split("\n") if line.strip()}


def _commit_notes(
    repo: git.Repo, ref: str, parents: Sequence[str], bodies: dict[str, set[str]], message: str
) -> None:
    """One commit on `ref`, on top of `parents` (the first's notes are its notes' base), whose
    note of each commit in `bodies` holds those lines, sorted: one `git fast-import`."""
    name, email = _committer(repo)
    text = f"{message}\n".encode()
    stream = [
        f"commit {ref}\n".encode(),
        f"committer {name} <{email}> {int(time.time())} +0000\n".encode(),
        f"data {len(text)}\n".encode() + text,
    ]
    if parents:
        stream.append(f"from {parents[0]}\n".encode())
    stream += [f"merge {parent}\n".encode() for parent in parents[1:]]
    for sha, lines in sorted(bodies.items()):
        data = "".join(f"{x}\n" for x in sorted(lines)).encode("utf-8", errors="surrogateescape")
        stream.append(f"N inline {sha}\ndata {len(data)}\n".encode() + data + b"\n")
    stream.append(b"done\n")
    _run_stdin(repo, ["fast-import", "--quiet", "--done"], b"".join(stream))


def push(repo: git.Repo, plan: PushPlan, warnings: list[str] | None = None) -> tuple[bool, int]:
    """Publish this host's ref to the remote; on a rejection, fetch, merge, retry. Returns
    (whether anything was pushed, how many tries it took)."""
    ref = local_ref(plan.host)
    if not _tip(repo, ref):
        return False, 0
    tracking = f"{tracking_prefix(plan.remote)}{plan.host}"
    for attempt in range(1, PUSH_TRIES + 1):
        # The remote as it is now, not as last fetched: another machine may have rewound,
        # deleted or replaced this ref since, and the remote must hold what this ref holds.
        if _remote_tip(repo, plan.remote, ref) == _tip(repo, ref):
            return False, attempt
        try:
            repo.git.push("--quiet", "--end-of-options", plan.remote, f"{ref}:{ref}")
        except _git_error() as exc:
            if attempt == PUSH_TRIES:
                raise OomrecError(
                    f"git push {plan.remote} {ref} was rejected {PUSH_TRIES} times "
                    f"({_stderr(exc)}); try again later"
                ) from None
            _fetch(repo, plan.remote, f"+{ref}:{tracking}")
            _merge_remote(repo, plan, tracking, warnings)
            continue
        _fetch(repo, plan.remote, f"+{ref}:{tracking}")
        return True, attempt
    return False, PUSH_TRIES


def _merge_remote(
    repo: git.Repo, plan: PushPlan, tracking: str, warnings: list[str] | None
) -> None:
    """Make this host's ref descend from the remote's copy of it (fetched to `tracking`), so
    the next push fast-forwards: a merge whose notes are this ref's (notes only ever gain
    lines: a remote tip that dropped some gets them back) and those of the remote's lines this
    host may have written, as another clone under its id does (retraction events, and records
    of this host's tag and no more memory than it has: owners.not_its_own).

    Any other line (another machine's, one no publisher writes, one that is no record) is not
    merged, so never republished as this host's: it stays in the remote tip (a parent of the
    merge), which is kept under refs/notes/kept/ too, with one warning in `warnings`. It
    cannot stop this host publishing."""
    ref = local_ref(plan.host)
    ours_tip, theirs_tip = _tip(repo, ref), _tip(repo, tracking)
    if not theirs_tip:
        return
    read = read_refs(repo, [ref, tracking])
    me = owners.Machine(plan.host, plan.mem)
    bodies: dict[str, set[str]] = {}
    refused: dict[str, int] = {}
    for sha, text in read[tracking].items():
        have = _lines(read[ref].get(sha, ""))
        take = set()
        for raw in _lines(text) - have:
            why = _not_mine(raw.strip("\r"), me)
            if why:
                refused[why] = refused.get(why, 0) + 1
            else:
                take.add(raw)
        if take:
            bodies[sha] = have | take
    message = f"oomrec: merge {plan.remote}'s {ref} into {plan.host}'s"
    _commit_notes(repo, ref, [ours_tip, theirs_tip], bodies, message)
    if not refused:
        return
    kept = kept_ref(plan.remote, theirs_tip, plan.host)
    repo.git.update_ref(kept, theirs_tip)
    if warnings is not None:
        said = "; ".join(f"{n} {why}" for why, n in sorted(refused.items()))
        warnings.append(
            f"warning: {plan.remote}'s {ref} holds lines this host did not write ({said}): not "
            f"merged into this host's ref, kept in {visible(kept)}"
        )


def _not_mine(raw: str, me: owners.Machine) -> str:
    """Why `raw`, a line of the remote's copy of this host's ref, is none this host (another
    clone under its id) may have written ("" when it may)."""
    if parse_note_line(raw) is not None:
        # A retraction event is its publisher's, whoever measured its record.
        return ""
    try:
        record = parse_line(raw)
    except NotARecord:
        return "not a record line"
    return why_local(record) or owners.not_its_own(me.host, record, me, own_ref=False)


def pull(repo: git.Repo, remote: str, warnings: list[str] | None = None) -> list[str]:
    """Fetch every host's notes from `remote` into its tracking namespace; returns the refs.

    Evidence is never lost to a ref rewritten on the remote: a tracking ref whose new notes
    lack record lines its old ones held (a force push, a commit that drops notes, a deleted
    ref) keeps its old tip under `refs/notes/kept/<remote>/<sha>/oomrec/<host>`, which readers
    read like any host's ref and no fetch prunes; said in `warnings`. Judged by the lines, not
    by whether the update was a fast-forward."""
    check_remote(repo, remote)
    prefix = tracking_prefix(remote)
    before = _tips(repo, prefix)
    _fetch(repo, remote, refspec(remote))
    after = _tips(repo, prefix)
    changed = [ref for ref, tip in before.items() if after.get(ref) != tip]
    if changed:
        _keep_lost_lines(repo, remote, changed, before, after, warnings)
    return [ref for ref, _ in note_refs(repo) if ref.startswith(prefix)]


def _tips(repo: git.Repo, prefix: str) -> dict[str, str]:
    out = repo.git.for_each_ref("--format=%(objectname) %(objecttype) %(refname)", prefix)
    tips = {}
    for line in out.split("\n"):
        sha, kind, ref = [*line.split(" ", 2), "", ""][:3]
        # A host's ref only: a nested one (noterefs.host_of) is no host's and is not read.
        if kind == "commit" and host_of(ref) is not None:
            tips[ref] = sha
    return tips


def _keep_lost_lines(
    repo: git.Repo,
    remote: str,
    changed: Sequence[str],
    before: dict[str, str],
    after: dict[str, str],
    warnings: list[str] | None,
) -> None:
    old = read_refs(repo, [before[ref] for ref in changed])
    new = read_refs(repo, sorted({after[ref] for ref in changed if ref in after}))
    for ref in changed:
        held = _record_lines(old[before[ref]])
        lost = held - (_record_lines(new[after[ref]]) if ref in after else set())
        if not lost:
            continue
        host = host_of(ref) or ""
        kept = kept_ref(remote, before[ref], host)
        repo.git.update_ref(kept, before[ref])
        if warnings is not None:
            warnings.append(
                f"warning: {remote}'s notes of {visible(host)} no longer hold {len(lost)} record "
                f"line(s) they held (rewritten there); kept in {visible(kept)}, where they "
                "still apply"
            )


def _record_lines(notes: dict[str, str]) -> set[tuple[str, str]]:
    """(annotated commit, line) of every line of these notes: what a rewrite may drop."""
    return {
        (commit, line.strip("\r"))
        for commit, text in notes.items()
        for line in text.split("\n")
        if line.strip()
    }


def setup(repo: git.Repo, remote: str) -> bool:
    """Add the notes fetch refspec to `remote` (never a push refspec); False when present."""
    check_remote(repo, remote)
    spec = refspec(remote)
    try:
        present = repo.git.config("--get-all", f"remote.{remote}.fetch").split("\n")
    except _git_error():
        present = []
    if spec in present:
        return False
    repo.git.config("--add", f"remote.{remote}.fetch", spec)
    return True


def check_remote(repo: git.Repo, remote: str) -> None:
    names = repo.git.remote().split()
    if remote not in names:
        shown = ", ".join(names) or "none"
        raise OomrecError(
            f"no git remote named {remote!r} (remotes: {shown}); add one with git remote add"
        )


# -- helpers ------------------------------------------------------------------------------


def _tip(repo: git.Repo, ref: str) -> str:
    try:
        return str(repo.git.rev_parse("--verify", "--quiet", ref))
    except _git_error():
        return ""


def _remote_tip(repo: git.Repo, remote: str, ref: str) -> str:
    """What `ref` is on `remote` right now ("" when it has none), in one `git ls-remote`."""
    try:
        out = str(repo.git.ls_remote("--end-of-options", remote, ref))
    except _git_error() as exc:
        raise OomrecError(
            f"git ls-remote {remote} failed ({_stderr(exc)}); check the remote"
        ) from None
    for line in out.splitlines():
        sha, _, name = line.partition("\t")
        if name == ref:
            return sha
    return ""


def _committer(repo: git.Repo) -> tuple[str, str]:
    name = os.environ.get("GIT_COMMITTER_NAME") or _config(repo, "user.name")
    email = os.environ.get("GIT_COMMITTER_EMAIL") or _config(repo, "user.email")
    if not name or not email:
        raise OomrecError(
            "git notes need a committer identity: git config user.name 'Your Name' && git "
            "config user.email you@example.com (or set GIT_COMMITTER_NAME and "
            "GIT_COMMITTER_EMAIL)"
        )
    if any(c in name + email for c in "<>\n"):
        raise OomrecError("the committer name or email holds '<', '>' or a line break; fix it")
    return name, email


def _config(repo: git.Repo, key: str) -> str:
    try:
        return str(repo.git.config("--get", key)).strip()
    except _git_error():
        return ""


def _fetch(repo: git.Repo, remote: str, spec: str) -> None:
    try:
        # --no-prune: a ref deleted on the remote (fetch.prune set) would drop its records here.
        repo.git.fetch("--quiet", "--no-prune", "--end-of-options", remote, spec)
    except _git_error() as exc:
        message = _stderr(exc)
        if "couldn't find remote ref" in message:
            return
        raise OomrecError(f"git fetch {remote} failed ({message}); check the remote") from None


def _run_stdin(repo: git.Repo, args: Sequence[str], data: bytes) -> None:
    done = gitrun.run(args, cwd=repo.working_dir, input=data, capture_output=True)
    if done.returncode != 0:
        stderr = done.stderr.decode("utf-8", errors="replace").strip().splitlines()
        raise OomrecError(f"git {args[0]} failed: {stderr[0] if stderr else done.returncode}")


def _git_error() -> type[Exception]:
    from git.exc import GitCommandError

    return GitCommandError


def _stderr(exc: Exception) -> str:
    text = str(getattr(exc, "stderr", "") or exc).strip().removeprefix("stderr:").strip()
    text = text.strip("'").strip()
    # git's whole message, one line: a hint after the first line says what to do.
    return " | ".join(line.strip() for line in text.splitlines() if line.strip()) or "no message"
