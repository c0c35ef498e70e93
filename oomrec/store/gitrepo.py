"""Every git question oomrec asks, answered through GitPython.

GitPython costs ~0.17 s to import, so this module is imported only by the commands that need
git, never by `oomrec --help`.
"""

from __future__ import annotations

import os
import posixpath
import re
import tempfile
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import git
from git.exc import GitCommandError, InvalidGitRepositoryError, NoSuchPathError

from oomrec.core import gitrun
from oomrec.core.errors import OomrecError
from oomrec.core.gitrun import GIT_CONFIG


class _LiteralGit(git.Git):
    """GitPython's git command runner, run in its working directory as named: git.Git expands
    `$NAME` (and a leading `~`) in it whatever the Repo was told."""

    def __init__(self, working_dir: str | os.PathLike[str] | None = None) -> None:
        super().__init__(working_dir)
        if working_dir is not None:
            self._working_dir = os.path.normpath(os.path.abspath(os.fspath(working_dir)))


class _Repo(git.Repo):
    """A repository opened at its literal path: no `$NAME` expansion anywhere."""

    GitCommandWrapperType = _LiteralGit


def open_repo(start: Path | None = None) -> git.Repo | None:
    """The repository containing `start` (default: the cwd), or None outside any repository.

    A path is a path: GitPython would expand `$NAME` in it (a clone in `repo$X` would open the
    sibling `repo<value of X>`), so none happens, in the Repo nor in its git runner. Every git
    command run through it gets `-c` overrides (core/gitrun.GIT_CONFIG), so that a user's
    `grep.patternType`, `log.showSignature` or `diff.noprefix` cannot change git's answers.
    """
    try:
        if start is None and os.environ.get("GIT_DIR"):
            # The repository git would use: GitPython reads $GIT_DIR and $GIT_WORK_TREE itself
            # only when given no path.
            repo = _Repo(expand_vars=False)
        else:
            repo = _Repo(start or Path.cwd(), search_parent_directories=True, expand_vars=False)
    except (InvalidGitRepositoryError, NoSuchPathError):
        return None
    repo.git.set_persistent_git_options(c=list(GIT_CONFIG))
    return repo


def head_sha(repo: git.Repo | None) -> str | None:
    """HEAD's full SHA, or None outside git or in a repository with no commit yet."""
    if repo is None:
        return None
    # rev-parse, not GitPython's object model: that cannot read a SHA-256 repository.
    try:
        out = repo.git.rev_parse("--verify", "--quiet", "HEAD^{commit}")
    except GitCommandError:
        return None
    return out.strip() or None


def resolve_commit(repo: git.Repo | None, rev: str) -> str:
    """The full SHA of the commit `rev` names; OomrecError when it names none."""
    if repo is None:
        raise OomrecError(
            f"cannot resolve commit {rev!r}: not inside a git repository; run from the repo"
        )
    try:
        return str(
            repo.git.rev_parse("--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}")
        )
    except GitCommandError:
        raise OomrecError(
            f"{rev!r} is not a commit in {repo.working_tree_dir}; check the revision "
            "(git log --oneline)"
        ) from None


@dataclass(frozen=True, slots=True)
class AddedBy:
    """The commit that first added a file (or a line), and that commit's author date
    (YYYY-MM-DD). `changed_later`: a later commit changed the file, so some of its lines may be
    younger than `sha`."""

    sha: str
    date: str
    changed_later: bool = False


_COMMIT_MARK = "\x01"


