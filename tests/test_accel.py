"""The guard's GPU limits (oomrec/sweep/cell/accel.py). CI has no NVIDIA GPU: the real NVML is
imported and refuses to start, which must refuse the limits in one line (they could not act); the
arithmetic and the reading of NVML's answers are tested on a stand-in for the NVML API (a GPU
cannot be had here), and benchmarks/device/cuda_oom.py runs the real thing on a GPU machine."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from oomrec.core import nvidia
from oomrec.sweep.cell import accel
from oomrec.sweep.cell.guard import GpuLimit, GuardLimits
from tests.conftest import CliResult
from tests.gitrepo import Repo

Cli = Callable[..., CliResult]
GIB = 1 << 30
ROOT = Path(__file__).resolve().parents[1]


def test_gpu_limits_where_nvml_cannot_act_are_one_line_and_exit_2(repo: Repo, cli: Cli) -> None:
    if not isinstance(accel.nvml(), str):
        pytest.skip("NVML works here: the refusal cannot be seen")
    (repo.path / "models" / "a").mkdir(parents=True)
    for flag, value in (("--max-cell-gpu-memory", "40G"), ("--min-gpu-available", "5%")):
        result = cli("sweep", "--models", "a", "--lengths", "512", "--runner", "true", flag, value)
        assert result.exit_code == 2, result.stderr
        [line] = result.stderr.strip().splitlines()
        assert line.startswith(f"oomrec: error: {flag} cannot act here: ")
        assert line.endswith("; or leave it off")


def test_a_bad_gpu_limit_is_named_before_nvml_is_asked(repo: Repo, cli: Cli) -> None:
    (repo.path / "models" / "a").mkdir(parents=True)
    result = cli(
        "sweep", "--models", "a", "--lengths", "512", "--runner", "true",
        "--max-cell-gpu-memory", "lots",
    )  # fmt: skip
    assert result.exit_code == 2
    assert "--max-cell-gpu-memory 'lots' is not a memory size; give e.g. 40G, 90%" in result.stderr


def test_gpu_limits_off_need_no_nvml(repo: Repo, cli: Cli) -> None:
    (repo.path / "models" / "a").mkdir(parents=True)
    result = cli(
        "sweep", "--models", "a", "--lengths", "512", "--runner", "true",
        "--max-cell-gpu-memory", "off", "--dry-run",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert "gpu:" not in result.stderr


def test_the_sweep_imports_no_nvml_without_gpu_limits() -> None:
    code = (
        "import sys\nfrom oomrec.cli import app\n"
        "from oomrec.commands.sweep import prepare\n"
        "print('pynvml' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert done.stdout.strip() == "False", done.stderr


def test_a_share_is_of_each_devices_own_memory_and_both_limits_name_the_device() -> None:
    limits = GuardLimits(max_cell_gpu=GpuLimit(share=90), min_gpu_available=GpuLimit(size=2 * GIB))
    assert limits.on and limits.gpu
    assert "max cell GPU memory 90%, min GPU available 2 GiB" in limits.describe()
    # 90% of 80 GiB is 72 GiB; of 24 GiB, 21.6 GiB.
    assert limits.gpu_breach("GPU 0 (H100)", 80 * GIB, 71 * GIB, 9 * GIB) is None
    assert limits.gpu_breach("GPU 0 (H100)", 80 * GIB, 73 * GIB, 7 * GIB) == (
        "cell memory 73 GiB on GPU 0 (H100) passed --max-cell-gpu-memory 72 GiB"
    )
    assert limits.gpu_breach("GPU 1 (4090)", 24 * GIB, 20 * GIB, GIB) == (
        "free memory 1 GiB on GPU 1 (4090) fell under --min-gpu-available 2 GiB"
    )
    # A device whose free memory NVML cannot read breaks no floor.
    assert limits.gpu_breach("GPU 1 (4090)", 24 * GIB, 20 * GIB, None) is None


@pytest.mark.parametrize(
    ("visible", "expected"),
    [
        (None, [0, 1, 2, 3]),
        ("", [0, 1, 2, 3]),  # none left: judged and watched as all (the safe side)
        ("2,0", [2, 0]),
        ("1,7,2", [1]),  # CUDA stops at the first device it cannot use
        ("GPU-8a2c...", [0, 1, 2, 3]),  # by UUID: every device is watched (the safe side)
        ("\u00b2", [0, 1, 2, 3]),  # a digit to str.isdigit, no index: as a UUID
    ],
)
def test_the_devices_watched_are_those_cuda_may_use(
    visible: str | None, expected: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    if visible is None:
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    else:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    assert nvidia.visible(4) == expected


class _NvmlApi:
    """A stand-in for the calls of the NVML API accel.Nvml makes: two devices, each with the
    processes NVML would list on it."""

    class NVMLError(Exception):
        pass

    def __init__(self, procs: list[list[tuple[int, int | None]]], graphics: dict[int, Any]) -> None:
        self.procs = procs
        self.graphics = graphics
        self.broken = False

    def nvmlInit(self) -> None:
        pass

    def nvmlDeviceGetCount(self) -> int:
        return len(self.procs)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        return index

    def nvmlDeviceGetName(self, handle: int) -> bytes:
        return f"GPU-{handle}".encode()

    def nvmlDeviceGetMemoryInfo(self, handle: int) -> SimpleNamespace:
        if self.broken:
            raise self.NVMLError("GPU is lost")
        return SimpleNamespace(total=80 * GIB, free=(10 + handle) * GIB)

    def nvmlDeviceGetComputeRunningProcesses(self, handle: int) -> list[SimpleNamespace]:
        return [SimpleNamespace(pid=p, usedGpuMemory=u) for p, u in self.procs[handle]]

    def nvmlDeviceGetGraphicsRunningProcesses(self, handle: int) -> list[SimpleNamespace]:
        return [SimpleNamespace(pid=p, usedGpuMemory=u) for p, u in self.graphics.get(handle, [])]


def test_the_cells_use_counts_its_own_processes_once_each() -> None:
    api = _NvmlApi(
        procs=[[(10, 3 * GIB), (11, GIB), (99, 50 * GIB)], [(10, None)]],
        graphics={0: [(10, 3 * GIB)]},
    )
    nv = accel.Nvml(api)
    assert [d.name for d in nv.devices] == ["GPU-0", "GPU-1"]
    # pid 99 is another user's; pid 10 is listed with compute and graphics contexts; on the
    # second device NVML gives no figure for it.
    assert nv.used_by({10, 11}) == [4 * GIB, 0]
    assert nv.free() == [10 * GIB, 11 * GIB]
    # A device NVML has lost reads as unknown, not as 0 free (which would stop every cell).
    api.broken = True
    assert nv.free() == [None, None]
