"""`oomrec record list` without Typer (cli/record_list_plain.py): every form it answers prints
what the full command line prints, byte for byte and with the same exit status, and loads
neither Typer nor GitPython nor polars; every other form goes to the full command line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from oomrec.cli import record_list_plain
from tests.gitrepo import History
from tests.helpers import line, write

# The full command line, whatever the arguments: what the plain path must match.
FULL = "import sys; from oomrec.cli import main; sys.argv[0] = 'oomrec'; sys.exit(main())"
PLAIN = "import sys; from oomrec.entry import main; sys.argv[0] = 'oomrec'; sys.exit(main())"

FORMS = [
    [],
    ["--no-git"],
    ["--json"],
    ["--json", "--no-git"],
    ["--model", "gemma-4-*"],
    ["--model=gemma-4-*", "--model", "llama*", "--no-git"],
    ["--hardware", "GB10"],
    ["--hardware=v100"],
    ["--model", "nothing-matches", "--hardware", "gb10"],
    ["--archived"],
    ["--archived", "--json"],
    ["--record", "benchmarks/.oom-record", "--no-git"],
    ["--record=elsewhere/none"],
    ["--record", "missing-dir/x", "--json"],
]


def _run(code: str, args: list[str], cwd: Path, **env: str) -> tuple[int, str, str]:
    done = subprocess.run(
        [sys.executable, "-c", code, "record", "list", *args],
        cwd=cwd,
        capture_output=True,
        env={**os.environ, **env},
    )
    return (
        done.returncode,
        done.stdout.decode(errors="replace"),
        done.stderr.decode(errors="replace"),
    )


@pytest.fixture
def listed(history: History) -> Path:
    """A record with lines a fix lifts, lines it does not, another tag, and a line that is not
    UTF-8 (its bytes escaped on output)."""
    h = history
    path = h.repo.path / "benchmarks" / ".oom-record"
    path.parent.mkdir()
    write(
        path,
        [
            line("gemma-4-31b", 1024, h.pre),
            line("gemma-4-31b", 2048, h.fix),
            line("llama-3", 512, h.pre, hardware="v100"),
            "not,a,record",
        ],
    )
    with path.open("ab") as out:
        out.write(b"odd-\xff-model,512,2026-07-03," + h.pre.encode() + b",,x.csv,gb10,\n")
    return h.repo.path


@pytest.mark.parametrize("args", FORMS, ids=[" ".join(f) or "(none)" for f in FORMS])
def test_each_plain_form_prints_what_the_full_command_line_prints(
    listed: Path, args: list[str]
) -> None:
    assert record_list_plain.parse(args) is not None
    full = _run(FULL, args, listed)
    assert _run(PLAIN, args, listed) == full
    # A terminal encoding that cannot show the odd bytes: escaped alike, never a traceback.
    ascii_full = _run(FULL, args, listed, PYTHONIOENCODING="ascii")
    assert _run(PLAIN, args, listed, PYTHONIOENCODING="ascii") == ascii_full
    assert "Traceback" not in ascii_full[2]


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["-h"],
        ["-q"],
        ["--color", "never"],
        ["--bogus"],
        ["extra-argument"],
        ["--model"],
        ["--model", "--no-git"],
        ["--model="],
        ["--hardware", "-x"],
        ["--json=yes"],
        ["--", "--json"],
    ],
)
def test_every_other_form_is_left_to_the_full_command_line(listed: Path, args: list[str]) -> None:
    assert record_list_plain.parse(args) is None
    # And entry.py's answer is then the full command line's.
    assert _run(PLAIN, args, listed) == _run(FULL, args, listed)


def test_the_plain_forms_load_neither_typer_nor_gitpython_nor_polars(listed: Path) -> None:
    code = (
        "import sys\n"
        "from oomrec.entry import main\n"
        "sys.argv = ['oomrec', 'record', 'list', '--no-git']\n"
        "code = main()\n"
        "print(sorted(m for m in ('typer', 'click', 'git', 'polars') if m in sys.modules),"
        " code, file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=listed, capture_output=True, text=True, check=True
    )
    assert done.stderr.splitlines()[-1] == "[] 0"
    # The records were listed (the odd bytes escaped): the plain path did the work.
    assert "gemma-4-31b\t1024" in done.stdout


def test_a_closed_stdout_is_one_line_on_the_plain_path_too(listed: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", PLAIN, "record", "list", "--no-git"],
        cwd=listed,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: os.close(1),
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith("oomrec: error: stdout is closed")