def first_added(root: Path, paths: Iterable[str]) -> dict[str, AddedBy]:
    """For each repo-relative posix path, the oldest commit that added it, in ONE `git log`.

    The same pass tells whether a later commit changed the file. Paths git never added
    (untracked, outside the repository) are absent from the answer, as is everything when `root`
    is no repository or has no commit yet. `--no-renames`: a renamed file counts as added by the
    rename, never as missing; the oldest add of a path wins.
    """
    wanted = set(paths)
    if not wanted:
        return {}
    repo = open_repo(root)
    if repo is None or head_sha(repo) is None:
        return {}
    # One pathspec per directory keeps the argument list short however many files there are.
    folders = sorted({posixpath.dirname(p) or "." for p in wanted})
    try:
        out: bytes = repo.git.log(
            "--no-renames",
            "--name-status",
            "-z",
            f"--format={_COMMIT_MARK}%H %as",
            "--",
            *(f":(literal){folder}" for folder in folders),
            stdout_as_string=False,
        )
    except GitCommandError as exc:
        raise OomrecError(
            f"git log in {root} failed ({first_stderr_line(exc)}); check the repository"
        ) from None
    found: dict[str, AddedBy] = {}
    # Newest first: a path seen already was changed by a later commit than the one at hand, and
    # a later (older) add of the same path overwrites, so the oldest wins.
    seen: set[str] = set()
    sha = day = status = ""
    for item in out.decode("utf-8", errors="surrogateescape").split("\0"):
        item = item.lstrip("\n")
        if item.startswith(_COMMIT_MARK):
            sha, _, day = item[1:].partition(" ")
            status = ""
        elif not status:
            status = item
        else:
            if status == "A" and item in wanted:
                found[item] = AddedBy(sha, day, changed_later=item in seen)
            seen.add(item)
            status = ""
    return found


def first_stderr_line(exc: GitCommandError) -> str:
    """The first line git wrote to stderr for `exc`, or its exit status."""
    # GitPython stores stderr as "\n  stderr: '<text>'".
    stderr = str(exc.stderr or "").strip().removeprefix("stderr:").strip().strip("'").strip()
    return stderr.splitlines()[0] if stderr else f"exit status {exc.status}"


# Record maintenance (issue 4): questions about many commits at once, one git call each, so a
# record of 100k lines costs as much as one of ten.


@dataclass(frozen=True, slots=True)
class Resolved:
    """What an object name resolved to: a commit's full SHA, or why it names no single commit."""

    sha: str | None
    # "missing", "ambiguous", or the type of the object when it is not a commit.
    problem: str | None = None


def resolve_many(repo: git.Repo, names: Collection[str]) -> dict[str, Resolved]:
    """Resolve hex object names (full or short SHAs) as object names only, in one
    `git cat-file --batch-check` (plus one `rev-parse --disambiguate` per short SHA that is also
    a ref name: git would resolve the ref first, and judge the wrong commit)."""
    ordered = list(dict.fromkeys(names))
    if not ordered:
        return {}
    refs = _short_ref_names(repo) if any(len(n) < 40 for n in ordered) else set()
    plain = [n for n in ordered if n not in refs]
    resolved: dict[str, Resolved] = {}
    if plain:
        # --buffer: one write per 4 KiB, not a flush per name; each write wakes this thread,
        # which the report runs beside its build (1,767 wake-ups cost it ~0.1 s).
        out = with_stdin(
            repo.git.cat_file, ["--batch-check=%(objectname) %(objecttype)", "--buffer"], plain
        )
        for name, row in zip(plain, out.split("\n"), strict=True):
            value, _, kind = row.rpartition(" ")
            resolved[name] = Resolved(value) if kind == "commit" else Resolved(None, kind)
    for name in ordered:
        if name in refs:
            resolved[name] = _disambiguate(repo, name)
    return resolved


def _short_ref_names(repo: git.Repo) -> set[str]:
    """Every name git's ref lookup would try before an object name: `x` for refs/x,
    refs/tags/x, refs/heads/x, refs/remotes/x and refs/remotes/x/HEAD."""
    out = repo.git.for_each_ref("--format=%(refname)")
    names: set[str] = set()
    for ref in out.split("\n"):
        for prefix in ("refs/tags/", "refs/heads/", "refs/remotes/", "refs/"):
            if ref.startswith(prefix):
                names.add(ref[len(prefix) :].removesuffix("/HEAD"))
    return {n.lower() for n in names} | names


