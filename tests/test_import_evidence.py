"""`record import-csv` over a sweep's own CSVs: it adds nothing the record, its archive or its
retractions already hold for the cell, with or without the CSV's provenance file, and a nested
model's rows become the nested name. Through the CLI, in real git repos, comparing record files.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import CliResult
from tests.gitrepo import Repo, git
from tests.harness_rows import H15, csv_text
from tests.scripted_runner import Runner
from tests.test_shared import Fleet, fleet  # noqa: F401  (the fixture)
from tests.test_stale_content import AFTER, BEFORE

Cli = Callable[..., CliResult]
CSV = "benchmarks/cuda_testhw_x.csv"
MEM = 96 * 1024**3

# A runner that runs out of memory from 1024 tokens (stderr only: the sweep writes the row), and
# below that writes an ok row. As a harness-style runner names a nested model: by its last part.
RUNNER = r"""
import datetime, sys
model_path, length, cell_csv = sys.argv[1:4]
name = model_path.rstrip("/").rsplit("/", 1)[-1]
today = datetime.date.today().isoformat()
if int(length) >= 1024:
    sys.exit("CUDA out of memory. Tried to allocate 2 GiB")
tail = f'{today},,0.3.3,release,32,"Hi",{length}'
open(cell_csv, "w").write(f"HEADER\n{name},{model_path},{length},32,1.0,2.0,3.0,4.0,{tail}\n")
""".replace("HEADER", H15)

# As RUNNER, but the runner itself writes the SKIP:oom row, naming the model by its last part.
ROW_RUNNER = r"""
import datetime, sys
model_path, length, cell_csv = sys.argv[1:4]
name = model_path.rstrip("/").rsplit("/", 1)[-1]
today = datetime.date.today().isoformat()
tail = f'{today},,0.3.3,release,32,"Hi",{length}'
if int(length) >= 1024:
    open(cell_csv, "w").write(f"HEADER\n{name},{model_path},,,,,,,{tail},SKIP:oom\n")
else:
    row = f"{name},{model_path},{length},32,1.0,2.0,3.0,4.0,{tail}"
    open(cell_csv, "w").write(f"HEADER\n{row}\n")
""".replace("HEADER", H15)


@pytest.fixture
def swept(
    cli: Cli, repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Callable[..., list[str]]:
    """Runs a sweep of `models` at 512 and 1024 tokens into CSV on a 96 GiB host, commits the
    CSV (not its provenance file, as a repository that ignores it), and returns the record."""
    monkeypatch.setenv("OOMREC_MEM_BYTES", str(MEM))

    def sweep(*models: str, script: str = RUNNER) -> list[str]:
        for model in models:
            (repo.path / "models" / model).mkdir(parents=True, exist_ok=True)
        runner = tmp_path / "runner.py"
        runner.write_text(script)
        template = f"{sys.executable} {runner} {{model_path}} {{length}} {{cell_csv}}"
        result = cli(
            "sweep", "--runner", template, "--models", " ".join(models),
            "--lengths", "512 1024", "--output", CSV,
        )  # fmt: skip
        assert result.exit_code == 0, result.stderr
        repo.git("add", CSV)
        repo.git("commit", "-q", "-m", "benchmarks: the sweep's CSV")
        return lines(repo)

    return sweep


def lines(repo: Repo, name: str = ".oom-record") -> list[str]:
    path = repo.path / "benchmarks" / name
    return path.read_text().splitlines() if path.exists() else []


def imported(cli: Cli, *args: str) -> dict[str, object]:
    result = cli("record", "import-csv", "--json", *args)
    assert result.exit_code == 0, result.stderr
    report: dict[str, object] = json.loads(result.stdout)
    return report


def sidecar(repo: Repo, csv: str = CSV) -> Path:
    return repo.path / f"{csv}.oomrec.json"


def test_import_does_not_undo_a_retraction(cli: Cli, repo: Repo, swept: Callable) -> None:
    record = swept("plain")
    assert [line.split(",")[:2] for line in record] == [["plain", "1024"]]
    retract = cli("record", "retract", "plain", "1024", "--reason", "a typo")
    assert retract.exit_code == 0, retract.stderr
    assert lines(repo) == []
    archive = lines(repo, ".oom-record.archive")
    # With the provenance file beside the CSV: the row is the retracted record's evidence.
    report = imported(cli)
    assert lines(repo) == []
    assert (report["added"], report["retracted"], report["already_present"]) == (0, 1, 0)
    shown = cli("record", "import-csv")
    assert shown.exit_code == 0, shown.stderr
    assert "left out: retracted                1" in shown.stdout
    # Without it (a fresh clone where it is not committed): the same row, the same retraction.
    sidecar(repo).unlink()
    report = imported(cli)
    assert (report["added"], report["retracted"]) == (0, 1)
    assert lines(repo) == []
    assert lines(repo, ".oom-record.archive") == archive
    # A later restore wins again: the record is back, and the import adds nothing beside it.
    restored = cli("record", "restore", "--retracted")
    assert restored.exit_code == 0, restored.stderr
    assert lines(repo) == record
    report = imported(cli)
    assert (report["added"], report["retracted"], report["already_present"]) == (0, 0, 1)
    assert lines(repo) == record


def test_without_the_provenance_file_the_sweeps_record_holds_its_row(
    cli: Cli, repo: Repo, swept: Callable
) -> None:
    """A duplicate would carry no memory and another commit: it would skip the cell on a 512
    GiB host, where the sweep's own 96 GiB record does not apply."""
    record = swept("plain")
    assert [line.split(",")[-1] for line in record] == [str(MEM)]
    sidecar(repo).unlink()
    report = imported(cli)
    assert (report["added"], report["already_present"]) == (0, 1)
    assert lines(repo) == record
    check = cli("check", "plain", "2048")
    assert check.exit_code == 1, check.stdout
    with pytest.MonkeyPatch.context() as env:
        env.setenv("OOMREC_MEM_BYTES", str(512 * 1024**3))
        assert cli("check", "plain", "2048").exit_code == 0


