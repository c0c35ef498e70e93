"""oomrec as a guest in a user's repository: its record is machine-local data, so on the first
write of a record into a git worktree where it is not ignored, its patterns go to the
repository's `info/exclude` (never the tracked `.gitignore`), and oomrec says so once.

Plain git subprocesses (core/gitrun): this runs before a write in commands that must not pay
GitPython.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from oomrec.core import gitrun

_HEADER = "# oomrec: the OOM record is machine-local data (added on oomrec's first write)"
# Characters that mean something in a gitignore pattern, escaped to match themselves.
_SPECIAL = "\\*?[!#"


def exclude_record(record: Path) -> str | None:
    """Make git ignore `record` and the files beside it (lock, archive, torn line, temp files)
    when it is about to be created inside a worktree that does not ignore it yet.

    Returns the line to tell the user (what was added, or why it could not be), else None.
    """
    return _exclude(
        record,
        _HEADER,
        lambda pattern: [pattern, f"{pattern}.*"],
        "so the record (machine-local data) stays out of `git status`",
    )


def exclude_sweep_files(csv_path: Path) -> str | None:
    """Make git ignore what a sweep keeps beside its CSV (machine-local: the lock, the
    provenance file and its journal, `<csv>.oomrec.*`, and torn rows, `<csv>.torn`) inside a
    worktree that does not ignore them yet; the line to tell the user, else None. Checked on
    every sweep (two git calls): a provenance file an older oomrec left is excluded too."""
    provenance = csv_path.with_name(csv_path.name + ".oomrec.json")
    return _exclude(
        provenance,
        "# oomrec: a sweep's lock, provenance and torn rows beside its CSV (machine-local)",
        lambda pattern: [
            pattern.removesuffix("json") + "*",
            pattern.removesuffix(".oomrec.json") + ".torn",
        ],
        "so the sweep's own files stay out of `git status`",
        only_new=False,
    )


def exclude_replaced(csv_path: Path, aside: Path) -> str | None:
    """Make git ignore an earlier CSV a sweep moved aside (`<csv>.replaced-*`, a machine-local
    copy) where it does not yet (a worktree set up before such copies existed)."""
    return _exclude(
        aside,
        "# oomrec: earlier CSVs a sweep moved aside (machine-local copies)",
        lambda pattern: [
            pattern[: pattern.rfind("/") + 1] + _escape(csv_path.name) + ".replaced-*"
        ],
        "so the moved-aside CSV stays out of `git status`",
        only_new=False,
    )


def exclude_folder(folder: Path) -> str | None:
    """Make git ignore a folder oomrec fills (a fleet's job files and logs) inside a worktree
    that does not ignore it yet; the line to tell the user, else None."""
    return _exclude(
        folder,
        "# oomrec: a fleet's job files and logs (machine-local)",
        lambda pattern: [pattern + "/"],
        "so the fleet's job files stay out of `git status`",
        only_new=False,
    )


def _exclude(
    target: Path,
    header: str,
    patterns: Callable[[str], list[str]],
    why: str,
    only_new: bool = True,
) -> str | None:
    if only_new and os.path.lexists(target):
        return None
    where = _existing_parent(target.absolute().parent)
    found = _git(
        where, "rev-parse", "--path-format=absolute", "--show-toplevel", "--git-common-dir"
    )
    if found is None:
        return None
    top_text, common_text = found.splitlines()[:2]
    top = Path(top_text)
    try:
        relative = target.absolute().resolve().relative_to(top.resolve())
    except ValueError:
        return None  # outside the worktree: git does not see it
    if _git(top, "check-ignore", "-q", "--no-index", relative.as_posix()) is not None:
        return None  # already ignored (.gitignore, info/exclude, core.excludesFile)
    lines = patterns("/" + _escape(relative.as_posix()))
    exclude = where / common_text if not Path(common_text).is_absolute() else Path(common_text)
    exclude = exclude / "info" / "exclude"
    try:
        exclude.parent.mkdir(parents=True, exist_ok=True)
        existing = exclude.read_text(encoding="utf-8") if exclude.exists() else ""
        lead = "" if not existing or existing.endswith("\n") else "\n"
        with exclude.open("a", encoding="utf-8") as out:
            out.write(lead + header + "\n" + "".join(f"{x}\n" for x in lines))
    except OSError as exc:
        return (
            f"warning: {relative} will show in `git status`: cannot add it to {exclude} "
            f"({exc.strerror}); ignore it yourself"
        )
    return f"oomrec: added {' and '.join(lines)} to {exclude} {why}; .gitignore is untouched"


def _existing_parent(folder: Path) -> Path:
    while not folder.is_dir() and folder != folder.parent:
        folder = folder.parent
    return folder


def _escape(path: str) -> str:
    escaped = "".join("\\" + c if c in _SPECIAL else c for c in path)
    # A trailing space is dropped by git unless escaped.
    return escaped[:-1] + "\\ " if escaped.endswith(" ") else escaped


def _git(where: Path, *args: str) -> str | None:
    """git's stdout, or None when it fails (not a repository, no git, exit 1)."""
    try:
        done = gitrun.run(
            ["-C", str(where), *args],
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="replace",
        )
    except OSError:
        return None
    return done.stdout if done.returncode == 0 else None
