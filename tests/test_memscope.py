"""The memory limit that binds (oomrec.core.memscope): oomrec run inside a real memory
cgroup, as a Slurm `--mem` or `docker --memory` job runs it. The guard's `--min-available` and
the record's `mem_bytes` follow the cgroup's limit, not the host's free RAM."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from oomrec.core.memscope import CgroupAvailable, CgroupLimit, _read_limit, enclosing_limit
from tests.cgroups import make_memory_cgroup
from tests.gitrepo import IDENTITY, Repo

GIB = 1 << 30
MIB = 1 << 20

# `grow.py STEP_MIB STEPS cell_csv`: touch STEP_MIB more every 40 ms, then write an ok row.
GROW = r"""
import sys, time
step, steps, cell_csv = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
held = []
for n in range(steps):
    block = bytearray(step << 20)
    block[::4096] = b"x" * (len(block) // 4096)
    held.append(block)
    print(f"touched {(n + 1) * step} MiB", flush=True)
    time.sleep(0.04)
row = 'a,./models/a,512,32,1.0,2.0,3.0,4.0,2026-07-03,hw,0.3.3,release,32,"Hi",512'
open(cell_csv, "w").write("HEADER\n" + row + "\n")
"""


def inside(procs: Path, *argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`argv` run as a process that first moves itself into the cgroup of `procs`."""
    env = {**os.environ, **IDENTITY}
    # The memory a record says is what detection finds here, not the tests' fixed "unknown".
    env.pop("OOMREC_MEM_BYTES", None)
    return subprocess.run(
        ["sh", "-c", f'echo $$ > "{procs}" && exec "$@"', "sh", *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def oomrec_inside(procs: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return inside(procs, sys.executable, "-m", "oomrec", *args, cwd=cwd)


def test_records_made_inside_a_cgroup_carry_its_limit(repo: Repo, record: Path) -> None:
    cgroup = make_memory_cgroup(GIB)
    try:
        done = oomrec_inside(cgroup.procs, "record", "add", "m", "512", cwd=repo.path)
    finally:
        cgroup.remove()
    assert done.returncode == 0, done.stderr
    fields = record.read_text().strip().split(",")
    assert int(fields[7]) == GIB


def test_min_available_stops_a_growing_cell_before_the_kernel_does(
    repo: Repo, record: Path, tmp_path: Path
) -> None:
    grow = tmp_path / "grow.py"
    grow.write_text(GROW)
    (repo.path / "models" / "a").mkdir(parents=True)
    cgroup = make_memory_cgroup(GIB)
    try:
        done = oomrec_inside(
            cgroup.procs,
            "sweep",
            "--models",
            "a",
            "--lengths",
            "512",
            "--runner",
            f"{sys.executable} {grow} 16 100 {{cell_csv}}",
            "--min-available",
            "300M",
            "--json",
            cwd=repo.path,
        )
    finally:
        cgroup.remove()
    assert done.returncode == 0, done.stderr
    cell = json.loads(done.stdout)["cells"][0]
    # Under the host's MemAvailable (gigabytes free) the kernel would have killed it at 1 GiB.
    assert cell["verdict"] == "SKIP:oom_guard", cell
    assert "fell under --min-available" in cell["reason"]
    assert "  memory:  1 GiB, the limit of cgroup " in done.stderr
    line = record.read_text().strip().split(",")
    assert line[:2] == ["a", "512"] and int(line[7]) == GIB and line[8] == "guard"


def test_the_tightest_limit_up_the_hierarchy_binds(tmp_path: Path) -> None:
    parent = make_memory_cgroup(512 * MIB)
    try:
        child = parent.path / "inner"
        child.mkdir()
        try:
            # A child with a looser limit (or none) is bound by its parent's.
            code = (
                "import sys; sys.path.insert(0, sys.argv[1]);"
                "from oomrec.core.memscope import enclosing_limit;"
                "s = enclosing_limit(); print(s.limit, s.path)"
            )
            root = Path(__file__).resolve().parents[1]
            done = inside(child / "cgroup.procs", sys.executable, "-c", code, str(root), cwd=root)
        finally:
            child.rmdir()
    finally:
        parent.remove()
    assert done.returncode == 0, done.stderr
    limit, path = done.stdout.split()
    assert int(limit) == 512 * MIB
    assert Path(path) == parent.path


def test_no_limit_reads_as_none_and_available_is_the_limit_less_the_working_set(
    tmp_path: Path,
) -> None:
    (tmp_path / "v1").write_text("9223372036854771712\n")
    (tmp_path / "v2").write_text("max\n")
    (tmp_path / "set").write_text("1073741824\n")
    assert _read_limit(tmp_path / "v1") is None
    assert _read_limit(tmp_path / "v2") is None
    assert _read_limit(tmp_path / "set") == GIB
    (tmp_path / "memory.usage_in_bytes").write_text(str(600 * MIB))
    (tmp_path / "memory.stat").write_text(f"cache 1\ntotal_inactive_file {100 * MIB}\nrss 5\n")
    available = CgroupAvailable(CgroupLimit(GIB, tmp_path, 1))
    try:
        assert available.read() == GIB - 500 * MIB
    finally:
        available.close()
    # This process's own scope is whatever the machine gives it: a limit, or none.
    scope = enclosing_limit()
    assert scope is None or scope.limit > 0
