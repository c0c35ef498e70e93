"""The crash campaign, rerunnable: SIGKILL writers of one record file and count the damage.

Each trial starts, on a fresh record file, two library appenders writing large batches through a
symlink, one prune-like rewriter (the library's atomic rewrite, through the real path), one
archiver (prune's move into `<record>.archive` and restore's move back, in turn) and one
`oomrec record add` process, then SIGKILLs one of them, in turn: an appender the moment the file
grows (its write under way), an appender at a random moment, the rewriter, `record add`, the
archiver; then the rest. Afterwards:

- torn: a line whose text no writer meant to write that still reads as a record (must be 0);
- lost: a line of a batch whose append had returned (the writer said so) missing (must be 0);
- cut tails: trials that left a last line without its ending (a kill mid-write), and the next
  writer's handling of them (moved to `<record>.torn`), and temp files of killed rewrites it
  removed.

`--campaign sweep`: resumed sweeps SIGKILLed at random points. Each trial makes a repository
with a grid of 4 models x 4 lengths and a runner that writes one known row per cell (an OOM for
some), then runs `oomrec sweep --resume` with TMPDIR of its own, SIGKILLing it after a random
delay, again and again, until a run ends by itself; then checks the CSV and TMPDIR:

- lost: a cell of the grid with no row (must be 0);
- duplicated: a cell with more than one row (must be 0);
- forged: a row that is not the one the runner (or the sweep's skip) writes for its cell (0);
- leftovers: `oomrec-cells-*` folders in TMPDIR once the last run is over (must be 0).

Not run in CI. Usage: python benchmarks/perf/bench_crash.py [--trials N] [--seed S]
    [--campaign record|sweep]

Figures, --campaign sweep (2026-12-02, 2-core dev VM, --trials 20 --seed 1): 20 repositories
swept in 66 s through 71 SIGKILLed runs: 0 lost, 0 duplicated, 0 forged, 0 leftovers. The same
campaign on the tree before (its TemporaryDirectory for the cells): 5 leftovers in 3 trials.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from oomrec.core.records import OomRecord, RecordFile

APPENDER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from oomrec.core.records import OomRecord, RecordFile

    path, who = Path(sys.argv[1]), sys.argv[2]
    rf = RecordFile(path)
    for batch in range(1000):
        rf.append([
            OomRecord(f"w{who}-b{batch}-{i}", i, "2026-01-01", "a" * 40, 10**9, "s" * 40, "v100")
            for i in range(3000)
        ])
        print(batch, flush=True)
    """
)

# A prune and a restore in turn: the seeded lines move to the archive and back, under the lock.
ARCHIVER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from oomrec.store import archive
    from oomrec.core.records import RecordFile

    rf = RecordFile(Path(sys.argv[1]))
    fix = "f" * 40
    while True:
        archive.move_out(
            rf, lambda loaded: {l.text: fix for l in loaded.lines if l.text.startswith("stale-")}
        )
        archive.move_back(rf, lambda lines: list(lines))
    """
)

REWRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from oomrec.core.records import RecordFile

    rf = RecordFile(Path(sys.argv[1]))
    while True:
        # A prune that drops the seeded stale lines and keeps everything else.
        rf.rewrite(lambda loaded: [l for l in loaded.lines if not l.text.startswith("stale-")])
    """
)


def _expected(who: str, batch: int) -> set[str]:
    return {
        f"w{who}-b{batch}-{i},{i},2026-01-01,{'a' * 40},{10**9},{'s' * 40},v100"
        for i in range(3000)
    }


MID_WRITE = -1


def _when_it_grows(real: Path) -> None:
    """Return the moment the record grows: an append's write is under way."""
    deadline = time.monotonic() + 30
    size = real.stat().st_size
    while time.monotonic() < deadline:
        try:
            now = real.stat().st_size
        except FileNotFoundError:
            continue
        if now > size:
            return
        # A rewrite shrinks it (the stale lines go): growth is measured from there.
        size = min(size, now)


