"""`oomrec report`: the OOM frontier, through the CLI and the library, on real files and repos."""

from __future__ import annotations

import json
import os
import pty
import re
import resource
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import html5lib
import pytest

from oomrec.core.records import OomRecord
from oomrec.core.schema import FAKE_OOM_PROMPT
from oomrec.core.units import GIB
from oomrec.report.frontier import (
    CellRows,
    Machine,
    Outcome,
    Scan,
    Seen,
    contradictions,
    record_evidence,
)
from tests.conftest import SHARED_CORPUS, CliResult
from tests.gitrepo import FIX_MESSAGE, IDENTITY, Repo

Cli = Callable[..., CliResult]
GEMMA = "gemma-4-31b-it-4bit"
HEADER = (
    "model,model_path,prompt_tokens,generated_tokens,prefill_ms,prefill_tok_s,decode_ms,"
    "decode_tok_s,date,hardware,mlxcel_version,build_type,max_tokens,prompt,prompt_target_len"
)
HW = "NVIDIA_GB10_CUDA13.0_122GB"
LONG_MODEL = "an-unusually-long-model-name-that-cannot-fit-in-one-column-4bit"
EVIL = "<img src=x onerror=alert(1)>"
_ANSI = re.compile(r"\x1b\[[0-9;?]*[a-zA-Z]")


def ran(model: str, length: int, day: str, hw: str = HW, prompt: str = "Hi, there") -> str:
    return (
        f"{model},./models/{model},{length},32,1.0,2.0,3.0,4.0,{day},{hw},0.4.0,release,32,"
        f'"{prompt}",{length}'
    )


def failed(model: str, length: int, day: str, token: str, hw: str = HW, gap: str = ",") -> str:
    head = f"{model},./models/{model},,,,,,,{day},{hw},0.4.0,release,32"
    return f'{head},"Hi, there",{length}{gap}{token}'


def csv_text(*rows: str) -> str:
    return "\n".join([HEADER, *rows]) + "\n"


def report_json(cli: Cli, *args: str) -> dict:
    result = cli("report", "--json", *args)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


# -- the real corpus -------------------------------------------------------------------------


@pytest.fixture
def real_corpus(repo: Repo) -> Repo:
    if not SHARED_CORPUS.is_dir():
        pytest.skip(f"the real harness corpus is not at {SHARED_CORPUS}")
    shutil.copytree(SHARED_CORPUS / "benchmarks", repo.path / "benchmarks")
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", "the harness's CSVs")
    return repo


def test_real_corpus_gemma_oom_on_gb10_is_contradicted_by_the_later_run(
    real_corpus: Repo, cli: Cli
) -> None:
    data = report_json(cli)
    assert data["schema_version"] == 2
    gemma = [o for o in data["ooms"] if o["model"] == GEMMA]
    assert [(o["length"], o["machine"], o["date"], o["kind"]) for o in gemma] == [
        (32768, "gb10 122GB", "2026-07-03", "csv")
    ]
    assert gemma[0]["where"] == "benchmarks/cuda_gb10_longprompt_2026-07-03.csv:21"
    # The cells come folded: runs of the lengths tried with one outcome, which never overlap.
    runs = [c for c in data["cells"] if c["model"] == GEMMA and c["machine"] == "gb10 122GB"]

    def cell(n: int) -> str:
        (outcome,) = [c["outcome"] for c in runs if c["from"] <= n <= c["to"]]
        return outcome

    assert cell(512) == cell(2048) == cell(16384) == "ran"
    assert cell(8192) == "failed"
    # The OOM shows over the later run: hiding it is the worse error.
    assert cell(32768) == "oom"
    (contra,) = data["contradictions"]
    assert contra["oom"]["model"] == GEMMA and contra["oom"]["date"] == "2026-07-03"
    assert contra["ran"] == {
        "length": 32768,
        "machine": "gb10 122GB",
        "where": "benchmarks/cuda_gb10_gemma_longprompt_672_2026-07-06.csv:6",
        "date": "2026-07-06",
        # The commit that added the row, as for the OOM's: a cell that ran and stopped has
        # both asked of git (memory regressions are judged by them). One commit added both,
        # so no regression.
        "commit": real_corpus.head(),
    }
    assert data["regressions"] == []
    frontier = next(
        f for f in data["frontier"] if f["model"] == GEMMA and f["machine"] == "gb10 122GB"
    )
    assert frontier["ran_max"]["length"] == 32768
    assert frontier["oom_min"]["length"] == 32768 and frontier["oom_min"]["status"] == "applies"
    assert frontier["contradicted"] is True

    plain = cli("report")
    line = next(x for x in plain.stdout.splitlines() if x.startswith(GEMMA) and "gb10" in x)
    # The harness's rows name no commit: the OOM is judged at the commit that added its row,
    # as import-csv records it, and shown since then.
    assert gemma[0]["commit"] == real_corpus.head()
    assert f"ok <=32k | oom >=32k since {real_corpus.head()[:7]} !contradicted" in line
    grid = cli("report", "--machine", "gb10").stdout.splitlines()
    assert next(x for x in grid if x.startswith(GEMMA + " ")).split()[1:] == [
        "o", "o", "f", "X!"
    ]  # fmt: skip
    assert grid[1].split() == ["model", "512", "2k", "8k", "32k"]


