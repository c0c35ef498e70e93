"""Wall time of `oomrec record import-csv` against baselines measured in the same run.

Generates a synthetic corpus of harness CSVs in a temp git repository (default 10,000 files,
1,000,000 rows, ~220 MB; 1% `SKIP:oom` rows spread over most files, 2% other tokens, four
harness layouts, some with a commit column and some needing the adding commit), then times,
each as a fresh process from its start (what a user waits for), median of --runs after one
warm-up run:

- baseline: a plain Python csv-module scan of every row of every file;
- a naive polars multi-file `scan_csv` of every line;
- `oomrec record import-csv --all-hardware --dry-run --json`.

Then the same on the corpus doubled (as many files again, committed), and the 150-file real
corpus (../shared/data/mlxcel-benchmarks) copied into a temp git repository. In process: reading
files with a thread pool or not.

Then a corpus with many SKIP:oom rows (default 2,000 files of 200 rows, half of them SKIP:oom:
200,000 candidate rows), the import timed from process start.

    python benchmarks/perf/bench_import.py [--files 10000] [--rows 100] [--runs 3] [--keep DIR]
        [--oom-files 2000] [--oom-rows 200]

The corpus is deleted afterwards unless --keep DIR names where to leave it.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from timing import median_time  # a sibling script module

REPO = Path(__file__).resolve().parents[2]
REAL_CORPUS = REPO.parent / "shared" / "data" / "mlxcel-benchmarks" / "benchmarks"
GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@oomrec.invalid",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@oomrec.invalid",
}

_METRICS = "model,model_path,prompt_tokens,generated_tokens,prefill_ms,prefill_tok_s,decode_ms,"
_V_A = _METRICS + "decode_tok_s,date,hardware,mlx_version,build_type,max_tokens,prompt"
_V_B = _V_A + ",prompt_target_len"
_V_C = _V_B.replace("mlx_version", "mlxcel_version") + ",mlxcel_commit,mlx_commit"
_ROCM = _V_C + ",mlx_rocm_overlay_commit,hip_version"
# (weight, header, extra columns after prompt_target_len, host, hardware column value)
LAYOUTS = [
    (45, _V_C, 2, "metal_m1ultra", "Apple_M1_Ultra_128GB"),
    (25, _V_B, 0, "cuda_gb10", "NVIDIA_GB10_CUDA13.0_122GB"),
    (15, _V_A, -1, "metal_m5max", "Apple_M5_Max_128GB"),
    (15, _ROCM, 4, "rocm_strixhalo-gfx1151", "AMD_Radeon_8060S_Graphics_gfx1151_ROCm10.0.0_96GB"),
]
PROMPT = "Hello, how are you today? Summarise the passage below briefly."
OTHER_TOKENS = ["FAIL:bench", "SKIP:oom_estimate", "SKIP:oom_backstop", "SKIP:duplicate_of=x"]
LENGTHS = [512, 2048, 8192, 32768, 65536]

BASELINE_CSV = """
import csv, os, sys
rows = hits = 0
for folder, _, names in os.walk(sys.argv[1]):
    for name in names:
        if name.endswith(".csv"):
            with open(os.path.join(folder, name), newline="", encoding="utf-8") as fh:
                for row in csv.reader(fh):
                    rows += 1
                    if row and row[-1] == "SKIP:oom":
                        hits += 1
print(rows, hits)
"""

NAIVE_POLARS = """
import glob, sys
import polars as pl

