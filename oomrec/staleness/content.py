"""Is a fix's change in a tree: the proof that lifts a record (the graph only guesses).

A fix commit F's **change** is its patch: the diff from its first parent (none for a root
commit) to F, file by file, as `git diff-tree` shows it (whole-file blob ids, and hunks with git's
three lines of context; raw entries and patch blocks paired by path). Judged in the tree of a
commit T, each file of the change is:

- **post** when T's blob at that path is F's new blob (or both are absent: F deleted it), or the
  file is text and every hunk's new side is found at its own place in T's file (its line in F,
  shifted as the hunks before it were found, within a few hundred lines or a quarter of the
  file, plus by how much the file grew or shrank), in order, while the old sides are not all
  found. Where only context changed since (an edit within three lines of the fix), each run of
  changed lines decides: its added lines with a line or two of their context found there, and
  its removed lines not found near them. A hunk with an empty side (F emptied the file, or
  filled an empty one) proves nothing by that side: only the other side's lines being absent
  from the whole file says so. Lines are compared without a trailing CR;
- **pre** the same with F's old blob and the hunks' old sides (F added the file: T lacks it);
- **rewritten** otherwise: both sides or neither are found (later commits rewrote those lines,
  or the file is binary, a submodule, a symlink or type change whose blob differs, or gone),
  so the tree does not say.

Where T lacks a path F changed in place, git's rename detection from F to T (exact renames
always, similar ones among up to 100 added files) names the file to judge instead. A symlink
never equals a regular file with the same bytes. Where the repository has replace refs, an id
says nothing of what git shows: blobs are compared by their contents as `cat-file` shows them,
and a file that F changes in id but not as shown is undecided.

The change is **present** in T when every file is post, **absent** when every file is pre, and
**undecided** otherwise (some files post and others pre, a partial revert, is undecided too).
A fix with copies (picks, amends, a fix id) is present where some copy's change is present and
none is absent, absent where some is absent and none present. Undecided is a way of applying:
the record stays in play, with the reason shown. When in doubt the matching says "not found":
a wrong "present" launches a cell, a wrong "undecided" only keeps it skipped.

Why strict: a later commit that rewrites the fixed lines makes the change undecided, and the
records the fix lifted apply again. Whether the rewrite kept the fix is exactly what the tree
cannot tell; a rewrite that keeps it says so with the fix's `OOM-Fix-Id` trailer, which makes it
a copy whose change is present.

A fix that changes no file (an empty commit: a driver or a dependency outside the tree) has no
change to look for; it is **declared**, and its place in history alone decides. Only a plain
commit declares (verdict.py makes an empty merge or pick undecided); a change of a file's mode
alone is undecided, since trees are compared by blob.

Cost: two `git diff-tree --stdin` for all the fixes' patches, then per depth of the deepest
path one `cat-file --batch` for the trees of all the commits asked about (trees are shared
between commits and read once), one more for the contents of files whose blob is neither F's
old nor its new one (and of those two, whose lengths bound how far lines moved), and one
`diff-tree --stdin -M` only where a commit lacks a path a fix changed in place. Replace refs
are looked for in the ref files (a `for-each-ref` only with reftable or GIT_REPLACE_REF_BASE).
None of it grows with the number of records.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from oomrec.core.errors import OomrecError

if TYPE_CHECKING:
    import git

# The diff options that make the patch independent of user config (on top of gitrun.GIT_CONFIG).
_DIFF = (
    "--stdin",
    "-r",
    "--root",
    "--no-renames",
    "--no-color",
    "--no-ext-diff",
    "--no-textconv",
    "--diff-merges=first-parent",
    "--ignore-submodules=none",
)
_NULL = frozenset({"0" * 40, "0" * 64})
# Regular files (and none, for an added or deleted one): the others have no hunks to match.
_TEXT_MODES = frozenset({"100644", "100755", "000000"})


class State(StrEnum):
    PRESENT = "present"
    ABSENT = "absent"
    UNDECIDED = "undecided"
    # The fix changes no file: nothing in a tree can say.
    DECLARED = "declared"


@dataclass(frozen=True, slots=True)
class Verdict:
    state: State
    # Why UNDECIDED (or how a PRESENT/ABSENT was found), for the judgement's reason.
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Group:
    """One run of changed lines in a hunk, with the context lines around it in the hunk."""

    before: tuple[bytes, ...]
    old: tuple[bytes, ...]
    new: tuple[bytes, ...]
    after: tuple[bytes, ...]
    # Where the run starts within the hunk's old and new sides.
    at_old: int
    at_new: int


@dataclass(frozen=True, slots=True)
class Hunk:
    old: tuple[bytes, ...]
    new: tuple[bytes, ...]
    # Where each side starts in its file (0-based line index), from the `@@` header.
    old_start: int = 0
    new_start: int = 0
    groups: tuple[Group, ...] = ()


@dataclass(frozen=True, slots=True)
class FileChange:
    path: bytes
    # Blob ids; None where the file does not exist on that side. A symlink's id is prefixed
    # with _LINK, so a regular file with the same bytes never equals it.
    old: str | None
    new: str | None
    hunks: tuple[Hunk, ...]
    # No hunks to match: binary, a submodule, a symlink or a type change; only the exact blobs
    # say.
    opaque: bool

    @property
    def shown(self) -> str:
        return self.path.decode("utf-8", "backslashreplace")


@dataclass(frozen=True, slots=True)
class Change:
    sha: str
    files: tuple[FileChange, ...]


def read_changes(repo: git.Repo, shas: Collection[str]) -> dict[str, Change]:
    """Each commit's change (first-parent diff; the whole tree for a root commit), from one
    `diff-tree --raw -z` (exact paths, blob ids, modes) and one `diff-tree -p` (the hunks), whose
    file blocks are paired with the raw entries by path (a type change has two blocks)."""
    from oomrec.store.gitrepo import with_stdin_bytes

    if not shas:
        return {}
    ordered = sorted(shas)
    raw = with_stdin_bytes(repo.git.diff_tree, [*_DIFF, "--raw", "-z", "--no-abbrev"], ordered)
    patch = with_stdin_bytes(
        repo.git.diff_tree,
        [*_DIFF, "-p", "--full-index", "--src-prefix=a/", "--dst-prefix=b/", "-U3"],
        ordered,
    )
    entries = _parse_raw(raw, set(ordered))
    hunks = _parse_patch(patch, set(ordered))
    out: dict[str, Change] = {}
    for sha in ordered:
        files = []
        blocks = hunks.get(sha, {})
        for mode_old, mode_new, old, new, path in entries.get(sha, []):
            found = blocks.get(path, [])
            # Exactly one block, of text: two are a type change, none a path git did not show.
            block = found[0] if len(found) == 1 else None
            opaque = block is None or block[1] or not {mode_old, mode_new} <= _TEXT_MODES
            files.append(
                FileChange(
                    path,
                    _blob_name(mode_old, old),
                    _blob_name(mode_new, new),
                    () if opaque or block is None else tuple(block[0]),
                    opaque,
                )
            )
        # A file whose mode alone changed (the same blob) is kept: a fix of `chmod +x` alone is
        # no fix of no file, and its tree cannot show it (the blobs say nothing of modes).
        kept = [
            f
            for f, entry in zip(files, entries.get(sha, []), strict=True)
            if f.old != f.new or entry[0] != entry[1]
        ]
        out[sha] = Change(sha, tuple(kept))
    return out


_LINK = "link:"


def _blob_name(mode: str, oid: str) -> str | None:
    if oid in _NULL:
        return None
    return _LINK + oid if mode == "120000" else oid


def _parse_raw(out: bytes, shas: set[str]) -> dict[str, list[tuple[str, str, str, str, bytes]]]:
    found: dict[str, list[tuple[str, str, str, str, bytes]]] = {}
    items = out.split(b"\0")
    current: list[tuple[str, str, str, str, bytes]] | None = None
    i = 0
    while i < len(items):
        item = items[i].lstrip(b"\n")
        text = item.decode("ascii", "replace")
        if text in shas:
            current = found.setdefault(text, [])
            i += 1
        elif item.startswith(b":") and current is not None and i + 1 < len(items):
            fields = text[1:].split()
            current.append((fields[0], fields[1], fields[2], fields[3], items[i + 1]))
            i += 2
        else:
            i += 1
    return found


_HUNK_HEADER = re.compile(rb"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_ESCAPES = {
    ord("a"): 7,
    ord("b"): 8,
    ord("t"): 9,
    ord("n"): 10,
    ord("v"): 11,
    ord("f"): 12,
    ord("r"): 13,
    ord('"'): 34,
    ord("\\"): 92,
}


def _unquote(text: bytes, i: int) -> tuple[bytes | None, int]:
    """git's C-quoted name starting at text[i] (a '"'): its bytes and the index past it."""
    out = bytearray()
    i += 1
    while i < len(text):
        c = text[i]
        if c == 34:  # "
            return bytes(out), i + 1
        if c == 92 and i + 1 < len(text):  # backslash
            nxt = text[i + 1]
            if 48 <= nxt <= 55 and i + 3 < len(text):
                out.append(int(text[i + 1 : i + 4], 8) & 0xFF)
                i += 4
                continue
            if nxt not in _ESCAPES:
                return None, i
            out.append(_ESCAPES[nxt])
            i += 2
            continue
        out.append(c)
        i += 1
    return None, i