def _disambiguate(repo: git.Repo, name: str) -> Resolved:
    try:
        out = repo.git.rev_parse(f"--disambiguate={name}")
    except GitCommandError:
        return Resolved(None, "missing")
    candidates = out.split()
    if not candidates:
        return Resolved(None, "missing")
    out = with_stdin(repo.git.cat_file, ["--batch-check=%(objectname) %(objecttype)"], candidates)
    commits = [row.split()[0] for row in out.split("\n") if row.endswith(" commit")]
    if len(commits) == 1:
        return Resolved(commits[0])
    return Resolved(None, "ambiguous" if commits else "missing")


def shallow_commits(repo: git.Repo) -> frozenset[str]:
    """The commits where a shallow clone's history is cut off; empty for a complete repository."""
    shallow = Path(repo.working_dir) / repo.git.rev_parse("--git-path", "shallow")
    try:
        return frozenset(shallow.read_text(encoding="ascii").split())
    except FileNotFoundError:
        return frozenset()


def history_replaced(repo: git.Repo) -> bool:
    """Whether commits' histories may differ from what their SHAs name: replacement refs
    (`git replace`, `--graft`) or a legacy `info/grafts` file. A history cached by SHA
    (staleness/eventcache.py) cannot be trusted then."""
    grafts = Path(repo.working_dir) / repo.git.rev_parse("--git-path", "info/grafts")
    if grafts.exists():
        return True
    from oomrec.store.noterefs import REPLACE_PREFIX

    return bool(repo.git.for_each_ref("--count=1", "--format=%(refname)", REPLACE_PREFIX))


def parents(repo: git.Repo, tips: Collection[str]) -> list[list[str]]:
    """The history of `tips` as `[commit, parent...]` lists, every parent before its children,
    in ONE `git rev-list --parents --topo-order --reverse`."""
    if not tips:
        return []
    out = with_stdin(repo.git.rev_list, ["--parents", "--topo-order", "--reverse", "--stdin"], tips)
    return [row.split() for row in out.split("\n") if row]


def patch_ids(repo: git.Repo, shas: Collection[str], reverse: bool = False) -> dict[str, str]:
    """`git patch-id --stable` of each commit (a merge has none; a root commit its whole tree),
    from ONE `git diff-tree` piped into ONE `git patch-id`. `reverse`: of the commit's patch
    reversed, which is what a revert of it has."""
    if not shas:
        return {}
    diff = with_stdin(
        repo.git.diff_tree,
        [
            "--stdin",
            *(["-R"] if reverse else []),
            "--root",
            "-p",
            "-r",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            "--no-renames",
            # -R swaps the prefixes too; patch-id hashes the file names with them.
            *(
                ["--src-prefix=b/", "--dst-prefix=a/"]
                if reverse
                else ["--src-prefix=a/", "--dst-prefix=b/"]
            ),
            "--full-index",
        ],
        shas,
    )
    out = with_stdin(repo.git.patch_id, ["--stable"], [diff])
    ids: dict[str, str] = {}
    for row in out.split("\n"):
        patch, _, commit = row.partition(" ")
        if commit:
            ids[commit] = patch
    return ids


def changed_paths(repo: git.Repo, shas: Collection[str]) -> dict[str, frozenset[bytes]]:
    """The paths each commit changes (against its first parent; a root commit: its whole tree),
    in ONE `git diff-tree --name-only`; commits not in the repository are left out (one
    `cat-file --batch-check` finds them first)."""
    found = resolve_many(repo, [s for s in shas if len(s) in (40, 64)])
    commits = sorted(name for name, r in found.items() if r.sha == name)
    if not commits:
        return {}
    out = with_stdin_bytes(
        repo.git.diff_tree,
        [
            "--stdin",
            "-r",
            "--root",
            "--no-renames",
            "--no-ext-diff",
            "--diff-merges=first-parent",
            "--ignore-submodules=none",
            "--name-only",
            "-z",
        ],
        commits,
    )
    wanted = set(commits)
    paths: dict[str, set[bytes]] = {sha: set() for sha in commits}
    current: set[bytes] | None = None
    for item in out.split(b"\0"):
        item = item.lstrip(b"\n")
        text = item.decode("ascii", "replace")
        if text in wanted:
            current = paths[text]
        elif item and current is not None:
            current.add(item)
    return {sha: frozenset(p) for sha, p in paths.items()}


