"""Issue 43: memory regressions. A cell that ran at commit A and was out of memory (or stopped
by the guard) at a later commit B on the same machine class is flagged with the range A..B,
its length in commits and the first commit where it was seen; through the CLI, on generated
histories in real git repositories. Each row's commit is the one that added it (the harness
layout holds none), as the import and the report read it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable

import pytest

from oomrec.core.units import GIB
from oomrec.report import regressions
from tests.conftest import CliResult
from tests.gitrepo import Repo
from tests.test_report import csv_text, failed, ran

Cli = Callable[..., CliResult]
RAN_CSV = "benchmarks/cuda_gb10_2026-07-01.csv"
LATER_CSV = "benchmarks/cuda_gb10_2026-07-05.csv"
V100 = "NVIDIA_Tesla_V100-PCIE-32GB_CUDA12.9_755GB"


def _regressions(cli: Cli) -> list[dict]:
    done = cli("report", "--json")
    assert done.exit_code == 0, done.stderr
    return json.loads(done.stdout)["regressions"]


def test_a_regression_introduced_at_a_known_commit_ends_its_range(cli: Cli, repo: Repo) -> None:
    a = repo.commit("bench: m ran at 4k", {RAN_CSV: csv_text(ran("m", 4096, "2026-07-01"))})
    repo.commit("refactor the cache")
    b = repo.commit(
        "bigger KV blocks (the regression)",
        {LATER_CSV: csv_text(failed("m", 4096, "2026-07-05", "SKIP:oom"), ran("m", 2048, "x"))},
    )
    repo.commit("docs")
    [found] = _regressions(cli)
    assert (found["model"], found["length"], found["machine"]) == ("m", 4096, "gb10 122GB")
    assert found["range"] == f"{a}..{b}"
    assert (found["commits"], found["first_seen"], found["state"]) == (2, b, "oom")
    assert found["ran"]["where"] == f"{RAN_CSV}:2"
    assert found["stopped"]["where"] == f"{LATER_CSV}:2"
    text = cli("report")
    assert text.exit_code == 0, text.stderr
    [line] = [line for line in text.stdout.splitlines() if line.startswith("regression:")]
    assert f"regression in {a[:7]}..{b[:7]} (2 commits), first seen at {b[:7]}" in line
    page = repo.path / "page.html"
    assert cli("report", "--html", str(page)).exit_code == 0
    assert f"{a[:7]}..{b[:7]} (2 commits)" in page.read_text()


def test_a_stop_before_the_run_or_on_another_branch_is_no_regression(cli: Cli, repo: Repo) -> None:
    base = repo.commit("base")
    # The OOM came first and a later commit ran the cell: a fix, not a regression.
    repo.commit("bench: oom", {LATER_CSV: csv_text(failed("m", 4096, "2026-07-05", "SKIP:oom"))})
    repo.commit("the fix", {RAN_CSV: csv_text(ran("m", 4096, "2026-07-06"))})
    # A branch from before the run of `n` stopped it; merged back, its row's commit does not
    # descend from the run: the two are parallel, not one after the other.
    repo.commit(
        "bench: n ran", {"benchmarks/cuda_gb10_2026-07-07.csv": csv_text(ran("n", 512, "d"))}
    )
    repo.git("checkout", "-q", "-b", "side", base)
    side_csv = "benchmarks/cuda_gb10_2026-07-08.csv"
    repo.commit("side: n oom", {side_csv: csv_text(failed("n", 512, "2026-07-08", "SKIP:oom"))})
    repo.git("checkout", "-q", "main")
    repo.git("merge", "-q", "--no-ff", "-m", "merge side", "side")
    assert (repo.path / side_csv).exists()
    assert _regressions(cli) == []


def test_a_guard_stop_after_a_run_is_flagged_as_the_guards(cli: Cli, repo: Repo) -> None:
    a = repo.commit("bench", {RAN_CSV: csv_text(ran("m", 4096, "2026-07-01"))})
    b = repo.commit(
        "bench again", {LATER_CSV: csv_text(failed("m", 4096, "2026-07-05", "SKIP:oom_guard"))}
    )
    [found] = _regressions(cli)
    assert (found["state"], found["range"], found["commits"]) == ("guard", f"{a}..{b}", 1)


def test_a_record_line_is_evidence_of_a_regression_too(cli: Cli, repo: Repo) -> None:
    a = repo.commit("bench", {RAN_CSV: csv_text(ran("m", 8192, "2026-07-01"))})
    repo.commit("one")
    b = repo.commit("two")
    mem = 122 * GIB
    (repo.path / "benchmarks" / ".oom-record").write_text(
        f"m,8192,2026-07-09,{b},,benchmarks/x.csv,gb10,{mem},\n"
    )
    [found] = _regressions(cli)
    assert (found["range"], found["commits"], found["first_seen"]) == (f"{a}..{b}", 2, b)
    assert found["stopped"]["where"] == "benchmarks/.oom-record:1"


def test_another_machine_class_or_a_dirty_commit_says_nothing(cli: Cli, repo: Repo) -> None:
    repo.commit("bench", {RAN_CSV: csv_text(ran("m", 4096, "2026-07-01"))})
    b = repo.commit(
        "v100 bench",
        {
            "benchmarks/cuda_v100_2026-07-05.csv": csv_text(
                failed("m", 4096, "2026-07-05", "SKIP:oom", hw=V100)
            )
        },
    )
    (repo.path / "benchmarks" / ".oom-record").write_text(
        f"m,4096,2026-07-09,{b}-dirty,,benchmarks/x.csv,gb10,{122 * GIB},\n"
    )
    assert _regressions(cli) == []


def test_record_stale_and_the_pull_hook_name_a_regression_the_pull_brought(
    cli: Cli, repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The hooks run `oomrec` from PATH, as for a user who installed it.
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    a = repo.commit("bench", {RAN_CSV: csv_text(ran("m", 4096, "2026-07-01"))})
    record = "benchmarks/.oom-record"
    mem = 122 * GIB
    # A team that commits its record (oomrec excludes it by default: `git add -f`).
    (repo.path / record).write_text(f"old,512,2026-07-01,{a},,x.csv,gb10,{mem},\n")
    repo.git("add", "-f", record)
    repo.git("commit", "-q", "-m", "an old OOM")
    assert cli("hook", "install").exit_code == 0
    # Another machine's branch: a change, then its sweep's record of the cell out of memory.
    repo.git("checkout", "-q", "-b", "bench")
    b = repo.commit("bigger KV blocks")
    with (repo.path / record).open("a") as out:
        out.write(f"m,4096,2026-07-09,{b},,x.csv,gb10,{mem},\n")
    repo.git("commit", "-q", "-am", "sweep")
    repo.git("checkout", "-q", "main")
    merged = subprocess.run(
        ["git", "merge", "--no-edit", "--no-ff", "bench"],
        cwd=repo.path,
        capture_output=True,
        text=True,
        check=True,
    )
    said = [t for t in (merged.stdout + merged.stderr).splitlines() if "oomrec" in t]
    assert said == [
        f"oomrec: the pulled record shows a memory regression: m at 4096 on gb10 122GB: ran at "
        f"{a[:7]} ({RAN_CSV}:2), out of memory at {b[:7]} ({record}:2); regression in "
        f"{a[:7]}..{b[:7]} (2 commits), first seen at {b[:7]}; see: oomrec report"
    ]
    # Pulled again with nothing new for the record: silent.
    repo.git("checkout", "-q", "bench")
    repo.commit("docs")
    repo.git("checkout", "-q", "main")
    again = subprocess.run(
        ["git", "merge", "--no-edit", "--no-ff", "bench"],
        cwd=repo.path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert [t for t in (again.stdout + again.stderr).splitlines() if "oomrec" in t] == []
    stale = cli("record", "stale", "--json")
    assert stale.exit_code in (0, 1), stale.stderr
    [found] = json.loads(stale.stdout)["regressions"]
    assert (found["range"], found["first_seen"]) == (f"{a}..{b}", b)
    plain = cli("record", "stale")
    assert any(t.startswith("regression: m at 4096") for t in plain.stdout.splitlines())


def test_past_the_bound_pairs_are_counted_not_asked(
    cli: Cli, repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(regressions, "MAX_PAIRS", 1)
    repo.commit("bench", {RAN_CSV: csv_text(ran("m", 4096, "d"), ran("n", 4096, "d"))})
    repo.commit("m oom", {LATER_CSV: csv_text(failed("m", 4096, "2026-07-05", "SKIP:oom"))})
    repo.commit(
        "n oom",
        {"benchmarks/cuda_gb10_2026-07-06.csv": csv_text(failed("n", 4096, "e", "SKIP:oom"))},
    )
    found = _regressions(cli)
    assert [r["model"] for r in found] == ["m"]
    text = cli("report").stdout
    assert "regression: 1 more run/stop pairs were not asked of git" in text
