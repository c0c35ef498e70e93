"""The git hook files: the shim `oomrec hook install` writes, and install/uninstall beside the
hooks a repository already has.

Coexisting as pre-commit does: a hook that is not oomrec's is moved to `<hook>.legacy` and the
shim runs it first, with the same arguments and input (post-rewrite's stdin is read once and
given to both), keeping its exit status; uninstall puts it back. Each hook is handled on its own.
The shim calls the oomrec that installed it (its absolute path), else the first on PATH, and
stays silent without either: a hook must never break a merge.
"""

from __future__ import annotations

import os
import shlex
import sys
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from oomrec.core.errors import OomrecError
from oomrec.hooks.check import EVENTS
from oomrec.store.locations import display_path

# How uninstall (and install, when updating) knows a hook file is oomrec's own.
MARKER = "# oomrec-hook: written by `oomrec hook install`; `oomrec hook uninstall` removes it"
LEGACY = ".legacy"
# Hooks git gives input on stdin: read once, passed to the legacy hook and to oomrec.
_STDIN_EVENTS = frozenset({"post-rewrite"})


def shim(event: str, oomrec: str | None = None) -> str:
    """The POSIX sh hook for `event`; `oomrec` is the absolute path of the oomrec to call
    (None: the generic hook, which looks on PATH only)."""
    stdin = event in _STDIN_EVENTS
    feed = "feed | " if stdin else ""
    lines = [
        "#!/bin/sh",
        MARKER,
        "# Says when OOM records stop applying (or apply again) at the new HEAD. It never edits",
        "# the record and never fails the git operation. A hook that was here before runs first,",
        "# as <hook>.legacy, with the same arguments and input; its exit status is kept. oomrec is",
        "# the one that installed this hook, else the first on PATH; without either, silent.",
        f"oomrec={shlex.quote(oomrec or '')}",
        '[ -n "$oomrec" ] && [ -x "$oomrec" ] ||',
        "    oomrec=$(command -v oomrec 2>/dev/null) || oomrec=",
    ]
    if stdin:
        # Read once: both hooks get the same lines (a pipe can be read only once).
        lines += ["input=$(cat)", 'feed() { [ -z "$input" ] || printf \'%s\\n\' "$input"; }']
    lines += [
        "status=0",
        'if [ -x "$0.legacy" ]; then',
        f'    {feed}"$0.legacy" "$@" || status=$?',
        "fi",
        'if [ -n "$oomrec" ]; then',
        f'    {feed}"$oomrec" hook {event} "$@" || true',
        "fi",
        'exit "$status"',
    ]
    return "\n".join(lines) + "\n"


def this_oomrec() -> str | None:
    """The absolute path of the `oomrec` console script running now, or None (`python -m`)."""
    argv0 = Path(sys.argv[0])
    # Not resolved: a pipx or venv link stays valid when the package is upgraded in place.
    candidates = [argv0] if argv0.name == "oomrec" else []
    candidates.append(Path(sys.executable).parent / "oomrec")
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return os.path.abspath(candidate)
    return None


class HookAction(StrEnum):
    """What install or uninstall did to one hook."""

    INSTALLED = "installed"
    UPDATED = "updated"
    ALREADY_INSTALLED = "already installed"
    # Not oomrec's hook, and a .legacy hook exists too: nothing done, the user must choose.
    CONFLICT = "conflict"
    REMOVED = "removed"
    NOT_INSTALLED = "not installed"
    # Not oomrec's hook: uninstall leaves it.
    LEFT_AS_IS = "left as is"


class Legacy(StrEnum):
    """What became of the hook that was there before oomrec's (`<hook>.legacy`)."""

    MOVED_ASIDE = "moved aside"
    RUNS_FIRST = "runs first"
    PUT_BACK = "put back"


