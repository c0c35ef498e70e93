"""The everyday workflow as a person meets it: each point of the workflow issue through a real
80x24 terminal (a pty that is the process's controlling terminal, Ctrl-C typed as a keystroke)
and through pipes, and what is left on the screen afterwards."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.gitrepo import Repo, git
from tests.scripted_runner import Runner
from tests.test_help_80 import _source_words
from tests.test_startup_imports import COMMANDS
from tests.tty import Screen, run_in_terminal

BOX = set("┏┓┗┛┃━┡┩┯┷│─└┘┼╇┳┻")
BAR = "━"
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def piped(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`python -m oomrec ARGS` with stdin, stdout and stderr pipes (a log, `| grep`, CI)."""
    return subprocess.run(
        [sys.executable, "-m", "oomrec", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "COLUMNS": "80"},
        check=False,
    )


# Lines sent whole on purpose, for a copy to paste as one line: the terminal wraps them.
WHOLE = ("resume with: ", "  recorded: ", "  already recorded: ")


def fits(screen: Screen, runner_says: tuple[str, ...] = ()) -> None:
    """Prose was folded at spaces to the 80 columns: the terminal, which cuts wherever the
    margin falls (`--hardwar` / `e gb10`), wrapped only a line sent whole on purpose or a
    single word wider than the screen (a long path). `runner_says`: how the runner's own stderr
    lines start (shown as it wrote them, as the harness leaves them on the terminal)."""
    whole = WHOLE + runner_says
    cut = [
        row for first, row in screen.wrapped if not first.startswith(whole) and " " in row.strip()
    ]
    assert not cut, "\n".join(cut)


def sweep_args(runner: Runner, *extra: str) -> tuple[str, ...]:
    return ("sweep", "--runner", runner.template, "--output", "out.csv", *extra)


@pytest.fixture
def two(repo: Repo, models: Callable[..., None]) -> Repo:
    models("alpha", "beta")
    return repo


def test_ctrl_c_leaves_no_progress_line_and_no_untracked_file(two: Repo, runner: Runner) -> None:
    runner.behave({"alpha:1024": "sleep"})
    pids = runner.dir / "pids.txt"
    args = sweep_args(runner, "--models", "alpha beta", "--lengths", "512 1024 2048")
    status, screen, raw = run_in_terminal(*args, cwd=two.path, interrupt_when=pids.exists)
    assert status == 130, raw
    shown = screen.text()
    # The bar was drawn while the cell ran, and nothing of it is left after the interrupt.
    assert BAR in raw
    assert not [ln for ln in shown if "ETA" in ln or re.search(r"━ +\d+/6", ln)], shown
    assert any(line.startswith("[1/6] alpha @ 512: ok") for line in shown)
    assert any("interrupted: alpha @ 1024 was killed; 1 of 6 cells done" in ln for ln in shown)
    assert any(line.startswith("resume with: oomrec sweep ") for line in shown)
    # The runner got SIGINT: its traceback is its own stderr, shown as it wrote it.
    fits(screen, runner_says=("Traceback", "  File ", "    "))
    # What the interrupted sweep left (its CSV's sidecar, the record) stays out of git status;
    # the CSV itself is the user's result.
    status_lines = git(two.path, "status", "--porcelain", "--untracked-files=all").splitlines()
    assert status_lines == ["?? out.csv"], status_lines


def test_a_recorded_line_wraps_where_the_terminal_wraps_it(two: Repo, runner: Runner) -> None:
    runner.behave({"alpha:2048": "exit:1:RuntimeError: [metal::malloc] Resource limit exceeded"})
    args = sweep_args(runner, "--models", "alpha", "--lengths", "512 2048")
    status, screen, raw = run_in_terminal(*args, cwd=two.path, env={"OOMREC_MEM_BYTES": "128G"})
    assert status == 0, raw
    record = (two.path / "benchmarks" / ".oom-record").read_text().strip()
    assert len(record) > 80  # so that it must wrap on this terminal
    # One line as sent (the terminal wraps it): a copy of the screen pastes it whole.
    assert f"  recorded: {record}\r\n" in _ANSI.sub("", raw)
    joined = "".join(screen.text())
    assert record in joined