def trial(base: Path, rng: random.Random, victim: int) -> dict[str, int]:
    real = base / "real" / "oom-record"
    real.parent.mkdir(parents=True)
    real.write_text("".join(f"stale-{i},1,2026-01-01,unknown,,s\n" for i in range(100)))
    link = base / "link"
    link.symlink_to(real)
    env = {**os.environ, "OOMREC_HARDWARE": "v100", "OOMREC_MEM_BYTES": "unknown"}
    py = sys.executable
    procs = [
        subprocess.Popen([py, "-c", APPENDER, str(link), "0"], stdout=subprocess.PIPE, text=True),
        subprocess.Popen([py, "-c", APPENDER, str(link), "1"], stdout=subprocess.PIPE, text=True),
        subprocess.Popen([py, "-c", REWRITER, str(real)]),
        subprocess.Popen([py, "-c", ARCHIVER, str(real)]),
        subprocess.Popen(
            [py, "-m", "oomrec", "record", "add", "added-by-hand", "7", "--record", str(link)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd=base,
        ),
    ]
    if victim == MID_WRITE:
        _when_it_grows(real)
    else:
        time.sleep(0.25 + rng.random() * 0.5)
    # procs: appender 0, appender 1, rewriter, archiver, record add.
    procs[{MID_WRITE: 0, 1: 1, 2: 2, 3: 4, 4: 3}[victim]].send_signal(signal.SIGKILL)
    time.sleep(0.05)
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
    for proc in procs:
        proc.wait()
    acked: dict[str, int] = {}
    for who, proc in (("0", procs[0]), ("1", procs[1])):
        assert proc.stdout is not None
        done = proc.stdout.read().split()
        acked[who] = int(done[-1]) if done else -1
    meant = set().union(*(_expected(w, b) for w in ("0", "1") for b in range(acked[w] + 3)))
    loaded = RecordFile(real).load()
    torn = sum(
        1
        for line in loaded.lines
        if line.record is not None
        and line.text not in meant
        and not line.text.startswith(("added-by-hand,", "stale-"))
    )
    present = {line.text for line in loaded.lines}
    archived = real.with_name(real.name + ".archive")
    parked = archived.read_text() if archived.exists() else ""
    # A line the rewriter did not drop yet, or that the archiver holds: evidence never vanishes
    # except through the rewriter's own (seeded) prune of `stale-` lines.
    must = set().union(*(_expected(w, b) for w in ("0", "1") for b in range(acked[w] + 1)))
    lost = len(must - present)
    cut = int(bool(real.read_bytes()) and not real.read_bytes().endswith(b"\n"))
    temps = [n for n in os.listdir(real.parent) if n.endswith(".tmp")]
    RecordFile(link).append([OomRecord("after", 1, "2026-01-01", "unknown")])
    temps_left = [n for n in os.listdir(real.parent) if n.endswith(".tmp")]
    after = RecordFile(real).load()
    unhandled = sum(1 for line in after.lines if line.record is None and not line.is_blank)
    return {
        "torn_read_as_record": torn,
        "acked_lines_lost": lost,
        "cut_tails": cut,
        "moved_to_torn": int((real.parent / "oom-record.torn").exists()),
        "temp_files_left_by_kill": len(temps),
        "temp_files_after_next_writer": len(temps_left),
        "unparsed_after_next_writer": unhandled,
        "acked_batches": acked["0"] + acked["1"] + 2,
        "archive_lines": parked.count("\n"),
    }


SWEEP_RUNNER = textwrap.dedent(
    """
    import random, sys, time
    from pathlib import Path
    model, length, cell_csv = sys.argv[1], sys.argv[2], sys.argv[3]
    time.sleep(random.uniform(0, 0.05))
    tail = f'2026-07-03,hw,0.3.3,release,32,"Hi, you",{length}'
    header = HEADER
    if model == "m3" and int(length) >= 2048:
        row = f"{model},./models/{model},,,,,,,{tail},SKIP:oom"
    else:
        row = f"{model},./models/{model},{length},32,1.0,2.0,3.0,4.0,{tail}"
    Path(cell_csv).write_text(header + chr(10) + row + chr(10))
    """
)
MODELS = ("m0", "m1", "m2", "m3")
LENGTHS = (512, 2048, 8192, 32768)


def sweep_trial(base: Path, rng: random.Random) -> dict[str, int]:
    """One repository swept to its end through SIGKILLed --resume runs; the damage counted."""
    from oomrec.core.schema import HEADER_15

    repo = base / "repo"
    (repo / "models").mkdir(parents=True)
    for model in MODELS:
        (repo / "models" / model).mkdir()
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b",
           "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@b"}  # fmt: skip
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True, env=env)
    subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "base"], cwd=repo, check=True,
                   env=env)  # fmt: skip
    runner = base / "runner.py"
    runner.write_text(SWEEP_RUNNER.replace("HEADER", repr(HEADER_15)))
    tmp = base / "tmp"
    tmp.mkdir()
    env = {**env, "TMPDIR": str(tmp), "OOMREC_HARDWARE": "benchhw"}
    argv = [sys.executable, "-m", "oomrec", "sweep", "--resume", "--output", "out.csv",
            "--models", " ".join(MODELS), "--lengths", " ".join(map(str, LENGTHS)),
            "--runner", f"{sys.executable} {runner} {{model}} {{length}} {{cell_csv}}"]  # fmt: skip
    kills = 0
    for _ in range(200):
        proc = subprocess.Popen(argv, cwd=repo, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)  # fmt: skip
        try:
            proc.wait(timeout=rng.uniform(0.05, 1.5))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            kills += 1
            continue
        if proc.returncode == 0:
            break
    rows = (repo / "out.csv").read_text().splitlines()[1:]
    cells: dict[tuple[str, str], list[str]] = {}
    for row in rows:
        fields = row.split(",")
        cells.setdefault((fields[0], fields[-2] if fields[-1].startswith("SKIP") else fields[-1]),
                         []).append(row)  # fmt: skip
    wanted = {(m, str(n)) for m in MODELS for n in LENGTHS}
    forged = 0
    for (model, length), found in cells.items():
        for row in found:
            ok = row.startswith(f"{model},./models/{model},") and row.split(",")[-1] in (
                length,
                "SKIP:oom",
                "SKIP:oom_backstop",
                "SKIP:oom_record",
            )
            forged += not ok or (model, length) not in wanted
    return {
        "runs SIGKILLed": kills,
        "lost": len(wanted - set(cells)),
        "duplicated": sum(len(v) - 1 for v in cells.values() if len(v) > 1),
        "forged": forged,
        "leftovers": len([p for p in tmp.iterdir() if p.name.startswith("oomrec-cells-")]),
    }


