"""`oomrec check` without Typer: it sits in front of every hand run, and Typer's import alone is
about twice Python's start-up. Its few forms (`check MODEL LENGTH [--record PATH] [--json]`)
are read here; anything else (`--help`, a typo, root options) goes to the full command line
(cli/check.py), which renders through the same function.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from oomrec.commands.check import CheckResult

# Exit status: 0 the cell may launch, 1 a record applies (so `oomrec check m 32k && run` runs
# nothing), 2 usage.
EXIT_MAY_LAUNCH = 0
EXIT_RECORDED = 1
# A fix lifted a record but no run has verified it: launch it only as a probe (`oomrec run`).
EXIT_PROBE = 3


def parse(args: list[str]) -> tuple[str, str, Path | None, bool] | None:
    """(model, length, record, as_json) from the arguments after `check`; None for any other
    form (help, unknown options, a wrong count), which the full command line answers."""
    positional: list[str] = []
    record: Path | None = None
    as_json = False
    rest = iter(args)
    for arg in rest:
        if arg == "--json":
            as_json = True
        elif arg == "--record":
            value = next(rest, None)
            if value is None:
                return None
            record = Path(value)
        elif arg.startswith("--record="):
            record = Path(arg.removeprefix("--record="))
        elif arg.startswith("-") and arg != "-":
            return None
        else:
            positional.append(arg)
    if len(positional) != 2:
        return None
    return positional[0], positional[1], record, as_json


def run(args: list[str]) -> int | None:
    """`oomrec check ARGS` answered here, its exit status; None when the full command line is
    to answer it."""
    parsed = parse(args)
    if parsed is None:
        return None
    model, length, record, as_json = parsed
    from oomrec.commands.check import check

    # Errors (a bad argument, stdout on a full disk) end as entry.py's _answered ends them.
    return render(check(model=model, length=length, record=record), as_json, quiet=False)


def render(result: CheckResult, as_json: bool, quiet: bool) -> int:
    """Print a check's result (its warnings and notices on stderr, then its one line, or its
    JSON, on stdout); its exit status."""
    for notice in result.notices:
        if not quiet:
            print(notice, file=sys.stderr)
    for warning in result.warnings:
        print(warning, file=sys.stderr)
    if as_json:
        from oomrec.cli.jsonout import write_result

        write_result(result)
    elif not quiet or not result.may_launch:
        # A refusal is said even with -q: a script's log shows why nothing ran.
        print(result.line())
    sys.stdout.flush()
    if result.may_launch:
        return EXIT_MAY_LAUNCH
    return EXIT_PROBE if result.decision == "probe" else EXIT_RECORDED