def test_a_csv_moved_with_git_mv_keeps_its_sweeps_record(
    cli: Cli, repo: Repo, swept: Callable
) -> None:
    record = swept("plain")
    (repo.path / "benchmarks" / "old").mkdir()
    moved = "benchmarks/old/cuda_testhw_x.csv"
    repo.git("mv", CSV, moved)
    repo.git("commit", "-q", "-m", "benchmarks: file the old sweeps")
    # The provenance file stays behind (git does not move it): the moved CSV has none.
    assert not sidecar(repo, moved).exists()
    report = imported(cli)
    assert (report["added"], report["already_present"]) == (0, 1)
    assert lines(repo) == record
    # A copy git cannot tie to the sweep's CSV (only its file name agrees) is in doubt: the
    # sweep's record (96 GiB) does not cover the row's claim (any memory), so it is added.
    copy = repo.path / "elsewhere" / "cuda_testhw_x.csv"
    copy.parent.mkdir()
    copy.write_bytes((repo.path / moved).read_bytes())
    report = imported(cli, "elsewhere")
    assert report["added"] == 1
    assert lines(repo)[:1] == record
    assert lines(repo)[1].split(",")[5] == "elsewhere/cuda_testhw_x.csv"


def test_what_prune_archived_is_not_imported_again(cli: Cli, repo: Repo, swept: Callable) -> None:
    record = swept("plain")
    repo.commit("chunk the prefill\n\nOOM-Fix: plain\n")
    pruned = cli("record", "prune")
    assert pruned.exit_code == 0, pruned.stderr
    assert lines(repo) == []
    archive = lines(repo, ".oom-record.archive")
    assert [line.split(" ", 2)[2] for line in archive] == record
    for without_provenance in (False, True):
        if without_provenance:
            sidecar(repo).unlink()
        report = imported(cli)
        assert (report["added"], report["already_present"]) == (0, 1), without_provenance
        assert lines(repo) == []
        assert lines(repo, ".oom-record.archive") == archive
        # The fix still lifts the cell: the import launched nothing back into the record.
        assert cli("check", "plain", "2048").exit_code in (0, 3)


def test_a_nested_models_rows_become_the_nested_name(cli: Cli, repo: Repo, swept: Callable) -> None:
    record = swept("org/llama", script=ROW_RUNNER)
    assert [line.split(",")[:2] for line in record] == [["org/llama", "1024"]]
    rows = (repo.path / CSV).read_text()
    assert "\nllama,./models/org/llama," in rows
    for without_provenance in (False, True):
        if without_provenance:
            sidecar(repo).unlink()
        report = imported(cli)
        assert (report["added"], report["already_present"]) == (0, 1), without_provenance
        assert lines(repo) == record
    # A harness's CSV of its own (no sweep, no record): its rows are the nested model's.
    harness = 'llama,./models/org/llama,,,,,,,2026-07-03,,0.3.3,release,32,"Hi",4096,SKIP:oom'
    repo.commit("harness run", {"benchmarks/cuda_testhw_h.csv": csv_text(H15, harness)})
    report = imported(cli)
    assert report["added"] == 1
    nested = sorted(
        (r["source"], r["line"], r["model_column"], r["model"]) for r in report["nested_rows"]
    )
    assert nested == [
        ("benchmarks/cuda_testhw_h.csv", 2, "llama", "org/llama"),
        (CSV, 3, "llama", "org/llama"),
    ]
    assert [line.split(",")[:2] for line in lines(repo)] == [
        ["org/llama", "1024"],
        ["org/llama", "4096"],
    ]


