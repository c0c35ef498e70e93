"""The Typer apps every command module registers on, and what all commands share.

Commands are thin: they turn options into library calls and render the result. Every error a
user can cause ends as one line on stderr and exit status 2 (see OneLineErrors).
"""

import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from oomrec import __version__
from oomrec.cli import ending, output, typer_patches
from oomrec.core.errors import EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, OomrecError


class OneLineErrors(TyperGroup):
    """The root command: maps every user error to one line on stderr and exit status 2."""

    def main(  # type: ignore[override]
        self,
        args: Any = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        output.escape_unshowable()
        output.reset()
        typer_patches.apply(self)
        try:
            args = _take_global_flags(list(sys.argv[1:] if args is None else args))
            rv = super().main(
                args=args,
                # One name in every message, however oomrec was started (-m, tests).
                prog_name="oomrec",
                complete_var=complete_var,
                standalone_mode=False,
                **extra,
            )
            code = rv if isinstance(rv, int) else EXIT_OK
        except typer.TyperException as exc:
            code = _usage_error(exc)
        except OomrecError as exc:
            _error(str(exc))
            code = EXIT_USAGE
        except OSError as exc:
            _error(ending.describe(exc))
            code = EXIT_USAGE
        except (typer.Abort, KeyboardInterrupt):
            code = EXIT_INTERRUPTED
        if standalone_mode:
            sys.exit(code)
        return code


def _usage_error(exc: typer.TyperException) -> int:
    if typer_patches.asks_for_help(exc):
        # Bare `oomrec` or a bare group asks what there is: the help on stdout, exit 0 (as pip
        # and docker do), with no error line.
        help_text = exc.format_message()
        if help_text:
            typer.echo(help_text)
        return EXIT_OK
    # Typer's usage errors (unknown option, bad value) carry the command's context: named in
    # the hint, under the one prefix every error has.
    ctx = getattr(exc, "ctx", None)
    where = ctx.command_path if ctx is not None else "oomrec"
    _error(f"{exc.format_message()} (see '{where} --help')")
    return EXIT_USAGE


def _take_global_flags(args: list[str]) -> list[str]:
    """`args` without -q/--quiet and --color WHEN, which work before or after any command.

    Taken out before parsing, so every command has them without declaring them; `--` ends them.
    """
    rest: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            rest.extend(args[i:])
            break
        if arg in ("-q", "--quiet"):
            output.STATE.quiet = True
        elif arg == "--color" or arg.startswith("--color="):
            if arg == "--color":
                i += 1
                if i == len(args):
                    raise OomrecError("--color needs a value: auto, always or never")
                value = args[i]
            else:
                value = arg.partition("=")[2]
            if value not in output.COLOR_CHOICES:
                raise OomrecError(
                    f"--color {value!r} is not one of {', '.join(output.COLOR_CHOICES)}; "
                    "e.g. --color never"
                )
            output.STATE.color = value
        else:
            rest.append(arg)
        i += 1
    return rest


def _error(message: str, where: str = "oomrec") -> None:
    output.tell(ending.error_line(message, where))


def _version(value: bool) -> None:
    if value:
        typer.echo(f"oomrec {__version__}")
        raise typer.Exit()


app = typer.Typer(
    cls=OneLineErrors,
    no_args_is_help=True,
    rich_markup_mode=None,
    add_completion=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _group(name: str, help: str) -> typer.Typer:
    """A command group under the root, with the root's help conventions (plain text, -h)."""
    group = typer.Typer(
        help=help,
        no_args_is_help=True,
        rich_markup_mode=None,
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    app.add_typer(group, name=name)
    return group


record_app = _group(
    "record", "Read and maintain the OOM record file.\n\nExample: oomrec record list --json"
)
hook_app = _group(
    "hook",
    "Install the git hooks that say when records stop applying after a merge, a pull, "
    "a rebase or a checkout.\n\n"
    "Example: oomrec hook install",
)
remote_app = _group(
    "remote",
    "Share OOM records with other machines through a git remote (git notes).\n\n"
    "Example: oomrec remote setup origin",
)
fleet_app = _group(
    "fleet",
    "Run one sweep over many machines: a Slurm job array, one shard per task.\n\n"
    'Example: oomrec fleet submit --shards 4 --wait -- --models "A B C D"',
)


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            "-V",
            callback=_version,
            is_eager=True,
            help="Print the version and exit.",
        ),
    ] = False,
    # --quiet and --color are declared for --help only: _take_global_flags takes them out of
    # the arguments before parsing, so they never reach this function.
    quiet: Annotated[
        bool,
        typer.Option(
            "--quiet",
            "-q",
            help=(
                "Print no informational lines; data and errors still print (any command, "
                "any place)."
            ),
        ),
    ] = False,
    color: Annotated[
        str,
        typer.Option(
            "--color",
            metavar="WHEN",
            help="auto (on a terminal, unless NO_COLOR is set), always or never (any command).",
        ),
    ] = "auto",
) -> None:
    """Never launch a benchmark cell that is certain to run out of memory.

    It records which (model, prompt length) cells ran out of memory and skips them later.

    Git history tells it which records a memory fix has made stale.

    Example: oomrec sweep --demo
    """


RecordOption = Annotated[
    Path | None,
    typer.Option(
        "--record",
        metavar="PATH",
        help="The record file. Default: $OOMREC_RECORD, else `record` in pyproject's "
        "tool.oomrec table, else benchmarks/.oom-record under the git top level (or the cwd).",
        show_default=False,
        dir_okay=True,
    ),
]
# `--verbose` of the commands whose listings show a screenful unless asked for all.
VerboseOption = Annotated[
    bool, typer.Option("--verbose", "-v", help="List every record, not a screenful.")
]
# The CSVs a command reads (`report`, `record import-csv`), found as the import finds them.
CsvPathsArgument = Annotated[
    list[Path] | None,
    typer.Argument(
        metavar="PATH",
        help="CSV files and folders (searched for *.csv). Default: benchmarks/ under the "
        "git top level.",
        show_default=False,
    ),
]
