"""The report's scan: the bytes-level path over clean harness files must fold exactly what the
per-row parse (the reference, `scan_csvs(fast=False)`) folds, on any file, clean or not; and
worker processes, each folding a run of files, exactly what one process folds."""

from __future__ import annotations

import contextlib
import gc
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from oomrec.core.errors import OomrecError
from oomrec.core.schema import HEADER_14, HEADER_15
from oomrec.importer.backfill import find_csv_files
from oomrec.report import fastpath as report_bytes
from oomrec.report.frontier import PARALLEL_MIN_FILES, Scan, _default_workers, build, csv_evidence
from oomrec.report.frontier import scan_csvs as plain_scan_csvs
from tests.conftest import SHARED_CORPUS

HEADER_17 = HEADER_15.replace("mlx_version", "mlxcel_version") + ",mlxcel_commit,mlx_commit"
HEADERS = [
    HEADER_14,
    HEADER_15,
    HEADER_17,
    HEADER_17 + ",mlx_rocm_overlay_commit,hip_version",
    "model,prompt_target_len,date,hardware,commit",
    "model, prompt_tokens ,model,date",
    "model",
]
VALUES = {
    "model": ["m-4bit", " m-4bit", "n-4bit", "", "caf\xe9", "SKIP:oom"],
    "hardware": ["NVIDIA_GB10_CUDA13.0_122GB", "Apple_M1_Ultra_128GB", "", " NVIDIA_GB10_122GB "],
    "date": ["2026-07-03", "2026-07-04", "2026-07-03T10:00", "", "bad", "9999-12-31", "9999-01-01"],
    "prompt_tokens": ["512", "2048", "", " 512", "\xb2", "7"],
    "prompt_target_len": ["512", "2048", "", "32768", "x", "SKIP:oom"],
    "prompt": [
        '"Hello, how are you?"',
        '"(faked via MLXCEL_BENCH_FAKE_OOM)"',
        '""',
        '"a, SKIP:oom"',
        '"SKIP:oom"',
        "plain",
        '"a""b"',
        '"x, y',
        '"1,\xa0\u2028é"',
    ],
    "commit": ["abc1234", "", " def5678 ", "c0ffee-dirty", " SKIP:oom", "FAIL:bench"],
}
OTHER = ["", "1.5", "0.7.0", "release", "x y", "9a795735", "SKIP:oom_guard"]
TAILS = [
    "",
    "",
    "",
    ",SKIP:oom",
    ",,SKIP:oom",
    ", ,FAIL:bench",
    ",SKIP:oom_estimate",
    ",SKIP:oom_guard",
    ",FAIL:timeout",
    ",junk",
    ",SKIP:oom extra",
    ",,,SKIP:oom",
    ",\xa0SKIP:oom ",
    ",SKIP:oom,",
]
JUNK = st.one_of(
    st.sampled_from(["", "   ", "#x", "short,row", "\ufeffmodel", "a\x0bb,c", "a\x85b", "a\rb"]),
    st.text(alphabet=',"ab \r\t\x0c\xa0\u2028é:SKIPoom', max_size=30),
)


@st.composite
def row(draw: st.DrawFn, names: list[str]) -> str:
    fields = []
    for name in names:
        key = "commit" if name.endswith("commit") else name.strip()
        fields.append(draw(st.sampled_from(VALUES.get(key, OTHER))))
    return ",".join(fields) + draw(st.sampled_from(TAILS))


@st.composite
def csv_file(draw: st.DrawFn) -> bytes:
    header = draw(st.sampled_from(HEADERS))
    names = header.split(",")
    lines = [header]
    if draw(st.integers(0, 5)) == 0:
        lines.insert(0, draw(st.sampled_from(["# a comment", "", "  "])))
    for _ in range(draw(st.integers(0, 12))):
        lines.append(draw(JUNK) if draw(st.integers(0, 15)) == 0 else draw(row(names)))
    eol = draw(st.sampled_from(["\n"] * 6 + ["\r\n"] * 2 + ["\r"]))
    text = eol.join(lines) + draw(st.sampled_from([eol, "", eol * 2]))
    data = text.encode("utf-8")
    if draw(st.integers(0, 8)) == 0:
        data = data.replace(b"\xc3\xa9", b"\xe9")  # not UTF-8
    bom = b"\xef\xbb\xbf" if draw(st.integers(0, 4)) == 0 else b""
    return bom + data


