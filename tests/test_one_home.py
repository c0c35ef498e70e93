"""One helper per mechanism (docs/architecture.md): an AST scan of oomrec/ finds every atomic
rewrite, lock and git command line outside its one home, so a new copy fails here instead of
drifting from the original (its fsyncs, its lock semantics, its `-c` overrides).

- a whole-file rewrite (tempfile.mkstemp, os.replace, os.rename): core/atomic.py;
- a lock (fcntl.flock or lockf, filelock): core/lock.py;
- a git command line (a list or tuple starting with "git", for subprocess or GitPython's execute):
  core/gitrun.py; a GitPython repository or git runner: store/gitrepo.py (open_repo gives it
  the overrides).
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

import oomrec

PACKAGE = Path(oomrec.__file__).parent

REWRITE = "core/atomic.py"
LOCK = "core/lock.py"
GIT_ARGV = "core/gitrun.py"
GIT_PYTHON = "store/gitrepo.py"

# Calls that look like a mechanism and are not one, each with why.
NOT_A_REWRITE = {
    # An unlinked scratch file for the watchdog (where memfd_create is missing): an fd only.
    ("sweep/cell/proctree.py", "tempfile.mkstemp"),
    # Moves a user's hook aside and back: a rename of someone else's file, not a rewrite.
    ("hooks/files.py", "os.replace"),
    # Moves an earlier CSV (and its provenance) aside to `<csv>.replaced-<time>`.
    ("sweep/grid.py", "os.rename"),
}


def dotted(node: ast.expr) -> str:
    """`a.b.c` of a call's function, as written ("" when it is not a plain name)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = dotted(node.value)
        return f"{head}.{node.attr}" if head else ""
    return ""


def findings(source: str) -> list[tuple[str, str]]:
    """(mechanism, what) for each use of a mechanism in `source`."""
    found: list[tuple[str, str]] = []
    # Names imported from a module under another name (`from os import replace`).
    aliases: dict[str, str] = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
            if node.module.split(".")[0] == "filelock":
                found.append((LOCK, "filelock"))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "filelock":
                    found.append((LOCK, "filelock"))
        elif isinstance(node, ast.Call):
            name = dotted(node.func)
            head, _, rest = name.partition(".")
            name = f"{aliases[head]}.{rest}".rstrip(".") if head in aliases else name
            if name in ("tempfile.mkstemp", "os.replace", "os.rename"):
                found.append((REWRITE, name))
            elif name in ("fcntl.flock", "fcntl.lockf"):
                found.append((LOCK, name))
            elif name in ("git.Repo", "git.Git", "git.repo.Repo", "git.cmd.Git"):
                found.append((GIT_PYTHON, name))
        elif isinstance(node, (ast.List, ast.Tuple)) and node.elts:
            first = node.elts[0]
            if isinstance(first, ast.Constant) and first.value == "git":
                found.append((GIT_ARGV, "a git command line"))
    return found


def test_every_rewrite_lock_and_git_command_is_in_its_one_home() -> None:
    strays = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        for home, what in findings(path.read_text(encoding="utf-8")):
            if relative != home and (relative, what) not in NOT_A_REWRITE:
                strays.append(f"{relative}: {what} belongs in oomrec/{home}")
    assert strays == []


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import tempfile\nfd, tmp = tempfile.mkstemp(dir='.')\n", (REWRITE, "tempfile.mkstemp")),
        ("import os\nos.replace('a', 'b')\n", (REWRITE, "os.replace")),
        ("from os import replace as swap\nswap('a', 'b')\n", (REWRITE, "os.replace")),
        ("import fcntl\nfcntl.flock(3, fcntl.LOCK_EX)\n", (LOCK, "fcntl.flock")),
        ("def f():\n    from filelock import FileLock\n", (LOCK, "filelock")),
        (
            "import subprocess\nsubprocess.run(['git', 'log'], check=False)\n",
            (GIT_ARGV, "a git command line"),
        ),
        ("argv = ('git', '-C', 'x', 'status')\n", (GIT_ARGV, "a git command line")),
        ("import git\nrepo = git.Repo('.')\n", (GIT_PYTHON, "git.Repo")),
    ],
)
def test_the_scan_finds_each_kind_of_stray(source: str, expected: tuple[str, str]) -> None:
    assert expected in findings(textwrap.dedent(source))


def test_the_scan_leaves_other_calls_alone() -> None:
    source = "x = 'a'.replace('a', 'b')\nrun(['python', '-V'])\nrepo.git.log('--all')\n"
    assert findings(source) == []


FORMATS = "core/schema.py"


def format_numbers(tree: ast.Module) -> list[str]:
    """Module-level integer constants named as a format's version (`*VERSION`, `*FORMAT`)."""
    return [
        target.id
        for node in tree.body
        if isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, int)
        for target in node.targets
        if isinstance(target, ast.Name) and target.id.rstrip("_").endswith(("VERSION", "FORMAT"))
    ]


def test_every_formats_version_is_declared_in_core_schema() -> None:
    # One scheme, one home: an integer per stored or printed format, in core/schema.py.
    strays = [
        f"{path.relative_to(PACKAGE)}: {name}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.relative_to(PACKAGE).as_posix() != FORMATS
        for name in format_numbers(ast.parse(path.read_text()))
    ]
    assert strays == []
    declared = format_numbers(ast.parse((PACKAGE / FORMATS).read_text()))
    assert {"JSON_SCHEMA_VERSION", "PROVENANCE_FORMAT", "REPORT_PARTS_FORMAT"} <= set(declared)
    # And the scan can find one elsewhere.
    assert format_numbers(ast.parse("_FORMAT = 2\nX_VERSION = 1\nNAME = 'v'\n")) == [
        "_FORMAT",
        "X_VERSION",
    ]