def read_objects(repo: git.Repo, names: Sequence[str]) -> list[tuple[str, bytes] | None]:
    """Each object's type and content, in ONE `git cat-file --batch`; None for a missing one."""
    if not names:
        return []
    with tempfile.TemporaryFile() as stdin:
        stdin.write("".join(f"{name}\n" for name in names).encode("utf-8"))
        stdin.seek(0)
        # --buffer: one flush at the end instead of one per object.
        out: bytes = repo.git.cat_file("--batch", "--buffer", istream=stdin, stdout_as_string=False)
    found: list[tuple[str, bytes] | None] = []
    pos = 0
    for _ in names:
        # GitPython strips the output's last newline: a last "<name> missing" ends without one.
        end = out.find(b"\n", pos)
        if end == -1:
            end = len(out)
        header = out[pos:end].split()
        if len(header) != 3:
            # "<name> missing" (or ambiguous): no content follows.
            found.append(None)
            pos = end + 1
            continue
        size = int(header[2])
        found.append((header[1].decode(), out[end + 1 : end + 1 + size]))
        pos = end + 1 + size + 1
    return found


# A tree object's entries, `<mode> <name>\0<raw id>`, back to back: the regex engine walks them
# (each match starts where the last ended) several times faster than a Python loop.
_TREE_ENTRY = {
    size: re.compile(rb"([0-7]+) ([^\0]*)\0(.{%d})" % size, re.DOTALL) for size in (20, 32)
}


def object_id_size(repo: git.Repo) -> int:
    """How many raw bytes an object id has in `repo`: 20 (SHA-1) or 32 (SHA-256)."""
    try:
        return 32 if repo.git.rev_parse("--show-object-format").strip() == "sha256" else 20
    except GitCommandError:
        return 20


def tree_entries(data: bytes, id_size: int = 20) -> list[tuple[bytes, bytes, bytes]]:
    """A tree object's (mode, name, raw object id) entries; ids are `id_size` raw bytes (20 for
    SHA-1, 32 for SHA-256)."""
    return _TREE_ENTRY[id_size].findall(data)


def not_on_remote(repo: git.Repo, shas: Collection[str], remote: str) -> set[str]:
    """The commits (full SHAs) that no branch of `remote` (as last fetched) contains, in one
    `for-each-ref` and one `rev-list`."""
    if not shas:
        return set()
    tips = repo.git.for_each_ref("--format=%(objectname)", f"refs/remotes/{remote}/").split()
    if not tips:
        return set(shas)
    out = with_stdin(repo.git.rev_list, ["--stdin"], [*shas, *(f"^{t}" for t in tips)])
    return set(out.split()) & set(shas)


def hooks_dir(repo: git.Repo) -> Path:
    """Where git runs this repository's hooks from, honouring `core.hooksPath`."""
    # A relative core.hooksPath is relative to the top of the worktree, where git runs hooks.
    return Path(repo.working_dir) / str(repo.git.rev_parse("--git-path", "hooks"))


def with_stdin(command: Callable[..., str], args: Sequence[str], lines: Iterable[str]) -> str:
    """`command(*args)` (a GitPython git command) with `lines` on its stdin; its stdout."""
    return str(_run_with_stdin(command, args, lines))


def with_stdin_bytes(
    command: Callable[..., bytes], args: Sequence[str], lines: Iterable[str]
) -> bytes:
    """The same, its stdout as bytes, byte for byte (patches, `-z` output)."""
    out = _run_with_stdin(
        command, args, lines, stdout_as_string=False, strip_newline_in_stdout=False
    )
    assert isinstance(out, bytes)
    return out


