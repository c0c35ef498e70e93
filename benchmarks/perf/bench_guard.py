"""What the memory guard costs and how fast it acts, in both scopes: a memory cgroup per cell
(where oomrec can make one: its working set is the cell's memory) and the process tree (the
summed RSS of the cell's processes), each measured in the same run.

- overhead: oomrec's own CPU time (user + sys; children excluded) while a cell of 4 processes,
  one of them with 20 threads (as a PyTorch runner has), sleeps for --seconds: without a guard
  (the baseline: the 200 ms peak sampler alone), with --max-cell-memory, and with both limits;
  as a share of one core, all in the same run; then the same for a runner holding 400 MiB that
  forks a child sharing its pages every 0.5 s (the tree scope reads PSS to count them once);
- reaction: a runner touches 64 MiB every 50 ms (~25 ms of touching, then a pause) and prints
  the time and the RSS the guard sums before and after each step; the 300 MiB limit lies inside
  a step, and the guard stops the runner in it or in the pause after it. Reaction = the guard's
  SIGTERM - when the limit was passed (the step's start plus what was left to the limit at the
  touch rate of the steps before); an upper bound from the step's start is printed too;
  overshoot = the RSS the guard saw - the limit. Once for the runner itself, once for a child
  it starts.

    python benchmarks/perf/bench_guard.py [--seconds 10] [--runs 20]

Last measured 2026-12-02 (`--seconds 5 --runs 20`, a 2-core VM, root, cgroup v1, other work
running at times), oomrec's own CPU as a share of one core:

| scope | cell | no guard | --max-cell-memory | both limits |
|---|---|---|---|---|
| a cgroup per cell | 4 processes | 0.63-0.65% | 1.06-1.22% | 1.35-1.45% |
| a cgroup per cell | 400 MiB runner forking | 0.95-1.17% | 1.57-1.61% | - |
| the process tree | 4 processes | 0.59-0.64% | 1.28-1.60% | 1.54-1.61% |
| the process tree | 400 MiB runner forking | 0.77-1.03% | 1.58-1.65% | - |

Reaction (median / max from the crossing; overshoot median / max): cgroup, runner 13 / 25 ms,
17 / 27 MiB; cgroup, child 18 / 28 ms, 19 / 32 MiB; tree, runner 13 / 25 ms, 25 / 32 MiB; tree,
child 11 / 28 ms, 16 / 34 MiB. A runner that forks and execs 70 times a second holding 300 MiB
(tests/test_tree_scope.py's FORKLOOP) costs 2-3% of a core guarded in the tree scope (PSS reads
before a possible stop, at most one a walk), 0.9% unguarded.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from oomrec.sweep.cell import cellscope
from oomrec.sweep.cell.guard import GuardLimits
from oomrec.sweep.cell.runner import run_cell

MIB = 1 << 20
LIMIT = 300 * MIB

IDLE = """
import subprocess, sys, threading, time
kids = [subprocess.Popen(['sleep', '{s}']) for _ in range(3)]
for _ in range(20):
    threading.Thread(target=time.sleep, args=({s},), daemon=True).start()
