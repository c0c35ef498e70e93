"""Shared records: OOM records that travel between machines in git notes.

Each host writes only its own notes ref, `refs/notes/oomrec/<host-id>`: one note per record
commit (the full SHA), holding that commit's record lines, sorted. Pushes of a host's own ref
fast-forward; a rejected push (two clones with one host-id) is merged with git's
`cat_sort_uniq` strategy and retried. `oomrec remote setup` adds a fetch refspec that brings
every host's ref into `refs/notes/remotes/<remote>/oomrec/`, so a plain `git fetch` updates
them and never touches a local ref.

Reading is a fixed number of git processes however many hosts and records: one
`for-each-ref`, then every notes tree and blob through GitPython's one persistent
`cat-file --batch`.

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
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from oomrec.core.errors import OomrecError
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
from oomrec.store.noterefs import LOCAL_PREFIX
from oomrec.store.retractions import (
    NOTE_RESTORED,
    NOTE_RETRACTED,
    Event,
    applies,
    from_the_future,
    parse_note_line,
    retracted,
)

if TYPE_CHECKING:
    import git

HOST_ENV = "OOMREC_HOST"
PUSH_TRIES = 3
_SAFE = re.compile(r"[^a-z0-9._-]+")
_FULL_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


def host_id(hardware: str) -> str:
    """This host's id: `$OOMREC_HOST`, else the hardware tag and the short host name."""
    override = os.environ.get(HOST_ENV, "").strip()
    raw = override or f"{hardware}-{socket.gethostname().split('.')[0]}"
    safe = _SAFE.sub("-", raw.lower()).strip("-.")
    if not safe:
        raise OomrecError(
            f"{HOST_ENV}={override!r} is not a usable host id; use letters and digits"
        )
    return safe[:64]


def local_ref(host: str) -> str:
    return f"{LOCAL_PREFIX}{host}"


# Old tips of tracking refs whose rewrite dropped record lines (pull): read, never pruned.
KEPT_PREFIX = "refs/notes/kept/"


def tracking_prefix(remote: str) -> str:
    return f"refs/notes/remotes/{remote}/oomrec/"


def refspec(remote: str) -> str:
    return f"+{LOCAL_PREFIX}*:{tracking_prefix(remote)}*"


@dataclass(frozen=True, slots=True)
class NoteLine:
    """A record line read from a host's notes."""

    host: str
    ref: str
    commit: str
    text: str
    record: OomRecord | None


# -- reading ------------------------------------------------------------------------------


