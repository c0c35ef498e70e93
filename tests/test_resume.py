"""`oomrec sweep --resume`: a real sweep process stopped mid-cell, then continued."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.gitrepo import Repo

# A cell runner: logs each launch; `a` runs out of memory from 2048 on; the cell named in
# $SLOW_CELL waits until it is killed; `b` at 4096 fails; any other cell writes a success row.
RUNNER = r"""
import os, sys, time
model, length, cell_csv, log = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
open(log, "a").write(f"{model}:{length}\n")
if os.environ.get("SLOW_CELL") == f"{model}:{length}":
    open(log + ".slow", "w").write("started")
    time.sleep(600)
if model == "a" and length >= 2048:
    print("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB")
    sys.exit(1)
if model == "b" and length == 4096:
    sys.exit(3)
header = ("model,model_path,prompt_tokens,generated_tokens,prefill_ms,prefill_tok_s,decode_ms,"
          "decode_tok_s,date,hardware,mlx_version,build_type,max_tokens,prompt,prompt_target_len")
row = (f"{model},./models/{model},{length},32,1.0,2.0,3.0,4.0,2026-07-03,hw,0.3.3,release,32,"
       f'"Hello, how are you today?",{length}')
open(cell_csv, "w").write(header + "\n" + row + "\n")
"""


def setup(repo: Repo) -> tuple[list[str], Path]:
    for name in ("a", "b"):
        (repo.path / "models" / name).mkdir(parents=True, exist_ok=True)
    script = repo.path / "runner.py"
    script.write_text(RUNNER)
    log = repo.path / "launched.txt"
    runner = f"{sys.executable} {script} {{model}} {{length}} {{cell_csv}} {log}"
    argv = [
        sys.executable, "-m", "oomrec", "sweep", "--models", "a b",
        "--lengths", "512 2048 4096", "--runner", runner, "--output", "out.csv",
    ]  # fmt: skip
    return argv, log


def run(repo: Repo, argv: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, cwd=repo.path, env={**os.environ, **env}, capture_output=True, text=True, timeout=120
    )


def launched(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def test_a_stopped_sweep_resumes_exactly_the_remaining_cells(repo: Repo) -> None:
    argv, log = setup(repo)
    proc = subprocess.Popen(
        argv,
        cwd=repo.path,
        env={**os.environ, "SLOW_CELL": "b:2048"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not (repo.path / "launched.txt.slow").exists():
        assert time.monotonic() < deadline, "the slow cell never started"
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    resume_line = [line for line in (out + err).splitlines() if line.startswith("resume with:")]
    assert resume_line and resume_line[0].endswith(" --resume")
    before = (repo.path / "out.csv").read_text().splitlines()
    # a:4096 was backstopped, b:2048 killed: 4 rows.
    assert len(before) == 1 + 4
    assert launched(log) == ["a:512", "a:2048", "b:512", "b:2048"]

    log.unlink()
    dry = run(repo, [*argv, "--resume", "--dry-run"])
    assert dry.returncode == 0, dry.stderr
    assert "dry run: 4 done, 2 to run, 0 to skip" in dry.stdout + dry.stderr

    resumed = run(repo, [*argv, "--resume"])
    assert resumed.returncode == 0, resumed.stderr
    assert launched(log) == ["b:2048", "b:4096"]
    after = (repo.path / "out.csv").read_text().splitlines()
    # The earlier rows byte for byte, then the new ones.
    assert after[: len(before)] == before
    assert len(after) == 1 + 6
    assert after[-1].endswith(",4096,FAIL:bench")

    # A longer ladder, the record ignored: the CSV's own SKIP:oom still stops `a` above 2048.
    log.unlink()
    more = run(repo, [*argv[:-4], "--lengths", "512 2048 4096 8192", "--runner", argv[-3],
                      "--output", "out.csv", "--resume", "--ignore-record"])  # fmt: skip
    assert more.returncode == 0, more.stderr
    assert launched(log) == ["b:8192"]
    assert "a,./models/a,,,,,,," in (repo.path / "out.csv").read_text()
    assert (repo.path / "out.csv").read_text().count("SKIP:oom_backstop") == 2

    # --rerun-failed runs the FAIL:* cell again; nothing else.
    log.unlink()
    again = run(repo, [*argv, "--resume", "--rerun-failed"])
    assert again.returncode == 0, again.stderr
    assert launched(log) == ["b:4096"]


def test_a_changed_runner_runs_again_with_the_reason_unless_kept(repo: Repo) -> None:
    argv, log = setup(repo)
    first = run(repo, argv)
    assert first.returncode == 0, first.stderr
    log.unlink()
    changed = list(argv)
    changed[argv.index("--runner") + 1] += " extra"
    dry = run(repo, [*changed, "--resume", "--dry-run", "--json"])
    assert dry.returncode == 0, dry.stderr
    reasons = {(c["model"], c["length"]): c for c in json.loads(dry.stdout)["cells"]}
    assert reasons[("b", 512)]["action"] == "run"
    assert "ran with runner" in reasons[("b", 512)]["reason"]
    # The true OOM is never run again, whatever changed.
    assert reasons[("a", 2048)]["action"] == "done"
    kept = run(repo, [*changed, "--resume-keep"])
    assert kept.returncode == 0, kept.stderr
    assert launched(log) == []
    rerun = run(repo, [*changed, "--resume"])
    assert rerun.returncode == 0, rerun.stderr
    assert launched(log) == ["a:512", "b:512", "b:2048", "b:4096"]


def test_a_new_commit_runs_again_naming_both_commits_short(repo: Repo) -> None:
    argv, _ = setup(repo)
    before = repo.head()
    first = run(repo, argv)
    assert first.returncode == 0, first.stderr
    after = repo.commit("a change to the code")
    dry = run(repo, [*argv, "--resume", "--dry-run", "--json"])
    assert dry.returncode == 0, dry.stderr
    cells = {(c["model"], c["length"]): c for c in json.loads(dry.stdout)["cells"]}
    assert cells[("b", 512)]["action"] == "run"
    # Seven characters, as every other view shows a commit.
    assert cells[("b", 512)]["reason"] == f"again: ran at commit {before[:7]}, now {after[:7]}"