def _block_path(header: bytes) -> bytes | None:
    """The path of a `diff --git a/P b/P` line (no renames: both sides name one path); None
    when it cannot be read for sure (the block is then paired with no file)."""
    rest = header[len(b"diff --git ") :]
    if rest.startswith(b'"'):
        old, i = _unquote(rest, 0)
        if old is None or rest[i : i + 2] != b' "':
            return None
        new, _ = _unquote(rest, i + 1)
    else:
        half = (len(rest) - 5) // 2
        old, new = rest[: half + 2], rest[half + 3 :]
        if rest[half + 2 : half + 3] != b" ":
            return None
    if old is None or new is None or not old.startswith(b"a/") or not new.startswith(b"b/"):
        return None
    return old[2:] if old[2:] == new[2:] else None


def _groups(body: Sequence[tuple[bytes, bytes]]) -> tuple[Group, ...]:
    """The runs of changed lines of a hunk's body ((tag, line) pairs), each with the context
    lines between it and its neighbours."""
    groups = []
    at_old = at_new = n = last = 0
    while n < len(body):
        if body[n][0] == b" ":
            at_old, at_new, n = at_old + 1, at_new + 1, n + 1
            continue
        start = n
        while n < len(body) and body[n][0] != b" ":
            n += 1
        after = n
        while after < len(body) and body[after][0] == b" ":
            after += 1
        old = tuple(line for tag, line in body[start:n] if tag == b"-")
        new = tuple(line for tag, line in body[start:n] if tag == b"+")
        context = (
            tuple(line for _, line in body[last:start]),
            tuple(line for _, line in body[n:after]),
        )
        groups.append(Group(context[0], old, new, context[1], at_old, at_new))
        at_old, at_new, last = at_old + len(old), at_new + len(new), n
    return tuple(groups)


