"""Running one cell: templates, process groups, timeouts, peak RSS, the output tail."""

from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from oomrec.core.errors import OomrecError
from oomrec.sweep.cell.classify import verdict_from_exit
from oomrec.sweep.cell.oomkill import read_counters
from oomrec.sweep.cell.runner import OUTPUT_TAIL_BYTES, RunnerTemplate, run_cell
from tests.cgroups import make_memory_cgroup
from tests.helpers import gone

PY = sys.executable


def wait_for_file(path: Path, seconds: float = 10.0) -> str:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return path.read_text()
        time.sleep(0.02)
    raise AssertionError(f"{path} never appeared")


def test_template_is_split_like_a_shell_and_filled_per_argument() -> None:
    template = RunnerTemplate.parse("run.sh '{model} here' --n={length:06d} {{literal}} {cell_csv}")
    assert template.args == (
        "run.sh",
        "{model} here",
        "--n={length:06d}",
        "{{literal}}",
        "{cell_csv}",
    )
    argv = template.fill(
        {"model": "x;touch pwned", "model_path": "", "length": 512, "max_tokens": 1,
         "warmup_tokens": 0, "cell_csv": "/tmp/c d.csv"}
    )  # fmt: skip
    assert argv == ["run.sh", "x;touch pwned here", "--n=000512", "{literal}", "/tmp/c d.csv"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("run.sh {modle}", "unknown placeholder {modle} in '{modle}'; use {model}, {model_path}"),
        ("run.sh {}", "unknown placeholder {} in"),
        ("run.sh {0}", "unknown placeholder {0} in"),
        ("run.sh {model.upper}", "unknown placeholder {model.upper}"),
        ("run.sh {model[0]}", "unknown placeholder {model[0]}"),
        ("run.sh {model", "bad braces in '{model'"),
        ("run.sh model}", "bad braces in 'model}'"),
        ("run.sh {length:s}", "cannot fill '{length:s}'"),
        ("run.sh 'unclosed", "cannot split it (No closing quotation)"),
        ("   ", "--runner is empty"),
    ],
)
def test_bad_templates_are_rejected_up_front(text: str, message: str) -> None:
    with pytest.raises(OomrecError, match=None) as info:
        RunnerTemplate.parse(text)
    assert message in str(info.value)


def test_check_executable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/sh\n")
    with pytest.raises(OomrecError, match=r"\./run\.sh is not executable; run chmod \+x"):
        RunnerTemplate.parse("./run.sh {model}").check_executable()
    script.chmod(0o755)
    RunnerTemplate.parse("./run.sh {model}").check_executable()
    with pytest.raises(OomrecError, match=r"\./nope\.sh does not exist"):
        RunnerTemplate.parse("./nope.sh").check_executable()
    with pytest.raises(OomrecError, match="'no-such-runner-x' is not an executable on PATH"):
        RunnerTemplate.parse("no-such-runner-x {model}").check_executable()
    # A program named by a placeholder can only be checked when it runs.
    RunnerTemplate.parse("{model_path}/run.sh").check_executable()


def test_anchored_makes_a_relative_program_absolute(tmp_path: Path) -> None:
    template = RunnerTemplate.parse("scripts/run.sh {model}").anchored(tmp_path)
    assert template.args == (str(tmp_path / "scripts/run.sh"), "{model}")
    assert RunnerTemplate.parse("python3 x").anchored(tmp_path).args == ("python3", "x")