def test_the_summary_is_a_table_on_a_terminal_and_plain_columns_in_a_pipe(
    two: Repo, runner: Runner
) -> None:
    runner.behave({"alpha:2048": "exit:1:MemoryError"})
    args = sweep_args(runner, "--models", "alpha beta", "--lengths", "512 2048")
    status, screen, raw = run_in_terminal(*args, cwd=two.path)
    assert status == 0, raw
    assert BOX & set("".join(screen.text()))
    fits(screen)
    (two.path / "out.csv").unlink()
    result = piped(*args, "--ignore-record", cwd=two.path)
    assert result.returncode == 0, result.stderr
    assert not BOX & set(result.stderr), result.stderr
    assert "\x1b[" not in result.stderr
    table = result.stderr[result.stderr.index("cells per model") :].splitlines()
    assert table[1].split() == ["model", "ok", "SKIP:oom", "total"]
    assert table[2].split() == ["alpha", "1", "1", "2"]
    assert table[3].split() == ["beta", "2", "0", "2"]
    assert table[4].split() == ["all", "3", "1", "4"]


def test_color_always_colours_a_pipe_and_never_plains_a_terminal(two: Repo, runner: Runner) -> None:
    args = sweep_args(runner, "--models", "alpha", "--lengths", "512")
    coloured = piped("--color", "always", *args, cwd=two.path)
    assert coloured.returncode == 0, coloured.stderr
    assert "\x1b[" in coloured.stderr
    assert BOX & set(coloured.stderr)  # rendered as for a terminal: the table too
    plain = piped(*args, "--ignore-record", "--output", "again.csv", cwd=two.path)
    assert "\x1b[" not in plain.stderr + plain.stdout
    status, _, raw = run_in_terminal(
        "--color", "never", *args, "--output", "third.csv", cwd=two.path
    )
    assert status == 0, raw
    assert "\x1b[3" not in raw and "\x1b[1m" not in raw  # no colour, no bold


@pytest.mark.parametrize(
    "args",
    [("record", "list", "--bogus"), ("record", "lst"), ("sweep", "--timeout", "30x")],
    ids=["unknown option", "unknown command", "bad duration"],
)
def test_an_error_is_one_line_with_one_prefix_on_a_terminal_and_in_a_pipe(
    repo: Repo, args: tuple[str, ...]
) -> None:
    status, screen, raw = run_in_terminal(*args, cwd=repo.path)
    assert status == 2, raw
    errors = [line for line in screen.text() if line.startswith("oomrec: error: ")]
    assert len(errors) == 1, "\n".join(screen.text())
    assert not BOX & set("".join(screen.text())), "\n".join(screen.text())
    assert "Traceback" not in raw and "pydantic" not in raw
    result = piped(*args, cwd=repo.path)
    assert result.returncode == 2
    assert result.stderr.startswith("oomrec: error: "), result.stderr
    assert result.stderr.count("oomrec: error: ") == 1


@pytest.mark.parametrize("path", COMMANDS, ids=[" ".join(p) or "root" for p in COMMANDS])
def test_every_help_reads_whole_on_an_80x24_terminal(repo: Repo, path: tuple[str, ...]) -> None:
    status, screen, raw = run_in_terminal(*path, "--help", cwd=repo.path)
    assert status == 0, raw
    fits(screen)
    text = "\n".join(screen.text())
    assert "%%" not in text
    # No word or flag cut at the margin (the `benchmar` / `ks/...` split): every word of the
    # command's own help texts is whole on the screen.
    flat = " ".join(text.split())
    for word in _source_words(path):
        assert word in flat, f"{word!r} is cut across lines on an 80x24 terminal"
    if path == ("sweep",):
        assert "{cooldown}" in text and "{big_cooldown}" in text


