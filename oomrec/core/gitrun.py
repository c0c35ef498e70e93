"""The one way oomrec runs git: every git command line is built here, with the `-c` overrides.

A user's config (`grep.patternType`, `log.showSignature`, `diff.noprefix`...) must not change
what git answers oomrec, so every git command gets GIT_CONFIG. Plain subprocesses run through
run() (the hooks' fast path, the start-up checks, `fast-import`): GitPython costs ~0.17 s to
import, which these must not pay. GitPython's repositories are opened only by
store/gitrepo.open_repo, which gives its git runner the same overrides; a command line it
runs itself is built by argv(). Nothing here expands `$NAME` or `~` in a path: argv goes to
git as is, with no shell. tests/test_one_home.py keeps every git command line here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import subprocess

# Every git command oomrec runs gets these, so user config cannot change what git answers.
GIT_CONFIG = (
    "grep.patternType=basic",
    "grep.extendedRegexp=false",
    "log.showSignature=false",
    "log.decorate=false",
    "log.mailmap=false",
    "i18n.logOutputEncoding=UTF-8",
    "diff.noprefix=false",
    "diff.mnemonicPrefix=false",
    "diff.relative=false",
    "diff.renames=false",
    # A blank context line keeps its leading space: content.py reads hunks line by line.
    "diff.suppressBlankEmpty=false",
    "diff.context=3",
    "color.ui=false",
    "core.quotePath=true",
    "trailer.separators=:",
    "notes.displayRef=",
    "blame.ignoreRevsFile=",
)


def git_config_args(extra: Sequence[str] = ()) -> list[str]:
    """`-c name=value` for each of GIT_CONFIG and then of `extra`, to go before a subcommand."""
    args: list[str] = []
    for item in (*GIT_CONFIG, *extra):
        args += ["-c", item]
    return args


def argv(args: Sequence[str], *, config: Sequence[str] = ()) -> list[str]:
    """The command line of `git <args>`: the overrides (GIT_CONFIG, then `config`) first."""
    return ["git", *git_config_args(config), *args]


def run(
    args: Sequence[str], *, config: Sequence[str] = (), **options: Any
) -> subprocess.CompletedProcess[Any]:
    """Run `git <args>` as subprocess.run(**options) would, never raising for its exit status
    (the caller reads `returncode`). OSError when git cannot be started; TimeoutExpired past
    a `timeout` option."""
    import subprocess  # here: the commands that never run git do not pay its import

    return subprocess.run(argv(args, config=config), check=False, **options)
