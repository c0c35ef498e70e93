"""The built-in demo: a runner that really runs out of memory, and `oomrec sweep --demo`."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from oomrec.core.schema import HEADER_15
from tests.conftest import CliResult
from tests.helpers import TODAY

Cli = Callable[..., CliResult]
ONLY_LINUX = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="RLIMIT_AS is enforced by Linux only"
)


def demo_cell(tmp_path: Path, model: str, tokens: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "oomrec.sweep.demo", f"./models/{model}/", "--prompt-tokens",
         str(tokens), "--output", str(tmp_path / "cell.csv"), "--hardware", "testhw"],
        capture_output=True,
        text=True,
        check=False,
    )  # fmt: skip


def test_a_small_cell_writes_a_harness_row_with_measured_timings(tmp_path: Path) -> None:
    done = demo_cell(tmp_path, "mid-lm-8bit", 2048)
    assert done.returncode == 0, done.stderr
    header, row = (tmp_path / "cell.csv").read_text().splitlines()
    assert header == HEADER_15
    fields = row.split(",")
    assert fields[:4] == ["mid-lm-8bit", "./models/mid-lm-8bit/", "2048", "32"]
    assert all(float(v) > 0 for v in fields[4:8])
    assert fields[8:13] == [TODAY, "testhw", fields[10], "demo", "32"]
    assert fields[10].startswith("oomrec-demo-")
    assert row.endswith(',"Hello, how are you today?",2048')


@ONLY_LINUX
def test_a_large_cell_fails_allocation_for_real(tmp_path: Path) -> None:
    done = demo_cell(tmp_path, "moe-lm-bf16", 8192)
    assert done.returncode == 1
    assert "MemoryError: cannot allocate 256 MiB for moe-lm-bf16 at 8192 tokens" in done.stderr
    assert "RLIMIT_AS" in done.stderr
    assert not (tmp_path / "cell.csv").exists()


def test_an_unknown_model_is_an_error(tmp_path: Path) -> None:
    done = demo_cell(tmp_path, "gpt-9", 512)
    assert done.returncode == 2
    assert "unknown demo model 'gpt-9'" in done.stderr


def tokens(lines: list[str]) -> list[tuple[str, str, str]]:
    """(model, length, token or ok) of each CSV row."""
    out = []
    for line in lines[1:]:
        fields = line.split(",")
        last = fields[-1]
        token = last if last.startswith(("SKIP:", "FAIL:")) else "ok"
        out.append((fields[0], fields[-2] if token != "ok" else last, token))
    return out


@ONLY_LINUX
def test_demo_runs_records_then_pre_skips_and_ignore_record_retests(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    demo = tmp_path / "oomrec-demo"
    output = demo / "benchmarks" / f"cpu_testhw_longprompt_{TODAY}.csv"
    record = demo / "benchmarks" / ".oom-record"

    first = cli("sweep", "--demo")
    assert first.exit_code == 0, first.stderr
    assert sorted(p.name for p in (demo / "models").iterdir()) == [
        "mid-lm-8bit", "moe-lm-bf16", "pico-lm-4bit",
    ]  # fmt: skip
    assert tokens(output.read_text().splitlines()) == [
        ("pico-lm-4bit", "512", "ok"),
        ("pico-lm-4bit", "2048", "ok"),
        ("pico-lm-4bit", "8192", "ok"),
        ("pico-lm-4bit", "32768", "ok"),
        ("mid-lm-8bit", "512", "ok"),
        ("mid-lm-8bit", "2048", "ok"),
        ("mid-lm-8bit", "8192", "ok"),
        ("mid-lm-8bit", "32768", "SKIP:oom"),
        ("moe-lm-bf16", "512", "ok"),
        ("moe-lm-bf16", "2048", "ok"),
        ("moe-lm-bf16", "8192", "SKIP:oom"),
        ("moe-lm-bf16", "32768", "SKIP:oom_backstop"),
    ]
    source = f"oomrec-demo/benchmarks/cpu_testhw_longprompt_{TODAY}.csv"
    recorded = [line.split(",") for line in record.read_text().splitlines()]
    assert [(r[0], r[1], r[2], r[3], r[5], r[6]) for r in recorded] == [
        ("mid-lm-8bit", "32768", TODAY, "unknown", source, "testhw"),
        ("moe-lm-bf16", "8192", TODAY, "unknown", source, "testhw"),
    ]
    assert "output has 'MemoryError' (Python host allocation, oom)" in first.stderr
    assert "next: run `oomrec sweep --demo` again" in first.stderr
    # The command it suggests for the frontier shows the two OOMs.
    suggested = [ln for ln in first.stderr.splitlines() if ln.startswith("the frontier: ")]
    assert suggested == [
        "the frontier: oomrec report oomrec-demo/benchmarks "
        "--record oomrec-demo/benchmarks/.oom-record"
    ]
    frontier = cli(*suggested[0].split()[3:], "--json")
    assert frontier.exit_code == 0, frontier.stderr
    ooms = {(f["model"], f["oom_min"]["length"]) for f in json.loads(frontier.stdout)["frontier"]
            if f["oom_min"]}  # fmt: skip
    assert ooms == {("mid-lm-8bit", 32768), ("moe-lm-bf16", 8192)}

    second = cli("sweep", "--demo")
    assert second.exit_code == 0, second.stderr
    assert [t for t in tokens(output.read_text().splitlines()) if t[2] != "ok"] == [
        ("mid-lm-8bit", "32768", "SKIP:oom_record"),
        ("moe-lm-bf16", "8192", "SKIP:oom_record"),
        ("moe-lm-bf16", "32768", "SKIP:oom_record"),
    ]
    assert (
        "SKIP:oom_record (recorded OOM at 8192 <= 32768: oomrec-demo/benchmarks/.oom-record:2: "
        in second.stderr
    )
    assert len(record.read_text().splitlines()) == 2

    third = cli("sweep", "--demo", "--ignore-record", "--models", "moe-lm-bf16")
    assert third.exit_code == 0, third.stderr
    assert tokens(output.read_text().splitlines())[2:] == [
        ("moe-lm-bf16", "8192", "SKIP:oom"),
        ("moe-lm-bf16", "32768", "SKIP:oom_backstop"),
    ]
    # The re-test saw the same OOM on the same host and code: the same evidence, not a new line.
    assert "record: 0 new OOM records, 1 already recorded in " in third.stderr
    assert len(record.read_text().splitlines()) == 2


def test_demo_dry_run_writes_nothing(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = cli("sweep", "--demo", "--dry-run", "--lengths", "512")
    assert result.exit_code == 0, result.stderr
    assert result.stderr.splitlines()[-4:] == [
        "  pico-lm-4bit @ 512: run",
        "  mid-lm-8bit @ 512: run",
        "  moe-lm-bf16 @ 512: run",
        "dry run: 3 to run, 0 to skip; nothing launched, nothing written",
    ]
    assert list(tmp_path.iterdir()) == []


def test_demo_keeps_away_from_the_real_record(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    real = tmp_path / "real-record"
    monkeypatch.setenv("OOMREC_RECORD", str(real))
    result = cli("sweep", "--demo", "--models", "pico-lm-4bit", "--lengths", "512",
                 "--fake-oom", "pico-lm-4bit:512")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert not real.exists()
    assert (
        (tmp_path / "oomrec-demo" / "benchmarks" / ".oom-record")
        .read_text()
        .startswith(f"pico-lm-4bit,512,{TODAY},unknown,,")
    )


def test_demo_under_a_memory_guard_stops_the_two_biggest_cells(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    output = tmp_path / "oomrec-demo" / "benchmarks" / f"cpu_testhw_longprompt_{TODAY}.csv"
    result = cli("sweep", "--demo", "--max-cell-memory", "100M")
    assert result.exit_code == 0, result.stderr
    # The cells fit in 100 MiB up to ~90 MiB; mid @ 8192 (~110 MiB) and moe @ 2048 (~126 MiB)
    # are stopped before their decode ends, and the backstop skips what is longer.
    assert [t for t in tokens(output.read_text().splitlines()) if t[2] != "ok"] == [
        ("mid-lm-8bit", "8192", "SKIP:oom_guard"),
        ("mid-lm-8bit", "32768", "SKIP:oom_backstop"),
        ("moe-lm-bf16", "2048", "SKIP:oom_guard"),
        ("moe-lm-bf16", "8192", "SKIP:oom_backstop"),
        ("moe-lm-bf16", "32768", "SKIP:oom_backstop"),
    ]
    assert "guard: 2 cells stopped by the memory guard" in result.stderr
    record = tmp_path / "oomrec-demo" / "benchmarks" / ".oom-record"
    assert [line.split(",")[8] for line in record.read_text().splitlines()] == ["guard", "guard"]


@ONLY_LINUX
def test_the_demos_report_has_one_machine_and_its_import_adds_nothing(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli("sweep", "--demo").exit_code == 0
    record = "oomrec-demo/benchmarks/.oom-record"
    report = cli("report", "oomrec-demo/benchmarks", "--record", record, "--json")
    assert report.exit_code == 0, report.stderr
    data = json.loads(report.stdout)
    # The sweep's rows and its records are one machine's, and each OOM is one, not two.
    assert [m["hardware"] for m in data["machines"]] == ["testhw"]
    assert sorted((o["model"], o["length"]) for o in data["ooms"]) == [
        ("mid-lm-8bit", 32768),
        ("moe-lm-bf16", 8192),
    ]
    imported = cli("record", "import-csv", "oomrec-demo/benchmarks", "--record", record, "--json")
    assert imported.exit_code == 0, imported.stderr
    assert json.loads(imported.stdout)["records"] == []