def test_retract_and_list_archived_on_a_terminal_and_in_a_pipe(two: Repo, runner: Runner) -> None:
    assert piped("record", "add", "alpha", "512", cwd=two.path).returncode == 0
    status, screen, raw = run_in_terminal(
        "record", "retract", "alpha", "512", "--reason", "typo: meant 5120", cwd=two.path
    )
    assert status == 0, raw
    assert any("retracted 1 record (typo: meant 5120)" in line for line in screen.text())
    fits(screen)
    status, screen, raw = run_in_terminal("record", "list", "--archived", cwd=two.path)
    assert status == 0, raw
    assert "retracted: typo: meant 5120" in " ".join(" ".join(screen.text()).split())
    fits(screen)
    listed = piped("record", "list", "--archived", cwd=two.path)
    assert listed.returncode == 0, listed.stderr
    assert "retracted: typo: meant 5120" in listed.stdout
    assert not BOX & set(listed.stdout)
    # And the next sweep launches the cell again.
    result = piped(*sweep_args(runner, "--models", "alpha", "--lengths", "512"), cwd=two.path)
    assert result.returncode == 0, result.stderr
    assert runner.launched() == ["alpha:512"]


def test_input_as_people_type_it_on_a_terminal(two: Repo, runner: Runner) -> None:
    args = sweep_args(runner, "--models", "./models/alpha/ models/beta", "--lengths",
                      "512,2k 512", "--dry-run")  # fmt: skip
    status, screen, raw = run_in_terminal(*args, cwd=two.path)
    assert status == 0, raw
    shown = "\n".join(screen.text())
    for cell in ("alpha @ 512", "alpha @ 2048", "beta @ 512", "beta @ 2048"):
        assert cell in shown, shown
    assert shown.count("alpha @ 512") == 1
    assert "warning: --lengths: 512 is given twice; it runs once" in shown, shown
    fits(screen)
    status, screen, raw = run_in_terminal(
        *sweep_args(runner, "--models", "alpah", "--lengths", "512", "--dry-run"), cwd=two.path
    )
    assert status == 2, raw
    assert "did you mean alpha" in " ".join(" ".join(screen.text()).split()), screen.text()
    fits(screen)
    result = piped(*sweep_args(runner, "--models", "alpah", "--lengths", "512"), cwd=two.path)
    assert result.returncode == 2
    errors = [ln for ln in result.stderr.splitlines() if "error" in ln]
    assert len(errors) == 1 and "did you mean alpha" in errors[0], result.stderr
    assert result.stderr.splitlines()[-1] == errors[0]
    assert runner.launched() == []


def test_the_guards_stop_reason_shows_two_different_sizes_on_a_terminal(
    repo: Repo, tmp_path: Path
) -> None:
    from tests.test_guard import RUNNER

    (repo.path / "models" / "a").mkdir(parents=True)
    script = tmp_path / "runner.py"
    script.write_text(RUNNER)
    template = f"{sys.executable} {script} self 14 {{length}} {{cell_csv}}"
    status, screen, raw = run_in_terminal(
        "sweep", "--runner", template, "--output", "out.csv", "--models", "a", "--lengths",
        "512", "--max-cell-memory", "500M", cwd=repo.path,
    )  # fmt: skip
    assert status == 0, raw
    flat = " ".join(" ".join(screen.text()).split())
    stop = re.search(r"(\d[\d.]* [KMG]iB) passed --max-cell-memory (\d[\d.]* [KMG]iB)", flat)
    assert stop, flat
    assert stop.group(1) != stop.group(2)
    assert stop.group(2).startswith("500")
    fits(screen)