def test_real_corpus_html_parses_holds_the_json_and_loads_nothing(
    real_corpus: Repo, cli: Cli, tmp_path: Path
) -> None:
    page = tmp_path / "frontier.html"
    result = cli("report", "--html", str(page), "--json")
    assert result.exit_code == 0, result.stderr
    text = page.read_text(encoding="utf-8")
    assert_offline_html5(text)
    embedded = re.search(r'<script type="application/json" id="oomrec-report">(.*?)</script>', text)
    assert embedded is not None
    assert json.loads(embedded.group(1)) == json.loads(result.stdout)
    visible = html_text(text)
    assert f"ok <=32k | oom >=32k since {real_corpus.head()[:7]} !contradicted" in visible
    assert f"{GEMMA} ran out of memory at 32768 on gb10 122GB" in visible


def assert_offline_html5(text: str) -> None:
    """Strict HTML5 (html5lib raises on any parse error) and no resource from elsewhere."""
    html5lib.HTMLParser(strict=True, namespaceHTMLElements=False).parse(text)
    assert text.startswith("<!DOCTYPE html>")
    assert not re.search(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//""", text, re.I)
    assert not re.search(r"@import|url\s*\(", text, re.I)
    assert "<link" not in text and "<img" not in text and "<iframe" not in text
    for script in re.findall(r"<script\b[^>]*>", text):
        assert script == '<script type="application/json" id="oomrec-report">'


def html_text(text: str) -> str:
    doc = html5lib.parse(text, namespaceHTMLElements=False)
    body = doc.find("body")
    assert body is not None
    return " ".join(
        " ".join(el.itertext()) for el in body if el.tag not in ("script", "svg", "style")
    )


# -- a repository with a record, a fix and an archive ----------------------------------------


@pytest.fixture
def fixed(repo: Repo) -> tuple[Repo, str, str]:
    """An OOM of gemma at 32768 recorded before a fix (OOM-Fix: gemma-4-*), one of llama in a
    CSV after it, and the runs: gemma ran at 8192 before the fix and 32768 after."""
    pre = repo.commit(
        "before the fix",
        {
            "benchmarks/cuda_gb10_longprompt_2026-07-03.csv": csv_text(
                ran(GEMMA, 8192, "2026-07-03"),
                ran("llama-3.1-8b-4bit", 8192, "2026-07-03"),
            )
        },
    )
    fix = repo.commit(FIX_MESSAGE)
    repo.commit(
        "after the fix",
        {
            "benchmarks/cuda_gb10_longprompt_2026-07-09.csv": csv_text(
                ran(GEMMA, 32768, "2026-07-09"),
                failed("llama-3.1-8b-4bit", 32768, "2026-07-09", "SKIP:oom"),
                failed("llama-3.1-8b-4bit", 65536, "2026-07-09", "SKIP:oom_backstop"),
            )
        },
    )
    record = repo.path / "benchmarks" / ".oom-record"
    record.write_text(
        f"{GEMMA},32768,2026-07-03,{pre},,benchmarks/cuda_gb10_longprompt_2026-07-03.csv,gb10\n"
        "not a record line\n",
        encoding="utf-8",
    )
    (repo.path / "benchmarks" / ".oom-record.archive").write_text(
        f"2026-07-10T00:00:00Z {fix} qwen3-30b-a3b-4bit,16384,2026-07-01,{pre},,x.csv,gb10\n",
        encoding="utf-8",
    )
    return repo, pre, fix


def test_a_fix_takes_an_oom_out_of_play_and_is_marked_on_the_timeline(
    fixed: tuple[Repo, str, str], cli: Cli, tmp_path: Path
) -> None:
    repo, _, fix = fixed
    page = tmp_path / "out.html"
    result = cli("report", "--json", "--html", str(page))
    assert result.exit_code == 0
    # The record's line oomrec cannot read is warned about, and kept.
    assert "not a record" in result.stderr
    assert "not a record line" in (repo.path / "benchmarks" / ".oom-record").read_text()
    data = json.loads(result.stdout)
    by_kind = {(o["model"], o["kind"]): o for o in data["ooms"]}
    assert by_kind[(GEMMA, "record")]["status"] == "lifted, unverified"
    assert by_kind[(GEMMA, "record")]["fix"] == fix
    assert by_kind[(GEMMA, "record")]["where"] == "benchmarks/.oom-record:1"
    assert by_kind[("qwen3-30b-a3b-4bit", "archive")]["where"] == "benchmarks/.oom-record.archive:1"
    assert by_kind[("llama-3.1-8b-4bit", "csv")]["status"] == "applies"
    assert [f["sha"] for f in data["fixes"]] == [fix]
    gemma = next(f for f in data["frontier"] if f["model"] == GEMMA)
    assert gemma["oom_min"] is None
    assert gemma["lifted_oom_min"]["length"] == 32768
    llama = next(f for f in data["frontier"] if f["model"] == "llama-3.1-8b-4bit")
    assert llama["ran_max"]["length"] == 8192 and llama["oom_min"]["length"] == 32768
    # A record's length joins its machine's lengths: the others were asked about it too.
    assert llama["never_tried"] == [[16384, 16384]]
    qwen = next(f for f in data["frontier"] if f["model"] == "qwen3-30b-a3b-4bit")
    # Known only from the archive, where a fix of other models cannot have put it: it applies.
    assert qwen["ran_max"] is None and qwen["never_tried"] == [[8192, 8192], [32768, 65536]]
    assert qwen["oom_min"]["kind"] == "archive" and qwen["oom_min"]["status"] == "applies"
    timeline = {t["model"]: t["points"] for t in data["timeline"]}
    assert [(p["date"], p["length"]) for p in timeline[GEMMA]] == [
        ("2026-07-03", 8192),
        ("2026-07-09", 32768),
    ]
    text = page.read_text(encoding="utf-8")
    assert_offline_html5(text)
    assert f"fix {fix[:7]}" in text
    assert "lifted by fix" in html_text(text)

    plain = cli("report").stdout
    assert f"ok <=32k | oom >=32k lifted by fix {fix[:7]}" in plain
    # A CSV row without a commit column is judged at the commit that added it (after the fix,
    # which is another model's): its OOM applies.
    assert f"ok <=8k | oom >=32k since {repo.head()[:7]}" in plain
    grid = cli("report", "--machine", "gb10 122GB").stdout.splitlines()
    rows = {x.split()[0]: x.split()[1:] for x in grid[2:] if x and not x.startswith(" ")}
    assert grid[1].split() == ["model", "8k", "16k", "32k", "64k"]
    assert rows[GEMMA] == ["o", ".", "o", "."]
    assert rows["llama-3.1-8b-4bit"] == ["o", ".", "X", "b"]
    assert rows["qwen3-30b-a3b-4bit"] == [".", "X", ".", "."]
    legend = "\n".join(grid)
    for word in ("ran", "never tried", "skipped by the backstop", "timed out", "failed"):
        assert word in legend


def test_the_glyphs_of_every_outcome(repo: Repo, cli: Cli) -> None:
    folder = repo.path / "benchmarks"
    folder.mkdir()
    (folder / "cuda_gb10_2026-08-01.csv").write_text(
        csv_text(
            ran("m-4bit", 512, "2026-08-01"),
            failed("m-4bit", 1024, "2026-08-01", "SKIP:oom"),
            failed("m-4bit", 2048, "2026-08-01", "SKIP:oom_backstop"),
            failed("m-4bit", 3000, "2026-08-01", "SKIP:oom_record"),
            failed("m-4bit", 4096, "2026-08-01", "FAIL:timeout"),
            failed("m-4bit", 5000, "2026-08-01", "FAIL:bench"),
            failed("m-4bit", 6000, "2026-08-01", "SKIP:oom_estimate"),
            ran("other-4bit", 7000, "2026-08-01"),
        ),
        encoding="utf-8",
    )
    out = cli("report", "--machine", "gb10").stdout.splitlines()
    assert out[1].split() == ["model", "512", "1k", "2k", "3000", "4k", "5000", "6000", "7000"]
    assert out[2].split() == ["m-4bit", "o", "X", "b", "r", "t", "f", "s", "."]


def test_a_faked_oom_is_no_oom_in_the_report(repo: Repo, cli: Cli) -> None:
    """A SKIP:oom row written by the fake hook (MLXCEL_BENCH_FAKE_OOM, sweep --fake-oom) and a
    record of kind `fake` are no evidence: the frontier shows only the real OOM."""
    folder = repo.path / "benchmarks"
    folder.mkdir()
    faked = failed("m-4bit", 1024, "2026-08-01", "SKIP:oom").replace(
        '"Hi, there"', '"(faked via MLXCEL_BENCH_FAKE_OOM)"'
    )
    (folder / "cuda_gb10_2026-08-01.csv").write_text(
        csv_text(
            ran("m-4bit", 512, "2026-08-01"),
            faked,
            failed("n-4bit", 2048, "2026-08-01", "SKIP:oom"),
        ),
        encoding="utf-8",
    )
    (folder / ".oom-record").write_text(
        f"m-4bit,1024,2026-08-01,unknown,,x.csv,gb10,{122 * 1024**3},fake\n"
    )
    frontier = report_json(cli)["frontier"]
    ooms = {f["model"]: f["oom_min"] for f in frontier}
    assert ooms["m-4bit"] is None
    assert ooms["n-4bit"] is not None


# -- hostile input --------------------------------------------------------------------------


def test_html_of_a_record_with_undecodable_bytes(repo: Repo, cli: Cli, tmp_path: Path) -> None:
    """A record line whose model is not UTF-8 (kept as surrogates, shown escaped everywhere
    else) is written into the page escaped too, not a UnicodeEncodeError traceback that leaves
    the page cut short."""
    (repo.path / "benchmarks").mkdir()
    (repo.path / "benchmarks" / ".oom-record").write_bytes(
        b"\xff\xfe-4bit,512,2026-07-01,unknown,,x.csv\n"
    )
    page = tmp_path / "frontier.html"
    result = cli("report", "--html", str(page), "--json")
    assert result.exit_code == 0, result.stderr
    text = page.read_text(encoding="utf-8")
    assert_offline_html5(text)
    assert "\\udcff\\udcfe-4bit" in html_text(text)
    assert json.loads(result.stdout)["models"] == ["\udcff\udcfe-4bit"]


def test_hostile_csvs_are_read_or_skipped_never_crash(repo: Repo, cli: Cli) -> None:
    folder = repo.path / "benchmarks"
    folder.mkdir()
    # A prompt holding commas and the words of a token is not a token: read from the end.
    (folder / "cuda_gb10_a.csv").write_bytes(
        b"\xef\xbb\xbf# a comment first\r\n"
        + csv_text(
            ran("quoted-4bit", 4096, "2026-08-01", prompt="a, b, SKIP:oom, c"),
            failed(EVIL, 512, "2026-08-01", "SKIP:oom", gap=",,"),
            # A length that str.isdigit accepts and int() does not.
            ran("superscript-4bit", 512, "2026-08-01").removesuffix(",512") + ",²",
            "short,row",
        )
        .replace("\n", "\r\n")
        .encode()
    )
    (folder / "no_model.csv").write_text("a,b\n1,2\n", encoding="utf-8")
    (folder / "binary.csv").write_bytes(b"model,x\n\0\0\0")
    (folder / "empty.csv").write_text("", encoding="utf-8")
    os.mkfifo(folder / "pipe.csv")
    data = report_json(cli)
    assert data["files"]["read"] == 1
    assert data["files"]["skipped"] == {
        "no model column": 1,
        "binary, not CSV text": 1,
        "empty (no header line)": 1,
        "not a regular file": 1,
    }
    assert not [c for c in data["cells"] if c["model"] == "superscript-4bit"]
    quoted = next(c for c in data["cells"] if c["model"] == "quoted-4bit")
    assert quoted["outcome"] == "ran" and quoted["from"] == quoted["to"] == 4096
    # A model name no directory can have (a shell's characters, issue 41) is left out, as the
    # import leaves it out; the hostile text reaches the page through a file name instead.
    assert not [o for o in data["ooms"] if o["model"] == EVIL]
    assert data["files"]["oom_rows_left_out"] == 1
    (folder / f"cuda_gb10_{EVIL}.csv").write_text(
        csv_text(failed("tag-4bit", 512, "2026-08-01", "SKIP:oom", gap=",,")), encoding="utf-8"
    )
    tag_model = next(o for o in report_json(cli)["ooms"] if o["model"] == "tag-4bit")
    assert tag_model["where"] == f"benchmarks/cuda_gb10_{EVIL}.csv:2"
    page = repo.path / "p.html"
    assert cli("report", "--html", str(page)).exit_code == 0
    text = page.read_text(encoding="utf-8")
    assert "<img" not in text
    assert "&lt;img src=x onerror=alert(1)&gt;" in text
    html5lib.HTMLParser(strict=True).parse(text)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("missing/",), "missing: no such file or folder"),
        (("--machine", "a100"), "--machine 'a100' names no machine class"),
        (("--html", "no/such/dir/out.html"), "cannot write no/such/dir/out.html"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    repo: Repo, cli: Cli, args: tuple[str, ...], expected: str
) -> None:
    (repo.path / "benchmarks").mkdir()
    (repo.path / "benchmarks" / "cuda_gb10_x.csv").write_text(
        csv_text(ran("m-4bit", 512, "2026-08-01")), encoding="utf-8"
    )
    result = cli("report", *args)
    assert result.exit_code == 2
    assert expected in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr


def test_a_report_of_nothing_says_so(repo: Repo, cli: Cli) -> None:
    """A header and nothing under it would read as a frontier with nothing wrong."""
    folder = repo.path / "benchmarks"
    folder.mkdir()
    (folder / "notes.csv").write_text("model,date\n")
    shown = cli("report")
    assert shown.exit_code == 0
    assert shown.stdout == "model  machine  frontier\n"
    assert shown.stderr == (
        "nothing to show: no benchmark row in the 1 CSV file(s) under benchmarks, and no OOM "
        "record in benchmarks/.oom-record\n"
    )
    assert cli("report", "--json").stderr == ""


def test_html_never_goes_over_the_record_or_a_csv_it_reads(repo: Repo, cli: Cli) -> None:
    """`--html` naming the record (by a hard link too), a file beside it, or one of the CSVs:
    refused before anything is read, and the file is as it was."""
    folder = repo.path / "benchmarks"
    folder.mkdir()
    csv_file = folder / "cuda_gb10_2026-08-01.csv"
    csv_file.write_text(csv_text(ran("m-4bit", 512, "2026-08-01")))
    record = folder / ".oom-record"
    record.write_text("m-4bit,1024,2026-08-01,unknown,,x.csv,gb10\n")
    os.link(record, repo.path / "hard-link")
    kept = {p: p.read_bytes() for p in (csv_file, record)}
    for target, what in (
        (record, "the OOM record benchmarks/.oom-record or a file beside it"),
        (repo.path / "hard-link", "the OOM record benchmarks/.oom-record or a file beside it"),
        (folder / ".oom-record.archive", "the OOM record benchmarks/.oom-record or a file beside"),
        (csv_file, "a CSV this report reads"),
    ):
        refused = cli("report", "--html", str(target))
        assert refused.exit_code == 2 and refused.stdout == ""
        assert refused.stderr.startswith(f"oomrec: error: --html {target} is {what}")
        assert refused.stderr.count("\n") == 1
    assert {p: p.read_bytes() for p in kept} == kept
    assert not (folder / ".oom-record.archive").exists()
    assert cli("report", "--html", str(repo.path / "page.html")).exit_code == 0


