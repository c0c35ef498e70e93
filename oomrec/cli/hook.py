"""`oomrec hook install|uninstall|post-merge|post-rewrite|post-checkout|post-commit|
post-applypatch`.

The installed shims run `oomrec hook <event>`, which `oomrec.entry` serves without loading this
module; the commands here serve `--help` and direct calls.
"""

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from oomrec.cli.apps import hook_app
from oomrec.cli.output import info
from oomrec.cli.render import print_json
from oomrec.core.errors import OomrecError

if TYPE_CHECKING:
    from oomrec.commands.hook import HookResult
    from oomrec.hooks.files import HookChange


@hook_app.command("install")
def install_command(
    as_json: Annotated[
        bool, typer.Option("--json", help="Print a JSON object: what was done to each hook.")
    ] = False,
) -> None:
    """Install the post-merge, post-rewrite, post-checkout, post-commit and post-applypatch hooks.

    The hooks directory is git's (`git rev-parse --git-path hooks`, so core.hooksPath counts). A
    hook already there that is not oomrec's is moved to HOOK.legacy and runs first, with the same
    arguments and input. The hooks call this oomrec (its absolute path), else oomrec on PATH.

    Example: oomrec hook install
    """
    from oomrec.commands.hook import hook_install

    _report(hook_install(), as_json)


@hook_app.command("uninstall")
def uninstall_command(
    as_json: Annotated[
        bool, typer.Option("--json", help="Print a JSON object: what was done to each hook.")
    ] = False,
) -> None:
    """Remove the hooks oomrec installed and put back the ones it had moved to HOOK.legacy.

    Example: oomrec hook uninstall
    """
    from oomrec.commands.hook import hook_uninstall

    _report(hook_uninstall(), as_json)


def _report(result: "HookResult", as_json: bool) -> None:
    from oomrec.hooks.files import HookAction

    if as_json:
        print_json(result.to_json())
    else:
        info(*(_line(change) for change in result.hooks if change.action != HookAction.CONFLICT))
    if result.problems:
        # Every other hook was handled; these need the user.
        raise OomrecError("; ".join(result.problems))


def _line(change: "HookChange") -> str:
    from oomrec.hooks.files import HookAction, Legacy

    line = f"{change.action}: {change.path}"
    if change.action == HookAction.LEFT_AS_IS:
        return line + " (not installed by oomrec)"
    if change.legacy_change == Legacy.MOVED_ASIDE:
        return line + f"; your hook moved to {change.legacy}, runs first"
    if change.legacy_change == Legacy.RUNS_FIRST:
        return line + f"; runs {change.legacy} first"
    if change.legacy_change == Legacy.PUT_BACK:
        return line + f"; {change.legacy} put back"
    return line


@hook_app.command("post-merge")
def hook_post_merge(
    squash: Annotated[
        str | None, typer.Argument(help="What git passes: 1 for a squash merge.")
    ] = None,
) -> None:
    """Say which records stopped applying (or apply again) after a merge (what the hook runs).

    Prints at most one line; never edits the record, always exits 0.

    Example: oomrec hook post-merge
    """
    _run("post-merge", [squash] if squash is not None else [])


@hook_app.command("post-rewrite")
def hook_post_rewrite(
    command: Annotated[str, typer.Argument(help="What git passes: amend or rebase.")] = "rebase",
) -> None:
    """Say which records stopped applying after a rebase or an amend (what the hook runs).

    Reads git's "<old-sha> <new-sha>" lines on stdin; never edits the record, always exits 0.

    Example: oomrec hook post-rewrite rebase </dev/null
    """
    _run("post-rewrite", [command])


@hook_app.command("post-checkout")
def hook_post_checkout(
    previous: Annotated[str, typer.Argument(help="What git passes: the previous HEAD.")],
    new: Annotated[str, typer.Argument(help="What git passes: the new HEAD.")],
    branch: Annotated[str, typer.Argument(help="What git passes: 1 for a branch switch.")],
) -> None:
    """Say which records stopped applying or apply again after a branch switch.

    Example: oomrec hook post-checkout ORIG_HEAD HEAD 1
    """
    _run("post-checkout", [previous, new, branch])


@hook_app.command("post-commit")
def hook_post_commit() -> None:
    """After a commit that carries or quotes a fix trailer, or a merge commit: say which records
    stopped applying.

    Example: oomrec hook post-commit
    """
    _run("post-commit", [])


@hook_app.command("post-applypatch")
def hook_post_applypatch() -> None:
    """After `git am` (which runs no post-commit): say which records the applied patches
    lifted, once, after the last patch.

    Example: oomrec hook post-applypatch
    """
    _run("post-applypatch", [])


def _run(event: str, args: list[str]) -> None:
    from oomrec.hooks import check as hooks

    hooks.run(event, args, sys.stdin)
