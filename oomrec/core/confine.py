"""Writes stay inside: the one check a file oomrec writes passes before anything is created,
appended or replaced (the record, its archive, their lock and torn-line files, a sweep's CSV).

A clone is someone else's text: a symlink committed there (`benchmarks/.oom-record` ->
`~/.bashrc`) or a path in its `pyproject.toml` must not make oomrec write outside it. So:

- a file to write, or a folder on its way inside the repository, that is a symlink *committed*
  in the repository (`git ls-files -s` mode 120000) is refused, whoever named the path;
- a path the repository chose (the default, `[tool.oomrec]`) must resolve inside the
  repository, and the files beside it inside the folder it resolves to. Only a path the user
  named (the command line, `$OOMREC_RECORD`) may resolve elsewhere: the user chose it.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from oomrec.core import gitrun
from oomrec.core.errors import OomrecError
from oomrec.core.provenance import JOURNAL_SUFFIX, SIDECAR_SUFFIX
from oomrec.core.shown import printable

SYMLINK_MODE = "120000"
# A running sweep's lock beside its CSV (sweep.outlock.SUFFIX; core does not import the sweep).
OUTPUT_LOCK = ".oomrec.lock"


@dataclass(frozen=True)
class Confinement:
    """Where writes may go. `root`: what a path the repository chose must resolve inside;
    `repos`: the worktrees whose committed symlinks are refused; `named_by_user`: the user named
    the path (it may resolve anywhere, the files beside it stay beside it); `flag`: how to name
    another file, for the advice (`--record`)."""

    root: Path
    repos: tuple[Path, ...]
    named_by_user: bool
    flag: str


def check_writes(shown: str, path: Path, beside: Sequence[Path], confinement: Confinement) -> None:
    """OomrecError (one line: what, where, what to do) unless writing `path` and the files
    `beside` it (lock, torn line: beside its real path) stays inside `confinement`."""
    path = Path(os.path.abspath(path))
    files = [path, *(Path(os.path.abspath(p)) for p in beside)]
    committed = _committed_link(files, confinement.repos)
    if committed is not None:
        link, repo = committed
        rel = link.relative_to(repo)
        raise OomrecError(
            f"{shown}: {printable(str(rel))} is a symlink committed in the repository "
            f"{printable(str(repo))} (to {printable(os.readlink(link))}); refusing to write "
            f"through it; remove it (git rm) or pass {confinement.flag} FILE"
        )
    if confinement.named_by_user:
        # The file may be anywhere; what goes beside it (beside the link, or beside the file
        # it names) stays in that folder.
        roots = {Path(os.path.realpath(path)).parent, Path(os.path.realpath(path.parent))}
        where = "the folder of the file named"
    else:
        roots = {Path(os.path.realpath(confinement.root))}
        where = "the repository"
    for file in files:
        resolved = Path(os.path.realpath(file))
        if not any(resolved == root or root in resolved.parents for root in roots):
            what = shown if file == path else f"{shown} ({file.name})"
            inside = " or ".join(printable(str(root)) for root in sorted(roots))
            raise OomrecError(
                f"{what}: resolves to {printable(str(resolved))}, outside {where} {inside}; "
                f"refusing to write there; pass {confinement.flag} FILE naming the file to write "
                "there on purpose"
            )


def _committed_link(files: Sequence[Path], repos: Sequence[Path]) -> tuple[Path, Path] | None:
    """The first of `files`, or of their folders inside a repository, that is a symlink git
    tracks there, and that repository; None when none is."""
    for repo in repos:
        links: list[Path] = []
        for file in files:
            try:
                rel = file.relative_to(repo)
            except ValueError:
                continue
            steps = [repo.joinpath(*rel.parts[: i + 1]) for i in range(len(rel.parts))]
            links.extend(step for step in steps if step.is_symlink() and step not in links)
        if not links:
            continue
        tracked = _tracked_links(repo, [str(link.relative_to(repo)) for link in links])
        for link in links:
            if str(link.relative_to(repo)) in tracked:
                return link, repo
    return None


def _tracked_links(repo: Path, rels: Sequence[str]) -> set[str]:
    """Which of `rels` git's index holds as symlinks (mode 120000) in `repo`."""
    try:
        done = gitrun.run(
            ["--literal-pathspecs", "ls-files", "-s", "-z", "--", *rels],
            cwd=repo,
            capture_output=True,
            stdin=subprocess.DEVNULL,
        )
    except OSError:
        return set()
    out: set[str] = set()
    for entry in done.stdout.split(b"\0"):
        meta, _, name = entry.partition(b"\t")
        if meta.split(b" ")[0].decode("ascii", "replace") == SYMLINK_MODE:
            out.add(os.fsdecode(name))
    return out


def reserved_target(path: Path, flag: str, what: str) -> str | None:
    """Why a derived file (`--output`'s CSV, `--html`'s page) must not go to `path`, in one
    line; None when it may. Git's own folder (`.git/config`, a hook) and a sweep's provenance
    file are never one; the record and the files beside it are the record's to say
    (RecordFile.owns)."""
    shown = printable(str(path))
    for form in dict.fromkeys((Path(os.path.abspath(path)), Path(os.path.realpath(path)))):
        if ".git" in form.parts:
            return (
                f"{flag} {shown} is inside git's own folder (.git); writing {what} there would "
                f"overwrite git's files; pass another {flag}"
            )
        if form.name.endswith((SIDECAR_SUFFIX, SIDECAR_SUFFIX + JOURNAL_SUFFIX, OUTPUT_LOCK)):
            return (
                f"{flag} {shown} is a sweep's provenance or lock file; writing "
                f"{what} there would wipe it; pass another {flag}"
            )
    return None