def test_html_to_a_fifo_is_written_while_read_and_refused_when_nothing_reads(
    repo: Repo, cli: Cli
) -> None:
    """A FIFO no process reads would block the page's open for good: refused in one line. One
    that is read (here by this test, opened before) gets the whole page."""
    folder = repo.path / "benchmarks"
    folder.mkdir()
    (folder / "cuda_gb10_2026-08-01.csv").write_text(csv_text(ran("m-4bit", 512, "2026-08-01")))
    fifo = repo.path / "page"
    os.mkfifo(fifo)
    refused = cli("report", "--html", str(fifo))
    assert refused.exit_code == 2
    assert refused.stderr == (
        f"oomrec: error: --html {fifo} is a FIFO no process reads; start its reader first, or "
        "give --html a file path\n"
    )
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        # A process of its own writes the page; the FIFO's 64 KiB buffer holds this small one,
        # so it ends before the page is read here.
        done = subprocess.run(
            [sys.executable, "-m", "oomrec", "report", "--html", str(fifo)],
            cwd=repo.path,
            capture_output=True,
            text=True,
            check=False,
        )
        page = os.read(reader, 1 << 16)
    finally:
        os.close(reader)
    assert done.returncode == 0, done.stderr
    assert page.startswith(b"<!DOCTYPE html>") and page.rstrip().endswith(b"</html>")


