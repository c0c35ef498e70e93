"""Evidence that applies only where it is true, read as the harness reads it, never twice, and
never lost by a sweep that could not keep it: memory-scoped records, harness-compatible reading,
the evidence key, and the sweep's checks before it launches anything."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from oomrec.core.records import (
    OomRecord,
    RecordFile,
    applies_on,
    evidence_key,
    format_line,
    not_applying_because,
    read_line,
)
from oomrec.core.units import GIB
from tests.conftest import CliResult
from tests.gitrepo import Repo
from tests.scripted_runner import Runner
from tests.test_harness_records import harness_skips
from tests.test_sweep import record_text, sweep
from tests.tty import run_on_tty

Cli = Callable[..., CliResult]


def _rec(hardware: str | None = "gb10", mem: int | None = 96 * GIB) -> OomRecord:
    return OomRecord("m", 512, "2026-01-01", "unknown", None, "s", hardware, mem)


@pytest.mark.parametrize(
    ("record", "host_tag", "host_mem", "why_not"),
    [
        (_rec(), "gb10", 512 * GIB, "recorded on 96 GiB, this host has 512 GiB"),
        (_rec(), "gb10", 64 * GIB, None),
        (_rec(), "gb10", 96 * GIB, None),
        # Reporting jitter: 1.5% more is the same machine size.
        (_rec(), "gb10", int(96 * GIB * 1.015), None),
        (_rec(), "gb10", int(96 * GIB * 1.03), "recorded on 96 GiB, this host has 99 GiB"),
        (_rec(), "gb10", None, None),
        (_rec(mem=None), "gb10", 512 * GIB, None),
        (_rec(), "v100", 16 * GIB, "recorded on gb10, this host is v100"),
        (_rec(hardware=None), "v100", 16 * GIB, None),
        (_rec(hardware=None), "v100", 512 * GIB, "recorded on 96 GiB, this host has 512 GiB"),
    ],
)
def test_a_record_applies_on_its_hardware_with_no_more_memory(
    record: OomRecord, host_tag: str, host_mem: int | None, why_not: str | None
) -> None:
    assert not_applying_because(record, host_tag, host_mem) == why_not
    assert applies_on(record, host_tag, host_mem) is (why_not is None)


def test_mem_bytes_is_the_eighth_field_and_round_trips() -> None:
    line = format_line(_rec())
    assert line == f"m,512,2026-01-01,unknown,,s,gb10,{96 * GIB}"
    assert read_line(line) == (_rec(), None)
    untagged = format_line(_rec(hardware=None))
    assert untagged == f"m,512,2026-01-01,unknown,,s,,{96 * GIB}"
    assert read_line(untagged)[0] == _rec(hardware=None)


def test_eight_field_lines_stay_harness_readable(tmp_path: Path) -> None:
    path = tmp_path / "rec"
    RecordFile(path).append([_rec(), OomRecord("n", 4096, "2026-01-01", "unknown")])
    assert path.read_text().splitlines()[0].count(",") == 7
    assert harness_skips(path, "m", 512)
    assert harness_skips(path, "m", 32768)
    assert not harness_skips(path, "m", 256)
    assert harness_skips(path, "n", 4096)
    assert not harness_skips(path, "other", 32768)


def test_a_line_the_harness_honours_pre_skips_with_unknown_fields(
    cli: Cli, repo: Repo, record: Path, runner: Runner, models: Callable[..., None]
) -> None:
    models("a", "b", "c")
    record.write_text(
        'a,512,yesterday,abc,12GB,s\n"b",2048,2026-01-01,abc,,s\nc,1024,2026-01-01,abc,,s\n'
    )
    assert harness_skips(record, "a", 512)
    assert not harness_skips(record, "b", 2048)
    result = sweep(cli, runner, "--models", "a b c", "--lengths", "512 2048", "--dry-run", "--json")
    assert result.exit_code == 0, result.stderr
    cells = {(c["model"], c["length"]): c["action"] for c in json.loads(result.stdout)["cells"]}
    assert cells[("a", 512)] == "SKIP:oom_record"
    assert cells[("b", 2048)] == "SKIP:oom_record"
    assert cells[("c", 512)] == "run"
    assert [line for line in result.stderr.splitlines() if line.startswith("warning:")] == [
        "warning: benchmarks/.oom-record:1: date 'yesterday' is not YYYY-MM-DD; peak_bytes "
        "'12GB' is not a number of bytes: read as unknown, the record applies",
        "warning: benchmarks/.oom-record:2: the bash harness reads its model and length without "
        "CSV quoting, so it would not honour this line",
    ]
    # A rewrite keeps such lines verbatim.
    before = record.read_bytes()
    RecordFile(record).rewrite(lambda loaded: loaded.lines)
    assert record.read_bytes() == before


def test_a_record_from_a_smaller_host_does_not_pre_skip_a_bigger_one(
    cli: Cli,
    repo: Repo,
    record: Path,
    runner: Runner,
    models: Callable[..., None],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    models("a")
    record.write_text(f"a,512,2026-01-01,abc,,s,testhw,{96 * GIB}\n")
    plans = {}
    for mem in ("512GiB", "64GiB", "96GiB"):
        monkeypatch.setenv("OOMREC_MEM_BYTES", mem)
        result = sweep(cli, runner, "--models", "a", "--lengths", "512", "--dry-run", "--json")
        assert result.exit_code == 0, result.stderr
        plans[mem] = json.loads(result.stdout)["cells"][0]["action"]
    assert plans == {"512GiB": "run", "64GiB": "SKIP:oom_record", "96GiB": "SKIP:oom_record"}
    monkeypatch.setenv("OOMREC_MEM_BYTES", "512GiB")
    said = sweep(cli, runner, "--models", "a", "--lengths", "512", "--dry-run")
    assert (
        "  not applied: benchmarks/.oom-record:1 (recorded on 96 GiB, this host has 512 GiB)"
        in said.stderr.splitlines()
    )


def test_record_add_twice_leaves_one_line_and_carries_the_hosts_memory(
    cli: Cli, repo: Repo, record: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OOMREC_MEM_BYTES", "96GiB")
    first = cli("record", "add", "m", "512")
    assert first.exit_code == 0, first.stderr
    assert first.stdout.startswith("added to benchmarks/.oom-record: ")
    again = cli("record", "add", "m", "512")
    assert again.exit_code == 0, again.stderr
    assert again.stdout.startswith("already recorded in benchmarks/.oom-record: ")
    lines = record.read_text().splitlines()
    assert len(lines) == 1
    assert lines[0].endswith(f",manual,testhw,{96 * GIB}")
    # Another machine's memory is not this one's: unknown unless given.
    other = cli("record", "add", "m", "512", "--hardware", "v100")
    assert other.exit_code == 0
    assert record.read_text().splitlines()[1].endswith(",manual,v100,")
    # The v100 record of unknown memory applies at every size: a sized one adds nothing.
    sized = cli("record", "add", "m", "512", "--hardware", "v100", "--mem", "16GiB")
    assert sized.exit_code == 0
    assert sized.stdout.startswith("already recorded in benchmarks/.oom-record: ")
    assert len(record.read_text().splitlines()) == 2
    other_size = cli("record", "add", "m", "512", "--hardware", "a100", "--mem", "16GiB")
    assert record.read_text().splitlines()[2].endswith(f",manual,a100,{16 * GIB}")
    assert other_size.exit_code == 0
    bad = cli("record", "add", "m", "512", "--mem", "lots")
    assert bad.exit_code == 2
    assert bad.stderr == (
        "oomrec: error: --mem 'lots' is not a memory size; give e.g. 96GiB or bytes\n"
    )


def test_a_retest_of_a_recorded_oom_is_not_recorded_twice(
    cli: Cli, repo: Repo, record: Path, runner: Runner, models: Callable[..., None]
) -> None:
    models("a")
    args = ("--models", "a", "--lengths", "512", "--fake-oom", "a:512", "--ignore-record")
    first = sweep(cli, runner, *args)
    assert first.exit_code == 0, first.stderr
    assert "record: 1 new OOM record in benchmarks/.oom-record" in first.stderr
    again = sweep(cli, runner, *args, "--json")
    assert again.exit_code == 0, again.stderr
    summary = json.loads(again.stdout)
    assert summary["new_records"] == []
    assert len(summary["already_recorded"]) == 1
    assert "record: 0 new OOM records, 1 already recorded in benchmarks/.oom-record" in (
        again.stderr
    )
    assert len((record_text(repo) or "").splitlines()) == 1


def test_the_evidence_key_ignores_date_peak_and_source() -> None:
    a = OomRecord("m", 1, "2026-01-01", "c", 5, "x.csv", "gb10", 7)
    b = OomRecord("m", 1, "2026-02-02", "c", 9, "y.csv", "gb10", 7)
    assert evidence_key(a) == evidence_key(b)
    assert evidence_key(a) != evidence_key(OomRecord("m", 1, "2026-01-01", "c", 5, "x.csv", "gb10"))


@pytest.mark.parametrize(
    "name",
    [
        "benchmarks/.oom-record",
        "benchmarks/.oom-record.archive",
        "benchmarks/.oom-record.lock",
        "link.csv",
        "hard.csv",
    ],
)
def test_a_sweep_never_writes_its_csv_over_the_record(
    cli: Cli,
    repo: Repo,
    record: Path,
    runner: Runner,
    models: Callable[..., None],
    name: str,
) -> None:
    models("a")
    record.write_text("z,1,2026-01-01,abc,,s\n")
    (repo.path / "link.csv").symlink_to(record)
    os.link(record, repo.path / "hard.csv")
    result = cli("sweep", "--runner", runner.template, "--models", "a", "--lengths", "512",
                 "--output", name)  # fmt: skip
    assert result.exit_code == 2
    assert result.stdout == ""
    # The sweep's header goes first; the error is the last line, and nothing ran.
    assert result.stderr.splitlines(keepends=True)[-1] == (
        f"oomrec: error: --output {name} is the OOM record benchmarks/.oom-record or a file "
        "beside it; writing the sweep's CSV there would wipe it; pass another --output\n"
    )
    assert runner.launched() == []
    assert record.read_text() == "z,1,2026-01-01,abc,,s\n"


def test_a_record_that_cannot_be_written_stops_the_sweep_before_any_launch(
    cli: Cli, repo: Repo, runner: Runner, models: Callable[..., None]
) -> None:
    models("a")
    # Readable, but nothing beside it can be created, even by root: no lock, so no append.
    result = sweep(cli, runner, "--models", "a", "--lengths", "512", "--fake-oom", "a:512",
                   "--record", "/proc/version")  # fmt: skip
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1].startswith(
        "oomrec: error: /proc/version.lock: cannot create the record's lock file there ("
    )
    assert runner.launched() == []
    assert not (repo.path / "benchmarks" / "out.csv").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through file permissions")
def test_a_read_only_record_stops_the_sweep_before_any_launch(
    cli: Cli, repo: Repo, record: Path, runner: Runner, models: Callable[..., None]
) -> None:
    models("a")
    record.write_text("")
    record.chmod(0o444)
    result = sweep(cli, runner, "--models", "a", "--lengths", "512")
    assert result.exit_code == 2
    assert "benchmarks/.oom-record: cannot write (Permission denied)" in result.stderr
    assert runner.launched() == []


def test_record_list_shows_the_memory(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "rec"
    path.write_text(f"m,512,2026-01-01,unknown,,s,gb10,{96 * GIB}\nn,1,2026-01-01,unknown,,s\n")
    status, screen, stderr = run_on_tty(
        "record", "list", "--no-git", "--record", str(path), cwd=tmp_path, columns=120
    )
    assert status == 0, stderr
    assert "mem GiB" in screen
    # The header's rules are heavy (┃), the rows' light (│).
    rows = [[c.strip() for c in line.replace("┃", "│").split("│")] for line in screen.splitlines()]
    header = next(r for r in rows if "mem GiB" in r)
    m = next(r for r in rows if r[1:2] == ["m"])
    n = next(r for r in rows if r[1:2] == ["n"])
    at = header.index("mem GiB")
    assert (m[at], n[at]) == ("96.0", "-")
    # Off a terminal: the full byte count, one record per line.
    plain = cli("record", "list", "--no-git", "--record", str(path)).stdout.splitlines()
    assert [line.split("\t")[6] for line in plain] == [str(96 * GIB), "-"]
    as_json = json.loads(cli("record", "list", "--no-git", "--json", "--record", str(path)).stdout)[
        "records"
    ]
    assert [r["mem_bytes"] for r in as_json] == [96 * GIB, None]
