"""`oomrec sweep --refine N`: after the ladder, bisect each model's frontier with real runner
processes that run out of memory from a length the test hides, and check the bracket found,
that no probe launched at or above a length known to OOM, and what the summary, the JSON, the
dry run and the report say."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from oomrec.core.schema import HEADER_15
from oomrec.sweep.grid import refine_midpoint
from tests.conftest import CliResult
from tests.gitrepo import Repo

Cli = Callable[..., CliResult]
LADDER = "512 2048 8192 32768"

# Runs out of memory (prints the CUDA allocator's message, exits 1) from the length in
# hidden.json on; else writes an ok row. Logs each launch's length.
THRESHOLD = r"""#!/usr/bin/env python3
import json, sys
from pathlib import Path

here = Path(__file__).parent
model, model_path, length, cell_csv = sys.argv[1:5]
with open(here / "launched.txt", "a") as log:
    log.write(f"{model}:{length}\n")
hidden = json.loads((here / "hidden.json").read_text())[model]
if int(length) >= hidden:
    print("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", flush=True)
    sys.exit(1)
tail = f'2026-07-03,testhw,0.3.3,release,32,"Hello, how are you today?",{length}'
Path(cell_csv).write_text(f"HEADER\n{model},{model_path},{length},32,1.0,2.0,3.0,4.0,{tail}\n")
""".replace("HEADER", HEADER_15)


class Threshold:
    def __init__(self, directory: Path, hidden: dict[str, int]) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.dir = directory
        self.script = directory / "runner.py"
        self.script.write_text(THRESHOLD)
        self.script.chmod(0o755)
        (directory / "hidden.json").write_text(json.dumps(hidden))

    @property
    def template(self) -> str:
        return f"{self.script} {{model}} {{model_path}} {{length}} {{cell_csv}}"

    def launched(self, model: str) -> list[int]:
        log = self.dir / "launched.txt"
        lines = log.read_text().split() if log.exists() else []
        return [int(line.rpartition(":")[2]) for line in lines if line.startswith(f"{model}:")]


def sweep(cli: Cli, runner: Threshold, *args: str) -> CliResult:
    return cli(
        "sweep", "--runner", runner.template, "--output", "benchmarks/out.csv", "--json", *args
    )


def no_launch_at_or_above_a_known_oom(launched: list[int], hidden: int) -> None:
    """Each launch below every length that had run out of memory before it."""
    smallest_oom = None
    for length in launched:
        assert smallest_oom is None or length < smallest_oom, launched
        if length >= hidden:
            smallest_oom = length if smallest_oom is None else min(smallest_oom, length)


@pytest.mark.parametrize("hidden", [13000, 8193, 32768, 2500, 30000])
def test_refine_4_brackets_the_hidden_oom_within_a_sixteenth(
    repo: Repo, cli: Cli, tmp_path: Path, hidden: int
) -> None:
    (repo.path / "models" / "m").mkdir(parents=True)
    runner = Threshold(tmp_path / "runner", {"m": hidden})
    result = sweep(cli, runner, "--models", "m", "--lengths", LADDER, "--refine", "4")
    assert result.exit_code == 0, result.stderr
    body = json.loads(result.stdout)
    ladder = [512, 2048, 8192, 32768]
    ok = max(n for n in ladder if n < hidden)
    oom = min(n for n in ladder if n >= hidden)
    (bracket,) = body["frontier"]
    assert bracket["largest_ok"] < hidden <= bracket["smallest_oom"], bracket
    assert bracket["smallest_oom"] - bracket["largest_ok"] <= (oom - ok) / 16 + 256, bracket
    assert bracket["probes"] <= 4
    launched = runner.launched("m")
    # The ladder up to its first OOM (the backstop skips the rest), then the probes.
    rungs = [n for n in ladder if n <= oom]
    assert launched[: len(rungs)] == rungs
    no_launch_at_or_above_a_known_oom(launched, hidden)
    assert all(n % 256 == 0 for n in launched[len(rungs) :])
    # The CSV holds every probe's row: the report reads the refined frontier from it.
    rows = (repo.path / "benchmarks" / "out.csv").read_text().splitlines()[1:]
    assert len(rows) == len(launched) + len(ladder) - len(rungs)
    assert f"m: runs at {bracket['largest_ok']}, OOM at {bracket['smallest_oom']}" in result.stderr
    # The report reads the same bracket from the CSV and the record.
    report = cli("report", "benchmarks/out.csv", "--json")
    assert report.exit_code == 0, report.stderr
    (frontier,) = json.loads(report.stdout)["frontier"]
    assert frontier["machine"] == "testhw"
    if bracket["largest_ok"] is not None:
        assert frontier["ran_max"]["length"] == bracket["largest_ok"]
    assert frontier["oom_min"]["length"] == bracket["smallest_oom"]


def test_a_record_bounds_the_probes_and_nothing_launches_at_or_above_it(
    repo: Repo, cli: Cli, tmp_path: Path
) -> None:
    (repo.path / "models" / "m").mkdir(parents=True)
    # The model truly OOMs from 4000; the record knows 4096 (an earlier host's OOM).
    assert cli("record", "add", "m", "4096").exit_code == 0
    runner = Threshold(tmp_path / "runner", {"m": 4000})
    result = sweep(cli, runner, "--models", "m", "--lengths", LADDER, "--refine", "4")
    assert result.exit_code == 0, result.stderr
    launched = runner.launched("m")
    assert max(launched) < 4096, launched
    (bracket,) = json.loads(result.stdout)["frontier"]
    assert bracket["largest_ok"] < 4000 <= bracket["smallest_oom"] <= 4096


def test_no_bracket_no_probe_and_a_failure_stops_refining(
    repo: Repo, cli: Cli, tmp_path: Path
) -> None:
    for name in ("fits", "never"):
        (repo.path / "models" / name).mkdir(parents=True)
    runner = Threshold(tmp_path / "runner", {"fits": 10**9, "never": 1})
    result = sweep(cli, runner, "--models", "fits never", "--lengths", LADDER, "--refine", "4")
    assert result.exit_code == 0, result.stderr
    assert len(runner.launched("fits")) == 4
    # "never" OOMs at 512: the backstop skips the rest; nothing ran, so no bracket to refine.
    assert runner.launched("never") == [512]
    frontier = {b["model"]: b for b in json.loads(result.stdout)["frontier"]}
    assert frontier["fits"] == {
        "model": "fits", "largest_ok": 32768, "smallest_oom": None, "probes": 0, "stopped": None
    }  # fmt: skip
    assert frontier["never"]["probes"] == 0 and frontier["never"]["largest_ok"] is None


def test_the_dry_run_says_what_would_be_probed_and_launches_nothing(
    repo: Repo, cli: Cli, tmp_path: Path
) -> None:
    (repo.path / "models" / "m").mkdir(parents=True)
    assert cli("record", "add", "m", "32768").exit_code == 0
    runner = Threshold(tmp_path / "runner", {"m": 13000})
    result = cli(
        "sweep", "--runner", runner.template, "--models", "m", "--lengths", LADDER,
        "--refine", "4", "--refine-step", "1k", "--dry-run",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert "refine: then up to 4 probes per model by bisection (lengths at multiples of 1024)" in (
        result.stderr
    )
    assert "  m: no probe at or above 32768 (SKIP:oom_record)" in result.stderr
    assert runner.launched("m") == []


@pytest.mark.parametrize(
    ("value", "says"), [("0", "--refine-step '0'"), ("lots", "--refine-step 'lots'")]
)
def test_a_bad_refine_step_is_a_usage_error(
    repo: Repo, cli: Cli, tmp_path: Path, value: str, says: str
) -> None:
    runner = Threshold(tmp_path / "runner", {})
    result = cli("sweep", "--runner", runner.template, "--models", "m", "--refine-step", value)
    assert result.exit_code == 2
    assert says in result.stderr


@pytest.mark.parametrize(
    ("ran", "oom", "step", "probe"),
    [
        (8192, 32768, 256, 20480),
        (8192, 8448, 256, None),
        (8192, 8704, 256, 8448),
        (100, 1000, 256, 512),
        (0, 300, 256, 256),
        (8192, 32768, 1024, 20480),
        (511, 513, 1, 512),
    ],
)
def test_the_midpoint_is_a_multiple_of_the_step_strictly_inside(
    ran: int, oom: int, step: int, probe: int | None
) -> None:
    assert refine_midpoint(ran, oom, step) == probe


# Below the hidden length it fits (16 MiB) and writes an ok row; from it on it keeps growing
# until something stops it: only the memory guard can, so every such probe is a guard stop.
GROWS = r"""#!/usr/bin/env python3
import json, sys, time
from pathlib import Path