time.sleep({s})
"""

FORKING = """
import os, time
held = bytearray(400 << 20)
held[::4096] = b"x" * (len(held) // 4096)
end = time.monotonic() + {s}
while time.monotonic() < end:
    pid = os.fork()
    if pid == 0:
        time.sleep(0.25)
        os._exit(0)
    os.waitpid(pid, 0)
    time.sleep(0.25)
"""

STEPS = """
import os, subprocess, sys, time
if sys.argv[1:] == ["child"]:
    sys.exit(subprocess.run([sys.executable, __file__, "of", str(os.getpid())]).returncode)
page = os.sysconf("SC_PAGE_SIZE")
# What the guard sums: this process, and the runner that started it (a constant).
statms = ["/proc/self/statm"]
if sys.argv[1:2] == ["of"]:
    statms.append(f"/proc/{sys.argv[2]}/statm")


def rss():
    return sum(int(open(path).read().split()[1]) for path in statms) * page


held = []
for _ in range(12):
    print("S", time.monotonic(), rss(), flush=True)
    block = bytearray(64 << 20)
    block[::4096] = b"x" * (len(block) // 4096)
    held.append(block)
    print("E", time.monotonic(), rss(), flush=True)
    time.sleep(0.05)
"""


def own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def cpu_share(seconds: float, guard: GuardLimits | None, cell: str = IDLE) -> float:
    code = cell.format(s=seconds)
    cpu, start = own_cpu(), time.perf_counter()
    run_cell([sys.executable, "-c", code], timeout=seconds * 3, guard=guard)
    return (own_cpu() - cpu) / (time.perf_counter() - start)


def reaction(script: Path, child: bool) -> tuple[float, float, float] | None:
    """(reaction ms from the estimated crossing, ms from the crossing step's start, overshoot
    MiB), or None when the guard did not act or the output does not show the crossing."""
    argv = [sys.executable, str(script)] + (["child"] if child else [])
    run = run_cell(argv, timeout=30, guard=GuardLimits(max_cell_bytes=LIMIT))
    stop = run.guard_stop
    # A line cut short by the guard's signal is left out.
    marks = [line.split() for line in run.output_tail.splitlines()]
    points = [(kind, float(t), int(rss)) for kind, t, rss in (m for m in marks if len(m) == 3)]
    starts = [i for i, (kind, _, rss) in enumerate(points) if kind == "S" and rss <= LIMIT]
    if stop is None or not starts or starts[-1] < 2:
        return None
    # The step during which the limit was passed, and the touch rate of the steps before it.
    _, start, before = points[starts[-1]]
    done = points[: starts[-1]]
    rates = [
        (e_rss - s_rss) / (e_t - s_t)
        for (_, s_t, s_rss), (_, e_t, e_rss) in zip(done[0::2], done[1::2], strict=True)
    ]
    crossed = start + (LIMIT - before) / statistics.median(rates)
    return (
        (stop.signalled_at - crossed) * 1000,
        (stop.signalled_at - start) * 1000,
        (stop.cell_bytes - LIMIT) / MIB,
    )


def report(name: str, samples: list[tuple[float, float, float]]) -> None:
    react = [r for r, _, _ in samples]
    bound = [b for _, b, _ in samples]
    over = [o for _, _, o in samples]
    print(
        f"{name}: reaction median {statistics.median(react):.1f} ms, max {max(react):.1f} ms "
        f"(from the crossing step's start: max {max(bound):.1f} ms); overshoot median "
        f"{statistics.median(over):.0f} MiB, max {max(over):.0f} MiB ({len(samples)} runs)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()

    modes = ["a cgroup per cell", "the process tree"]
    why = cellscope.unavailable()
    if why is not None:
        print(f"no cgroup per cell here ({why}): the process tree only")
        modes = modes[1:]
    for mode in modes:
        # The tree mode is what a host without cgroups gets: no cell cgroup is made.
        if mode == "the process tree":
            os.environ[cellscope.SCOPE_ENV] = "tree"
        measure(mode, args.seconds, args.runs)


def measure(mode: str, seconds: float, runs: int) -> None:
    configs = {
        "no guard (baseline)": None,
        "--max-cell-memory": GuardLimits(max_cell_bytes=64 << 30),
        "--max-cell-memory + --min-available": GuardLimits(64 << 30, 1 << 20),
    }
    for name, guard in configs.items():
        shares = [cpu_share(seconds, guard) for _ in range(3)]
        print(
            f"[{mode}] overhead, {name}, a 4-process cell for {seconds:.0f} s: "
            + ", ".join(f"{share * 100:.2f}%" for share in shares)
            + " of a core"
        )
    for name, guard in list(configs.items())[:2]:
        shares = [cpu_share(seconds, guard, FORKING) for _ in range(3)]
        print(
            f"[{mode}] overhead, {name}, a 400 MiB runner forking every 0.5 s for "
            f"{seconds:.0f} s: "
            + ", ".join(f"{share * 100:.2f}%" for share in shares)
            + " of a core"
        )
    script = Path(tempfile.mkdtemp(prefix="bench-guard-")) / "steps.py"
    script.write_text(STEPS)
    for child in (False, True):
        samples = [r for _ in range(runs) if (r := reaction(script, child)) is not None]
        name = "reaction, a child of the runner allocates" if child else "reaction, the runner"
        if samples:
            report(f"[{mode}] {name}", samples)
        else:
            print(f"[{mode}] {name}: the guard never acted")


if __name__ == "__main__":
    main()
