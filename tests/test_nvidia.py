"""NVIDIA memory read one way (oomrec/core/nvidia.py): the record's class, the guard and the
header take the same devices and totals, narrowed by CUDA_VISIBLE_DEVICES by one rule. CI has
no GPU: nvidia-smi is a real executable on PATH printing what a two-GPU host prints, NVML a
stand-in of its API (tests/test_accel.py); benchmarks/device/cuda_oom.py runs the real thing."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from oomrec.core import hardware, nvidia
from oomrec.sweep.cell import accel
from tests.conftest import CliResult
from tests.gitrepo import Repo
from tests.scripted_runner import Runner
from tests.test_accel import _NvmlApi

Cli = Callable[..., CliResult]
GIB = 1 << 30
MIB = 1 << 20

# As nvidia-smi on a host of an 80 GiB and a 40 GiB GPU (memory.total in MiB, as it prints).
NVIDIA_SMI = """#!/bin/sh
case "$1" in
  --query-gpu=index,name,memory.total)
    echo "0, NVIDIA H100 80GB HBM3, 81559"
    echo "1, NVIDIA A100-PCIE-40GB, 40960" ;;
  --query-gpu=name) printf 'NVIDIA H100 80GB HBM3\\nNVIDIA A100-PCIE-40GB\\n' ;;
  *) echo "NVIDIA-SMI 550.54" ;;