def test_prose_folds_at_spaces_on_a_terminal_and_stays_one_line_in_a_pipe(
    two: Repo, runner: Runner
) -> None:
    args = sweep_args(runner, "--models", "alpha", "--lengths", "512")
    result = piped(*args, cwd=two.path)
    assert result.returncode == 0, result.stderr
    notice = [ln for ln in result.stderr.splitlines() if ln.startswith("oomrec: added ")]
    assert len(notice) == 1 and notice[0].endswith(".gitignore is untouched"), result.stderr
    assert len(notice[0]) > 80  # so that the terminal below must fold it
    status, screen, raw = run_in_terminal(*args, "--output", "again.csv", cwd=two.path)
    assert status == 0, raw
    shown = screen.text()
    start = next(i for i, ln in enumerate(shown) if ln.startswith("oomrec: added "))
    folded = shown[start : start + 4]
    assert folded[1].startswith("  ") and len(folded[0]) <= 80, shown
    # The text is the pipe's, in order, nothing lost (fits: folded at spaces; only the path
    # longer than the screen is the terminal's to wrap).
    again = "".join(notice[0].replace("out.csv", "again.csv").split())
    assert "".join("".join(folded).split()).startswith(again), shown
    fits(screen)


def test_record_add_of_a_missing_model_and_a_typed_duration_on_a_terminal_and_in_a_pipe(
    two: Repo, runner: Runner
) -> None:
    status, screen, raw = run_in_terminal("record", "add", "alpah", "512", cwd=two.path)
    assert status == 0, raw
    flat = " ".join(" ".join(screen.text()).split())
    assert "warning: no model 'alpah' under" in flat and "did you mean alpha?" in flat, flat
    fits(screen)
    result = piped("record", "add", "alpah", "1024", cwd=two.path)
    assert result.returncode == 0
    warnings = [ln for ln in result.stderr.splitlines() if ln.startswith("warning: ")]
    assert len(warnings) == 1 and "did you mean alpha?" in warnings[0], result.stderr
    # A duration as people type it is taken; a wrong one is oomrec's own line, not pydantic's.
    args = sweep_args(runner, "--models", "alpha", "--lengths", "512", "--dry-run")
    status, screen, raw = run_in_terminal(*args, "--timeout", "30m", cwd=two.path)
    assert status == 0, raw
    assert "error" not in raw and "alpha @ 512" in raw, raw
    wrong = piped(*args, "--timeout", "30 minutes", cwd=two.path)
    assert wrong.returncode == 2
    assert wrong.stderr.splitlines() == [wrong.stderr.strip()], wrong.stderr
    assert "e.g. 1800, 30m, 1h30m, 90s" in wrong.stderr and "pydantic" not in wrong.stderr


def test_a_record_with_control_sequences_reaches_no_terminal_raw(tmp_path: Path) -> None:
    """A record line, hand-edited or pulled from another host's notes, may hold a terminal's
    control sequences (a title set, the screen cleared, an 8-bit CSI) or a tab in any field:
    `record list` shows each escaped, in a pipe and on a terminal, and the columns stay put."""
    from tests.tty import run_on_tty

    record = tmp_path / "rec"
    record.write_bytes(
        b"evil\x1b]0;PWNED\x07\x1b[2Jx\xc2\x9b31m,512,2026-01-01,abc\x1b[1m,,src\tx.csv,amd_epyc,"
        b"25276203008\nl\xff\xfe,512,2026-01-01,abc,,x.csv\n"
    )
    done = piped("record", "list", "--record", str(record), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [line.split("\t") for line in lines] == [
        [
            r"evil\x1b]0;PWNED\x07\x1b[2Jx\x9b31m",
            "512",
            "amd_epyc",
            "2026-01-01",
            r"abc\x1b[1m",
            "-",
            "25276203008",
            r"src\tx.csv",
        ],
        [r"l\xff\xfe", "512", "-", "2026-01-01", "abc", "-", "-", "x.csv"],
    ]
    shown = ("record", "list", "--record", str(record))
    status, screen, _ = run_on_tty(*shown, cwd=tmp_path, raw=True)
    assert status == 0
    assert r"evil\x1b]0;PWNED\x07\x1b[2Jx\x9b31m" in screen
    # Only the table's own colour codes reach the terminal: no OSC, no clear, no C1.
    assert "\x07" not in screen and "\x1b]" not in screen and "\x1b[2J" not in screen
    assert "\x9b" not in screen
