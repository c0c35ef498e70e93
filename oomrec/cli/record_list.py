"""`oomrec record list`: the records, sorted by model then length, with whether each applies.

Its options are declared once, in cli/record_list_plain.OPTIONS (entry.py answers their plain
forms without Typer); the Typer parameters below are made from that table.
"""

import inspect
from typing import Annotated, Any

import typer

from oomrec.cli.apps import RecordOption, record_app
from oomrec.cli.record_list_plain import OPTIONS, Option, defaults, show


def _parameter(option: Option, default: Any) -> inspect.Parameter:
    kind: Any = bool if option.metavar is None else list[str] | None if option.repeat else str
    if option.metavar is not None and not option.repeat:
        kind = str | None
    declared = typer.Option(option.flag, metavar=option.metavar, help=option.help)
    return inspect.Parameter(
        option.name,
        inspect.Parameter.KEYWORD_ONLY,
        default=None if option.repeat else default,
        annotation=Annotated[kind, declared],
    )


def list_command(**given: Any) -> None:
    """List the OOM records, sorted by model then length.

    Inside a git repository a status column says whether each record applies at HEAD:
    `applies`, `applies (unknown: why)` when git cannot prove otherwise, or `no longer applies:
    fix abc1234 (subject)` when a fix in effect at HEAD (trailer `OOM-Fix: <model glob>`)
    lifts it.

    Example: oomrec record list --model 'gemma-4-*' --hardware gb10
    """
    show(**given)


_DEFAULTS = defaults()
# Typer reads a command's parameters from its signature: the table's, then --record.
list_command.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
    [
        *(_parameter(o, _DEFAULTS[o.name]) for o in OPTIONS),
        inspect.Parameter(
            "record", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=RecordOption
        ),
    ]
)
record_app.command("list")(list_command)