# A runner whose every cell completes: the probe of a lifted record.
OK_RUNNER = r"""
import sys
model_path, length, cell_csv = sys.argv[1:4]
tail = f'2026-07-03,,0.3.3,release,32,"Hi",{length}'
open(cell_csv, "w").write(f"HEADER\n{model_path[9:]},{model_path},{length},32,1,2,3,4,{tail}\n")
""".replace("HEADER", H15)


def test_what_a_probe_verified_is_not_imported_again(
    cli: Cli, repo: Repo, swept: Callable, tmp_path: Path
) -> None:
    repo.commit("add the prefill", {"prefill.py": BEFORE})
    record = swept("plain")
    repo.commit("Chunk the prefill\n\nOOM-Fix: plain\n", {"prefill.py": AFTER})
    probe = tmp_path / "ok.py"
    probe.write_text(OK_RUNNER)
    ran = cli(
        "sweep", "--models", "plain", "--lengths", "1024", "--output", "benchmarks/probe.csv",
        "--runner", f"{sys.executable} {probe} {{model_path}} {{length}} {{cell_csv}}", "--json",
    )  # fmt: skip
    assert ran.exit_code == 0, ran.stderr
    assert json.loads(ran.stdout)["cells"][0]["verified"] == record
    assert lines(repo) == []
    archive = lines(repo, ".oom-record.archive")
    assert [line.split(" ")[1].split(":")[0] for line in archive] == ["verified"]
    for without_provenance in (False, True):
        if without_provenance:
            sidecar(repo).unlink()
        report = imported(cli, CSV)
        assert lines(repo) == [], without_provenance
        assert (report["added"], report["already_present"]) == (0, 1)
        assert lines(repo, ".oom-record.archive") == archive


def sweep_on_a_and_publish(fleet: Fleet, cli: Cli, tmp_path: Path, csv: str) -> Path:  # noqa: F811
    """Host A sweeps gemma-4-31b at 512 and 1024 tokens (1024 runs out of memory), commits the
    CSV (not its provenance file) and pushes it, and publishes its record."""
    a = fleet.on("A")
    runner = tmp_path / "runner.py"
    runner.write_text(RUNNER)
    swept = cli(
        "sweep", "--runner", f"{sys.executable} {runner} {{model_path}} {{length}} {{cell_csv}}",
        "--models", "gemma-4-31b", "--lengths", "512 1024", "--output", csv,
    )  # fmt: skip
    assert swept.exit_code == 0, swept.stderr
    git(a, "add", csv)
    git(a, "commit", "-q", "-m", "benchmarks")
    git(a, "push", "-q", "origin", "main")
    assert cli("record", "push").exit_code == 0
    return a


def test_a_fresh_clone_adds_no_duplicate_of_a_shared_record(
    fleet: Fleet,  # noqa: F811
    cli: Cli,
    tmp_path: Path,
) -> None:
    """B clones after A published: the CSV without its provenance file, A's record in notes.
    A duplicate from the row would carry no memory and skip the cell on a 512 GiB gb10."""
    csv = "benchmarks/cuda_gb10_x.csv"
    sweep_on_a_and_publish(fleet, cli, tmp_path, csv)
    b = fleet.on("B")
    assert (b / csv).exists() and not (b / f"{csv}.oomrec.json").exists()
    cli("remote", "setup")
    assert cli("record", "pull").exit_code == 0
    report = imported(cli)
    assert not (b / "benchmarks" / ".oom-record").exists()
    assert (report["added"], report["already_present"]) == (0, 1)
    assert cli("check", "gemma-4-31b", "2048").exit_code == 1
    fleet.mp.setenv("OOMREC_MEM_BYTES", str(512 * 1024**3))
    assert cli("check", "gemma-4-31b", "2048").exit_code == 0


