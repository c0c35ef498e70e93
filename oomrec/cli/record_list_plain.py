"""`oomrec record list` without Typer: Typer's import alone is about 2.7x Python's start-up, and
a look at the record should cost no more than `check`. Its options are declared once, here
(OPTIONS): this reader takes their plain forms, and cli/record_list.py makes its Typer
parameters from the same table. Anything else (`--help`, a typo, root options, a value that
starts with `-`) goes to the full command line, which shows the result through the same
function (`show`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from oomrec.cli.common import print_messages
from oomrec.cli.output import escape_unshowable, info, styled
from oomrec.cli.render import Listing, plural, print_json, print_records

if TYPE_CHECKING:
    from oomrec.commands.record_list import ListResult


@dataclass(frozen=True)
class Option:
    """One option of `record list`: `metavar` None is a flag; `repeat` gathers a list."""

    flag: str
    name: str
    help: str
    metavar: str | None = None
    repeat: bool = False


OPTIONS = (
    Option("--model", "model", "Only models matching this glob (repeatable: any).", "GLOB", True),
    Option("--hardware", "hardware", "Only records of this hardware tag.", "TAG"),
    Option("--archived", "archived", "List the archived records (RECORD.archive) instead."),
    Option("--json", "as_json", "Print a JSON object: the records under `records`."),
    Option("--no-git", "no_git", "Skip the status column (which reads git history)."),
)
# --record is every record command's (cli/apps.RecordOption): read here by the same name.
_RECORD = Option("--record", "record", "", "PATH")


def defaults() -> dict[str, Any]:
    """Each option's value when not given."""
    return {o.name: ([] if o.repeat else None if o.metavar else False) for o in (*OPTIONS, _RECORD)}


def parse(args: list[str]) -> dict[str, Any] | None:
    """The options after `record list`, by name; None for any form the full command line is to
    answer (help, an unknown option, an argument, a value that is empty or starts with `-`)."""
    by_flag = {o.flag: o for o in (*OPTIONS, _RECORD)}
    given = defaults()
    rest = iter(args)
    for arg in rest:
        flag, eq, value = arg.partition("=")
        option = by_flag.get(flag)
        if option is None:
            return None
        if option.metavar is None:
            if eq:
                return None
            given[option.name] = True
            continue
        if not eq:
            value = next(rest, "")
        if not value or value.startswith("-"):
            return None
        if option.repeat:
            given[option.name].append(value)
        else:
            given[option.name] = value
    return given


def run(args: list[str]) -> int | None:
    """`oomrec record list ARGS` answered here, its exit status; None when the full command line
    is to answer it."""
    given = parse(args)
    if given is None:
        return None
    escape_unshowable()
    show(**given)
    return 0


def show(
    *,
    model: list[str] | None,
    hardware: str | None,
    archived: bool,
    as_json: bool,
    no_git: bool,
    record: Path | str | None,
) -> None:
    """List the records as `record list` does, whichever parser read its options."""
    from oomrec.commands.record_list import record_list

    result = record_list(
        record=Path(record) if record is not None else None,
        models=model or (),
        hardware=hardware,
        archived=archived,
        git=not no_git,
    )
    print_messages(result)
    if as_json:
        print_json(result.to_json())
        return
    if not result.records:
        # With a filter, what matched nothing is the filter, not the file.
        asked = [
            *(f"--model {glob}" for glob in model or ()),
            *([f"--hardware {hardware}"] * bool(hardware)),
        ]
        matching = f" matching {' '.join(asked)}" if asked else ""
        info(f"no OOM records{matching} in {result.record}", err=True)
        return
    _print_listing(result)


def _print_listing(result: ListResult) -> None:
    title = f"{result.record}: {plural(len(result.records), 'record')}"
    if not styled():
        # Off a terminal stdout carries only records, so `| wc -l` and `| grep -c` count them.
        info(title, err=True)
    print_records(
        Listing(
            result.records,
            title=title if styled() else None,
            extra=((("from", result.origins),) if result.shared else ())
            + ((("status", result.statuses),) if result.statuses else ()),
        )
    )