def test_no_benchmarks_folder_says_what_to_pass(repo: Repo, cli: Cli) -> None:
    result = cli("report")
    assert result.exit_code == 2 and "pass the CSV files or folders" in result.stderr


# -- the library: contradictions ------------------------------------------------------------


def _scan_with_runs(*runs: tuple[str, Machine, int, str]) -> Scan:
    scan = Scan()
    for model, machine, length, day in runs:
        cell = scan.cells.setdefault((model, machine, length), CellRows())
        cell.first[Outcome.RAN] = cell.latest[Outcome.RAN] = Seen(f"run.csv:{length}", day, "a")
    return scan


def test_contradictions_need_a_later_run_at_that_length_or_more_on_the_machine() -> None:
    gb10, m1 = Machine("gb10", 122 * GIB), Machine("m1ultra", 128 * GIB)
    rec = OomRecord(GEMMA, 8192, "2026-07-03", "abc", None, "x.csv", "gb10")
    evidence = record_evidence([(rec, ".oom-record:1", "record")])

    def found(*runs: tuple[str, Machine, int, str]) -> list[str]:
        return [c.seen.where for c in contradictions(evidence, _scan_with_runs(*runs))]

    assert found((GEMMA, gb10, 16384, "2026-07-04")) == ["run.csv:16384"]
    assert found((GEMMA, gb10, 8192, "2026-07-04")) == ["run.csv:8192"]
    assert found((GEMMA, gb10, 4096, "2026-07-04")) == []  # shorter
    assert found((GEMMA, gb10, 8192, "2026-07-03")) == []  # same day: which came first?
    assert found((GEMMA, gb10, 8192, "2026-07-02")) == []  # earlier
    assert found((GEMMA, m1, 8192, "2026-07-04")) == []  # another machine
    assert found(("other-4bit", gb10, 8192, "2026-07-04")) == []
    assert found((GEMMA, Machine("gb10"), 8192, "2026-07-04")) == ["run.csv:8192"]
    assert found((GEMMA, Machine("gb10", 64 * GIB), 8192, "2026-07-04")) == ["run.csv:8192"]
    untagged = OomRecord(GEMMA, 8192, "2026-07-03", "abc", None, "x.csv", None)
    anywhere = record_evidence([(untagged, ".oom-record:2", "record")])
    assert contradictions(anywhere, _scan_with_runs((GEMMA, gb10, 8192, "2026-07-04"))) == []