esac
"""


def _forget() -> None:
    nvidia.forget()
    accel.nvml.cache_clear()
    hardware._probe.cache_clear()
    hardware._probed_memory.cache_clear()


@pytest.fixture
def two_gpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """PATH with a real `nvidia-smi` of two GPUs beside git and the shell; this host's tag and
    memory left to detection."""
    fake = tmp_path / "bin"
    fake.mkdir()
    for tool in ("git", "sh", "bash", "env", "uname"):
        found = shutil.which(tool)
        if found:
            (fake / tool).symlink_to(found)
    (fake / "nvidia-smi").write_text(NVIDIA_SMI)
    (fake / "nvidia-smi").chmod(0o755)
    monkeypatch.setenv("PATH", str(fake))
    monkeypatch.delenv("OOMREC_HARDWARE", raising=False)
    monkeypatch.delenv("OOMREC_MEM_BYTES", raising=False)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.delenv("CUDA_DEVICE_ORDER", raising=False)
    # NVML cannot start here (no driver, or nvidia-ml-py absent): nvidia-smi gives the reading.
    _forget()
    if not isinstance(nvidia.nvml_module(), str):
        pytest.skip("NVML works here: the host's own GPUs would be read")
    yield
    _forget()


@pytest.mark.parametrize(
    ("visible", "tag", "mem"),
    [
        (None, "h100", 81559 * MIB),
        ("1", "a100", 40960 * MIB),
        ("1,0", "a100", 40960 * MIB),
        ("", "h100", 81559 * MIB),
        ("GPU-8a2c", "h100", 81559 * MIB),
    ],
)
def test_the_class_is_the_device_the_cell_may_use(
    two_gpus: None, monkeypatch: pytest.MonkeyPatch, visible: str | None, tag: str, mem: int
) -> None:
    """A cell given the 40 GiB GPU records 40 GiB: the first device's 80 would keep its record
    off an 80 GiB host where the cell runs out of memory too."""
    if visible is not None:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    _forget()
    assert (hardware.detect(), hardware.detect_memory()) == (tag, mem)


def test_nvidia_smi_and_nvml_read_the_same_devices(
    two_gpus: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The two sources give one list (index, name, total in bytes) for the same GPUs, so the
    class a record gets does not depend on whether the extra is installed; and the guard's
    devices are that list."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    _forget()
    from_smi = nvidia.devices()
    api = _NvmlApi(procs=[[], []], graphics={})
    from_nvml = tuple(d for d, _ in nvidia.nvml_devices(api))
    assert [d.index for d in from_smi] == [d.index for d in from_nvml] == [1]
    watched = [(d.index, d.name, d.total) for d in accel.Nvml(api).devices]
    assert watched == [(d.index, d.name, d.total) for d in from_nvml]
    assert from_smi == (nvidia.Device(1, "NVIDIA A100-PCIE-40GB", 40960 * MIB),)


@pytest.mark.parametrize(
    "text",
    ["", "garbage\n", "0, , 81559\n", "x, NVIDIA H100, 81559\n", "9" * 100_000 + ", H100, 1\n"],
)
def test_what_nvidia_smi_prints_that_is_no_device_is_none(text: str) -> None:
    assert nvidia.smi_devices(text) == []


@pytest.mark.parametrize("memory", ["[N/A]", str(10**30), "9" * 100_000, "0", "-5", "\u00b2"])
def test_a_memory_nvidia_smi_does_not_give_as_a_size_is_no_known_total(memory: str) -> None:
    assert nvidia.smi_devices(f"0, NVIDIA H100, {memory}\n") == [
        nvidia.Device(0, "NVIDIA H100", None)
    ]


def test_a_sweep_records_the_memory_of_the_device_its_cell_ran_on(
    two_gpus: None,
    cli: Cli,
    repo: Repo,
    runner: Runner,
    models: Callable[..., None],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    _forget()
    models("plain-8b")
    runner.behave({"plain-8b:2048": "exit:1:std::bad_alloc"})
    result = cli("sweep", "--runner", f"{sys.executable} {runner.template}",
                 "--models", "plain-8b", "--lengths", "512 2048")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    [line] = (repo.path / "benchmarks" / ".oom-record").read_text().splitlines()
    fields = line.split(",")
    assert (fields[0], fields[1], fields[6], int(fields[7])) == (
        "plain-8b",
        "2048",
        "a100",
        40960 * MIB,
    )
    # GPUs of different memory, numbered by CUDA fastest first: the header says the device
    # read may not be the cell's, and how to make it so; in PCI order it says nothing.
    assert "warning: this host's GPUs differ in memory" in result.stderr
    assert "export CUDA_DEVICE_ORDER=PCI_BUS_ID" in result.stderr
    monkeypatch.setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
    again = cli("sweep", "--runner", f"{sys.executable} {runner.template}",
                "--models", "plain-8b", "--lengths", "512", "--ignore-record")  # fmt: skip
    assert again.exit_code == 0, again.stderr
    assert "GPUs differ in memory" not in again.stderr


def test_an_nvidia_smi_that_fails_gives_no_device_and_the_hosts_memory(
    two_gpus: None, tmp_path: Path
) -> None:
    """Devices printed by an nvidia-smi that then exits non-zero are not trusted: no GPU is
    read, and the class falls back to this host's own (its CPU, its RAM)."""
    smi = tmp_path / "bin" / "nvidia-smi"
    smi.write_text('#!/bin/sh\necho "0, NVIDIA H100 80GB HBM3, 81559"\nexit 9\n')
    _forget()
    assert nvidia.devices() == ()
    assert hardware.detect() not in {"h100", "a100"}
    assert hardware.detect_memory() == hardware.host_total()


def test_a_gb10_whose_driver_gives_no_memory_total_is_still_a_gb10(
    two_gpus: None, tmp_path: Path
) -> None:
    """A GB10's nvidia-smi prints `[N/A]` for its memory (NVML: NOT_SUPPORTED): the device still
    names the host (its records apply), and its memory is the host's, as on any unified host."""
    smi = tmp_path / "bin" / "nvidia-smi"
    smi.write_text(
        '#!/bin/sh\ncase "$1" in\n  --query-gpu=index,name,memory.total) '
        'echo "0, NVIDIA GB10, [N/A]" ;;\n  *) echo "NVIDIA GB10" ;;\nesac\n'
    )
    _forget()
    assert nvidia.devices() == (nvidia.Device(0, "NVIDIA GB10", None),)
    assert hardware.detect() == "gb10"
    assert hardware.detect_memory() == hardware.host_total()
    api = _NvmlApi(procs=[[]], graphics={})
    api.broken = True  # its memory query fails as NOT_SUPPORTED does
    assert [d for d, _ in nvidia.nvml_devices(api)] == [nvidia.Device(0, "GPU-0", None)]
    # The guard's GPU limits, in shares of a total there is none of, cannot act: refused.
    with pytest.raises(ValueError, match="no memory total"):
        accel.Nvml(api)