# Per commit, per path: its file blocks, each [its hunks, whether git showed it as binary].
_Blocks = dict[bytes, list[list[Any]]]


def _parse_patch(out: bytes, shas: set[str]) -> dict[str, _Blocks]:
    """Per commit, per path, its file blocks in order (a type change has two). A line's trailing
    CR is dropped: lines are compared as `--ignore-cr-at-eol` would."""
    found: dict[str, _Blocks] = {}
    blocks: _Blocks | None = None
    block: list[Any] | None = None
    body: list[tuple[bytes, bytes]] = []
    starts = (0, 0)
    in_hunk = False

    def close_hunk() -> None:
        nonlocal body, in_hunk
        if in_hunk and block is not None:
            old = tuple(line for tag, line in body if tag != b"+")
            new = tuple(line for tag, line in body if tag != b"-")
            block[0].append(Hunk(old, new, starts[0], starts[1], _groups(body)))
        body, in_hunk = [], False

    for line in out.split(b"\n"):
        if in_hunk and line[:1] in (b" ", b"-", b"+", b"\\"):
            tag, text = line[:1], line[1:]
            if tag != b"\\":
                body.append((tag, text[:-1] if text.endswith(b"\r") else text))
            continue
        close_hunk()
        if line.startswith(b"@@ "):
            m = _HUNK_HEADER.match(line)
            # An empty side's start is the line before it; it has no line to place anyway.
            starts = (max(int(m[1]) - 1, 0), max(int(m[3]) - 1, 0)) if m else (0, 0)
            in_hunk = m is not None
        elif line.startswith(b"diff --git "):
            block = None
            if blocks is not None:
                block = [[], False]
                # A path that cannot be read is kept under a key no raw path has.
                blocks.setdefault(_block_path(line) or b"\0", []).append(block)
        elif line.startswith((b"Binary files ", b"GIT binary patch")) and block is not None:
            block[1] = True
        else:
            commit = line.decode("ascii", "replace")
            if commit in shas:
                blocks = found.setdefault(commit, {})
                block = None
    close_hunk()
    return found