# -- the terminal ---------------------------------------------------------------------------


@pytest.fixture
def small(repo: Repo) -> Repo:
    folder = repo.path / "benchmarks"
    folder.mkdir()
    rows = [ran(LONG_MODEL, 512, "2026-08-01"), failed(LONG_MODEL, 2048, "2026-08-01", "SKIP:oom")]
    for hw in ("Apple_M1_Ultra_128GB", "Apple_M5_Max_128GB", "AMD_Radeon_gfx1151_96GB"):
        rows += [
            ran(LONG_MODEL, 2048, "2026-08-01", hw=hw),
            ran("tiny-4bit", 8192, "2026-08-01", hw=hw),
        ]
    # More lengths than fit in 80 columns: the grid goes on in another table.
    rows += [ran("tiny-4bit", 2**k, "2026-08-01") for k in range(6, 26)]
    (folder / "cuda_gb10_x.csv").write_text(csv_text(*rows), encoding="utf-8")
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", "csv")
    return repo


def _run(argv: list[str], cwd: Path, tty: bool) -> str:
    env = {**os.environ, **IDENTITY, "COLUMNS": "80", "LINES": "50", "TERM": "xterm"}
    env.pop("NO_COLOR", None)
    if not tty:
        done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=True)
        return done.stdout
    leader, follower = pty.openpty()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=follower, stderr=subprocess.DEVNULL)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    proc.wait()
    os.close(leader)
    return _ANSI.sub("", b"".join(chunks).decode()).replace("\r\n", "\n")


@pytest.mark.parametrize("extra", [(), ("--machine", "gb10")])
def test_on_a_terminal_it_fits_80_columns_and_wraps_model_names(
    small: Repo, extra: tuple[str, ...]
) -> None:
    out = _run([sys.executable, "-m", "oomrec", "report", *extra], small.path, tty=True)
    lines = out.splitlines()
    assert lines and max(len(x) for x in lines) <= 80
    assert "┃" in out or "│" in out
    assert "…" not in out
    first_column = "".join(
        x.split("│")[1].strip() for x in lines if x.startswith("│") and x.count("│") > 2
    )
    assert LONG_MODEL in first_column
    # Every column is there, in some table.
    headers = " ".join(x for x in lines if x.startswith("┃"))
    for label in ("1k", "32k", "32768k") if extra else ("gb10 122GB", "m5max 128GB"):
        assert f" {label} " in headers


def test_through_a_pipe_it_is_plain_one_row_per_line(small: Repo) -> None:
    out = _run([sys.executable, "-m", "oomrec", "report"], small.path, tty=False)
    assert not set("│┃━─┏┗") & set(out)
    lines = out.splitlines()
    assert lines[0].split() == ["model", "machine", "frontier"]
    mine = [x for x in lines if x.startswith(LONG_MODEL)]
    assert len(mine) == 4
    assert any(x.endswith(f"ok <=512 | oom >=2k since {small.head()[:7]}") for x in mine)