def _run_with_stdin(
    command: Callable[..., Any], args: Sequence[str], lines: Iterable[str], **options: bool
) -> Any:
    # GitPython takes stdin as a file, not a string; a temp file cannot deadlock the way a pipe
    # written while git's stdout fills up can.
    with tempfile.TemporaryFile() as stdin:
        stdin.write("".join(f"{line}\n" for line in lines).encode("utf-8"))
        stdin.seek(0)
        try:
            return command(*args, istream=stdin, **options)
        except GitCommandError as exc:
            raise OomrecError(
                f"git {_subcommand(exc.command)} failed ({first_stderr_line(exc)}); check the "
                "repository"
            ) from None


def _subcommand(argv: Sequence[str] | str) -> str:
    """The git subcommand of a failed command line, past the `-c name=value` overrides."""
    if isinstance(argv, str):
        return argv
    i = 1
    while i + 1 < len(argv) and argv[i] == "-c":
        i += 2
    return str(argv[i]) if i < len(argv) else ""


# Row-accurate commits for import-csv: which lines of a file came after the commit that added it.

_NOT_COMMITTED = frozenset({"0" * 40, "0" * 64})


def uncommitted(root: Path, paths: Iterable[str]) -> set[str]:
    """The repo-relative paths whose working-tree or staged content differs from HEAD, in ONE
    `git diff`; empty outside a repository or before its first commit."""
    wanted = set(paths)
    repo = open_repo(root) if wanted else None
    if repo is None or head_sha(repo) is None:
        return set()
    try:
        out: str = repo.git.diff(
            "--name-only",
            "--no-renames",
            "-z",
            "HEAD",
            "--",
            *(
                f":(literal){folder}"
                for folder in sorted({posixpath.dirname(p) or "." for p in wanted})
            ),
        )
    except GitCommandError as exc:
        raise OomrecError(
            f"git diff in {root} failed ({first_stderr_line(exc)}); check the repository"
        ) from None
    return wanted & set(out.split("\0"))


@dataclass(frozen=True, slots=True)
class WorkTree:
    """What a work tree does to some repo-relative paths, as oomrec's staleness check sees it.

    `changed`: the paths whose work tree or index differs from HEAD, in `git status`'s eyes with
    nothing hidden (untracked and ignored files, every submodule). `hidden`: the paths git is
    told not to look at, and why (assume-unchanged, skip-worktree, a sparse checkout): what is
    on disk there cannot be known from git."""

    changed: frozenset[str]
    hidden: dict[str, str]


# On top of GIT_CONFIG for the work tree check: a user's config must hide nothing from it.
_STATUS_CONFIG = (
    "core.ignoreStat=false",
    "status.showUntrackedFiles=all",
    "status.submoduleSummary=false",
    "status.renames=false",
    "status.relativePaths=false",
    "diff.ignoreSubmodules=none",
    "core.fsmonitor=false",
    "core.untrackedCache=false",
)


# Bytes of pathspecs one git command line takes before folders stand for their files.
_MAX_PATHSPEC = 64 * 1024