@st.composite
def alike_files(draw: st.DrawFn) -> list[bytes]:
    """Files of rows that differ only in date, length and token: one cell's rows spread over
    files, as a corpus's are, so runs of files fold the same cells."""
    header = draw(st.sampled_from(HEADERS[:-1]))
    names = header.split(",")
    base = {name: draw(row([name])) for name in names if name.strip() not in VARIED}
    files = []
    for _ in range(draw(st.integers(2, 6))):
        lines = [header]
        for _ in range(draw(st.integers(1, 5))):
            fields = [
                draw(st.sampled_from(VARIED[n.strip()])) if n.strip() in VARIED else base[n]
                for n in names
            ]
            lines.append(",".join(fields) + draw(st.sampled_from(TAILS[:5])))
        files.append(("\n".join(lines) + "\n").encode())
    return files


VARIED = {
    "date": ["2026-07-03", "2026-07-04", "", "9999-12-31", "9999-01-01"],
    "prompt_target_len": ["512", "2048"],
    "prompt_tokens": ["512", "2048"],
    "commit": ["abc1234", "def5678", ""],
}
# Undated rows and the year 9999: an outcome's undated first row stays first against a dated row
# of that year (as CellRows.add keeps it), but such a row of a later run can be the earliest.
EDGE = "model,prompt_target_len,date,hardware,commit\n" + "m,512,{},NVIDIA_GB10_122GB,{}\n" * 3
EARLIEST_FROM_A_LATER_RUN = [
    b"model,prompt_target_len,date,hardware,commit\nm,512,9999-12-31,NVIDIA_GB10_122GB,a\n",
    EDGE.format("", "b", "9999-01-01", "c", "9999-12-31", "d").encode(),
]
UNDATED_FIRST_OF_A_LATER_RUN = [
    b"model,prompt_target_len,date,hardware,commit\nn,512,2026-07-03,NVIDIA_GB10_122GB,a\n",
    EDGE.format("", "b", "9999-01-01", "c", "2026-07-03", "d").encode(),
]
NAMES = ["cuda_gb10_a.csv", "metal_m1ultra_b.csv", "plain.csv", "rocm_strixhalo_c.csv"]
FILES = st.lists(st.tuples(st.sampled_from(NAMES), csv_file()), min_size=1, max_size=5)


def facts(scan: Scan) -> dict:
    """Everything a Scan holds, orders included (the report's JSON follows them)."""
    return {
        "cells": [(k, c.first, c.latest) for k, c in scan.cells.items()],
        "fits": list(scan.fits.items()),
        "targets": scan.targets,
        "counts": (scan.files_read, scan.files_skipped, scan.rows, scan.unreadable_rows),
    }


def scan_csvs(*args: Any, **kwargs: Any) -> Scan:
    """report.scan_csvs, checking its two calls to the report's git thread: `meanwhile` once,
    when no worker is left to fork (a fork after a thread starts can deadlock the child), and
    `ooms_known` once, with the commits of the OOMs the report then judges."""
    known: list[set[str]] = []
    forked_after: list[int] = []
    # Children of earlier tests may still be about: only those the scan forked count.
    before = set(psutil.Process().children())

    def meanwhile() -> None:
        forked_after.append(len(set(psutil.Process().children()) - before))

    scan = plain_scan_csvs(*args, meanwhile=meanwhile, ooms_known=known.append, **kwargs)
    assert known == [{e.record.commit for e in csv_evidence(scan)}]
    files, _ = find_csv_files(args[0])
    workers = kwargs.get("workers")
    n = _default_workers(len(files)) if workers is None else max(1, min(workers, len(files)))
    assert len(forked_after) == 1
    assert forked_after[0] >= 1 if n > 1 else forked_after[0] == 0
    return scan


