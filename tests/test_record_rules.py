"""The record rules that oomrec/core/records.py owns, each tested at its one home: how a commit is
shown, how a record names its CSV, which numbers and dates a record field holds, and whether a
record applies on a host."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from oomrec.core.records import (
    SHORT_SHA,
    UNKNOWN_COMMIT,
    Applicability,
    CommitField,
    OomRecord,
    applicability,
    applies_on,
    bounded_int,
    check_length,
    format_line,
    is_date,
    not_applying_because,
    parse_line,
    read_commit,
    short_commit,
    source_field,
    source_path,
)
from oomrec.core.shown import printable
from oomrec.core.units import GIB, MAX_INT
from oomrec.staleness.verdict import APPLIES, Fix, Judgement, Status
from oomrec.sweep.planner import JudgedLine, Planner
from tests.conftest import CliResult
from tests.gitrepo import Repo

Cli = Callable[..., CliResult]

SHA = "9bef3f2334c4048d8540aa392ef030c97d4dad2c"


@pytest.mark.parametrize(
    ("commit", "shown"),
    [
        (SHA, SHA[:SHORT_SHA]),
        (SHA.upper(), SHA.upper()[:SHORT_SHA]),
        (f"{SHA}-dirty", f"{SHA[:SHORT_SHA]}-dirty"),
        (SHA[:5], SHA[:5]),
        (UNKNOWN_COMMIT, UNKNOWN_COMMIT),
        # Not a SHA: shown whole, never cut into something that looks like one.
        ("release-2026", "release-2026"),
        ("deadbeefcafe-dirty-x", "deadbeefcafe-dirty-x"),
        ("", ""),
    ],
)
def test_a_commit_is_shown_with_one_short_length(commit: str, shown: str) -> None:
    assert SHORT_SHA == 7
    assert short_commit(commit) == shown


# -- the source path: one rule for the sweep and the import ---------------------------------


def test_a_source_under_the_root_is_relative_and_posix(tmp_path: Path) -> None:
    (tmp_path / "benchmarks").mkdir()
    csv = tmp_path / "benchmarks" / "cuda_gb10.csv"
    assert source_path(csv, tmp_path) == "benchmarks/cuda_gb10.csv"
    # The file need not exist yet: a sweep names its CSV before the first row is written.
    assert source_path(tmp_path / "benchmarks" / "later.csv", tmp_path) == "benchmarks/later.csv"


def test_a_source_outside_the_root_is_absolute(tmp_path: Path) -> None:
    root, elsewhere = tmp_path / "repo", tmp_path / "elsewhere"
    root.mkdir()
    elsewhere.mkdir()
    assert source_path(elsewhere / "x.csv", root) == str(elsewhere.resolve() / "x.csv")
    # A sibling whose name starts with the root's is not under it.
    (tmp_path / "repo2").mkdir()
    sibling = tmp_path / "repo2" / "x.csv"
    assert source_path(sibling, root) == str(tmp_path.resolve() / "repo2" / "x.csv")


def test_a_relative_path_is_read_from_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "benchmarks").mkdir()
    monkeypatch.chdir(tmp_path / "benchmarks")
    assert source_path("out.csv", tmp_path) == "benchmarks/out.csv"
    assert source_path("../benchmarks/./out.csv", tmp_path) == "benchmarks/out.csv"
    assert source_path(Path("out.csv"), str(tmp_path)) == "benchmarks/out.csv"


def test_outside_a_repository_sources_are_relative_to_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "runs").mkdir()
    monkeypatch.chdir(tmp_path)
    assert source_path(tmp_path / "runs" / "out.csv", None) == "runs/out.csv"
    assert source_path("/x/out.csv", None) == "/x/out.csv"


def test_symlinked_folders_resolve_but_a_symlinked_file_keeps_its_name(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "benchmarks").mkdir(parents=True)
    (root / "benchmarks" / "real.csv").write_text("model\n")
    # The root reached through a link, and a folder of the root reached through a link.
    (tmp_path / "root-link").symlink_to(root)
    (tmp_path / "bench-link").symlink_to(root / "benchmarks")
    (root / "benchmarks" / "alias.csv").symlink_to("real.csv")
    assert source_path(tmp_path / "bench-link" / "real.csv", root) == "benchmarks/real.csv"
    assert source_path(root / "benchmarks" / "real.csv", tmp_path / "root-link") == (
        "benchmarks/real.csv"
    )
    # git tracks the link under its own name: that is the name its rows' records carry.
    assert source_path(root / "benchmarks" / "alias.csv", root) == "benchmarks/alias.csv"


def test_the_root_itself_is_no_source_under_it(tmp_path: Path) -> None:
    assert source_path(tmp_path, tmp_path) == str(tmp_path.resolve())
    assert source_path("/etc/x.csv", "/") == "etc/x.csv"


def test_a_resolved_path_is_named_without_touching_the_filesystem(tmp_path: Path) -> None:
    # What the import passes: already resolved, so it names thousands of files without a stat.
    assert source_path("/no/such/root/b/x.csv", "/no/such/root", resolved=True) == "b/x.csv"
    assert source_path("/no/such/other.csv", "/no/such/root", resolved=True) == (
        "/no/such/other.csv"
    )


@pytest.mark.parametrize(
    ("source", "field"),
    [
        ("benchmarks/a.csv", "benchmarks/a.csv"),
        (" benchmarks/a.csv ", "benchmarks/a.csv"),
        # The reader strips a field's blanks: a tab that is part of the name is kept, escaped.
        ("benchmarks/a.csv\t", "benchmarks/a.csv\\x09"),
        ("bench\nmarks/a.csv", "bench\\x0amarks/a.csv"),
        # A file name byte that is not UTF-8, as os.fsdecode gives it.
        ("caf\udce9.csv", "caf\\xe9.csv"),
        ("naïve.csv", "naïve.csv"),
    ],
)
def test_a_source_field_is_one_printable_line(source: str, field: str) -> None:
    assert source_field(source) == field
    assert printable(field) == field


def test_the_sweep_and_the_import_name_one_csv_alike(cli: Cli, repo: Repo) -> None:
    """A CSV written by a sweep through a symlinked folder, then imported by its real path:
    both records name it alike."""
    (repo.path / "models" / "a").mkdir(parents=True)
    (repo.path / "benchmarks").mkdir(exist_ok=True)
    (repo.path / "bench-link").symlink_to(repo.path / "benchmarks")
    # A real OOM (a faked one is no evidence to import).
    oom = repo.path.parent / "oom.sh"
    oom.write_text('#!/bin/sh\necho "CUDA out of memory. Tried to allocate 2 GiB" >&2\nexit 1\n')
    oom.chmod(0o755)
    swept = cli(
        "sweep", "--runner", str(oom), "--models", "a", "--lengths", "512",
        "--output", "bench-link/cuda_testhw_x.csv",
    )  # fmt: skip
    assert swept.exit_code == 0, swept.stderr
    record = repo.path / "benchmarks" / ".oom-record"
    sources = [line.split(",")[5] for line in record.read_text().splitlines()]
    assert sources == ["benchmarks/cuda_testhw_x.csv"]
    # The sweep's own CSV holds no new evidence: its provenance names where each row ran.
    again = cli("record", "import-csv", "--dry-run", "--json", str(repo.path / "benchmarks"))
    assert json.loads(again.stdout)["records"] == [], again.stdout
    # Without it, the sweep's record still holds its row (it names the CSV and the row's day).
    (repo.path / "benchmarks" / "cuda_testhw_x.csv.oomrec.json").unlink()
    again = cli("record", "import-csv", "--dry-run", "--json", str(repo.path / "bench-link"))
    assert json.loads(again.stdout)["records"] == [], again.stdout
    # Without the record either, as any CSV: imported by the folder's absolute path, and
    # through the link, it names the CSV as the sweep did.
    record.unlink()
    for folder in (repo.path / "benchmarks", repo.path / "bench-link"):
        imported = cli("record", "import-csv", "--dry-run", "--json", str(folder))
        assert imported.exit_code == 0, imported.stderr
        assert [r["source_csv"] for r in json.loads(imported.stdout)["records"]] == sources


# -- numbers and dates: one check for the record, the import and the options -----------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("0", 0),
        ("32768", 32768),
        (str(MAX_INT), MAX_INT),
        (str(MAX_INT + 1), None),
        # Leading zeros do not make a number larger: the import and the record agree on them.
        ("0" * 30 + "32768", 32768),
        ("0" * 30, 0),
        ("0" * 30 + "1" * 20, None),
        ("9" * 5000, None),
        ("", None),
        ("-1", None),
        ("+1", None),
        ("1e3", None),
        (" 1", None),
        ("١٢", None),  # Arabic-Indic digits: isdigit() says yes, a record says no.
    ],
)
def test_one_bounded_integer_rule(text: str, value: int | None) -> None:
    assert bounded_int(text) == value


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ("2026-07-03", True),
        ("2024-02-29", True),
        ("2026-02-29", False),
        ("2026-13-01", False),
        ("2026-7-3", False),
        ("2026-07-03T12:00", False),
        ("\uff12\uff10\uff12\uff16-07-03", False),
        ("", False),
    ],
)
def test_one_date_rule(text: str, ok: bool) -> None:
    assert is_date(text) is ok


def test_the_import_and_the_record_read_a_length_and_a_date_alike(cli: Cli, repo: Repo) -> None:
    """A CSV cell the import accepts is a field the record reads back the same."""
    length = "0" * 25 + "8192"
    folder = repo.path / "benchmarks"
    folder.mkdir(exist_ok=True)
    (folder / "runs.csv").write_text(
        "model,prompt_target_len,date,commit\n"
        f"m,{length},2026-07-03T12:00:00,abc1234,SKIP:oom\n"
        f"m,{'9' * 30},2026-07-03,abc1234,SKIP:oom\n"
    )
    result = cli("record", "import-csv", "--json", str(folder))
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert [(r["prompt_target_len"], r["date"]) for r in report["records"]] == [
        (8192, "2026-07-03")
    ]
    assert report["rows_skipped"] == {"length over 64 bits": 1}
    text = (folder / ".oom-record").read_text()
    assert parse_line(text.strip()).prompt_target_len == 8192
    # And written by hand, as a record line, it reads the same.
    assert parse_line(f"m,{length},2026-07-03,abc1234,,s").prompt_target_len == 8192
    assert check_length(length) == 8192


@pytest.mark.parametrize(
    ("text", "field"),
    [
        (SHA, CommitField(SHA)),
        (f" {SHA.upper()}-dirty ", CommitField(SHA, dirty=True)),
        ("abcd", CommitField("abcd")),
        ("abc", CommitField(None, unknown="'abc' is not a commit SHA")),
        ("", CommitField(None, unknown="no commit recorded")),
        ("Unknown", CommitField(None, unknown="no commit recorded")),
        ("HEAD~1", CommitField(None, unknown="'HEAD~1' is not a commit SHA")),
        ("-dirty", CommitField(None, unknown="'-dirty' is not a commit SHA")),
    ],
)
def test_one_reading_of_a_commit_field(text: str, field: CommitField) -> None:
    """What the staleness rule resolves and what `record push` refuses to publish."""
    assert read_commit(text) == field


# -- applicability: hardware, then memory, then the staleness verdict ----------------------

LIFTED = Judgement(Status.LIFTED, (Fix(SHA, "Chunk the prefill", ("m*",), (SHA,)),))
UNKNOWN = Judgement(Status.UNKNOWN, reason="no commit recorded")


def _on(hardware: str | None, mem_gib: int | None) -> OomRecord:
    mem = None if mem_gib is None else mem_gib * GIB
    return OomRecord("m", 512, "2026-01-01", SHA, None, "s", hardware, mem)


@pytest.mark.parametrize(
    ("record", "host", "verdict", "reach"),
    [
        (_on("gb10", 96), ("gb10", 96), APPLIES, Applicability.APPLIES),
        (_on("gb10", 96), ("gb10", 96), None, Applicability.APPLIES),
        # "Unknown" is a way of applying: only proof takes a record out of play.
        (_on("gb10", 96), ("gb10", 96), UNKNOWN, Applicability.APPLIES),
        (_on("gb10", 96), ("gb10", 96), LIFTED, Applicability.LIFTED),
        # Hardware first, then memory, then the verdict: a lifted record of another machine is
        # another machine's, and no lifted record for this one's dry run.
        (_on("gb10", 96), ("v100", 96), LIFTED, Applicability.OTHER_HARDWARE),
        (_on("gb10", 96), ("gb10", 512), LIFTED, Applicability.MORE_MEMORY),
        (_on(None, 96), ("v100", 512), APPLIES, Applicability.MORE_MEMORY),
        (_on(None, None), ("v100", 512), APPLIES, Applicability.APPLIES),
        # No host tag (an import without --hardware): every hardware is this host's.
        (_on("gb10", 96), (None, None), APPLIES, Applicability.APPLIES),
        (_on("gb10", 96), (None, 512), APPLIES, Applicability.MORE_MEMORY),
    ],
)
def test_one_decision_whether_a_record_applies_here(
    record: OomRecord,
    host: tuple[str | None, int | None],
    verdict: Judgement | None,
    reach: Applicability,
) -> None:
    tag, mem_gib = host
    mem = None if mem_gib is None else mem_gib * GIB
    assert applicability(record, tag, mem, verdict) == reach
    assert applies_on(record, tag, mem, verdict) is (reach == Applicability.APPLIES)
    why = not_applying_because(record, tag, mem, verdict)
    assert (why is None) is (reach == Applicability.APPLIES)
    assert reach.on_host is (reach in (Applicability.APPLIES, Applicability.LIFTED))
    if reach == Applicability.LIFTED:
        assert why == "lifted, unverified: fix 9bef3f2 (Chunk the prefill)"


def test_the_sweep_plans_by_that_decision() -> None:
    """The planner's records and lifted records are exactly those the decision puts there."""
    records = [_on("gb10", 96), _on("v100", 96), _on("gb10", 64), _on(None, None)]
    verdicts = [APPLIES, LIFTED, LIFTED, UNKNOWN]
    evidence = [
        JudgedLine("rec", n, format_line(r), r, v)
        for n, (r, v) in enumerate(zip(records, verdicts, strict=True), start=1)
    ]
    planner = Planner(evidence, "gb10", host_mem=96 * GIB)
    assert [e.lineno for e in planner.records["m"]] == [1, 4]
    # Line 3 was measured with less memory than this host has: not this host's to lift.
    assert "m" not in planner.unverified and "m" not in planner.lifted
    # Where it is evidence, a lift is a hypothesis to probe, never out of play unverified.
    smaller = Planner(evidence, "gb10", host_mem=64 * GIB)
    assert smaller.unverified["m"][0].lineno == 3 and "m" not in smaller.lifted
