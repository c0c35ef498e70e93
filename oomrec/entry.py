"""The `oomrec` console script. `oomrec hook post-merge|post-rewrite` runs here without loading
the command line (Typer, GitPython), so a git hook with nothing to flag stays under 200 ms;
`oomrec -V` alone and the plain forms of `oomrec check` (in front of every hand run) and of
`oomrec record list` are answered here too (Typer's import alone is twice Python's start-up);
every other command goes to `oomrec.cli`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from oomrec.core.errors import EXIT_INTERRUPTED, EXIT_USAGE, OomrecError

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
        return _answered(_version) or 0
    if len(args) >= 2 and args[0] == "hook" and not _HELP & set(args):
        from oomrec.hooks import check as hooks

        if args[1] in hooks.EVENTS:
            return hooks.run(args[1], args[2:], sys.stdin)
    if args and args[0] == "check" and not _completing():
        from oomrec.cli import check_plain

        status = _answered(lambda: check_plain.run(args[1:]))
        if status is not None:
            return status
    if args[:2] == ["record", "list"] and not _completing():
        from oomrec.cli import record_list_plain

        status = _answered(lambda: record_list_plain.run(args[2:]))
        if status is not None:
            return status
    from oomrec.cli import main as cli_main

    if not args or args[0] not in _QUICK_EXIT:
        return cli_main()
    from oomrec.cli import ending

    ending.allow()
    code: object
    try:
        code = cli_main()
    except SystemExit as exc:
        code = exc.code
    ending.leave(code)


def _answered(answer: Callable[[], int | None]) -> int | None:
    """A command answered here, without the command line, ending as the command line ends one
    (cli/apps.py, and click for a reader gone away): an error a user can cause (a bad
    argument, a full disk under stdout) in one line and status 2, a reader gone away status 1
    and no message. None: `answer` leaves the command to the command line."""
    try:
        return answer()
    except BrokenPipeError:
        _silence_stdout()
        return 1
    except (OomrecError, OSError) as exc:
        from oomrec.cli import ending, output

        _silence_stdout()
        message = ending.describe(exc) if isinstance(exc, OSError) else str(exc)
        output.tell(ending.error_line(message))
        return EXIT_USAGE


def _version() -> int:
    """`oomrec -V`: what the root's --version prints. Anything with it on the command line
    (`-q -V`, `-V sweep`) goes through the command line."""
    from oomrec import __version__

    sys.stdout.write(f"oomrec {__version__}\n")
    sys.stdout.flush()
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