def test_exit_status_output_and_signal() -> None:
    run = run_cell(
        [PY, "-c", "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"], 30
    )
    assert (run.returncode, run.timed_out, run.exec_error) == (3, False, None)
    assert run.output_tail == "out\nerr\n"
    killed = run_cell([PY, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"], 30)
    assert killed.returncode == -signal.SIGKILL
    assert not killed.timed_out


def test_output_tail_keeps_the_last_64_kib() -> None:
    code = "import sys; sys.stdout.write('x' * 300_000 + 'THE END'); sys.stdout.flush()"
    run = run_cell([PY, "-c", code], 30)
    assert len(run.output_tail.encode()) == OUTPUT_TAIL_BYTES
    assert run.output_tail.endswith("xTHE END")


def test_peak_rss_is_measured() -> None:
    # Above this process's own high-water mark, which a fork+exec child inherits.
    need = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 + (96 << 20)
    code = f"b = bytearray({need}); b[::4096] = b'x' * (len(b) // 4096)"
    run = run_cell([PY, "-c", code], 30)
    assert run.peak_rss_bytes is not None
    assert run.peak_rss_bytes >= need


def test_peak_rss_is_not_the_parents() -> None:
    # A parent that touched 300 MiB launches a tiny child: its peak must not read as 300 MiB.
    code = (
        "from oomrec.sweep.cell.runner import run_cell\n"
        "b = bytearray(300 << 20); b[::4096] = b'x' * (len(b) // 4096)\n"
        "print(run_cell(['true'], 30).peak_rss_bytes)\n"
        "print(run_cell(['sleep', '0.5'], 30).peak_rss_bytes)\n"
    )
    done = subprocess.run([PY, "-c", code], capture_output=True, text=True, check=True)
    quick, sampled = done.stdout.split()
    # `true` ends before the first sample (unknown, unless a loaded machine lets it be sampled);
    # `sleep` lives long enough to be sampled: its own few MiB either way, not the parent's 300.
    assert quick == "None" or int(quick) < 100 << 20
    assert int(sampled) < 100 << 20


def test_the_peak_is_the_whole_process_trees() -> None:
    # Two children of 120 MiB each at once: no single process reaches 240 MiB.
    child = (
        "import time; b = bytearray(120 << 20); b[::4096] = b'x' * (len(b) // 4096); time.sleep(1)"
    )
    code = (
        "import subprocess, sys\n"
        f"procs = [subprocess.Popen([sys.executable, '-c', {child!r}]) for _ in range(2)]\n"
        "for p in procs: p.wait()\n"
    )
    run = run_cell([PY, "-c", code], 30)
    assert run.returncode == 0
    assert run.peak_rss_bytes is not None
    assert run.peak_rss_bytes >= 240 << 20


def test_timeout_kills_the_whole_group(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    code = (
        "import subprocess, sys, time\n"
        "child = subprocess.Popen(['sleep', '60'])\n"
        f"open({str(pids)!r}, 'w').write(str(child.pid))\n"
        "time.sleep(60)\n"
    )
    run = run_cell([PY, "-c", code], timeout=1.0)
    assert run.timed_out
    assert run.returncode == -signal.SIGKILL
    assert gone(int(pids.read_text()))


def test_what_the_runner_leaves_behind_is_killed_and_not_waited_for(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    code = (
        "import subprocess\n"
        "child = subprocess.Popen(['sleep', '60'])\n"
        f"open({str(pids)!r}, 'w').write(str(child.pid))\n"
    )
    run = run_cell([PY, "-c", code], timeout=30)
    assert (run.returncode, run.timed_out) == (0, False)
    assert gone(int(pids.read_text()))


def test_an_interrupt_while_waiting_kills_the_group(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    code = f"import os, time; open({str(pids)!r}, 'w').write(str(os.getpid())); time.sleep(60)"

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 0.5)
    try:
        with pytest.raises(KeyboardInterrupt):
            run_cell([PY, "-c", code], timeout=30)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert gone(int(wait_for_file(pids)))


def test_a_program_that_cannot_start_is_reported() -> None:
    run = run_cell(["/no/such/runner"], 30)
    assert run.exec_error == "No such file or directory"
    assert run.returncode == 127


def test_an_oom_message_followed_by_megabytes_of_output_is_found() -> None:
    for megabytes in (1, 5):
        code = (
            "import sys\n"
            "print('RuntimeError: CUDA error: out of memory', flush=True)\n"
            f"sys.stdout.write(('traceback line ' * 4 + '\\n') * (({megabytes} << 20) // 65))\n"
            "sys.exit(1)\n"
        )
        run = run_cell([PY, "-c", code], 60)
        assert run.signature is not None
        assert run.signature.signature.ecosystem == "PyTorch outside the caching allocator"
        # The tail is for display only and stays bounded.
        assert "out of memory" not in run.output_tail
        assert len(run.output_tail.encode()) <= OUTPUT_TAIL_BYTES
        verdict = verdict_from_exit(run.returncode, run.signature, run.kills)
        assert (verdict.token, verdict.evidence) == ("SKIP:oom", "signature")


def _counters_readable() -> None:
    if not read_counters().values:
        pytest.skip("no OOM-kill counter is readable on this machine")


def _needs(program: str) -> None:
    if shutil.which(program) is None:
        pytest.skip(f"no {program} on this machine")


@pytest.mark.parametrize(
    "argv",
    [
        [PY, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"],
        # timeout(1) killing with SIGKILL reports 137: a timeout, not an OOM.
        ["timeout", "-s", "KILL", "0.2", "sleep", "10"],
        # -k: TERM first, ignored, then KILL. The TERM comes once the runner ignores it (it
        # asks its parent, timeout, to time out), not from a timer racing its start-up.
        ["timeout", "-k", "0.2", "600", PY, "-c", "import os, signal, time; "
         "signal.signal(signal.SIGTERM, signal.SIG_IGN); os.kill(os.getppid(), signal.SIGTERM); "
         "time.sleep(60)"],
        # A shell's way of saying its child was SIGKILLed.
        ["sh", "-c", "exit 137"],
    ],
    ids=["kill-9-self", "timeout-s-KILL", "timeout-k", "exit-137"],
)  # fmt: skip
def test_a_sigkill_the_kernel_did_not_count_is_fail_killed(argv: list[str]) -> None:
    _counters_readable()
    _needs(argv[0])
    run = run_cell(argv, 30)
    assert run.returncode in (-signal.SIGKILL, 137)
    assert not run.kills.confirmed
    verdict = verdict_from_exit(run.returncode, run.signature, run.kills)
    assert verdict.token == "FAIL:killed"
    assert "not by the OOM killer" in verdict.reason


def test_timeout_without_kill_is_still_exit_124() -> None:
    _needs("timeout")
    run = run_cell(["timeout", "0.2", "sleep", "10"], 30)
    verdict = verdict_from_exit(run.returncode, run.signature, run.kills)
    assert (run.returncode, verdict.token) == (124, "FAIL:timeout")


def test_a_real_oom_kill_in_a_memory_limited_cgroup_is_a_confirmed_oom(tmp_path: Path) -> None:
    cgroup = make_memory_cgroup(64 << 20)
    try:
        # The runner joins the limited cgroup, then touches four times its limit.
        code = (
            f"open({str(cgroup.procs)!r}, 'w').write('0')\n"
            "b = bytearray(256 << 20); b[::4096] = b'x' * (len(b) // 4096)\n"
        )
        run = run_cell([PY, "-c", code], 60)
    finally:
        cgroup.remove()
    assert run.returncode == -signal.SIGKILL
    verdict = verdict_from_exit(run.returncode, run.signature, run.kills)
    if run.kills.logged is None:
        # No kernel log readable here: the counter's growth is all there is.
        assert (verdict.token, verdict.evidence) == ("SKIP:oom", "unconfirmed")
        assert "oom_kill +" in verdict.reason
    else:
        assert run.kills.confirmed, run.kills.describe()
        assert (verdict.token, verdict.evidence) == ("SKIP:oom", "kernel log")
        assert "the cell's" in verdict.reason


def test_a_grandchild_that_left_the_process_group_dies_with_the_cell(tmp_path: Path) -> None:
    _needs("setsid")
    pids = tmp_path / "pids"
    # One escapes with setsid and stays the runner's child; one double-forks: its parent exits,
    # so it is an orphan whose new parent is oomrec (the subreaper) or init.
    code = (
        "import os, subprocess\n"
        "a = subprocess.Popen(['sleep', '60'], start_new_session=True)\n"
        "b = subprocess.Popen(['sh', '-c', 'setsid sleep 61 & echo $!'], stdout=subprocess.PIPE)\n"
        "orphan = b.stdout.readline().decode().strip(); b.wait()\n"
        # setsid runs in the background: wait until it has left the group, or it counts as
        # still in it.
        "import time\n"
        "while os.getsid(int(orphan)) != int(orphan): time.sleep(0.005)\n"
        f"open({str(pids)!r}, 'w').write(f'{{a.pid}} {{orphan}}')\n"
    )
    run = run_cell([PY, "-c", code], 30)
    assert run.returncode == 0
    escaped, orphan = (int(pid) for pid in pids.read_text().split())
    assert gone(escaped)
    assert gone(orphan)
    assert run.leftovers.killed >= 2
    assert run.leftovers.escaped >= 2
    assert "had left its process group" in (run.leftovers.describe() or "")


# Grows its address space 8 MiB every 50 ms under its own RLIMIT_AS (as `ulimit -v` sets it),
# then, when an allocation fails, crashes with SIGSEGV and no message: what MLX's CPU build does.
SEGV_AT_LIMIT = r"""
import os, resource, signal, sys, time
import psutil
base = psutil.Process().memory_info().vms
limit = base + (int(sys.argv[1]) << 20)
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
held = []
try:
    while True:
        block = bytearray(8 << 20)
        block[::4096] = b"x" * (len(block) // 4096)
        held.append(block)
        time.sleep(0.05)
except MemoryError:
    os.kill(os.getpid(), signal.SIGSEGV)
"""


def test_a_sigsegv_at_the_address_space_limit_is_an_oom_and_elsewhere_a_crash() -> None:
    run = run_cell([PY, "-c", SEGV_AT_LIMIT, "768"], 120)
    assert run.returncode == -signal.SIGSEGV
    assert run.address_space is not None
    verdict = verdict_from_exit(
        run.returncode, run.signature, run.kills, address_space=run.address_space
    )
    assert (verdict.token, verdict.evidence) == ("SKIP:oom", "address-space limit")
    assert "of its RLIMIT_AS" in verdict.reason
    # The same crash with no address-space limit near: a bug, not an OOM.
    crash = run_cell([PY, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"], 60)
    verdict = verdict_from_exit(
        crash.returncode, crash.signature, crash.kills, address_space=crash.address_space
    )
    assert verdict.token == "FAIL:bench"


def _scoped(monkeypatch: pytest.MonkeyPatch, scope: str) -> None:
    from oomrec.sweep.cell import cellscope

    monkeypatch.setenv("OOMREC_CELL_SCOPE", scope)
    if scope == "cgroup" and cellscope.unavailable() is not None:
        pytest.skip(f"no cell cgroups here: {cellscope.unavailable()}")


@pytest.mark.parametrize("scope", ["cgroup", "tree"])
@pytest.mark.parametrize(
    ("program", "error"),
    [
        ("/no/such/runner", "No such file or directory"),
        ("no-such-runner-on-path", "No such file or directory"),
        ("./plain.txt", "Permission denied"),
        ("./folder", "Permission denied"),
        ("./no-shebang", "Exec format error"),
    ],
    ids=["missing", "not-on-path", "not-executable", "folder", "no-shebang"],
)
def test_a_runner_that_cannot_start_is_told_apart_in_every_scope(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scope: str, program: str, error: str
) -> None:
    """In a cell cgroup a shell joins it and execs the runner: exec's errors must still be
    exec errors (FAIL:bench "cannot run"), not a shell's exit 126/127, and a file exec refuses
    must not be run as a shell script."""
    _scoped(monkeypatch, scope)
    (tmp_path / "plain.txt").write_text("#!/bin/sh\necho ran\n")
    (tmp_path / "folder").mkdir()
    (tmp_path / "no-shebang").write_text("echo ran > ran.txt\n")
    (tmp_path / "no-shebang").chmod(0o755)
    run = run_cell([program], 30, cwd=tmp_path)
    assert (run.exec_error, run.returncode) == (error, 127)
    assert not (tmp_path / "ran.txt").exists()


@pytest.mark.parametrize("scope", ["cgroup", "tree"])
def test_the_runner_gets_its_argv_literally_and_oomrecs_stdin_in_every_scope(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scope: str
) -> None:
    _scoped(monkeypatch, scope)
    script = tmp_path / "runner.sh"
    script.write_text(
        '#!/bin/sh\nprintf "%s\\n" "$0" "$@"; readlink /proc/self/fd/0; cat /proc/self/cgroup\n'
    )
    script.chmod(0o755)
    hostile = ["a b", "$(touch pwned)", "'; exit 3", "--", ""]
    run = run_cell(["./runner.sh", *hostile], 30, cwd=tmp_path)
    assert run.returncode == 0, run.output_tail
    lines = run.output_tail.splitlines()
    # stdin is oomrec's own, as the harness gives its runner (tests/test_harness_parity.py).
    assert lines[: len(hostile) + 2] == ["./runner.sh", *hostile, os.readlink("/proc/self/fd/0")]
    assert not (tmp_path / "pwned").exists()
    in_cell = any("oomrec-" in line for line in lines[len(hostile) + 2 :])
    assert in_cell == (scope == "cgroup")
