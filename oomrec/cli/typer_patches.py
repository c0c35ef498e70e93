"""Every change oomrec makes to Typer's internals, fenced here: nowhere else in oomrec reaches
into Typer's private API. Each was checked against the Typer versions in CHECKED (pyproject.toml
pins `typer>=0.29,<0.30` to them); tests/test_typer_patches.py fails, naming this module, when
the installed Typer is another, so an upgrade re-checks them before anything else breaks.

What each does, and why (apply() does the first three on the root command before each run):

- `_readable_metavars`: the help names values as a person would (PATH, N, MODEL), never Typer's
  `<bool>`, `<list[Path]>`, `<float range>`, and arguments' usage as `MODEL`, `[PATH]...`. It
  sets Typer's `display_type_rich` and `_usage_display_name` on each parameter, and reads its
  `type_descriptor` and `bare_type()`.
- `_whole_words`: the help wraps at spaces only (a path or a flag is never cut at a hyphen). It
  replaces the TextWrapper class of Typer's vendored click (`typer._click._textwrap`).
- `_coerce_when_given`: Typer builds a pydantic validator for each parameter on first use, even
  for an option not given; importing pydantic would be a third of every `--help`. It sets each
  parameter's `_runtime_param` to one built when a value comes (`typer._coercion`).
- `asks_for_help`: Typer says "a bare group was asked for its help" only by an exception class
  it names privately (`NoArgsIsHelpError`); matched by name.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import typer
from typer._coercion import PassThroughRuntimeParam, RuntimeParam, build_runtime_param
from typer.core import TyperArgument

# The Typer versions whose internals these patches were read against (major.minor.patch).
CHECKED = ("0.29.2",)


def apply(root: Any) -> None:
    """The patches, on the root command and every command under it (idempotent)."""
    _readable_metavars(root)
    _whole_words()
    _coerce_when_given(root)


def asks_for_help(exc: typer.TyperException) -> bool:
    """Whether the exception is Typer's "no arguments, so show the help" (no_args_is_help)."""
    return type(exc).__name__ == "NoArgsIsHelpError"


def _readable_metavars(command: Any) -> None:
    """Help that names values as a person would (PATH, N, TAG), never Typer's `<bool>`,
    `<list[Path]>` or `<float range>`: flags and arguments show no type (an argument's name is
    its metavar), options without a metavar get one from their type or name. Examples stay on
    one line."""
    for param in command.params:
        if isinstance(param, TyperArgument) or getattr(param, "is_flag", False):
            # An instance attribute: Typer asks this method for the type column.
            param.display_type_rich = _no_type
            if isinstance(param, TyperArgument):
                if param.metavar is None:
                    param.metavar = param.name.upper()
                param._usage_display_name = _usage_name(param)  # type: ignore[method-assign]
        elif param.metavar is None:
            desc = param.type_descriptor
            bare = param.bare_type()
            param.metavar = "PATH" if desc.is_path else "N" if bare == "int" else param.name.upper()
    if command.help:
        # click rewraps paragraphs; `\b` keeps the example's command line whole to copy.
        command.help = command.help.replace("\n\nExample: ", "\n\n\b\nExample: ")
    for sub in getattr(command, "commands", {}).values():
        _readable_metavars(sub)


def _no_type(ctx: Any = None) -> None:
    return None


def _usage_name(param: Any) -> Callable[[], str]:
    """An argument on the usage line as people write usage: `MODEL`, `[PATH]...`, never
    Typer's `{MODEL}` nor a `...` twice."""

    def name() -> str:
        text = param.display_name_raw
        if param.nargs != 1 and not text.rstrip("]").endswith("..."):
            text += "..."
        return text if param.required or text.startswith("[") else f"[{text}]"

    return name


def _whole_words() -> None:
    """Help wraps at spaces only: a path or a flag is never cut at a hyphen or mid-word
    (`benchmar` / `ks/...`); a word longer than the line overflows it instead."""
    from typer._click import _textwrap

    wrapper = _textwrap.TextWrapper
    if getattr(wrapper, "whole_words", False):
        return

    class WholeWords(wrapper):  # type: ignore[misc, valid-type]
        whole_words = True

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs.update(break_long_words=False, break_on_hyphens=False)
            super().__init__(*args, **kwargs)

    # formatting.wrap_text imports the class from this module each time it wraps.
    _textwrap.TextWrapper = WholeWords  # type: ignore[misc]


def _coerce_when_given(command: Any, root: bool = True) -> None:
    """Typer checks a parameter's value with a pydantic validator it builds on first use, even
    for a value it then passes over (an option not given): importing pydantic would be a third
    of every `oomrec COMMAND --help` (the root's and the group's options are parsed before the
    command's --help) and of a `record list` given no option. Built here when a value is there
    to check; the root's --color keeps its default unchecked (_take_global_flags takes the real
    flag out before parsing, so the value parsed is always "auto")."""
    for param in command.params:
        if root and param.name == "color" and param._runtime_param is None:
            # Typer's own coercion for a type pydantic cannot check: the value if it is one.
            param._runtime_param = PassThroughRuntimeParam(
                parameter_info=param.type_descriptor.parameter_info, annotation=str
            )
        _defer_coercion(param)
    if "get_help_option" not in vars(command):
        # -h/--help is made when first asked for, with the context (the names it answers to).
        made = command.get_help_option

        def get_help_option(ctx: Any) -> Any:
            option = made(ctx)
            if option is not None:
                _defer_coercion(option)
            return option

        command.get_help_option = get_help_option
    for sub in getattr(command, "commands", {}).values():
        _coerce_when_given(sub, root=False)


def _defer_coercion(param: Any) -> None:
    if param._runtime_param is None:  # else built already, by an earlier run in this process
        desc = param.type_descriptor
        param._runtime_param = _WhenGiven(
            parameter_info=desc.parameter_info, annotation=desc.annotation
        )


@dataclass(frozen=True)
class _WhenGiven(RuntimeParam):
    """Typer's coercion of a parameter (RuntimeParam.coerce passes over an unset value), built
    when the first value to coerce comes."""

    def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
        param._runtime_param = build_runtime_param(param.type_descriptor)
        return param._runtime_param._coerce_value(value, param=param, ctx=ctx)