files = sorted(glob.glob(sys.argv[1] + "/**/*.csv", recursive=True))
lines = pl.scan_csv(
    files, has_header=False, separator="\\x1f", quote_char=None, schema={"line": pl.String}
)
hits = lines.filter(pl.col("line").str.ends_with(",SKIP:oom")).collect()
print(hits.height)
"""


def generate(
    folder: Path,
    n_files: int,
    rows_per_file: int,
    seed: int,
    start: int = 0,
    oom_share: float = 0.01,
) -> int:
    """Write `n_files` harness CSVs into `folder`; returns how many SKIP:oom rows they hold."""
    rng = random.Random(seed)
    weights = [layout[0] for layout in LAYOUTS]
    total_rows = n_files * rows_per_file
    # True OOM rows, each in a random file: at 1%, one per 100 rows, most files get one.
    oom_per_file = [0] * n_files
    for _ in range(round(total_rows * oom_share)):
        oom_per_file[rng.randrange(n_files)] += 1
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n_files):
        _, header, extra, host, hw = rng.choices(LAYOUTS, weights)[0]
        day = f"2026-{1 + i % 12:02d}-{1 + i % 28:02d}"
        lines = [header]
        oom_rows = set(rng.sample(range(rows_per_file), min(oom_per_file[i], rows_per_file)))
        for r in range(rows_per_file):
            model = f"model-{rng.randrange(200)}-4bit"
            length = LENGTHS[r % len(LENGTHS)]
            tail = ""
            if extra >= 0:
                tail = f",{length}"
            if extra >= 2:
                tail += f",{rng.getrandbits(32):08x}{'-dirty' if r % 7 == 0 else ''},9a795735"
            if extra >= 4:
                tail += ",c0ffee12,7.0.0"
            head = f"{model},./models/{model}/"
            meta = f',{day},{hw},0.7.0,release,128,"{PROMPT}"{tail}'
            if r in oom_rows or rng.random() < 0.02:
                token = "SKIP:oom" if r in oom_rows else rng.choice(OTHER_TOKENS)
                gap = ",," if r % 11 == 0 else ","
                lines.append(f"{head},,,,,,{meta}{gap}{token}")
            else:
                ms = rng.uniform(100, 40000)
                lines.append(
                    f"{head},{length},128,{ms:.2f},{length / ms * 1000:.2f},"
                    f"{rng.uniform(500, 4000):.2f},{rng.uniform(5, 90):.2f}{meta}"
                )
        name = f"{host}_{day}_run{start + i:05d}.csv"
        (folder / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return sum(min(n, rows_per_file) for n in oom_per_file)


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", *args], cwd=repo, env={**os.environ, **GIT_ENV}, check=True, capture_output=True
    )


def commit_all(repo: Path, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


@dataclass
class Timings:
    """One case's wall and CPU (user + sys, git's included) seconds per round, last stdout."""

    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    stdout: str = ""


def timed_run(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, str]:
    """Wall and CPU seconds of one fresh process from its start, and its stdout."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    out = proc.stdout.read()
    # wait4, not Popen.wait: its rusage counts the child and the children it waited for.
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"{' '.join(argv)} failed with exit status {proc.returncode}")
    return elapsed, usage.ru_utime + usage.ru_stime, out


