"""The `oomrec` console script. `oomrec hook post-merge|post-rewrite` runs here without loading
the command line (Typer, GitPython), so a git hook with nothing to flag stays under 200 ms;
every other command goes to `oomrec.cli`.
"""

from __future__ import annotations

import os
import sys

_HELP = {"-h", "--help"}
# Commands whose process ends holding millions of objects (the report over 1,000,000 rows):
# Python would free them one by one at exit (~0.05 s); os._exit lets the OS take the memory
# back at once. Only the process's own entry point does this, never a caller's process.
_QUICK_EXIT = {"report"}


def main() -> int:
    args = sys.argv[1:]
    if len(args) >= 2 and args[0] == "hook" and not _HELP & set(args):
        from oomrec import hooks

        if args[1] in hooks.EVENTS:
            return hooks.run(args[1], args[2:], sys.stdin)
    from oomrec.cli import main as cli_main

    if not args or args[0] not in _QUICK_EXIT:
        return cli_main()
    try:
        code = cli_main()
    except SystemExit as exc:
        code = exc.code
    return _leave(code)


def _leave(code: object) -> int:
    """Exit with `code` (as SystemExit takes it) once stdout and stderr are written out."""
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:
        print(code, file=sys.stderr)
        status = 1
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except OSError:
        # A closed pipe: the interpreter's own exit reports it, as for every other command.
        return status
    os._exit(status)
