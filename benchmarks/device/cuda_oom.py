"""A real CUDA OOM and a real GPU guard stop, through `oomrec sweep`, on a machine with an NVIDIA
GPU (CI has none; run this whenever one is lent):

    python benchmarks/device/cuda_oom.py [--step-gib 4]

Needs the NVIDIA driver and nvidia-ml-py (`pip install 'oomrec[nvidia]'`; pynvml.py is one
file: PYTHONPATH to a folder holding it will do). The cell allocates device memory with
PyTorch where it is installed, else straight through the CUDA driver API (libcuda, ctypes), so
no framework is needed. In a throwaway git repository it runs two sweeps of one model whose
"length" is the GiB a cell allocates on GPU 0:
1. lengths 1 and 2x the device's memory: the second is a true CUDA OOM (SKIP:oom, evidence the
   runner's own message), recorded with this host's tag and the device's memory;
2. the same cell allocating --step-gib at a time up to 90% of the device, under
   --max-cell-gpu-memory 50%: SKIP:oom_guard, the reason naming GPU 0, stopped before 90%.
3. a probe: a record of model p at twice the device's memory, measured before a commit with an
   `OOM-Fix: p` trailer, swept with no guard of the user's: the cell runs as a probe under the
   probe's default GPU floor (5% of the device free) and is stopped (SKIP:oom_guard) before
   CUDA runs out, and a fresh record is written at HEAD;
4. a probe that fits (1 GiB) of a lifted record of model q: it runs and is archived as verified.
It prints each verdict, the record lines, and how far past the limit the guard let the cell
get, and checks NVIDIA memory is read one way (the record's memory, NVML's total and
nvidia-smi's agree to the byte); exit 0 when all came out as expected.

Figures, 2026-12-04, one NVIDIA H200 (140.4 GiB, driver 580), PyTorch 2.11, no cgroup per cell
(the memory controller is not delegated there), 4 GiB steps:
1. `ok` at 1 GiB; SKIP:oom at 280 GiB from PyTorch's own message (20.0 s for both cells).
2. SKIP:oom_guard at 73 GiB on GPU 0, past --max-cell-gpu-memory 70 GiB (one step over).
3. the probe of p @ 280 under the default floor (min available 6.3 GiB of the host, 5% of the
   GPU free = 7.0 GiB): SKIP:oom_guard with 3.3 GiB of the GPU still free, no CUDA OOM;
   the fresh record (kind guard, measured at the fix's commit) appended (12.9 s).
4. the probe of q @ 1: `ok`, archived `verified:<fix>,h200,150754820096,<HEAD>,766734336,d.csv`.
The guard acts after an allocation lands, so a cell overshoots a limit by up to one step.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GIB = 1 << 30
# oomrec from this checkout, ahead of what PYTHONPATH already holds (carried wheels).
ENV = {
    **os.environ,
    "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
}

CELL = r"""
import ctypes, sys, time
gib, step, path, model = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3], sys.argv[4]
ROW = model + ",./models/" + model
ROW += ',{n},32,1.0,2.0,3.0,4.0,2026-12-01,hw,0.3.3,release,32,"Hi",{n}'
held = []
try:
    import torch
    def alloc(n):
        held.append(torch.empty(int(n * (1 << 30)), dtype=torch.uint8, device="cuda"))
        torch.cuda.synchronize()
except ImportError:
    cuda = ctypes.CDLL("libcuda.so.1")
    ctx = ctypes.c_void_p()
    assert cuda.cuInit(0) == 0 and cuda.cuCtxCreate_v2(ctypes.byref(ctx), 0, 0) == 0
    def alloc(n):
        ptr = ctypes.c_uint64()
        rc = cuda.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(int(n * (1 << 30))))
        if rc == 2:
            sys.exit("CUDA_ERROR_OUT_OF_MEMORY: cuMemAlloc of %.1f GiB" % n)
        assert rc == 0, rc
        cuda.cuMemsetD8_v2(ptr, 1, ctypes.c_size_t(int(n * (1 << 30))))
        held.append(ptr)
done = 0.0
while done < gib:
    alloc(min(step, gib - done))
    done += min(step, gib - done)
    print("held", done, "GiB at", time.monotonic(), flush=True)
    time.sleep(0.2)