class Trees:
    """Raw object ids at paths of commits' trees, read in batches: every tree object once.

    Modes are not kept: a path's id is compared with the fix's blob ids, and an id that is a
    tree (a file became a folder) matches neither and reads as no blob."""

    def __init__(self, repo: git.Repo, id_size: int) -> None:
        self.repo = repo
        # A raw object id inside a tree object: 20 bytes for SHA-1, 32 for SHA-256.
        self._size = id_size
        self._roots: dict[str, dict[bytes, bytes] | None] = {}
        self._trees: dict[bytes, dict[bytes, bytes] | None] = {}

    def ids(self, wants: dict[str, Collection[bytes]]) -> dict[str, dict[bytes, bytes | None]]:
        """Per commit, the raw id at each of its wanted paths (None: nothing there)."""
        from oomrec.store.gitrepo import read_objects

        commits = [c for c in wants if c not in self._roots]
        if commits:
            read = read_objects(self.repo, [f"{c}^{{tree}}" for c in commits])
            for commit, got in zip(commits, read, strict=True):
                self._roots[commit] = self._parsed(got)
        out: dict[str, dict[bytes, bytes | None]] = {}
        # (commit, path, the tree reached, the path's parts left), one level per round; a file
        # at the top (most fixes' files are near it) is looked up at once.
        # (commit, path, the tree to look in: None when it could not be read, parts left)
        pending: list[tuple[str, bytes, dict[bytes, bytes] | None, list[bytes]]] = []
        for c, paths in wants.items():
            root = self._roots[c]
            if root is None:
                out[c] = dict.fromkeys(paths)
                continue
            out[c] = {path: root.get(path) for path in paths}
            for path in paths:
                if b"/" in path:
                    pending.append((c, path, root, path.split(b"/")))
        while pending:
            needed: list[bytes] = []
            later: list[tuple[str, bytes, dict[bytes, bytes] | None, list[bytes]]] = []
            for c, path, tree, parts in pending:
                entry = tree.get(parts[0]) if tree is not None else None
                if entry is None or (len(parts) > 1 and len(entry) != self._size):
                    out[c][path] = None
                elif len(parts) == 1:
                    out[c][path] = entry
                elif entry in self._trees:
                    later.append((c, path, self._trees[entry], parts[1:]))
                else:
                    needed.append(entry)
                    later.append((c, path, {parts[0]: entry}, parts))
            if needed:
                ordered = list(dict.fromkeys(needed))
                read = read_objects(self.repo, [oid.hex() for oid in ordered])
                for oid, got in zip(ordered, read, strict=True):
                    self._trees[oid] = self._parsed(got)
            pending = later
        return out

    def _parsed(self, got: tuple[str, bytes] | None) -> dict[bytes, bytes] | None:
        from oomrec.store.gitrepo import tree_entries

        if not got or got[0] != "tree":
            return None
        # A symlink's id gets a last byte no id has: it never equals a file's of the same bytes.
        return {
            name: oid if mode != b"120000" else oid + b"l"
            for mode, name, oid in tree_entries(got[1], self._size)
        }


