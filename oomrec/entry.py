"""The `oomrec` console script. `oomrec hook post-merge|post-rewrite` runs here without loading
the command line (Typer, GitPython), so a git hook with nothing to flag stays under 200 ms;
every other command goes to `oomrec.cli`.
"""

from __future__ import annotations

import sys

from oomrec.core.errors import EXIT_INTERRUPTED

_HELP = {"-h", "--help"}
# Commands that may end this process as soon as their output is written (cli/ending.py): those
# that end holding millions of objects.
_QUICK_EXIT = {"report"}


def main() -> int:
    try:
        return _main(sys.argv[1:])
    except KeyboardInterrupt:
        # Ctrl-C before the command line runs (while Python imports it): exit as a command
        # interrupted exits, without a traceback of the import it stopped.
        return EXIT_INTERRUPTED


def _main(args: list[str]) -> int:
    if len(args) >= 2 and args[0] == "hook" and not _HELP & set(args):
        from oomrec.hooks import check as hooks

        if args[1] in hooks.EVENTS:
            return hooks.run(args[1], args[2:], sys.stdin)
    from oomrec.cli import main as cli_main

    if not args or args[0] not in _QUICK_EXIT:
        return cli_main()
    from oomrec.cli import ending

    ending.allow()
    try:
        code = cli_main()
    except SystemExit as exc:
        code = exc.code
    ending.leave(code)
