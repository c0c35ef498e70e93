"""The one git entry point (core/gitrun.py), run against real repositories: every command gets
the `-c` overrides whatever the user's config says, and a path is taken as written (no `$NAME`
expansion). tests/test_one_home.py checks that no git command line is built elsewhere."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from oomrec.core import gitrun
from oomrec.store.gitrepo import open_repo
from tests.gitrepo import Repo


def test_every_override_wins_over_the_users_config(
    repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = tmp_path / "user-gitconfig"
    user.write_text(
        "[log]\n\tshowSignature = true\n\tmailmap = true\n[diff]\n\tnoprefix = true\n"
        "\trenames = copies\n[grep]\n\tpatternType = perl\n[core]\n\tquotePath = false\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(user))
    for item in gitrun.GIT_CONFIG:
        name, _, value = item.partition("=")
        done = gitrun.run(["config", "--get", name], cwd=repo.path, capture_output=True, text=True)
        assert (done.returncode, done.stdout) == (0, value + "\n"), name
    # GitPython's runner, as open_repo makes it, gets the same.
    opened = open_repo(repo.path)
    assert opened is not None
    assert opened.git.config("--get", "diff.noprefix") == "false"


def test_extra_overrides_come_after_the_common_ones(repo: Repo) -> None:
    done = gitrun.run(
        ["config", "--get", "diff.context"],
        config=["diff.context=7"],
        cwd=repo.path,
        capture_output=True,
        text=True,
    )
    assert done.stdout == "7\n"


def test_a_path_naming_a_variable_is_taken_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OOMREC_SIBLING", "-other")
    literal = Repo(tmp_path / "repo$OOMREC_SIBLING").path
    Repo(tmp_path / "repo-other")
    done = gitrun.run(
        ["-C", str(literal), "rev-parse", "--show-toplevel"], capture_output=True, text=True
    )
    assert Path(done.stdout.strip()) == literal.resolve()
    assert os.path.samefile(done.stdout.strip(), literal)
