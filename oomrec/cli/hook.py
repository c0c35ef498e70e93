"""`oomrec hook install|uninstall|post-merge|post-rewrite|post-checkout|post-commit`.

The installed shims run `oomrec hook <event>`, which `oomrec.entry` serves without loading this
module; the commands here serve `--help` and direct calls.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from oomrec import hookfiles, hooks
from oomrec.cli.app import hook_app
from oomrec.cli.output import info
from oomrec.errors import OomrecError


@hook_app.command("install")
def hook_install() -> None:
    """Install the post-merge, post-rewrite, post-checkout and post-commit hooks here.

    The hooks directory is git's (`git rev-parse --git-path hooks`, so core.hooksPath counts). A
    hook already there that is not oomrec's is moved to HOOK.legacy and runs first, with the same
    arguments and input. The hooks call this oomrec (its absolute path), else oomrec on PATH.

    Example: oomrec hook install
    """
    _report(hookfiles.install(hookfiles.hooks_dir(), hookfiles.this_oomrec()))


@hook_app.command("uninstall")
def hook_uninstall() -> None:
    """Remove the hooks oomrec installed and put back the ones it had moved to HOOK.legacy.

    Example: oomrec hook uninstall
    """
    _report(hookfiles.uninstall(hookfiles.hooks_dir()))


def _report(outcome: hookfiles.Outcome) -> None:
    info(*outcome.lines)
    if outcome.problems:
        # Every other hook was handled; these need the user.
        raise OomrecError("; ".join(outcome.problems))


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
    hooks.run("post-merge", [squash] if squash is not None else [], sys.stdin)


@hook_app.command("post-rewrite")
def hook_post_rewrite(
    command: Annotated[str, typer.Argument(help="What git passes: amend or rebase.")] = "rebase",
) -> None:
    """Say which records stopped applying after a rebase or an amend (what the hook runs).

    Reads git's "<old-sha> <new-sha>" lines on stdin; never edits the record, always exits 0.

    Example: oomrec hook post-rewrite rebase </dev/null
    """
    hooks.run("post-rewrite", [command], sys.stdin)


@hook_app.command("post-checkout")
def hook_post_checkout(
    previous: Annotated[str, typer.Argument(help="What git passes: the previous HEAD.")],
    new: Annotated[str, typer.Argument(help="What git passes: the new HEAD.")],
    branch: Annotated[str, typer.Argument(help="What git passes: 1 for a branch switch.")],
) -> None:
    """Say which records stopped applying or apply again after a branch switch.

    Example: oomrec hook post-checkout ORIG_HEAD HEAD 1
    """
    hooks.run("post-checkout", [previous, new, branch], sys.stdin)


@hook_app.command("post-commit")
def hook_post_commit() -> None:
    """After a commit that carries or quotes a fix trailer, or a merge commit: say which records
    stopped applying.

    Example: oomrec hook post-commit
    """
    hooks.run("post-commit", [], sys.stdin)