here = Path(__file__).parent
model, model_path, length, cell_csv = sys.argv[1:5]
with open(here / "launched.txt", "a") as log:
    log.write(f"{model}:{length}\n")
held = [bytearray(16 << 20)]
if int(length) >= json.loads((here / "hidden.json").read_text())[model]:
    while True:
        block = bytearray(8 << 20)
        block[::4096] = b"x" * (len(block) // 4096)
        held.append(block)
        time.sleep(0.01)
tail = f'2026-07-03,testhw,0.3.3,release,32,"Hello",{length}'
Path(cell_csv).write_text(f"HEADER\n{model},{model_path},{length},32,1.0,2.0,3.0,4.0,{tail}\n")
""".replace("HEADER", HEADER_15)


def test_with_the_guard_each_probe_past_the_frontier_is_stopped_and_recorded(
    repo: Repo, cli: Cli, tmp_path: Path
) -> None:
    (repo.path / "models" / "m").mkdir(parents=True)
    runner = Threshold(tmp_path / "runner", {"m": 13000})
    runner.script.write_text(GROWS)
    result = sweep(
        cli, runner, "--models", "m", "--lengths", LADDER, "--refine", "4",
        "--max-cell-memory", "200M", "--timeout", "600",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    body = json.loads(result.stdout)
    (bracket,) = body["frontier"]
    assert bracket["largest_ok"] < 13000 <= bracket["smallest_oom"], bracket
    assert bracket["smallest_oom"] - bracket["largest_ok"] <= (32768 - 8192) / 16 + 256
    stopped = [c for c in body["cells"] if c["verdict"] == "SKIP:oom_guard"]
    assert [c["length"] for c in stopped] == [n for n in runner.launched("m") if n >= 13000]
    assert all(c["recorded"].endswith(",guard") for c in stopped)
    no_launch_at_or_above_a_known_oom(runner.launched("m"), 13000)


def test_a_resumed_refine_takes_the_earlier_probes_and_launches_nothing_again(
    repo: Repo, cli: Cli, tmp_path: Path
) -> None:
    (repo.path / "models" / "m").mkdir(parents=True)
    runner = Threshold(tmp_path / "runner", {"m": 13000})
    first = sweep(cli, runner, "--models", "m", "--lengths", LADDER, "--refine", "4")
    assert first.exit_code == 0, first.stderr
    launched = runner.launched("m")
    csv = (repo.path / "benchmarks" / "out.csv").read_text()
    again = sweep(cli, runner, "--models", "m", "--lengths", LADDER, "--refine", "4", "--resume")
    assert again.exit_code == 0, again.stderr
    assert runner.launched("m") == launched
    assert json.loads(again.stdout)["frontier"] == json.loads(first.stdout)["frontier"]
    assert (repo.path / "benchmarks" / "out.csv").read_text() == csv


def test_a_refine_resumed_on_another_commit_probes_afresh_with_one_row_per_cell(
    repo: Repo, cli: Cli, tmp_path: Path
) -> None:
    (repo.path / "models" / "m").mkdir(parents=True)
    runner = Threshold(tmp_path / "runner", {"m": 30000})
    args = ("--models", "m", "--lengths", "512 32768", "--refine", "2")
    assert sweep(cli, runner, *args).exit_code == 0
    repo.commit("another commit")
    again = sweep(cli, runner, *args, "--resume")
    assert again.exit_code == 0, again.stderr
    rows = list(csv.reader((repo.path / "benchmarks" / "out.csv").open()))[1:]
    cells = [(row[0], row[14]) for row in rows]
    assert len(cells) == len(set(cells)), rows
    assert {length for _, length in cells} >= {"512", "32768"}


def test_a_record_between_rungs_bounds_the_bracket_and_spends_no_probe(
    repo: Repo, cli: Cli, tmp_path: Path
) -> None:
    (repo.path / "models" / "m").mkdir(parents=True)
    assert cli("record", "add", "m", "16384").exit_code == 0
    runner = Threshold(tmp_path / "runner", {"m": 12000})
    args = ("--models", "m", "--lengths", "8192 32768", "--refine", "4")
    planned = cli("sweep", "--runner", runner.template, *args, "--dry-run")
    assert "  m: no probe at or above 16384 (SKIP:oom_record)" in planned.stderr
    result = sweep(cli, runner, *args)
    assert result.exit_code == 0, result.stderr
    cells = json.loads(result.stdout)["cells"]
    probes = [c for c in cells if c["length"] not in (8192, 32768)]
    # Every probe launched, inside (8192, 16384): none spent on a cell the record skips.
    assert len(probes) == 4 and all(c["launched"] for c in probes), probes
    assert all(8192 < c["length"] < 16384 for c in probes)
    (bracket,) = json.loads(result.stdout)["frontier"]
    assert bracket["smallest_oom"] - bracket["largest_ok"] <= (16384 - 8192) / 16 + 256