def test_record_stale_lists_contradicted_records_and_keeps_them(repo: Repo, cli: Cli) -> None:
    folder = repo.path / "benchmarks"
    folder.mkdir()
    (folder / "cuda_gb10_2026-07-06.csv").write_text(
        csv_text(ran(GEMMA, 32768, "2026-07-06"), ran(GEMMA, 65536, "2026-07-01")),
        encoding="utf-8",
    )
    line = f"{GEMMA},32768,2026-07-03,unknown,,benchmarks/cuda_gb10_2026-07-03.csv,gb10"
    other = f"{GEMMA},131072,2026-07-03,unknown,,benchmarks/cuda_gb10_2026-07-03.csv,gb10"
    (folder / ".oom-record").write_text(f"{line}\n{other}\n", encoding="utf-8")
    data = json.loads(cli("record", "stale", "--json").stdout)
    (found,) = data["contradicted"]
    assert found["oom"]["where"] == "benchmarks/.oom-record:1"
    assert found["ran"]["where"] == "benchmarks/cuda_gb10_2026-07-06.csv:2"
    text = cli("record", "stale").stdout
    assert f"contradicted: {GEMMA} oom at 32768 on gb10" in text
    assert (folder / ".oom-record").read_text() == f"{line}\n{other}\n"


def test_outside_git_every_oom_applies_and_files_can_be_named(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    csv_file = tmp_path / "run.csv"
    csv_file.write_text(
        csv_text(
            ran("m-4bit", 512, "2026-08-01"), failed("m-4bit", 2048, "2026-08-01", "SKIP:oom")
        ),
        encoding="utf-8",
    )
    data = report_json(cli, str(csv_file))
    assert data["head"] is None and data["fixes"] == []
    (oom,) = data["ooms"]
    assert (oom["where"], oom["status"]) == ("run.csv:3", "applies")
    assert data["frontier"][0]["ran_max"]["length"] == 512


def test_json_is_one_ascii_line_even_for_what_orjson_refuses(repo: Repo) -> None:
    """`--json` is written by orjson, which refuses an integer beyond 64 bits and writes
    non-ASCII text as UTF-8: such a report still prints, as one line of escaped ASCII JSON, to
    a stdout whose encoding is ASCII; so does one orjson writes."""
    folder = repo.path / "benchmarks"
    folder.mkdir()
    huge = 10**30
    (folder / "cuda_gb10_2026-08-01.csv").write_text(
        csv_text(ran("caf\u00e9-4bit", 512, "2026-08-01"), ran("big-4bit", huge, "2026-08-01")),
        encoding="utf-8",
    )
    (folder / "cuda_gb10_2026-08-02.csv").write_text(csv_text(ran("m-4bit", 512, "2026-08-02")))

    def report(*args: str) -> dict:
        done = subprocess.run(
            [sys.executable, "-m", "oomrec", "report", "--json", *args],
            capture_output=True,
            cwd=repo.path,
            env={**os.environ, "PYTHONIOENCODING": "ascii", "OOMREC_RECORD": "no-record"},
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.isascii() and done.stdout.count(b"\n") == 1, done.stdout[:200]
        data: dict = json.loads(done.stdout)
        assert data["schema_version"] == 2
        return data

    assert report("benchmarks/cuda_gb10_2026-08-02.csv")["models"] == ["m-4bit"]
    data = report()
    # A length beyond 64 bits is no length, as import-csv reads it (core.records.bounded_int).
    assert data["models"] == ["caf\u00e9-4bit", "m-4bit"]
    assert not [c for c in data["cells"] if c["model"] == "big-4bit"]


@pytest.mark.parametrize("unbuffered", ["", "1"])
def test_json_cut_short_by_the_file_size_limit_is_an_error_buffered_or_not(
    repo: Repo, tmp_path: Path, unbuffered: str
) -> None:
    """An output that takes only part of the JSON (a file size limit, a disk filling up) is
    the one-line error, exit 2. With PYTHONUNBUFFERED (python -u, many containers) stdout's
    binary layer is a raw file whose write may take part and say how much: the rest was lost,
    and the report exited 0 with half a JSON object."""
    folder = repo.path / "benchmarks"
    folder.mkdir()
    rows = [ran(f"model-{i}-4bit", 512, "2026-08-01") for i in range(1000)]
    (folder / "cuda_gb10_2026-08-01.csv").write_text(csv_text(*rows), encoding="utf-8")
    env = {**os.environ, "OOMREC_RECORD": "no-record", "PYTHONUNBUFFERED": unbuffered}
    limit = 64 * 1024

    def small_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    out = tmp_path / "out.json"
    with out.open("wb") as stdout:
        done = subprocess.run(
            [sys.executable, "-m", "oomrec", "report", "--json"],
            stdout=stdout,
            stderr=subprocess.PIPE,
            cwd=repo.path,
            env=env,
            preexec_fn=small_files,
        )
    assert out.stat().st_size == limit
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        b"oomrec: error: cannot write the output: File too large; free space or send it elsewhere\n"
    )


def test_the_report_process_ends_with_its_status_and_all_its_output(repo: Repo) -> None:
    """The report's process leaves through os._exit (entry._QUICK_EXIT): whatever it printed
    is all there, its exit status is the command's, and a reader that stops early gets no
    traceback."""
    folder = repo.path / "benchmarks"
    folder.mkdir()
    rows = [ran(f"model-{i}-4bit", 512 * (1 + i % 4), "2026-08-01") for i in range(3000)]
    (folder / "cuda_gb10_2026-08-01.csv").write_text(csv_text(*rows), encoding="utf-8")
    # Buffered, as a pipe's stdout is unless PYTHONUNBUFFERED says otherwise.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    env["OOMREC_RECORD"] = "no-record"
    argv = [sys.executable, "-m", "oomrec", "report"]

    done = subprocess.run([*argv, "--json"], capture_output=True, cwd=repo.path, env=env)
    assert done.returncode == 0, done.stderr
    # Far more than a pipe holds: all of it was flushed before the process ended.
    assert len(done.stdout) > 256 * 1024
    assert len(json.loads(done.stdout)["models"]) == 3000

    # One that fits in stdout's buffer, where it waits until something flushes it.
    (repo.path / "small.csv").write_text(csv_text(ran("m-4bit", 512, "2026-08-01")))
    small = subprocess.run(
        [*argv, "--json", "small.csv"], capture_output=True, cwd=repo.path, env=env
    )
    assert small.returncode == 0 and json.loads(small.stdout)["models"] == ["m-4bit"]

    text = subprocess.run(argv, capture_output=True, cwd=repo.path, env=env)
    assert text.returncode == 0 and text.stdout.count(b"\n") == 3001, text.stderr

    wrong = subprocess.run(
        [*argv, "--machine", "nope"], capture_output=True, cwd=repo.path, env=env
    )
    assert wrong.returncode == 2 and wrong.stdout == b""
    assert wrong.stderr.startswith(b"oomrec: error: --machine 'nope' names no machine class")
    assert wrong.stderr.count(b"\n") == 1

    if Path("/dev/full").exists():
        # An output that cannot be written: one line, exit 2, not "Exception ignored" and a
        # traceback from the interpreter's last flush.
        for args in (["small.csv"], ["--json", "small.csv"]):
            with open("/dev/full", "wb") as full:
                stuck = subprocess.run(
                    [*argv, *args], stdout=full, stderr=subprocess.PIPE, cwd=repo.path, env=env
                )
            assert stuck.returncode == 2
            assert stuck.stderr == (
                b"oomrec: error: cannot write the output: No space left on device; free space "
                b"or send it elsewhere\n"
            )

    with subprocess.Popen(
        [*argv, "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=repo.path, env=env
    ) as early:
        assert early.stdout is not None and early.stderr is not None
        assert early.stdout.read(10) == b'{"schema_v'
        early.stdout.close()
        assert b"Traceback" not in early.stderr.read()


def test_oom_rows_the_import_leaves_out_are_counted_in_the_report(repo: Repo, cli: Cli) -> None:
    """A SKIP:oom row with no length the import reads (`1e400`, `-4`, 20 digits) or no model
    is left out by both; the import names each, the report counts them in one warning, so it
    never drops evidence without a word. A faked OOM is no evidence: neither counts it."""
    folder = repo.path / "benchmarks"
    folder.mkdir()
    header = "model,prompt_target_len,hardware,prompt"
    rows = [
        "q-4bit,1e400,NVIDIA_GB10_122GB,x,SKIP:oom",
        "q-4bit,-4,NVIDIA_GB10_122GB,x,SKIP:oom",
        "q-4bit,99999999999999999999,NVIDIA_GB10_122GB,x,SKIP:oom",
        ",512,NVIDIA_GB10_122GB,x,SKIP:oom",
        f'q-4bit,,NVIDIA_GB10_122GB,"{FAKE_OOM_PROMPT}",SKIP:oom',
        "q-4bit,512,NVIDIA_GB10_122GB,x",
    ]
    (folder / "cuda_gb10_a.csv").write_text("\n".join([header, *rows]) + "\n")
    imported = cli("record", "import-csv", "--dry-run", "--json")
    assert imported.exit_code == 0, imported.stderr
    every = json.loads(imported.stdout)["bad_rows"]
    bad = [b for b in every if not b["reason"].startswith("faked OOM")]
    assert sorted(b["line"] for b in bad) == [2, 3, 4, 5] and len(every) == 5
    shown = cli("report", "--json")
    assert shown.exit_code == 0, shown.stderr
    assert json.loads(shown.stdout)["files"]["oom_rows_left_out"] == len(bad)
    assert shown.stderr == (
        "warning: 4 SKIP:oom rows have no model or length the report can place, and are left "
        "out; `oomrec record import-csv --dry-run` names each\n"
    )
