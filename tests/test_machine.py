"""A row's machine, date and length decided once (oomrec/core/machine.py, core/records.py): the
report and import-csv read the same CSV rows the same way."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oomrec.core.machine import file_class, file_host, row_machine
from oomrec.core.records import OomRecord, applies_on
from oomrec.core.units import GIB, MIB
from oomrec.report.folded import record_machine
from oomrec.report.frontier import Machine
from tests.conftest import CliResult
from tests.gitrepo import Repo
from tests.test_report import csv_text, failed, ran

Cli = Callable[..., CliResult]
V100 = "NVIDIA_Tesla_V100-PCIE-32GB_CUDA12.9_755GB"


@pytest.mark.parametrize(
    ("name", "host"),
    [
        ("cuda_gb10_longprompt_2026-07-03.csv", "gb10"),
        ("cuda_gb10_2026-07-03.csv", "gb10"),
        ("metal_m1ultra_2026-06-17_fused_moe.csv", "m1ultra"),
        ("pylm_m1ultra_vlm_2026-06-17.csv", "m1ultra"),
        ("metal_m1ultra_2026-09-08_single_qwen.csv", "m1ultra"),
        ("rocm_strixhalo-gfx1151_2026-09-12.csv", "strixhalo-gfx1151"),
        # oomrec's own sweep CSVs: the cpu backend, a tag holding `_`.
        ("cpu_amd_epyc_longprompt_2026-12-02.csv", "amd_epyc"),
        ("cpu_testhw_longprompt_2026-12-02.csv", "testhw"),
        ("notes_2026-07-03.csv", None),
        ("cuda_gb10.csv", None),
    ],
)
def test_a_files_host_is_read_from_its_name_as_the_harness_names_it(
    name: str, host: str | None
) -> None:
    assert file_host(f"benchmarks/{name}") == host


def test_a_discrete_gpu_row_is_its_devices_size_in_the_report_and_the_import(
    cli: Cli, repo: Repo
) -> None:
    folder = repo.path / "benchmarks"
    folder.mkdir()
    (folder / "cuda_v100_2026-08-01.csv").write_text(
        csv_text(failed("m", 8192, "2026-08-01", "SKIP:oom", hw=V100))
    )
    assert row_machine(V100, None) == ("v100", 32 * GIB)
    assert row_machine("", "v100") == ("v100", None)
    result = cli("report", "--json", "--record", "no-record")
    assert result.exit_code == 0, result.stderr
    machines = [m["id"] for m in json.loads(result.stdout)["machines"]]
    assert machines == ["v100 32GB"]
    imported = cli("record", "import-csv", "--all-hardware", "--json")
    assert imported.exit_code == 0, imported.stderr
    [record] = json.loads(imported.stdout)["records"]
    assert (record["hardware"], record["mem_bytes"]) == ("v100", 32 * GIB)


GB10 = "NVIDIA_GB10_CUDA13.0_122GB"


def test_a_row_without_hardware_takes_the_one_class_its_file_names() -> None:
    assert file_class("gb10", ["", GB10, "NVIDIA_GB10_122GB"]) == ("gb10", 122 * GIB)
    # Several classes, or none, say nothing of where a skip row ran: every size.
    assert file_class("gb10", [GB10, "NVIDIA_GB10_CUDA13.0_96GB"]) == ("gb10", None)
    assert file_class("gb10", ["", ""]) == ("gb10", None)
    assert file_class(None, []) == (None, None)
    # The rows' own tag, which a live host detects, over the file name's guess.
    assert file_class("unknownhost", [V100]) == ("v100", 32 * GIB)
    # A size of 0 is none.
    assert file_class("x", ["Some_CPU_0GB"]) == file_class("x", ["Some_CPU"])
    assert row_machine("", "gb10", ("gb10", 122 * GIB)) == ("gb10", 122 * GIB)
    assert row_machine(V100, "gb10", ("gb10", 122 * GIB)) == ("v100", 32 * GIB)


def test_one_machine_is_one_class_in_the_report_and_the_import(cli: Cli, repo: Repo) -> None:
    """The harness's skip rows carry no hardware: they take their file's host, so one machine
    is one class (not `gb10` beside `gb10 122GB`), in the report and in the record an import
    makes. A file naming two classes leaves its skip rows at every size (the safe side)."""
    folder = repo.path / "benchmarks"
    folder.mkdir()
    (folder / "cuda_gb10_longprompt_2026-07-03.csv").write_text(
        csv_text(
            ran("m", 4096, "2026-07-03", hw=GB10),
            failed("m", 8192, "2026-07-03", "SKIP:oom", hw=""),
            failed("m", 16384, "2026-07-03", "SKIP:oom_backstop", hw=""),
        )
    )
    (folder / "cuda_mixed_longprompt_2026-07-04.csv").write_text(
        csv_text(
            ran("n", 4096, "2026-07-04", hw="Intel_Xeon_mixed_64GB"),
            ran("n", 4096, "2026-07-04", hw="Intel_Xeon_mixed_32GB"),
            failed("n", 8192, "2026-07-04", "SKIP:oom", hw=""),
        )
    )
    report = json.loads(cli("report", "--json", "--record", "no-record").stdout)
    cells = {(c["model"], c["machine"]) for c in report["cells"]}
    gb10 = {m for model, m in cells if model == "m"}
    assert gb10 == {"gb10 122GB"}, cells
    imported = cli("record", "import-csv", "--all-hardware", "--json")
    assert imported.exit_code == 0, imported.stderr
    records = {
        r["model"]: (r["hardware"], r["mem_bytes"]) for r in json.loads(imported.stdout)["records"]
    }
    assert records["m"] == ("gb10", 122 * GIB)
    assert records["n"][1] is None


def test_evidence_covers_a_class_by_the_rule_a_record_applies_by() -> None:
    # An OOM on a 96 GB host applies on a 64 GB one (and within 2% of 96), not on a 512 GB one.
    at96 = Machine("gb10", 96 * GIB)
    assert at96.covers(Machine("gb10", 64 * GIB))
    assert at96.covers(Machine("gb10", 96 * GIB))
    assert not at96.covers(Machine("gb10", 512 * GIB))
    assert not at96.covers(Machine("v100", 32 * GIB))
    assert Machine(None, None).covers(Machine("v100", 32 * GIB))
    assert Machine("gb10").covers(Machine("gb10", 512 * GIB))


@pytest.mark.parametrize(
    ("recorded", "host"),
    [
        # Issue 42: whole GiB rounded 97.9 up to 98 > 96 x 1.02, while the bytes are within.
        (96 * GIB, int(97.9 * GIB)),
        (96 * GIB, int(97.93 * GIB)),
        (int(95.6 * GIB), int(97.4 * GIB)),
        (int(0.5 * GIB), int(0.51 * GIB)),
        (122 * GIB, 122 * GIB + 1),
    ],
)
def test_the_report_and_the_sweep_judge_memory_by_the_same_bytes(recorded: int, host: int) -> None:
    record = OomRecord("m", 512, "2026-07-03", "unknown", None, "s.csv", "gb10", recorded)
    sweep = applies_on(record, "gb10", host)
    assert Machine("gb10", recorded).covers(Machine("gb10", host)) == sweep
    assert record_machine(record).covers(Machine("gb10", host)) == sweep


@given(st.integers(1, 2**44), st.integers(1, 2**44))
def test_covers_is_applicability_for_any_sizes(recorded: int, host: int) -> None:
    record = OomRecord("m", 512, "2026-07-03", "unknown", None, "s.csv", "gb10", recorded)
    assert record_machine(record).covers(Machine("gb10", host)) == applies_on(record, "gb10", host)


@pytest.mark.parametrize(
    ("n", "shown"),
    [
        (122 * GIB, "122GB"),
        (int(97.9 * GIB), "97.9GB"),
        (512 * MIB, "512MB"),
        (1536 * MIB, "1.5GB"),
        (96 * GIB + 5 * MIB, "96.005GB"),
    ],
)
def test_a_class_shows_its_memory_in_the_unit_that_fits(n: int, shown: str) -> None:
    assert Machine("gb10", n).id == f"gb10 {shown}"


def test_the_report_reads_dates_and_lengths_as_the_import_does(cli: Cli, repo: Repo) -> None:
    folder = repo.path / "benchmarks"
    folder.mkdir()
    (folder / "cuda_gb10_2026-08-01.csv").write_text(
        csv_text(
            ran("m", 512, "2026-02-30"),
            ran("m", 99999999999999999999999, "2026-08-01"),
            ran("m", 2048, "2026-08-01"),
        )
    )
    result = cli("report", "--json", "--record", "no-record")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    # One run of the two lengths read (cells come folded): the 23-digit one is no length.
    assert [(c["from"], c["to"], c["lengths"]) for c in data["cells"]] == [(512, 2048, 2)]
    dates = json.dumps(data)
    assert "2026-02-30" not in dates


def test_a_size_of_zero_is_no_size_and_never_narrows_an_oom(cli: Cli, repo: Repo) -> None:
    """`..._0GB` (or a hand-written 0) names no memory: the import records none, and a record
    of 0 bytes applies at every size, as an unknown one does (before, it applied on no host
    whose memory was known: its cell ran again)."""
    folder = repo.path / "benchmarks"
    folder.mkdir()
    (folder / "cpu_x_2026-07-03.csv").write_text(
        csv_text(failed("m", 2048, "2026-07-03", "SKIP:oom", hw="Some_CPU_0GB"))
    )
    imported = cli("record", "import-csv", "--all-hardware", "--json")
    assert imported.exit_code == 0, imported.stderr
    [record] = json.loads(imported.stdout)["records"]
    assert record["mem_bytes"] is None
    zero = OomRecord("m", 2048, "2026-07-03", "abc1234", None, "x.csv", "some_cpu", 0)
    assert applies_on(zero, "some_cpu", 64 * GIB)