@dataclass(frozen=True)
class HookChange:
    """One hook: its event, its path (as shown), what was done and, when there is one, the
    legacy hook's path and what became of it."""

    hook: str
    path: str
    action: HookAction
    legacy: str | None = None
    legacy_change: Legacy | None = None

    @property
    def problem(self) -> str | None:
        """Why the hook needs the user, or None."""
        if self.action != HookAction.CONFLICT:
            return None
        return (
            f"{self.path}: not oomrec's hook and {self.legacy} exists too; merge them into one "
            "(or remove one), then install again"
        )

    def to_json(self) -> dict[str, str | None]:
        return {
            "hook": self.hook,
            "path": self.path,
            "action": self.action.value,
            "legacy": self.legacy,
            "legacy_change": self.legacy_change.value if self.legacy_change else None,
        }


def install(directory: Path, oomrec: str | None) -> list[HookChange]:
    """Write every hook into `directory`, chaining any hook already there (moved to .legacy)."""
    out: list[HookChange] = []
    try:
        # core.hooksPath may name a folder git has not created yet.
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        what = "is not a folder" if directory.exists() else f"cannot be created ({exc.strerror})"
        raise OomrecError(
            f"{display_path(directory)}: the hooks folder {what}; check core.hooksPath"
        ) from None
    for event in EVENTS:
        path = directory / event
        legacy = path.with_name(event + LEGACY)
        shown, legacy_shown = display_path(path), display_path(legacy)
        wanted = shim(event, oomrec)
        current = _read_hook(path)
        chained = os.path.lexists(legacy)
        kept = Legacy.RUNS_FIRST if chained else None
        if current == wanted:
            out.append(
                HookChange(
                    event, shown, HookAction.ALREADY_INSTALLED, legacy_shown if kept else None, kept
                )
            )
            continue
        if current is not None and MARKER not in current:
            if chained:
                # Never lose a hook: both files are someone's, and only one can run first.
                out.append(HookChange(event, shown, HookAction.CONFLICT, legacy_shown))
                continue
            os.replace(path, legacy)
            action, kept = HookAction.INSTALLED, Legacy.MOVED_ASIDE
        else:
            action = HookAction.INSTALLED if current is None else HookAction.UPDATED
        _write(path, wanted)
        out.append(HookChange(event, shown, action, legacy_shown if kept else None, kept))
    return out


def uninstall(directory: Path) -> list[HookChange]:
    """Remove oomrec's hooks (by their marker line) and put each .legacy hook back."""
    out: list[HookChange] = []
    for event in EVENTS:
        path = directory / event
        legacy = path.with_name(event + LEGACY)
        shown = display_path(path)
        current = _read_hook(path)
        if current is None and not os.path.lexists(legacy):
            out.append(HookChange(event, shown, HookAction.NOT_INSTALLED))
        elif current is not None and MARKER not in current:
            out.append(HookChange(event, shown, HookAction.LEFT_AS_IS))
        elif os.path.lexists(legacy):
            os.replace(legacy, path)
            done = HookAction.REMOVED if current is not None else HookAction.NOT_INSTALLED
            out.append(HookChange(event, shown, done, display_path(legacy), Legacy.PUT_BACK))
        else:
            path.unlink()
            out.append(HookChange(event, shown, HookAction.REMOVED))
    return out


def this_repo_hooks_dir() -> Path:
    """The repository's hooks directory, as git resolves it (core.hooksPath counts)."""
    from oomrec.store import gitrepo as gitutil

    repo = gitutil.open_repo()
    if repo is None:
        raise OomrecError(
            f"{Path.cwd()}: not inside a git repository; run this in the repository whose "
            "merges should be checked"
        )
    return gitutil.hooks_dir(repo)


def _write(path: Path, text: str) -> None:
    # Unlink first: replacing a symlinked hook must not write through to its target.
    path.unlink(missing_ok=True)
    path.write_text(text, encoding="utf-8")
    path.chmod(0o755)


def _read_hook(path: Path) -> str | None:
    if not os.path.lexists(path):
        return None
    if path.is_dir():
        raise OomrecError(f"{display_path(path)}: is a directory, not a hook; remove it first")
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        # A dangling symlink: a hook that cannot run, so not oomrec's either.
        return ""
