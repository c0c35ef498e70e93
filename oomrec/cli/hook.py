"""`oomrec hook install|uninstall|post-merge|post-rewrite`: the git hooks.

The installed shims run `oomrec hook post-merge` / `post-rewrite`, which `oomrec.entry` serves
without loading this module; the commands here serve `--help` and direct calls.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from oomrec import hooks
from oomrec.cli.app import hook_app


@hook_app.command("install")
def hook_install(
    force: Annotated[
        bool, typer.Option("--force", help="Replace hooks of the same name that are not oomrec's.")
    ] = False,
) -> None:
    """Install the post-merge and post-rewrite hooks into this repository.

    The hooks directory is git's (`git rev-parse --git-path hooks`, so core.hooksPath counts).

    Example: oomrec hook install
    """
    for line in hooks.install(force=force):
        typer.echo(line)


@hook_app.command("uninstall")
def hook_uninstall() -> None:
    """Remove the hooks oomrec installed; other hooks stay.

    Example: oomrec hook uninstall
    """
    for line in hooks.uninstall():
        typer.echo(line)


@hook_app.command("post-merge")
def hook_post_merge(
    squash: Annotated[
        str | None, typer.Argument(help="What git passes: 1 for a squash merge.")
    ] = None,
) -> None:
    """Flag records that a fix commit merged in ORIG_HEAD..HEAD made stale (what the hook runs).

    Prints one line per such fix, with the prune command; never edits the record, always exits 0.

    Example: oomrec hook post-merge
    """
    hooks.run("post-merge", [squash] if squash is not None else [], sys.stdin)


@hook_app.command("post-rewrite")
def hook_post_rewrite(
    command: Annotated[str, typer.Argument(help="What git passes: amend or rebase.")] = "rebase",
) -> None:
    """Flag records that a fix commit rebased onto (or amended) made stale (what the hook runs).

    Reads git's "<old-sha> <new-sha>" lines on stdin; never edits the record, always exits 0.

    Example: oomrec hook post-rewrite rebase </dev/null
    """
    hooks.run("post-rewrite", [command], sys.stdin)