# How far from its own place (its line in the fix, shifted as the hunks before it were) a
# hunk's lines may be found: a few hundred lines, or a quarter of a longer file.
_WINDOW = 300
# How near the lines found the other side's changed lines must be absent.
_NEAR = 10


class _Text:
    """A file of a tree as lines (a trailing CR dropped), with where each line occurs."""

    def __init__(self, data: bytes) -> None:
        lines = data.split(b"\n")
        if lines[-1] == b"":
            lines.pop()
        if b"\r" in data:
            lines = [line[:-1] if line.endswith(b"\r") else line for line in lines]
        self.lines = lines
        self.at: dict[bytes, list[int]] = {}
        for n, line in enumerate(lines):
            self.at.setdefault(line, []).append(n)
        self.window = max(_WINDOW, len(lines) // 4)

    def find(self, seq: Sequence[bytes], expected: int, lo: int, hi: int) -> int:
        """The start in [lo, hi] nearest `expected` where `seq` runs (non-empty), or -1."""
        # Anchored on the rarest of its lines.
        k = min(range(len(seq)), key=lambda i: len(self.at.get(seq[i], ())))
        positions = self.at.get(seq[k])
        if not positions:
            return -1
        want = list(seq)
        best = -1
        for pos in positions[bisect_left(positions, max(lo, 0) + k) :]:
            at = pos - k
            if at > hi:
                break
            if self.lines[at : at + len(want)] == want and (
                best < 0 or abs(at - expected) < abs(best - expected)
            ):
                best = at
        return best


def _cores(
    before: tuple[bytes, ...], changed: tuple[bytes, ...], after: tuple[bytes, ...]
) -> list[tuple[tuple[bytes, ...], int]]:
    """A group's changed lines with less and less of the context around them (each run with
    how many context lines lead it), for a place whose context was edited since. Each holds a
    context line where the group has one; changed lines none (a deletion) need one each side."""
    if not before and not after:
        return [(changed, 0)] if changed else []
    cores = []
    for b, a in ((2, 2), (1, 1), (1, 0), (0, 1)):
        lead = before[len(before) - b :] if b else ()
        trail = after[:a]
        if (lead or trail) and (changed or (lead and trail)):
            core = (lead + changed + trail, len(lead))
            if core not in cores:
                cores.append(core)
    return cores


def _shows(text: _Text, hunks: Sequence[Hunk], new: bool, slack: int = 0) -> bool:
    """Whether every hunk's new (or old) side is at its own place in `text`, in order: the
    whole side; or, where only context changed since, each changed run with a little context
    and the other side's lines for it absent near there. An empty side (the fix emptied the
    file, or filled an empty one) proves nothing: only the other side's absence says it.
    `slack`: by how many lines the file grew or shrank since that side, a shift it allows."""
    offset = cursor = 0
    window = text.window + slack
    for h in hunks:
        seq, start = (h.new, h.new_start) if new else (h.old, h.old_start)
        if not seq:
            other = h.old if new else h.new
            if any(line.strip() and line in text.at for line in other):
                return False
            continue
        expected = start + offset
        at = text.find(seq, expected, max(cursor, expected - window), expected + window)
        if at >= 0:
            offset, cursor = at - start, at + len(seq)
            continue
        for g in h.groups:
            changed, gone = (g.new, g.old) if new else (g.old, g.new)
            place = start + (g.at_new if new else g.at_old)
            want = place + offset
            found = -1
            for core, lead in _cores(g.before, changed, g.after):
                # Its leading context may be the trailing context of the run before it.
                lo = max(cursor - lead, want - lead - window)
                at = text.find(core, want - lead, lo, want - lead + window)
                if at >= 0:
                    found, cursor = at + lead, at + lead + len(changed)
                    break
            if found < 0:
                return False
            near = found - _NEAR - len(gone), found + len(changed) + _NEAR
            if gone and text.find(gone, found, *near) >= 0:
                return False
            offset = found - place
    return True


def _same(a: str | None, b: str | None, content: Callable[[str], bytes | None]) -> bool:
    """Whether two blobs read the same as git shows them (a replace ref can make one id show
    another's content, or two ids one content)."""
    if a == b:
        return True
    if a is None or b is None or a.startswith(_LINK) != b.startswith(_LINK):
        return False
    got = content(a.removeprefix(_LINK))
    return got is not None and got == content(b.removeprefix(_LINK))


# A file's state in one tree: "post", "pre", "rewritten", "mode", "unreadable" or "replaced".
def _file_state(
    fc: FileChange,
    blob: str | None,
    content: Callable[[str], bytes | None],
    replaced: bool = False,
) -> str:
    if fc.old == fc.new:
        return "mode"
    if replaced:
        # Replace refs: an id says nothing of what git shows; the contents decide.
        if _same(fc.old, fc.new, content):
            return "replaced"
        is_post, is_pre = _same(blob, fc.new, content), _same(blob, fc.old, content)
    else:
        is_post, is_pre = blob == fc.new, blob == fc.old
    if is_post:
        return "post"
    if is_pre:
        return "pre"
    if blob is None or fc.opaque or blob.startswith(_LINK):
        return "rewritten"
    data = content(blob)
    if data is None:
        return "unreadable"
    text = _Text(data)
    post = fc.new is not None and _shows(text, fc.hunks, True, _slack(text, fc.new, content))
    pre = fc.old is not None and _shows(text, fc.hunks, False, _slack(text, fc.old, content))
    if post and not pre:
        return "post"
    if pre and not post:
        return "pre"
    return "rewritten"


def _slack(text: _Text, side: str, content: Callable[[str], bytes | None]) -> int:
    """How many lines longer or shorter `text` is than the fix's side (0 when unread)."""
    data = content(side)
    if data is None:
        return 0
    return abs(len(text.lines) - data.count(b"\n") - (not data.endswith(b"\n") and data != b""))


def _raw_name(raw: bytes | None) -> str | None:
    """A tree entry's id as the fix's blobs are named (a symlink's with its prefix)."""
    if raw is None:
        return None
    # Ids are 20 or 32 bytes: a symlink's carries one more.
    return _LINK + raw[:-1].hex() if len(raw) % 2 else raw.hex()


class Snapshots:
    """The commits asked about, grouped by their blobs at every path a fix changes: commits
    with the same blobs there (most commits between two fixes) are judged once."""

    def __init__(self, repo: git.Repo, changes: dict[str, Change]) -> None:
        self.repo = repo
        self.changes = changes
        self._paths = tuple(sorted({f.path for ch in changes.values() for f in ch.files}))
        # Each path a fix changed in place (the file on both sides), with one such fix: where a
        # tree lacks the path, the file may have been renamed since.
        self._kept: dict[bytes, str] = {}
        for sha in sorted(changes):
            for f in changes[sha].files:
                if f.old is not None and f.new is not None:
                    self._kept.setdefault(f.path, sha)
        self._trees: Trees | None = None
        self._group: dict[str, int] = {}
        self._by_key: dict[tuple[bytes | None, ...], int] = {}
        self._blobs: list[dict[bytes, str | None]] = []
        self._verdicts: list[dict[str, Verdict]] = []
        self._contents: dict[str, bytes | None] = {}
        self._problem = ""
        self._replaced: bool | None = None

    def group_of(self, commits: Collection[str]) -> dict[str, int]:
        """Each commit's group, reading the trees of those not seen yet in one batch."""
        new = [c for c in commits if c not in self._group]
        if new:
            if self._trees is None:
                # Object ids are hex: a commit's length says the object format.
                self._trees = Trees(self.repo, len(new[0]) // 2)
            paths = self._paths
            found = self._trees.ids({c: paths for c in new}) if paths else {}
            self._follow_renames(found)
            for c in new:
                ids = found.get(c, {})
                key = tuple([ids[p] for p in paths])
                group = self._by_key.get(key)
                if group is None:
                    group = self._by_key[key] = len(self._blobs)
                    self._blobs.append({p: _raw_name(i) for p, i in zip(paths, key, strict=True)})
                    self._verdicts.append({})
                self._group[c] = group
        return {c: self._group[c] for c in commits}

    def _follow_renames(self, found: dict[str, dict[bytes, bytes | None]]) -> None:
        """Where a commit lacks a path some fix changed in place, the id of the file git's
        rename detection (from that fix to the commit) finds it renamed to: one `diff-tree`."""
        from oomrec.store.gitrepo import with_stdin_bytes

        asks = [(c, p) for c, ids in found.items() for p in self._kept if ids.get(p, 0) is None]
        if not asks:
            return
        pairs = list(dict.fromkeys((c, self._kept[p]) for c, p in asks))
        # -l: past 100 added files, only exact renames (a `git mv`) are looked for.
        args = ["--stdin", "-r", "-M", "-l100", "--raw", "-z", "--no-abbrev", "--always"]
        args += ["--diff-filter=R", "--no-ext-diff", "--no-textconv", "--ignore-submodules=none"]
        try:
            out = with_stdin_bytes(self.repo.git.diff_tree, args, [f"{c} {f}" for c, f in pairs])
        except OomrecError:
            return  # no rename followed: those files are undecided
        renamed: dict[tuple[str, str], dict[bytes, bytes]] = {}
        items = out.split(b"\0")
        n, i = -1, 0
        while i < len(items):
            item = items[i].lstrip(b"\n")
            if item.startswith(b":") and n >= 0 and i + 2 < len(items):
                fields = item[1:].split()
                raw = bytes.fromhex(fields[3].decode("ascii"))
                renamed[pairs[n]][items[i + 1]] = raw + b"l" if fields[1] == b"120000" else raw
                i += 3
                continue
            if item:
                n += 1
                if n >= len(pairs) or item.decode("ascii", "replace") != pairs[n][0]:
                    return  # not the output expected: follow none
                renamed[pairs[n]] = {}
            i += 1
        for c, p in asks:
            moved = renamed.get((c, self._kept[p]), {}).get(p)
            if moved is not None:
                found[c][p] = moved

    def _replace_refs(self) -> bool:
        """Whether the repository has replace refs (then ids do not say what git shows): read
        from the files-backed ref store where there is one (no process), else asked of git."""
        if self._replaced is None:
            import os
            from pathlib import Path

            from git.exc import GitCommandError

            base = os.environ.get("GIT_REPLACE_REF_BASE")
            common = Path(self.repo.common_dir)
            if not base and (common / "refs").is_dir() and not (common / "reftable").exists():
                loose = common / "refs" / "replace"
                try:
                    packed = (common / "packed-refs").read_bytes()
                except FileNotFoundError:
                    packed = b""
                except OSError:
                    packed = b" refs/replace/"  # cannot tell: the safe way
                has = loose.is_dir() and any(loose.iterdir())
                self._replaced = has or b" refs/replace/" in packed
            else:
                try:
                    out = self.repo.git.for_each_ref(
                        "--count=1", "--format=%(refname)", base or "refs/replace/"
                    )
                    self._replaced = bool(out.strip())
                except GitCommandError:
                    # Cannot tell: compare contents, the safe way.
                    self._replaced = True
        return self._replaced

    def verdicts(self, asked: dict[int, set[str]]) -> None:
        """Compute each change sha's verdict in each group of `asked` (group -> shas)."""
        from oomrec.store.gitrepo import read_objects

        replaced = self._replace_refs()
        odd: set[str] = set()
        for group, shas in asked.items():
            blobs = self._blobs[group]
            for sha in shas:
                for f in self.changes[sha].files:
                    blob = blobs[f.path]
                    if replaced:
                        odd.update(b.removeprefix(_LINK) for b in (blob, f.old, f.new) if b)
                    elif (
                        blob is not None
                        and not f.opaque
                        and blob not in (f.old, f.new)
                        and not blob.startswith(_LINK)
                    ):
                        # And the fix's sides: their lengths say how far the lines may move.
                        odd.update(b for b in (blob, f.old, f.new) if b)
        odd -= self._contents.keys()
        if odd:
            ordered = sorted(odd)
            try:
                for oid, got in zip(ordered, read_objects(self.repo, ordered), strict=True):
                    self._contents[oid] = got[1] if got and got[0] == "blob" else None
            except OomrecError as exc:
                self._problem = str(exc)
        for group, shas in asked.items():
            done = self._verdicts[group]
            blobs = self._blobs[group]
            for sha in shas:
                if sha not in done:
                    ch = self.changes[sha]
                    done[sha] = _change_state(
                        ch,
                        tuple(blobs[f.path] for f in ch.files),
                        self._contents.get,
                        self._problem,
                        replaced,
                    )

    def verdict(self, group: int, sha: str) -> Verdict:
        return self._verdicts[group][sha]


def _change_state(
    ch: Change,
    blobs: tuple[str | None, ...],
    content: Callable[[str], bytes | None],
    problem: str,
    replaced: bool = False,
) -> Verdict:
    """The change's state in a tree whose blobs at its paths are `blobs`."""
    if not ch.files:
        return Verdict(State.DECLARED)
    states = [
        (f, _file_state(f, b, content, replaced)) for f, b in zip(ch.files, blobs, strict=True)
    ]
    kinds = {s for _, s in states}
    if kinds == {"post"}:
        return Verdict(State.PRESENT)
    if kinds == {"pre"}:
        return Verdict(State.ABSENT)
    for f, s in states:
        if s == "mode":
            why = f"its {f.shown} changes only its mode, which the tree check does not compare"
            return Verdict(State.UNDECIDED, why)
    for f, s in states:
        if s == "unreadable":
            why = f" ({problem})" if problem else ""
            return Verdict(State.UNDECIDED, f"cannot read its {f.shown}{why}")
    for f, s in states:
        if s == "replaced":
            return Verdict(
                State.UNDECIDED,
                f"its {f.shown} reads the same before and after the fix as git shows it "
                "(a replace ref?)",
            )
    for f, s in states:
        if s == "rewritten":
            return Verdict(
                State.UNDECIDED,
                f"its {f.shown} holds neither the fix's version nor the one before it "
                "(rewritten since, or binary)",
            )
    post = next(f for f, s in states if s == "post")
    pre = next(f for f, s in states if s == "pre")
    return Verdict(
        State.UNDECIDED,
        f"its {post.shown} has the fix's change and its {pre.shown} does not (partly reverted?)",
    )


def combine(verdicts: Sequence[Verdict]) -> Verdict:
    """One fix's state from its copies' states: present where some copy is present and none
    absent, absent where some is absent and none present, declared where all are declared."""
    states = [v for v in verdicts if v.state != State.DECLARED]
    if not states:
        return Verdict(State.DECLARED)
    present = [v for v in states if v.state == State.PRESENT]
    absent = [v for v in states if v.state == State.ABSENT]
    if present and not absent:
        return present[0]
    if absent and not present:
        return absent[0]
    if present and absent:
        return Verdict(State.UNDECIDED, "one copy of the fix is in the tree and another is not")
    return next(v for v in states if v.state == State.UNDECIDED)