def work_tree(root: Path, paths: Iterable[str]) -> WorkTree:
    """How the work tree at `root` stands at `paths` (see WorkTree), in ONE `git status` and
    ONE `git ls-files -v`; nothing outside a repository or before its first commit."""
    wanted = set(paths)
    repo = open_repo(root) if wanted else None
    if repo is None or head_sha(repo) is None or repo.working_tree_dir is None:
        return WorkTree(frozenset(), {})
    # The paths themselves: a folder would also walk every ignored file under it (a virtual
    # environment, checkpoints). Past a command line's sane length, their folders.
    specs = [f":(literal){p}" for p in sorted(wanted)]
    if sum(len(p) + 1 for p in specs) > _MAX_PATHSPEC:
        specs = [f":(literal){f}" for f in sorted({posixpath.dirname(p) or "." for p in wanted})]
    try:
        status: bytes = repo.git.execute(
            gitrun.argv(
                [
                    "status",
                    "--porcelain=v1",
                    "-z",
                    "--untracked-files=all",
                    "--ignored=matching",
                    "--ignore-submodules=none",
                    "--no-renames",
                    "--",
                    *specs,
                ],
                config=_STATUS_CONFIG,
            ),
            stdout_as_string=False,
            strip_newline_in_stdout=False,
        )
        flags: bytes = repo.git.execute(
            gitrun.argv(["ls-files", "-v", "-z", "--", *specs], config=_STATUS_CONFIG),
            stdout_as_string=False,
            strip_newline_in_stdout=False,
        )
    except GitCommandError as exc:
        raise OomrecError(
            f"git status in {root} failed ({first_stderr_line(exc)}); check the repository"
        ) from None
    changed = set()
    for item in status.split(b"\0"):
        # "XY <path>": with --no-renames no entry has a second path.
        if len(item) > 3:
            changed.add(item[3:].decode("utf-8", "surrogateescape"))
    hidden: dict[str, str] = {}
    for item in flags.split(b"\0"):
        if len(item) < 3:
            continue
        tag, path = item[:1].decode("ascii", "replace"), item[2:].decode("utf-8", "surrogateescape")
        if tag in "Ss":
            hidden[path] = "marked skip-worktree (a sparse checkout, or update-index)"
        elif tag.islower():
            hidden[path] = "marked assume-unchanged (update-index, or core.ignoreStat)"
    return WorkTree(frozenset(wanted & changed), {p: w for p, w in hidden.items() if p in wanted})


def line_commits(root: Path, path: str, linenos: Collection[int]) -> dict[int, AddedBy | None]:
    """For lines of one repo-relative file as it is in the working tree, the commit that
    introduced each, from ONE `git blame --porcelain` over just those lines; None for a line
    not committed yet."""
    repo = open_repo(root)
    if repo is None or not linenos:
        return {}
    ranges: list[str] = []
    for first, last in _runs(sorted(set(linenos))):
        ranges += ["-L", f"{first},{last}"]
    try:
        # --no-ignore-revs-file: a blame.ignoreRevsFile in the user's config (a common global
        # setting) would credit lines to other commits, and one naming a missing file fails
        # the blame; an empty `-c` value does not reset it before git opens the file.
        out: str = repo.git.blame("--porcelain", "--no-ignore-revs-file", *ranges, "--", path)
    except GitCommandError as exc:
        raise OomrecError(
            f"git blame {path} in {root} failed ({first_stderr_line(exc)}); check the repository"
        ) from None
    found: dict[int, AddedBy | None] = {}
    # A commit's details come only with the first line it introduced.
    dates: dict[str, str] = {}
    sha, lineno, when = "", 0, 0
    for line in out.split("\n"):
        if line.startswith("\t"):
            # The line's own text ends its entry.
            found[lineno] = None if sha in _NOT_COMMITTED else AddedBy(sha, dates[sha])
            continue
        key, _, value = line.partition(" ")
        if key == "author-time":
            when = int(value)
        elif key == "author-tz":
            dates[sha] = _day(when, value)
        elif len(key) in (40, 64) and all(c in "0123456789abcdef" for c in key):
            sha, lineno = key, int(value.split()[1])
    return found


def _runs(numbers: list[int]) -> Iterator[tuple[int, int]]:
    """Sorted numbers as runs of consecutive ones: one `-L` each keeps git's argv short."""
    start = prev = numbers[0]
    for n in numbers[1:]:
        if n != prev + 1:
            yield start, prev
            start = n
        prev = n
    yield start, prev


def _day(epoch: int, tz: str) -> str:
    """An author time as `%as` shows it: the date in the author's own time zone."""
    sign = -1 if tz.startswith("-") else 1
    offset = timedelta(hours=int(tz[1:3]), minutes=int(tz[3:5])) * sign
    return datetime.fromtimestamp(epoch, timezone(offset)).date().isoformat()
