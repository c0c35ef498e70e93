"""The `oomrec` console script. `oomrec hook post-merge|post-rewrite` runs here without loading
the command line (Typer, GitPython), so a git hook with nothing to flag stays under 200 ms;
`oomrec -V` alone and the plain forms of `oomrec check` (in front of every hand run) are
answered here too (Typer's import alone is twice Python's start-up); every other command goes
to `oomrec.cli`.
"""

from __future__ import annotations

import os
import sys

from oomrec.core.errors import EXIT_INTERRUPTED

_HELP = {"-h", "--help"}
_VERSION = {"-V", "--version"}
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
    if len(args) == 1 and args[0] in _VERSION and sys.stdout is not None and not _completing():
        return _version()
    if len(args) >= 2 and args[0] == "hook" and not _HELP & set(args):
        from oomrec.hooks import check as hooks

        if args[1] in hooks.EVENTS:
            return hooks.run(args[1], args[2:], sys.stdin)
    if args and args[0] == "check" and not _completing():
        from oomrec.cli import check_plain

        status = check_plain.run(args[1:])
        if status is not None:
            return status
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


def _version() -> int:
    """`oomrec -V`: what the root's --version prints, and how a failed write ends it there
    (cli/apps.py: one line and status 2, or status 1 and no message for a reader gone away).
    Anything with it on the command line (`-q -V`, `-V sweep`) goes through the command line.
    """
    from oomrec import __version__

    try:
        sys.stdout.write(f"oomrec {__version__}\n")
        sys.stdout.flush()
    except BrokenPipeError:
        _silence_stdout()
        return 1
    except OSError as exc:
        from oomrec.cli.ending import FULL, cannot_write

        _silence_stdout()
        why = cannot_write(exc) if exc.errno in FULL else exc.strerror or str(exc)
        print(f"oomrec: error: {why}", file=sys.stderr)
        return 2
    return 0


def _silence_stdout() -> None:
    """Nothing more goes to stdout: the interpreter's flush at exit would fail again and print
    "Exception ignored" with a traceback."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def _completing() -> bool:
    # Shell completion (Typer's _OOMREC_COMPLETE) is the command line's to answer.
    return any(name.endswith("_COMPLETE") for name in os.environ)