open(path, "w").write("header\n" + ROW.format(n=int(gib)) + "\n")
"""


def git(repo: Path, *args: str) -> None:
    who = {"GIT_AUTHOR_NAME": "d", "GIT_AUTHOR_EMAIL": "d@x"}
    env = {**os.environ, **who, "GIT_COMMITTER_NAME": "d", "GIT_COMMITTER_EMAIL": "d@x"}
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


def sweep(repo: Path, *args: str, model: str = "m") -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "oomrec", "sweep", "--models", model, "--json", *args],
        cwd=repo, capture_output=True, text=True, env=ENV,
    )  # fmt: skip
    sys.stderr.write(done.stderr)
    if done.returncode != 0:
        sys.exit(f"sweep failed ({done.returncode})")
    return json.loads(done.stdout)


def probes(repo: Path, runner: str, big: int) -> bool:
    """Steps 3 and 4: a lifted record's cell runs as a probe under the default GPU floor."""
    for model in ("p", "q"):
        (repo / "models" / model).mkdir(parents=True)
    (repo / "prefill.py").write_text("chunk = None\n")
    git(repo, "add", "prefill.py")
    git(repo, "commit", "-q", "-m", "prefill")
    for model, length in (("p", big), ("q", 1)):
        subprocess.run(
            [sys.executable, "-m", "oomrec", "record", "add", model, str(length)],
            cwd=repo, check=True, env=ENV,
        )  # fmt: skip
    (repo / "prefill.py").write_text("chunk = 512\n")
    git(repo, "commit", "-qam", "Chunk the prefill\n\nOOM-Fix: p, q")
    record = repo / "benchmarks" / ".oom-record"
    start = time.monotonic()
    out = sweep(repo, "--lengths", str(big), "--runner", runner, "--output", "c.csv", model="p")
    cell = out["cells"][0]
    print(f"3. probe past the GPU ({time.monotonic() - start:.1f} s): {cell['verdict']}, "
          f"probe={cell['probe']}: {cell['reason']}")  # fmt: skip
    lines = record.read_text().strip().splitlines()
    print("   record:", lines[-1])
    ok = cell["probe"] and cell["verdict"] == "SKIP:oom_guard"
    ok = ok and lines[-1].startswith(f"p,{big},") and lines[-1].endswith(",guard")
    start = time.monotonic()
    out = sweep(repo, "--lengths", "1", "--runner", runner, "--output", "d.csv", model="q")
    cell = out["cells"][0]
    print(f"4. probe that fits ({time.monotonic() - start:.1f} s): {cell['verdict']}, "
          f"probe={cell['probe']}, verified={cell['verified']}")  # fmt: skip
    archive = repo / "benchmarks" / ".oom-record.archive"
    print("   archive:", archive.read_text().strip() if archive.exists() else "(none)")
    return ok and cell["probe"] and cell["verdict"] == "ok" and len(cell["verified"]) == 1


def one_reading(record: Path, nvml_total: int) -> bool:
    """NVIDIA memory read one way (core/nvidia.py): the record's memory is the guard's device
    total (NVML), and nvidia-smi, the reading without the extra, gives the same (to a MiB)."""
    from oomrec.core import nvidia

    lines = record.read_text().splitlines() if record.exists() else []
    recorded = int(lines[-1].split(",")[7]) if lines else None
    done = subprocess.run(
        ["nvidia-smi", "--query-gpu=index,name,memory.total", "--format=csv,noheader,nounits"],
        capture_output=True,
        text=True,
        check=False,
    )
    smi = nvidia.smi_devices(done.stdout)
    smi_total = smi[0].total if smi else None
    print(f"   one reading: record {recorded}, NVML {nvml_total}, nvidia-smi {smi_total}")
    # nvidia-smi prints whole MiB: the same figure to within one.
    return (
        recorded == nvml_total and smi_total is not None and abs(smi_total - nvml_total) < 1 << 20
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--step-gib", type=float, default=4.0)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from oomrec.sweep.cell import accel

    found = accel.nvml()
    if isinstance(found, str):
        print(f"cannot run: {found}")
        return 2
    device = found.devices[0]
    total_gib = device.total / GIB
    print(f"device: GPU {device.index} {device.name}, {total_gib:.1f} GiB")
    ok = True
    with tempfile.TemporaryDirectory(prefix="oomrec-cuda-") as tmp:
        repo = Path(tmp)
        git(repo, "init", "-q")
        git(repo, "commit", "-q", "--allow-empty", "-m", "base")
        (repo / "models" / "m").mkdir(parents=True)
        (repo / "benchmarks").mkdir()
        cell = repo / "cell.py"
        cell.write_text(CELL)
        big = int(total_gib * 2)
        runner = f"{sys.executable} {cell} {{length}} {args.step_gib} {{cell_csv}} {{model}}"
        start = time.monotonic()
        out = sweep(repo, "--lengths", f"1 {big}", "--runner", runner, "--output", "a.csv")
        got = [(c["length"], c["verdict"], c["oom_evidence"]) for c in out["cells"]]
        print(f"1. CUDA OOM sweep ({time.monotonic() - start:.1f} s): {got}")
        ok &= [v for _, v, _ in got] == ["ok", "SKIP:oom"]
        record = repo / "benchmarks" / ".oom-record"
        print("   record:", record.read_text().strip() if record.exists() else "(none)")
        ok &= one_reading(record, device.total)
        near = int(total_gib * 0.9)
        start = time.monotonic()
        out = sweep(
            repo, "--lengths", str(near), "--runner", runner, "--output", "b.csv",
            "--max-cell-gpu-memory", "50%",
        )  # fmt: skip
        cells = out["cells"]
        print(f"2. GPU guard sweep ({time.monotonic() - start:.1f} s): "
              f"{[(c['verdict'], c.get('reason')) for c in cells]}")  # fmt: skip
        ok &= [c["verdict"] for c in cells] == ["SKIP:oom_guard"]
        print("   record:", record.read_text().strip().splitlines()[-1])
        ok &= probes(repo, runner, big)
    print("result:", "as expected" if ok else "NOT as expected")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