def measure(
    cases: dict[str, list[str]],
    cwd: Path,
    runs: int,
    envs: dict[str, dict[str, str]] | None = None,
) -> dict[str, Timings]:
    """Each case as a fresh process (with its `envs` entry added), `runs` rounds after a warm-up
    round.

    The cases take turns within each round, so a load change on a shared machine hits all of
    them alike and per-round ratios stay meaningful; CPU time is reported beside wall time
    because it does not grow when other processes compete for the cores. Python caches the
    bytecode of the modules it imports, as it does by default on any machine: a sandbox that
    sets PYTHONDONTWRITEBYTECODE would have every run compile oomrec's modules again.
    """
    env = {**os.environ, "OOMREC_RECORD": str(cwd / "no-record")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    results = {name: Timings() for name in cases}
    for i in range(runs + 1):
        for name, argv in cases.items():
            elapsed, cpu, out = timed_run(argv, cwd, {**env, **(envs or {}).get(name, {})})
            results[name].stdout = out
            if i:
                results[name].wall.append(elapsed)
                results[name].cpu.append(cpu)
    return results


def ratio(a: list[float], b: list[float]) -> float:
    """The median over rounds of a / b in the same round."""
    return statistics.median(x / y for x, y in zip(a, b, strict=True))


def oomrec_argv() -> list[str]:
    return [
        sys.executable,
        "-m",
        "oomrec",
        "record",
        "import-csv",
        "--all-hardware",
        "--dry-run",
        "--json",
    ]


def measure_corpus(repo: Path, label: str, runs: int) -> dict[str, float]:
    folder = str(repo / "benchmarks")
    results = measure(
        {
            "baseline": [sys.executable, "-c", BASELINE_CSV, folder],
            "naive": [sys.executable, "-c", NAIVE_POLARS, folder],
            "oomrec": oomrec_argv(),
        },
        repo,
        runs,
    )
    base, naive, ours = results["baseline"], results["naive"], results["oomrec"]
    added = json.loads(ours.stdout)["added"]
    for name, t, what in (
        ("csv-module scan (baseline)", base, f"rows, hits: {base.stdout.strip()}"),
        ("naive polars multi-file scan", naive, f"hits: {naive.stdout.strip()}"),
        ("oomrec record import-csv", ours, f"records: {added}"),
    ):
        print(
            f"{label}: {name:<30} wall {statistics.median(t.wall):5.2f} s, "
            f"cpu {statistics.median(t.cpu):5.2f} s  ({what})"
        )
    print(
        f"{label}: oomrec / baseline: wall {ratio(ours.wall, base.wall):.2f} (target <= 0.50), "
        f"cpu {ratio(ours.cpu, base.cpu):.2f}; polars / baseline: wall "
        f"{ratio(naive.wall, base.wall):.2f}"
    )
    return {
        "oomrec_wall": statistics.median(ours.wall),
        "oomrec_cpu": statistics.median(ours.cpu),
        "baseline_wall": statistics.median(base.wall),
    }


def compare_choices(repo: Path, runs: int) -> None:
    """The two implementation choices, timed in process on the same corpus."""
    sys.path.insert(0, str(REPO))
    from oomrec.csvread import files as csvscan
    from oomrec.csvread.files import find_csv_files

    files, _ = find_csv_files([repo / "benchmarks"])
    serial = median_time(lambda: csvscan.scan_files(files), runs)

    def pooled() -> object:
        with ThreadPoolExecutor(max_workers=2) as pool:
            return list(pool.map(csvscan.scan_file, files, chunksize=64))

    threaded = median_time(pooled, runs)

    def forked() -> object:
        halves = [files[0::2], files[1::2]]
        with multiprocessing.get_context("fork").Pool(2) as pool:
            return pool.map(csvscan.scan_files, halves)

    processes = median_time(forked, runs)
    print(
        f"choice: scan {len(files)} files serially {serial:.3f} s, 2 threads {threaded:.3f} s, "
        f"2 forked processes {processes:.3f} s"
    )


def many_ooms(tmp: Path, n_files: int, rows: int, runs: int) -> None:
    """Many candidate rows: the import from process start, every candidate read by the one row
    reader (polars, the csv module for what polars cannot be trusted with)."""
    repo = tmp / "many-ooms"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    ooms = generate(repo / "benchmarks", n_files, rows, seed=4, oom_share=0.5)
    commit_all(repo, "many OOM rows")
    print(f"many-OOM corpus: {n_files} files, {n_files * rows} rows, {ooms} SKIP:oom rows")
    results = measure({"import": oomrec_argv()}, repo, runs)
    got = results["import"]
    print(
        f"many OOMs: import wall {statistics.median(got.wall):.2f} s, cpu "
        f"{statistics.median(got.cpu):.2f} s ({json.loads(got.stdout)['oom_rows']} OOM rows)"
    )


def real_corpus(tmp: Path, runs: int) -> None:
    if not REAL_CORPUS.is_dir():
        print(f"real corpus: {REAL_CORPUS} not found, skipped")
        return
    repo = tmp / "real"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    shutil.copytree(REAL_CORPUS, repo / "benchmarks")
    commit_all(repo, "real corpus")
    results = measure(
        {
            "baseline": [sys.executable, "-c", BASELINE_CSV, str(repo / "benchmarks")],
            "oomrec": oomrec_argv(),
        },
        repo,
        runs,
    )
    ours, base = results["oomrec"], results["baseline"]
    added = json.loads(ours.stdout)["added"]
    print(
        f"real corpus (150 files): oomrec wall {statistics.median(ours.wall):.2f} s "
        f"(target < 1 s), cpu {statistics.median(ours.cpu):.2f} s; csv-module scan wall "
        f"{statistics.median(base.wall):.2f} s; {added} record(s)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--rows", type=int, default=100, help="rows per file")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--keep", type=Path, help="leave the corpora in this folder")
    parser.add_argument("--oom-files", type=int, default=2_000, help="many-OOM corpus files")
    parser.add_argument("--oom-rows", type=int, default=200, help="its rows per file (half OOM)")
    args = parser.parse_args()

    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)

    tmp = Path(tempfile.mkdtemp(prefix="oomrec-bench-", dir=args.keep))
    try:
        repo = tmp / "synthetic"
        repo.mkdir()
        git(repo, "init", "-q", "-b", "main")
        start = time.perf_counter()
        half = args.files // 2
        ooms = generate(repo / "benchmarks", half, args.rows, seed=1)
        commit_all(repo, "first half")
        ooms += generate(repo / "benchmarks", args.files - half, args.rows, seed=2, start=half)
        commit_all(repo, "second half")
        size = sum(p.stat().st_size for p in (repo / "benchmarks").iterdir()) / 1e6
        print(
            f"corpus: {args.files} files, {args.files * args.rows} rows, {size:.0f} MB, "
            f"{ooms} SKIP:oom rows (generated in {time.perf_counter() - start:.0f} s)"
        )
        single = measure_corpus(repo, "1x", args.runs)
        compare_choices(repo, args.runs)

        generate(repo / "benchmarks", args.files, args.rows, seed=3, start=args.files)
        commit_all(repo, "doubled")
        double = measure_corpus(repo, "2x", args.runs)
        print(
            f"doubling the corpus: oomrec wall x{double['oomrec_wall'] / single['oomrec_wall']:.2f}"
            f", cpu x{double['oomrec_cpu'] / single['oomrec_cpu']:.2f} (target <= 2); baseline "
            f"wall x{double['baseline_wall'] / single['baseline_wall']:.2f}"
        )
        real_corpus(tmp, args.runs)
        many_ooms(tmp, args.oom_files, args.oom_rows, args.runs)
    finally:
        if args.keep is None:
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print(f"kept: {tmp}")


if __name__ == "__main__":
    main()