def both(folder: Path, commit_columns: tuple[str, ...]) -> tuple[Scan, Scan]:
    fast = scan_csvs([folder], folder, commit_columns)
    slow = scan_csvs([folder], folder, commit_columns, fast=False)
    return fast, slow


def report_json(scan: Scan) -> str:
    return json.dumps(build(scan, []).to_json())


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    files=FILES,
    commit_columns=st.sampled_from([("mlxcel_commit", "commit"), ("date",), ()]),
    workers=st.integers(2, 4),
    fast_workers=st.booleans(),
)
def test_the_fast_and_parallel_scans_fold_exactly_what_the_per_row_parse_folds(
    files: list[tuple[str, bytes]],
    commit_columns: tuple[str, ...],
    workers: int,
    fast_workers: bool,
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for i, (name, data) in enumerate(files):
            (folder / f"{i:02d}{name}").write_bytes(data)
        fast, slow = both(folder, commit_columns)
        assert facts(fast) == facts(slow)
        assert report_json(fast) == report_json(slow)
        # Each file its own run when there are no more files than workers.
        parallel = scan_csvs([folder], folder, commit_columns, fast=fast_workers, workers=workers)
        assert facts(parallel) == facts(slow)
        assert report_json(parallel) == report_json(slow)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(files=alike_files(), workers=st.integers(2, 4), fast=st.booleans())
@example(files=EARLIEST_FROM_A_LATER_RUN, workers=2, fast=True)
@example(files=UNDATED_FIRST_OF_A_LATER_RUN, workers=2, fast=True)
def test_runs_of_files_folding_the_same_cells_merge_to_what_one_process_folds(
    files: list[bytes], workers: int, fast: bool
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for i, data in enumerate(files):
            (folder / f"cuda_gb10_{i:02d}.csv").write_bytes(data)
        one = scan_csvs([folder], folder, ("commit",), fast=False, workers=1)
        parallel = scan_csvs([folder], folder, ("commit",), fast=fast, workers=workers)
        assert facts(parallel) == facts(one)
        assert report_json(parallel) == report_json(one)


def test_many_files_are_scanned_in_parallel_to_the_same_scan(tmp_path: Path) -> None:
    """From PARALLEL_MIN_FILES files on, the default scan (workers when this machine has more
    than one CPU) folds what one process folds; the files repeat cells across the runs, some
    clean, some not, an OOM first undated in a later run."""
    rows = [
        'm-4bit,./m,512,32,1.0,2.0,3.0,4.0,{date},GB10,0.4.0,release,{sha},"Hi, you",512',
        'm-4bit,./m,,,,,,,{date},GB10,0.4.0,release,{sha},"Hi, you",2048,,SKIP:oom',
    ]
    for i in range(PARALLEL_MIN_FILES * 2):
        date = ["", "2026-07-03", "2026-07-0" + str(i % 9 + 1), "9999-12-31"][i % 4]
        lines = [HEADER_15] + [r.format(date=date, sha=f"c{i:06x}") for r in rows]
        if i % 7 == 0:
            lines.append("short,row")
        (tmp_path / f"cuda_gb10_{i:04d}.csv").write_text("\n".join(lines) + "\n")
    one = scan_csvs([tmp_path], tmp_path, workers=1)
    assert facts(scan_csvs([tmp_path], tmp_path)) == facts(one)
    assert facts(scan_csvs([tmp_path], tmp_path, workers=3)) == facts(one)
    assert one.files_read == PARALLEL_MIN_FILES * 2


def test_a_worker_killed_mid_scan_leaves_the_scan_exact(tmp_path: Path) -> None:
    """A worker SIGKILLed (as by the OOM killer) while it folds its run: the report folds that
    run itself and gives what one process gives, not a traceback."""
    row = 'm-4bit,./m,,,,,,,2026-07-0{d},GB10,0.4.0,release,c{i:06x},"Hi, you",{n},,SKIP:oom'
    for i in range(PARALLEL_MIN_FILES * 4):
        lines = [HEADER_15] + [row.format(d=i % 9 + 1, i=i, n=512 * (1 + k)) for k in range(40)]
        (tmp_path / f"cuda_gb10_{i:04d}.csv").write_text("\n".join(lines) + "\n")
    one = scan_csvs([tmp_path], tmp_path, workers=1)
    killed: list[int] = []
    me = psutil.Process()

    def kill_first_worker() -> None:
        deadline = time.monotonic() + 30
        while not killed and time.monotonic() < deadline:
            for child in me.children():
                os.kill(child.pid, signal.SIGKILL)
                killed.append(child.pid)
                return
            time.sleep(0.001)

    killer = threading.Thread(target=kill_first_worker)
    killer.start()
    try:
        parallel = scan_csvs([tmp_path], tmp_path, workers=2)
    finally:
        killer.join()
    assert killed, "no worker was seen to kill"
    assert facts(parallel) == facts(one)


_CTRL_C_TO_THE_WORKERS = """
import os, signal, sys
import psutil
from pathlib import Path
from oomrec.report.frontier import scan_csvs

def meanwhile():
    # Ctrl-C on a terminal signals the whole process group, the workers too, at whatever
    # step each has reached (starting up, waiting for its run, folding it).
    for child in psutil.Process().children():
        os.kill(child.pid, signal.SIGINT)

scan = scan_csvs([Path(sys.argv[1])], Path(sys.argv[1]), workers=3, meanwhile=meanwhile)
print(scan.rows, scan.files_read)
"""


def run_script(script: str, folder: Path) -> subprocess.CompletedProcess[str]:
    """`script` in a process of its own, with `folder` as its argument: a report's own process,
    free to be signalled or to end as it likes."""
    return subprocess.run(
        [sys.executable, "-c", script, str(folder)], capture_output=True, text=True, timeout=120
    )


def test_ctrl_c_is_the_reports_to_handle_not_its_workers(tmp_path: Path) -> None:
    """A SIGINT that reaches the scan's workers (Ctrl-C signals the terminal's whole process
    group) neither prints a worker's KeyboardInterrupt traceback ("Process ForkProcess-1:") nor
    fails the scan: the report's own process decides what an interrupt does."""
    row = 'm-4bit,./m,,,,,,,2026-07-03,GB10,0.4.0,release,32,"Hi, you",{n},,SKIP:oom'
    for i in range(PARALLEL_MIN_FILES * 2):
        (tmp_path / f"cuda_gb10_{i:04d}.csv").write_text(f"{HEADER_15}\n{row.format(n=i)}\n")
    done = run_script(_CTRL_C_TO_THE_WORKERS, tmp_path)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.split() == [str(PARALLEL_MIN_FILES * 2)] * 2


_INTERRUPTED_RIGHT_AFTER_THE_FORK = """
import os, sys
import psutil
from pathlib import Path
from oomrec.report.frontier import scan_csvs

def meanwhile():
    # Ctrl-C, the moment the workers are forked (what SIGINT raises in this process).
    raise KeyboardInterrupt

try:
    scan_csvs([Path(sys.argv[1])], Path(sys.argv[1]), workers=2, meanwhile=meanwhile)
except KeyboardInterrupt:
    # Still scanning: the interrupt did not wait for them. Then exit as the CLI does.
    print(*(c.pid for c in psutil.Process().children()), flush=True)
    os._exit(130)
"""


def test_ctrl_c_does_not_wait_for_the_workers_runs(tmp_path: Path) -> None:
    """Interrupted, the scan raises at once: it neither waits for its workers to finish their
    runs (they ignore SIGINT), nor leaves them behind once the report's process ends."""
    row = 'm-4bit,./m,,,,,,,2026-07-03,GB10,0.4.0,release,32,"Hi, you",{n},,SKIP:oom'
    for i in range(PARALLEL_MIN_FILES * 4):
        rows = "\n".join(row.format(n=512 * k) for k in range(1, 41))
        (tmp_path / f"cuda_gb10_{i:04d}.csv").write_text(f"{HEADER_15}\n{rows}\n")
    done = run_script(_INTERRUPTED_RIGHT_AFTER_THE_FORK, tmp_path)
    assert done.returncode == 130, done.stderr
    workers = [int(pid) for pid in done.stdout.split()]
    assert workers, "the interrupt waited for the workers to finish"
    gone = [psutil.Process(pid) for pid in workers if psutil.pid_exists(pid)]
    _, alive = psutil.wait_procs(gone, timeout=30)
    assert not alive


_KILL_SELF_MID_SCAN = """
import os, signal, sys
import psutil
from pathlib import Path
from oomrec.report.frontier import scan_csvs

def meanwhile():
    # The workers are forked: name them, then die as kill -9 or the OOM killer would have it.
    print(*(c.pid for c in psutil.Process().children()), flush=True)
    os.kill(os.getpid(), signal.{sig})

scan_csvs([Path(sys.argv[1])], Path(sys.argv[1]), workers=3, meanwhile=meanwhile)
"""


@pytest.mark.parametrize("sig", ["SIGKILL", "SIGTERM"])
def test_the_workers_end_with_a_report_killed_mid_scan(tmp_path: Path, sig: str) -> None:
    """A report's process killed while its workers scan (SIGTERM's default action, SIGKILL):
    the workers end with it, rather than wait for work forever holding its stdout, so whoever
    reads that output sees it end."""
    for i in range(PARALLEL_MIN_FILES * 2):
        (tmp_path / f"cuda_gb10_{i:04d}.csv").write_text(HEADER_15 + "\n")
    with subprocess.Popen(
        [sys.executable, "-c", _KILL_SELF_MID_SCAN.format(sig=sig), str(tmp_path)],
        stdout=subprocess.PIPE,
    ) as report:
        assert report.stdout is not None
        workers = [psutil.Process(int(pid)) for pid in report.stdout.readline().split()]
        try:
            assert len(workers) == 2
            # EOF: no worker holds the pipe any more.
            ended = threading.Thread(target=report.stdout.read, daemon=True)
            ended.start()
            ended.join(timeout=30)
            assert not ended.is_alive(), "a worker outlived the report, holding its stdout"
            assert report.wait(timeout=30) == -getattr(signal, sig)
            _, alive = psutil.wait_procs(workers, timeout=30)
            assert not alive
        finally:
            for worker in workers:
                with contextlib.suppress(psutil.NoSuchProcess):
                    worker.kill()


def test_harness_files_take_the_fast_path(tmp_path: Path) -> None:
    """Not vacuous: the clean files of the test above (every row as the harness writes it, CRLF
    or not) are read from their bytes, and yield one tuple per row."""
    rows = [
        'm-4bit,./m,512,32,1.0,2.0,3.0,4.0,2026-07-03,GB10,0.4.0,release,32,"Hi, you",512',
        'm-4bit,./m,,,,,,,2026-07-03,GB10,0.4.0,release,32,"Hi, you",2048,,SKIP:oom',
    ]
    for eol in ("\n", "\r\n"):
        data = (eol.join([HEADER_15, *rows]) + eol).encode()
        lines = report_bytes.clean_lines(data)
        assert lines is not None
        lay = report_bytes.layout(HEADER_15.split(","), ("mlxcel_commit",))
        assert lay is not None
        found = report_bytes.rows(lines[1], lay)
        assert found is not None
        assert [(lay.key(r), lay.date(r)) for r in found] == [
            ((b"m-4bit", b"GB10", b"512", b"512", b""), b"2026-07-03"),
            ((b"m-4bit", b"GB10", b"", b"2048", b",,SKIP:oom"), b"2026-07-03"),
        ]
    # A lone CR, a blank line among the rows, a quote outside the prompt: the per-row parse.
    assert report_bytes.clean_lines(b"model\r1\n") is None
    assert report_bytes.rows(f"{rows[0]}\n\n{rows[0]}".encode(), lay) is None
    assert report_bytes.rows(rows[0].replace("m-4bit", '"m"', 1).encode(), lay) is None


def test_the_real_corpus_reads_alike_and_mostly_from_bytes(tmp_path: Path) -> None:
    if not SHARED_CORPUS.is_dir():
        pytest.skip(f"the real harness corpus is not at {SHARED_CORPUS}")
    folder = SHARED_CORPUS / "benchmarks"
    fast, slow = both(folder, ("mlxcel_commit", "commit"))
    assert facts(fast) == facts(slow)
    clean = 0
    files = sorted(folder.glob("*.csv"))
    for path in files:
        lines = report_bytes.clean_lines(path.read_bytes().removeprefix(b"\xef\xbb\xbf"))
        if lines is None:
            continue
        header = [n.strip() for n in lines[0].decode().split(",")]
        lay = report_bytes.layout(header, ("mlxcel_commit", "commit"))
        clean += lay is not None and report_bytes.rows(lines[1], lay) is not None
    assert clean >= 0.9 * len(files)


def test_the_scan_and_the_build_leave_the_interpreter_as_they_found_it(tmp_path: Path) -> None:
    """The scan and the build run without the cyclic collector, and the build judges in a
    thread with a short GIL switch interval: both are restored, also when the judge fails, whose
    error reaches the caller as it is."""
    row = 'm-4bit,./m,,,,,,,2026-07-03,GB10,0.4.0,release,32,"Hi, you",2048,,SKIP:oom'
    (tmp_path / "cuda_gb10_a.csv").write_text(f"{HEADER_15}\n{row}\n")
    switch = sys.getswitchinterval()
    assert gc.isenabled()
    scan = scan_csvs([tmp_path], tmp_path)
    judged: list[list[tuple[str, int]]] = []

    def judge(records: list) -> list:
        judged.append([(r.model, r.prompt_target_len) for r in records])
        assert not gc.isenabled()
        assert sys.getswitchinterval() < switch
        raise OomrecError("git failed; check the repository")

    with pytest.raises(OomrecError, match="git failed"):
        build(scan, [], judge)
    assert judged == [[("m-4bit", 2048)]]
    assert gc.isenabled()
    assert sys.getswitchinterval() == switch


def test_builds_in_two_threads_leave_the_switch_interval_as_they_found_it(
    tmp_path: Path,
) -> None:
    """Two library callers building at once, the first to start finishing first: the
    interval is Python's again after both, not the short one the second found on entry."""
    row = 'm-4bit,./m,,,,,,,2026-07-03,GB10,0.4.0,release,32,"Hi, you",2048,,SKIP:oom'
    (tmp_path / "cuda_gb10_a.csv").write_text(f"{HEADER_15}\n{row}\n")
    scan = scan_csvs([tmp_path], tmp_path)
    switch = sys.getswitchinterval()
    first_in, second_in = threading.Event(), threading.Event()

    def first_judge(records: list) -> list:
        first_in.set()
        assert second_in.wait(timeout=60)
        return [None] * len(records)

    first = threading.Thread(target=build, args=(scan, [], first_judge))

    def second_judge(records: list) -> list:
        second_in.set()
        first.join(timeout=60)
        return [None] * len(records)

    first.start()
    assert first_in.wait(timeout=60)
    second = threading.Thread(target=build, args=(scan, [], second_judge))
    second.start()
    second.join(timeout=60)
    first.join(timeout=60)
    assert not first.is_alive() and not second.is_alive()
    assert sys.getswitchinterval() == switch