def sweep_campaign(trials: int, rng: random.Random) -> int:
    totals: dict[str, int] = {}
    started = time.perf_counter()
    for _ in range(trials):
        with tempfile.TemporaryDirectory(prefix="oomrec-crash-sweep-") as tmp:
            for key, value in sweep_trial(Path(tmp), rng).items():
                totals[key] = totals.get(key, 0) + value
    print(f"{trials} swept repositories in {time.perf_counter() - started:.0f} s")
    for key, value in totals.items():
        print(f"  {key:32} {value}")
    bad = totals["lost"] + totals["duplicated"] + totals["forged"] + totals["leftovers"]
    print("OK: nothing lost, duplicated, forged or left over" if bad == 0 else f"FAILED: {bad}")
    return 1 if bad else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=60)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--campaign", choices=["record", "sweep"], default="record")
    args = parser.parse_args()
    if args.campaign == "sweep":
        sys.exit(sweep_campaign(args.trials, random.Random(args.seed)))
    rng = random.Random(args.seed)
    totals: dict[str, int] = {}
    victims = {
        MID_WRITE: "appender mid-write",
        1: "appender",
        2: "rewriter",
        3: "record add",
        4: "archiver (prune/restore)",
    }
    killed: dict[str, int] = {}
    started = time.perf_counter()
    for n in range(args.trials):
        victim = list(victims)[n % len(victims)]
        killed[victims[victim]] = killed.get(victims[victim], 0) + 1
        with tempfile.TemporaryDirectory(prefix="oomrec-crash-") as tmp:
            for key, value in trial(Path(tmp), rng, victim).items():
                totals[key] = totals.get(key, 0) + value
    seconds = time.perf_counter() - started
    print(f"{args.trials} trials in {seconds:.0f} s; SIGKILLed: {killed}")
    for key, value in totals.items():
        print(f"  {key:32} {value}")
    bad = totals["torn_read_as_record"] + totals["acked_lines_lost"]
    bad += totals["temp_files_after_next_writer"] + totals["unparsed_after_next_writer"]
    print("OK: nothing torn, nothing lost" if bad == 0 else f"FAILED: {bad} problems")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
