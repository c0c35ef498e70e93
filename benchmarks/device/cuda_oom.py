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
It prints each verdict, the record lines, and how far past the limit the guard let the cell
get; exit 0 when both came out as expected.
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

CELL = r"""
import ctypes, sys, time
gib, step, path = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
ROW = 'm,./models/m,{n},32,1.0,2.0,3.0,4.0,2026-12-01,hw,0.3.3,release,32,"Hi",{n}'
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


def sweep(repo: Path, *args: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "oomrec", "sweep", "--models", "m", "--json", *args],
        cwd=repo, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    sys.stderr.write(done.stderr)
    if done.returncode != 0:
        sys.exit(f"sweep failed ({done.returncode})")
    return json.loads(done.stdout)


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
        runner = f"{sys.executable} {cell} {{length}} {args.step_gib} {{cell_csv}}"
        start = time.monotonic()
        out = sweep(repo, "--lengths", f"1 {big}", "--runner", runner, "--output", "a.csv")
        got = [(c["length"], c["verdict"], c["oom_evidence"]) for c in out["cells"]]
        print(f"1. CUDA OOM sweep ({time.monotonic() - start:.1f} s): {got}")
        ok &= [v for _, v, _ in got] == ["ok", "SKIP:oom"]
        record = repo / "benchmarks" / ".oom-record"
        print("   record:", record.read_text().strip() if record.exists() else "(none)")
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
    print("result:", "as expected" if ok else "NOT as expected")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