def note_refs(repo: git.Repo, warnings: list[str] | None = None) -> list[tuple[str, str]]:
    """(ref, host) of every oomrec notes ref: this clone's and every remote's fetched ones.

    A notes ref is a commit. One that points at anything else (a blob, a tree, a tag: someone
    pushed garbage there) is left out with one warning naming it in `warnings`; git itself
    leaves out a ref whose object is missing. The other hosts' refs are read as ever."""
    out = repo.git.for_each_ref(
        "--format=%(objecttype) %(refname)", LOCAL_PREFIX, "refs/notes/remotes/", KEPT_PREFIX
    )
    found = []
    for line in out.split("\n"):
        kind, _, ref = line.partition(" ")
        if ref.startswith(LOCAL_PREFIX):
            host = ref[len(LOCAL_PREFIX) :]
        elif ref.startswith(("refs/notes/remotes/", KEPT_PREFIX)) and "/oomrec/" in ref:
            host = ref.rsplit("/oomrec/", 1)[1]
        else:
            continue
        # Shown in listings and log lines as it is named: a ref name another host pushed may
        # hold a terminal's escapes (git allows them); escaped once, here.
        host = visible(host)
        if kind != "commit":
            if warnings is not None:
                warnings.append(
                    f"warning: {visible(ref)} points at a {kind or 'missing object'}, not a notes "
                    f"commit: its records are not read (delete it: git update-ref -d {ref})"
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
    """Every record line in every oomrec notes ref (each distinct line once), in ref order.
    `skip_host`: this host's own local ref, whose lines are copies of the local record. What
    cannot be read is said in `warnings`."""
    seen: set[str] = set()
    lines: list[NoteLine] = []
    refs = [
        (ref, host) for ref, host in note_refs(repo, warnings) if ref != local_ref(skip_host or "")
    ]
    everything = read_refs(repo, [ref for ref, _ in refs])
    for ref, host in refs:
        for commit, text in everything[ref].items():
            for raw in text.split("\n"):
                raw = raw.strip("\r")
                if not raw.strip() or raw in seen:
                    continue
                seen.add(raw)
                try:
                    record: OomRecord | None = parse_line(raw)
                except NotARecord:
                    record = None
                lines.append(NoteLine(host, ref, commit, raw, record))
    return lines


def shared(
    known: Iterable[OomRecord],
    hardware: str,
    warnings: list[str] | None = None,
    local_events: Iterable[Event] = (),
) -> list[NoteLine]:
    """The record lines other hosts published (and this one fetched), less the evidence
    `known` already holds (the local record and archive: the same evidence key, however the
    line is written), less the evidence retracted (its latest retraction event, among the
    notes' and `local_events`, this host's archive's, is a retraction), and each evidence once;
    [] outside git. Reads no git when no notes ref exists beyond a loose `for-each-ref`.

    A line applies here only if `record push` would have published it (`why_local`): a line
    no publisher writes (no hardware tag, no memory, faked, an unknown or dirty commit, or no
    record at all) came from elsewhere and is left out, counted per host in `warnings`."""
    from oomrec.store import gitrepo as gitutil

    repo = gitutil.open_repo()
    if repo is None:
        return []
    seen = {evidence_key(record) for record in known}
    own = host_id(hardware)
    lines = []
    refused: dict[str, dict[str, int]] = {}
    everything = read_all(repo, skip_host=own, warnings=warnings)
    events = [e for line in everything if (e := parse_note_line(line.text)) is not None]
    gone = retracted([*events, *local_events])
    future = from_the_future(events)
    if future and warnings is not None:
        warnings.append(
            f"warning: {len(future)} retraction(s) in shared notes are stamped in the future "
            f"(the first: {visible(future[0].stamp)}); left out, so the records they name apply"
        )
    for line in everything:
        if line.text.startswith((NOTE_RETRACTED, NOTE_RESTORED)):
            continue
        if line.record is not None and not applies(line.record, gone):
            continue
        why = why_local(line.record) if line.record is not None else "not a record line"
        if why:
            by_why = refused.setdefault(line.ref, {})
            by_why[why] = by_why.get(why, 0) + 1
            continue
        assert line.record is not None
        key = evidence_key(line.record)
        if key not in seen:
            seen.add(key)
            lines.append(line)
    if warnings is not None:
        for ref, by_why in refused.items():
            said = "; ".join(f"{n} {why}" for why, n in by_why.items())
            warnings.append(f"warning: {ref}: lines no publisher writes, not applied ({said})")
    return lines


# -- publishing ---------------------------------------------------------------------------


@dataclass
class PushPlan:
    host: str
    remote: str
    # This host's hardware tag: the remote's lines under its id must be of it to be merged.
    hardware: str | None = None
    # Full commit SHA -> the record lines to publish for it.
    publish: dict[str, list[str]] = field(default_factory=dict)
    kept_back: list[tuple[str, str]] = field(default_factory=list)

    @property
    def count(self) -> int:
        return sum(len(lines) for lines in self.publish.values())


def plan_push(
    repo: git.Repo, record_file: RecordFile, host: str, remote: str, hardware: str | None = None
) -> PushPlan:
    """Which local records can go to `remote`, and why the others stay local."""
    from oomrec.store import archive
    from oomrec.store import gitrepo as gitutil

    check_remote(repo, remote)
    plan = PushPlan(host, remote, hardware)
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


def writing(repo: git.Repo) -> Any:
    """The lock (in the repository's git dir) a writer of this clone's notes refs holds."""
    from filelock import FileLock

    return FileLock(os.path.join(repo.common_dir, "oomrec-notes.lock"), timeout=300)


def write_notes(repo: git.Repo, plan: PushPlan) -> int:
    """Merge the plan's lines into this host's notes ref, in one `git fast-import`. Returns how
    many lines were new (0: nothing written, the ref unchanged).

    Call it under `writing(repo)` (as `push` too): two writers of one clone (a fleet's shards
    on one machine) would both read the same tip, and the second's fast-import then fails to
    create or move the ref (`cannot lock ref ... reference already exists`)."""
    ref = local_ref(plan.host)
    old_tip = _tip(repo, ref)
    current = read_ref(repo, ref) if old_tip else {}
    bodies: dict[str, str] = {}
    new = 0
    for sha, lines in plan.publish.items():
        before = {x for x in current.get(sha, "").split("\n") if x.strip()}
        union = before | set(lines)
        if union != before:
            new += len(union - before)
            bodies[sha] = "".join(f"{x}\n" for x in sorted(union))
    if not bodies:
        return 0
    name, email = _committer(repo)
    message = f"oomrec: {new} record line(s) from {plan.host}\n".encode()
    stream = [
        f"commit {ref}\n".encode(),
        f"committer {name} <{email}> {int(time.time())} +0000\n".encode(),
        f"data {len(message)}\n".encode() + message,
    ]
    if old_tip:
        stream.append(f"from {old_tip}\n".encode())
    for sha, body in sorted(bodies.items()):
        data = body.encode("utf-8", errors="surrogateescape")
        stream.append(f"N inline {sha}\ndata {len(data)}\n".encode() + data + b"\n")
    stream.append(b"done\n")
    _run_stdin(repo, ["fast-import", "--quiet", "--done"], b"".join(stream))
    return new


def push(repo: git.Repo, plan: PushPlan) -> tuple[bool, int]:
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
            _refuse_foreign(repo, plan, tracking)
            name, email = _committer(repo)
            held = read_ref(repo, ref)
            repo.git.notes(
                f"--ref={ref}",
                "merge",
                "-q",
                "-s",
                "cat_sort_uniq",
                tracking,
                env={"GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": email},
            )
            # A remote tip that descends from ours but dropped notes is a fast-forward to the
            # merge: what this ref held goes back on top (notes only ever gain lines).
            lost = _record_lines(held) - _record_lines(read_ref(repo, ref))
            if lost:
                back: dict[str, list[str]] = {}
                for sha, line in lost:
                    back.setdefault(sha, []).append(line)
                write_notes(repo, replace(plan, publish=back))
            continue
        _fetch(repo, plan.remote, f"+{ref}:{tracking}")
        return True, attempt
    return False, PUSH_TRIES


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
        if kind == "commit":
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
        host = ref.rsplit("/oomrec/", 1)[1]
        kept = f"{KEPT_PREFIX}{remote}/{before[ref][:12]}/oomrec/{host}"
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
        return repo.git.rev_parse("--verify", "--quiet", ref)
    except _git_error():
        return ""


def _refuse_foreign(repo: git.Repo, plan: PushPlan, tracking: str) -> None:
    """Before the remote's version of this host's ref is merged into it: OomrecError when it
    holds lines of another machine (another hardware tag, or no record at all). Two clones on
    one machine share an id and merge; another machine publishing under this id must not have
    its lines republished as this host's."""
    if plan.hardware is None:
        return
    foreign: dict[str, int] = {}
    for text in read_ref(repo, tracking).values():
        for raw in text.split("\n"):
            if not raw.strip() or parse_note_line(raw.strip("\r")) is not None:
                # A retraction event is the publisher's, whoever measured its record.
                continue
            try:
                tag = parse_line(raw.strip("\r")).hardware or "no hardware tag"
            except NotARecord:
                tag = "not a record"
            if tag != plan.hardware:
                foreign[tag] = foreign.get(tag, 0) + 1
    if foreign:
        said = ", ".join(f"{n} of {tag}" for tag, n in sorted(foreign.items()))
        raise OomrecError(
            f"{plan.remote}'s {local_ref(plan.host)} holds record lines of another machine "
            f"({said}; this host is {plan.hardware}): another host publishes under the id "
            f"{plan.host!r}; give each machine its own id (${HOST_ENV}) and push again"
        )


def _remote_tip(repo: git.Repo, remote: str, ref: str) -> str:
    """What `ref` is on `remote` right now ("" when it has none), in one `git ls-remote`."""
    try:
        out: str = repo.git.ls_remote("--end-of-options", remote, ref)
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
        return repo.git.config("--get", key).strip()
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
    import subprocess

    from oomrec.staleness.fixlog import git_config_args

    done = subprocess.run(
        ["git", *git_config_args(), *args],
        cwd=repo.working_dir,
        input=data,
        capture_output=True,
        check=False,
    )
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


def grouped(lines: Iterable[NoteLine]) -> dict[str, int]:
    """How many record lines each host contributed."""
    counts: dict[str, int] = {}
    for line in lines:
        if line.record is not None:
            counts[line.host] = counts.get(line.host, 0) + 1
    return counts
