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
from dataclasses import dataclass, field
from pathlib import Path

from oomrec.config import display_path
from oomrec.errors import OomrecError
from oomrec.hooks import EVENTS

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


@dataclass
class HookChanges:
    """What install or uninstall did: a line per hook, and the hooks it could not handle."""

    lines: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def install(directory: Path, oomrec: str | None) -> HookChanges:
    """Write every hook into `directory`, chaining any hook already there (moved to .legacy)."""
    out = HookChanges()
    directory.mkdir(parents=True, exist_ok=True)
    for event in EVENTS:
        path = directory / event
        legacy = path.with_name(event + LEGACY)
        shown = display_path(path)
        wanted = shim(event, oomrec)
        current = _read_hook(path)
        kept = f"; runs {display_path(legacy)} first" if os.path.lexists(legacy) else ""
        if current == wanted:
            out.lines.append(f"already installed: {shown}{kept}")
            continue
        if current is not None and MARKER not in current:
            if os.path.lexists(legacy):
                # Never lose a hook: both files are someone's, and only one can run first.
                out.problems.append(
                    f"{shown}: not oomrec's hook and {display_path(legacy)} exists too; merge "
                    "them into one (or remove one), then install again"
                )
                continue
            os.replace(path, legacy)
            action, kept = "installed", f"; your hook moved to {display_path(legacy)}, runs first"
        else:
            action = "installed" if current is None else "updated"
        _write(path, wanted)
        out.lines.append(f"{action}: {shown}{kept}")
    return out


def uninstall(directory: Path) -> HookChanges:
    """Remove oomrec's hooks (by their marker line) and put each .legacy hook back."""
    out = HookChanges()
    for event in EVENTS:
        path = directory / event
        legacy = path.with_name(event + LEGACY)
        shown = display_path(path)
        current = _read_hook(path)
        if current is None and not os.path.lexists(legacy):
            out.lines.append(f"not installed: {shown}")
        elif current is not None and MARKER not in current:
            out.lines.append(f"left as is: {shown} (not installed by oomrec)")
        elif os.path.lexists(legacy):
            os.replace(legacy, path)
            done = "removed" if current is not None else "not installed"
            out.lines.append(f"{done}: {shown}; {display_path(legacy)} put back")
        else:
            path.unlink()
            out.lines.append(f"removed: {shown}")
    return out


def hooks_dir() -> Path:
    """The repository's hooks directory, as git resolves it (core.hooksPath counts)."""
    from oomrec import gitutil

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