def test_a_retraction_another_host_published_holds_its_csv_row(
    fleet: Fleet,  # noqa: F811
    cli: Cli,
    tmp_path: Path,
) -> None:
    """A sweeps, commits its CSV, publishes the record, then retracts it and publishes that.
    B's import of the CSV must not bring back what A took back; after A's restore, B holds the
    cell through A's shared record, and its import adds no duplicate of it either."""
    csv = "benchmarks/cuda_gb10_x.csv"
    sweep_on_a_and_publish(fleet, cli, tmp_path, csv)
    retracted = cli("record", "retract", "gemma-4-31b", "1024", "--reason", "host was broken")
    assert retracted.exit_code == 0, retracted.stderr
    assert cli("record", "push").exit_code == 0
    b = fleet.on("B")
    assert (b / csv).exists() and not (b / f"{csv}.oomrec.json").exists()
    cli("remote", "setup")
    assert cli("record", "pull").exit_code == 0
    report = imported(cli)
    assert not (b / "benchmarks" / ".oom-record").exists()
    assert (report["added"], report["retracted"]) == (0, 1)
    # A undoes it and publishes that: B applies A's record again, and imports no duplicate.
    fleet.on("A")
    assert cli("record", "restore", "--retracted").exit_code == 0
    assert cli("record", "push").exit_code == 0
    fleet.on("B")
    assert cli("record", "pull").exit_code == 0
    report = imported(cli)
    assert not (b / "benchmarks" / ".oom-record").exists()
    assert (report["added"], report["retracted"], report["already_present"]) == (0, 0, 1)
    assert cli("check", "gemma-4-31b", "2048").exit_code == 1


def test_the_harness_own_record_holds_its_row(cli: Cli, repo: Repo) -> None:
    """bench_longprompt.sh records an OOM as six fields (no tag, no memory: it applies on every
    machine) naming its CSV and the row's day; the row's import (gb10, 122 GiB, the CSV's
    adding commit) would only narrow it. A copy of the CSV that git cannot tie to the record's
    (only the file name agrees) is in doubt: the record's commit is not the row's, so it is
    added (the safe side)."""
    name = "cuda_gb10_longprompt_2026-07-03.csv"
    csv = f"benchmarks/{name}"
    harness = "9bef3f2334c4048d8540aa392ef030c97d4dad2c"
    row = (
        "gemma-4-31b,./models/gemma-4-31b,,,,,,,2026-07-03,NVIDIA_GB10_122GB,0.3.3,release,32,"
        '"Hi",32768,SKIP:oom'
    )
    repo.commit("harness run", {csv: csv_text(H15, row)})
    record = repo.path / "benchmarks" / ".oom-record"
    line = f"gemma-4-31b,32768,2026-07-03,{harness},,{csv}"
    record.write_text(line + "\n")
    report = imported(cli, "--hardware", "gb10")
    assert record.read_text() == line + "\n"
    assert (report["added"], report["already_present"]) == (0, 1)
    # A copy not in git (a download, another checkout): its rows get commit `unknown`.
    (repo.path / "old").mkdir()
    (repo.path / "old" / name).write_text(csv_text(H15, row))
    report = imported(cli, "--hardware", "gb10", "old")
    assert report["added"] == 1
    assert record.read_text().splitlines()[0] == line
    assert record.read_text().splitlines()[1].split(",")[3:6] == ["unknown", "", f"old/{name}"]


def test_a_row_with_extra_empty_fields_before_its_token_is_the_same_oom_to_both(
    cli: Cli, repo: Repo, models: Callable[..., None], runner: Runner
) -> None:
    """A runner's SKIP:oom row with 25 empty fields before the token (40 in all): the harness
    reads its last field, so does the sweep, and so does the import, which records the same
    cell (the row's length) rather than refusing the row."""
    models("m")
    runner.behave({"m:2048": "row:" + "," * 24 + "SKIP:oom"})
    out = "benchmarks/out.csv"
    swept = cli("sweep", "--runner", runner.template, "--output", out,
                "--models", "m", "--lengths", "512 2048 8192")  # fmt: skip
    assert swept.exit_code == 0, swept.stderr
    assert runner.launched() == ["m:512", "m:2048"]
    record = repo.path / "benchmarks" / ".oom-record"
    [line] = record.read_text().splitlines()
    assert line.startswith("m,2048,")
    rows = (repo.path / out).read_text().splitlines()
    assert [len(r.split(",")) for r in rows[1:]] == [16, 41, 16]  # the prompt holds one comma
    # Without the sweep's record and provenance, the import reads the same OOM from the row.
    record.unlink()
    for sidecar in (repo.path / "benchmarks").glob("out.csv.oomrec*"):
        sidecar.unlink()
    # (The scripted runner writes `hw` in its rows' hardware column.)
    imported = cli("record", "import-csv", out, "--all-hardware")
    assert imported.exit_code == 0, imported.stderr
    assert "cannot be matched" not in imported.stderr, imported.stderr
    assert [r.split(",")[:2] for r in record.read_text().splitlines()] == [["m", "2048"]]
