"""A lift is a guarded probe (docs/staleness.md, "three states"): a record whose fix is proved in
effect is a hypothesis until a run of its cell, under the guard, proves it. On real
repositories, records, processes and (where the machine lets a test make one) memory cgroups.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.cgroups import make_memory_cgroup
from tests.conftest import CliResult
from tests.gitrepo import Repo
from tests.helpers import dry_run_verdicts
from tests.test_memscope import oomrec_inside
from tests.test_stale_content import AFTER, BEFORE, TRAILER

Cli = Callable[..., CliResult]
MODEL = "gemma-4-31b"
MIB = 2**20
PY = sys.executable
# `ok.py MIB CELL_CSV`: touch MIB of memory, then write the harness's success row.
TOUCH = r"""
import sys
held = bytearray(int(sys.argv[1]) << 20)
held[::4096] = b"x" * (len(held) // 4096)
model, length, cell_csv = sys.argv[2], sys.argv[3], sys.argv[4]
tail = '2026-07-03,hw,0.3.3,release,32,"Hi, there",' + length
open(cell_csv, "w").write(
    "HEADER\n" + f"{model},./models/{model},{length},32,1.0,2.0,3.0,4.0,{tail}\n"
)
"""


def check(cwd: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, dict[str, Any]]:
    done = subprocess.run(
        [PY, "-m", "oomrec", "check", *args, "--json"],
        capture_output=True,
        text=True,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        env={**os.environ, **(env or {})},
        check=False,
    )
    assert done.returncode in (0, 1, 3), done.stderr
    return done.returncode, json.loads(done.stdout)


@pytest.fixture
def lifted(repo: Repo, cli: Cli, tmp_path: Path) -> tuple[Repo, str]:
    """A record of MODEL at 8192 measured before a fix whose change is in HEAD's tree."""
    from oomrec.core.schema import HEADER_15

    (repo.path / "models" / MODEL).mkdir(parents=True)
    (tmp_path / "touch.py").write_text(TOUCH.replace("HEADER", HEADER_15))
    repo.commit("add the prefill", {"prefill.py": BEFORE})
    assert cli("record", "add", MODEL, "8192").exit_code == 0
    fix = repo.commit(f"Chunk the prefill\n\n{TRAILER}\n", {"prefill.py": AFTER})
    return repo, fix


def runner(tmp_path: Path, mib: int = 1) -> str:
    return f"{PY} {tmp_path / 'touch.py'} {mib} {{model}} {{length}} {{cell_csv}}"


def record_text(repo: Repo) -> str:
    path = repo.path / "benchmarks" / ".oom-record"
    return path.read_text() if path.exists() else ""


def archive_text(repo: Repo) -> str:
    path = repo.path / "benchmarks" / ".oom-record.archive"
    return path.read_text() if path.exists() else ""


def test_a_plain_fix_is_probed_then_verified_and_archived_with_its_run(
    lifted: tuple[Repo, str], cli: Cli, tmp_path: Path
) -> None:
    repo, fix = lifted
    line = record_text(repo).strip()
    code, body = check(repo.path, MODEL, "8192")
    assert code == 3, body
    assert body["decision"] == "probe" and body["may_launch"] is False
    assert f"lifted, unverified: fix {fix[:7]} (Chunk the prefill); runs alone" in body["reason"]
    assert body["verify_command"].startswith(f"oomrec run {MODEL} 8192 -- ")
    # The plain form says it in one line, with the command that verifies it.
    plain = subprocess.run(
        [PY, "-m", "oomrec", "check", MODEL, "8192"], capture_output=True, text=True,
        cwd=repo.path, check=False,
    )  # fmt: skip
    assert plain.returncode == 3
    assert plain.stdout.startswith(f"probe: {MODEL} @ 8192 on testhw: ")
    assert "verify it with: oomrec run" in plain.stdout
    # Below the record, the cell is no probe.
    assert check(repo.path, MODEL, "4096")[0] == 0
    assert dry_run_verdicts(cli, repo.path, lengths="4096 8192 16384")[1] == [
        "run",
        "probe",
        "probe",
    ]
    result = cli(
        "sweep", "--models", MODEL, "--lengths", "4096 8192 16384",
        "--runner", runner(tmp_path), "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    cells = json.loads(result.stdout)["cells"]
    assert [(c["verdict"], c["probe"]) for c in cells] == [
        ("ok", False),
        ("ok", True),
        ("ok", False),  # verified by the probe before it: no second probe
    ]
    assert cells[1]["verified"] == [line]
    assert "probe guard: min available" in result.stderr
    # Out of the record, into the archive as verified, naming the run.
    assert record_text(repo) == ""
    archived = archive_text(repo).strip()
    head = repo.head()
    _stamp, field, original = archived.split(" ", 2)
    assert original == line
    fix_sha, tag, mem, run_at, peak, csv = field.removeprefix("verified:").split(",")
    assert field.startswith("verified:") and fix_sha == fix and run_at == head
    assert tag == "testhw" and mem == "-" and int(peak) > 0
    assert csv.startswith("benchmarks") and csv.endswith(".csv")
    code, body = check(repo.path, MODEL, "8192")
    assert code == 0 and body["reason"].startswith("recorded OOM at 8192 verified by a run at")
    listed = cli("record", "list", "--archived", "--json")
    assert listed.exit_code == 0, listed.stderr
    (entry,) = json.loads(listed.stdout)["records"]
    assert entry["status"].startswith(f"verified by a run at {head[:7]} on testhw (")
    assert entry["status"].endswith(f"; fix {fix[:7]} in effect")
    # The report says so too.
    report = cli("report", "--json", "benchmarks")
    assert [o["status"] for o in json.loads(report.stdout)["ooms"]] == ["verified"]
    # A second sweep launches no probe.
    again = cli(
        "sweep", "--models", MODEL, "--lengths", "8192", "--runner", runner(tmp_path), "--json"
    )
    assert [c["probe"] for c in json.loads(again.stdout)["cells"]] == [False]
    # The fix reverted: the verified record is evidence again.
    repo.git("revert", "--no-edit", fix)
    assert check(repo.path, MODEL, "8192")[0] == 1


def test_oomrec_run_probes_a_lifted_cell_and_archives_it(
    lifted: tuple[Repo, str], cli: Cli, tmp_path: Path
) -> None:
    repo, _ = lifted
    result = cli("run", MODEL, "8192", "--json", "--", *runner(tmp_path).split())
    assert result.exit_code == 0, result.stderr
    body = json.loads(result.stdout)
    assert body["probe"] is True and body["verdict"] == "ok"
    assert record_text(repo) == ""
    assert archive_text(repo).split(" ")[1].startswith("verified:")
    assert check(repo.path, MODEL, "8192")[0] == 0


def test_a_verification_on_more_memory_proves_nothing_for_less(
    lifted: tuple[Repo, str], cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, _ = lifted
    monkeypatch.setenv("OOMREC_MEM_BYTES", str(128 * 2**30))
    result = cli("run", MODEL, "8192", "--", *runner(tmp_path).split())
    assert result.exit_code == 0, result.stderr
    assert check(repo.path, MODEL, "8192", env={"OOMREC_MEM_BYTES": str(128 * 2**30)})[0] == 0
    assert check(repo.path, MODEL, "8192", env={"OOMREC_MEM_BYTES": str(256 * 2**30)})[0] == 0
    # A smaller host of the class: the run proves nothing there, the lift is a probe again.
    assert check(repo.path, MODEL, "8192", env={"OOMREC_MEM_BYTES": str(64 * 2**30)})[0] == 3
    # Another machine class: this record (of testhw) is no evidence there at all.
    assert check(repo.path, MODEL, "8192", env={"OOMREC_HARDWARE": "otherhw"})[0] == 0
    # Verified there too: the latest verification is what the state rests on.
    monkeypatch.setenv("OOMREC_MEM_BYTES", str(64 * 2**30))
    assert cli("run", MODEL, "8192", "--", *runner(tmp_path).split()).exit_code == 0
    assert check(repo.path, MODEL, "8192", env={"OOMREC_MEM_BYTES": str(64 * 2**30)})[0] == 0


def test_a_harness_line_verified_on_one_class_is_still_a_probe_on_another(
    lifted: tuple[Repo, str], cli: Cli, tmp_path: Path
) -> None:
    """The harness writes no hardware: its line applies on every machine, and a run on one
    class proves nothing for another."""
    repo, _ = lifted
    path = repo.path / "benchmarks" / ".oom-record"
    path.write_text(f"{MODEL},16384,2026-07-01,{repo.git('rev-parse', 'HEAD~1')},,\n")
    assert cli("run", MODEL, "16384", "--", *runner(tmp_path).split()).exit_code == 0
    assert check(repo.path, MODEL, "16384")[0] == 0
    code, body = check(repo.path, MODEL, "16384", env={"OOMREC_HARDWARE": "otherhw"})
    assert code == 3, body


def test_a_person_pruning_a_lifted_record_takes_it_out_of_play(
    lifted: tuple[Repo, str], cli: Cli
) -> None:
    repo, _ = lifted
    assert cli("record", "prune").exit_code == 0
    assert record_text(repo) == ""
    assert check(repo.path, MODEL, "8192")[0] == 0


def test_no_probe_where_the_gpus_memory_cannot_be_watched(
    lifted: tuple[Repo, str], cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A discrete NVIDIA GPU whose memory NVML cannot read here (no driver in CI; on a host
    with a driver, a CUDA_VISIBLE_DEVICES that hides every GPU): the record applies."""
    repo, _ = lifted
    env = {"OOMREC_BACKEND": "cuda", "CUDA_VISIBLE_DEVICES": "-1"}
    monkeypatch.setenv("OOMREC_BACKEND", "cuda")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "-1")
    code, body = check(repo.path, MODEL, "8192", env=env)
    assert code == 1, body
    assert body["decision"] == "skip"
    assert "no probe here: the GPU's memory cannot be watched" in body["reason"]
    assert dry_run_verdicts(cli, repo.path, lengths="8192")[1] == ["SKIP:oom_record"]
    # A unified-memory host's GPU memory is the host's: probed.
    env["OOMREC_HARDWARE"] = "gb10"
    monkeypatch.setenv("OOMREC_HARDWARE", "gb10")
    assert cli("record", "add", MODEL, "2048", "--hardware", "gb10").exit_code == 0
    repo.commit(f"Chunk again\n\n{TRAILER}\n", {"prefill.py": AFTER + "# more\n"})
    assert check(repo.path, MODEL, "2048", env=env)[0] == 3


def test_a_backend_override_that_names_none_is_one_line(
    lifted: tuple[Repo, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, _ = lifted
    done = subprocess.run(
        [PY, "-m", "oomrec", "check", MODEL, "8192"],
        capture_output=True, text=True, cwd=repo.path, check=False,
        env={**os.environ, "OOMREC_BACKEND": "tpu"},
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "OOMREC_BACKEND='tpu'" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_probe_that_really_runs_out_of_memory_refreshes_the_record(
    lifted: tuple[Repo, str], tmp_path: Path
) -> None:
    """oomrec in a 256 MiB job; the probe touches 1 GiB: the probe's guard (or its cgroup's
    hard limit, or the kernel) stops it, and a record measured at HEAD, after the fix, is
    appended, which the fix does not lift."""
    repo, fix = lifted
    old = record_text(repo).strip()
    job = make_memory_cgroup(256 * MIB)
    try:
        done = oomrec_inside(
            job.procs,
            "sweep", "--models", MODEL, "--lengths", "8192 16384",
            "--runner", runner(tmp_path, 1024), "--json",
            cwd=repo.path,
        )  # fmt: skip
    finally:
        job.remove()
    assert done.returncode == 0, done.stderr
    cells = json.loads(done.stdout)["cells"]
    assert cells[0]["probe"] is True
    assert cells[0]["verdict"] in ("SKIP:oom", "SKIP:oom_guard"), cells[0]
    assert cells[1]["verdict"] == "SKIP:oom_backstop"
    lines = record_text(repo).splitlines()
    assert lines[0] == old
    fresh = lines[1].split(",")
    assert fresh[0] == MODEL and fresh[1] == "8192" and fresh[3] == repo.head()
    assert archive_text(repo) == ""
    code, body = check(repo.path, MODEL, "8192")
    assert code == 1, body
    # The fresh record (measured at the fix's own commit) applies, not the lifted one.
    assert body["record_line"].startswith("benchmarks/.oom-record:2: ")
    assert fix == repo.head()


def test_probe_undecided_probes_a_record_git_cannot_judge_and_a_run_decides(
    lifted: tuple[Repo, str], cli: Cli, tmp_path: Path
) -> None:
    """A refactor over the fixed lines: git cannot tell whether the fix survived, so the record
    applies; --probe-undecided runs the cell as a probe, and its run decides."""
    repo, fix = lifted
    repo.commit("Refactor the prefill", {"prefill.py": BEFORE.replace("run(", "go(")})
    code, body = check(repo.path, MODEL, "8192")
    assert code == 1, body
    assert dry_run_verdicts(cli, repo.path, lengths="8192")[1] == ["SKIP:oom_record"]
    stale = json.loads(cli("record", "stale", "--json").stdout)
    assert [e["verify_command"] for e in stale["unknown"]] == [
        f"oomrec run {MODEL} 8192 --probe-undecided -- CMD"
    ]
    # Without the flag a hand run is pre-skipped; with it, probed.
    assert cli("run", MODEL, "8192", "--", *runner(tmp_path).split()).exit_code == 1
    result = cli(
        "run", MODEL, "8192", "--probe-undecided", "--json", "--", *runner(tmp_path).split()
    )
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["probe"] is True
    _, field, _ = archive_text(repo).split(" ", 2)
    assert field.startswith(f"verified:{fix},")
    # Verified while that fix is still in the history (undecided as before): out of play.
    assert check(repo.path, MODEL, "8192")[0] == 0
    # The fix reverted: the record applies again.
    repo.git("revert", "--no-edit", "-X", "theirs", fix)
    assert check(repo.path, MODEL, "8192")[0] == 1


# `limit.py CELL_CSV MODEL LENGTH`: write the memory limit of the runner's own cgroup (v1 or
# v2) into the row's prompt, then a success row.
LIMIT = r"""
import sys
from pathlib import Path
cell_csv, model, length = sys.argv[1:4]
limit = "none"
for line in Path("/proc/self/cgroup").read_text().splitlines():
    _, controllers, rel = line.split(":", 2)
    for root, name in (("/sys/fs/cgroup/memory", "memory.limit_in_bytes"),
                       ("/sys/fs/cgroup", "memory.max"),
                       ("/sys/fs/cgroup/unified", "memory.max")):
        path = Path(root + rel) / name
        if "oomrec-" in rel and path.exists():
            limit = path.read_text().strip()
tail = f'2026-07-03,hw,0.3.3,release,32,"{limit}",' + length
Path(cell_csv).write_text("HEADER\n" + f"{model},./models/{model},{length},32,1,2,3,4,{tail}\n")
"""


def test_a_probes_own_cgroup_is_capped_below_the_binding_limit(
    lifted: tuple[Repo, str], cli: Cli, tmp_path: Path
) -> None:
    """Where the cell has a cgroup of its own, the probe's is capped (the binding limit less
    the floor), and a cell that is no probe is not."""
    from oomrec.core.schema import HEADER_15
    from oomrec.sweep.cell import cellscope

    if cellscope.unavailable() is not None:
        pytest.skip(f"no cgroup per cell here: {cellscope.unavailable()}")
    repo, _ = lifted
    script = tmp_path / "limit.py"
    script.write_text(LIMIT.replace("HEADER", HEADER_15))
    result = cli(
        "sweep", "--models", MODEL, "--lengths", "4096 8192",
        "--runner", f"{PY} {script} {{cell_csv}} {{model}} {{length}}",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    from oomrec.core.memscope import binding_total, host_ram
    from oomrec.core.shown import show_bytes
    from oomrec.sweep.cell.probeguard import FLOOR_MIN, FLOOR_SHARE

    binding = binding_total(host_ram())
    cap = binding - max(FLOOR_MIN, int(binding * FLOOR_SHARE))
    csv = next((repo.path / "benchmarks").glob("*longprompt*.csv")).read_text().splitlines()
    limits = [row.split('"')[1] for row in csv[1:]]
    assert limits[0] in ("none", "max", "9223372036854771712"), limits  # no probe: no cap
    # The kernel rounds a v1 limit down to a page.
    assert abs(int(limits[1]) - cap) < 4096, (limits, show_bytes(cap))
