"""`hook install` and `hook uninstall`: oomrec's git hooks beside the ones a repository has
(the files and the shim are oomrec.hooks.files')."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oomrec.commands import Result
from oomrec.hooks import files as hookfiles
from oomrec.hooks.files import HookChange
from oomrec.store.locations import display_path


@dataclass(kw_only=True)
class HookResult(Result):
    """One entry per hook, in git's event order. Each hook is handled on its own: a hook that
    needs the user (`problems`) leaves the others installed or removed."""

    hooks_dir: str
    hooks: list[HookChange]

    @property
    def problems(self) -> list[str]:
        return [problem for change in self.hooks if (problem := change.problem) is not None]

    def json_body(self) -> dict[str, Any]:
        return {
            "hooks_dir": self.hooks_dir,
            "hooks": [change.to_json() for change in self.hooks],
            "problems": self.problems,
        }


def hook_install(*, directory: Path | None = None, oomrec: str | None = None) -> HookResult:
    """Install oomrec's hooks into `directory` (default: the repository's hooks directory, as
    git resolves it); a hook already there that is not oomrec's moves to `<hook>.legacy` and
    runs first. The hooks call `oomrec` (default: the oomrec running now), else oomrec on PATH.
    """
    directory = directory or hookfiles.this_repo_hooks_dir()
    changes = hookfiles.install(directory, oomrec or hookfiles.this_oomrec())
    return HookResult(hooks_dir=display_path(directory), hooks=changes)


def hook_uninstall(*, directory: Path | None = None) -> HookResult:
    """Remove oomrec's hooks from `directory` (default: the repository's hooks directory) and
    put back each hook moved to `<hook>.legacy`."""
    directory = directory or hookfiles.this_repo_hooks_dir()
    return HookResult(hooks_dir=display_path(directory), hooks=hookfiles.uninstall(directory))
