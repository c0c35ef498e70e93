"""Issue 43: a guard stop is its own state in every view, never an OOM of the frontier; and
every state has a colour of its own, readable, in light and dark."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import pytest

from oomrec.core.units import GIB, MIB
from oomrec.report import html
from tests.conftest import CliResult
from tests.gitrepo import Repo
from tests.test_report import csv_text, failed, ran

Cli = Callable[..., CliResult]
LIMIT = 1536 * MIB


def _corpus(repo: Repo) -> None:
    """`guarded` ran at 2k and was stopped by the guard at 4k (a 1.5 GiB budget); `both` was
    stopped at 2k and ran out of memory at 8k; `plain` ran out of memory at 4k. Hardware in the
    CSV: gb10, 122 GB, as the records say."""
    folder = repo.path / "benchmarks"
    folder.mkdir()
    (folder / "cuda_gb10_2026-07-03.csv").write_text(
        csv_text(
            ran("guarded", 2048, "2026-07-03"),
            failed("guarded", 4096, "2026-07-03", "SKIP:oom_guard"),
            ran("both", 1024, "2026-07-03"),
            failed("plain", 4096, "2026-07-03", "SKIP:oom"),
        )
    )
    head = repo.head()
    mem = 122 * GIB
    (folder / ".oom-record").write_text(
        f"guarded,4096,2026-07-03,{head},,benchmarks/x.csv,gb10,{LIMIT},guard\n"
        f"both,2048,2026-07-03,{head},,benchmarks/x.csv,gb10,{LIMIT},guard\n"
        f"both,8192,2026-07-03,{head},,benchmarks/x.csv,gb10,{mem},\n"
    )


# A guard record holds the budget the cell ran under: by the one memory rule it speaks for
# budgets no larger, so it is a class of its own beside the host's.
BUDGET, HOST = "gb10 1.5GB", "gb10 122GB"


def _frontier(data: dict, model: str, machine: str) -> dict:
    [f] = [f for f in data["frontier"] if (f["model"], f["machine"]) == (model, machine)]
    return f


def test_a_guard_stop_is_never_an_oom_of_the_frontier(cli: Cli, repo: Repo) -> None:
    _corpus(repo)
    done = cli("report", "--json")
    assert done.exit_code == 0, done.stderr
    data = json.loads(done.stdout)
    guarded = _frontier(data, "guarded", BUDGET)
    assert guarded["oom_min"] is None
    assert guarded["guard_min"]["length"] == 4096
    assert guarded["guard_min"]["stopped_by"] == "guard"
    assert guarded["guard_min"]["limit_bytes"] == LIMIT
    # The host's class: the true OOM is in its frontier (and covers the smaller budget too).
    both = _frontier(data, "both", HOST)
    assert both["oom_min"]["length"] == 8192 and both["oom_min"]["stopped_by"] == "oom"
    assert both["guard_min"] is None
    both_budget = _frontier(data, "both", BUDGET)
    assert both_budget["oom_min"]["length"] == 8192
    assert both_budget["guard_min"]["length"] == 2048
    assert _frontier(data, "plain", HOST)["oom_min"]["length"] == 4096
    assert _frontier(data, "guarded", HOST)["guard_min"] is None
    # The grid's runs name the guard's own state.
    states = {(c["model"], c["machine"], c["from"]): c["outcome"] for c in data["cells"]}
    assert states[("guarded", BUDGET, 4096)] == "guard"
    assert states[("both", BUDGET, 2048)] == "guard"
    assert states[("both", BUDGET, 8192)] == "oom"
    # The harness's own SKIP:oom_guard row is drawn as a guard stop too, never an OOM.
    assert states[("guarded", HOST, 4096)] == "guard"
    # And the OOM list says which is which.
    stops = {(o["model"], o["length"]): o["stopped_by"] for o in data["ooms"]}
    assert stops[("guarded", 4096)] == "guard" and stops[("both", 8192)] == "oom"

    text = cli("report")
    assert text.exit_code == 0, text.stderr
    lines = {tuple(line.split()[:3]): line for line in text.stdout.splitlines() if line.strip()}
    guarded_line = lines[("guarded", "gb10", "1.5GB")]
    assert "oom >=" not in guarded_line and "guard >=4k at 1.5 GiB" in guarded_line
    both_line = lines[("both", "gb10", "1.5GB")]
    assert "oom >=8k" in both_line and "guard >=2k at 1.5 GiB" in both_line


def test_the_page_draws_a_guard_stop_in_its_own_class(cli: Cli, repo: Repo) -> None:
    _corpus(repo)
    page = repo.path / "page.html"
    done = cli("report", "--html", str(page))
    assert done.exit_code == 0, done.stderr
    text = page.read_text()
    # The frontier's cell of `guarded` is a guard cell, not an OOM cell.
    assert re.search(r'<td class="guard">ok - \| guard &gt;=4k at 1\.5 GiB</td>', text)
    assert not re.search(r'<td class="oom">ok - \| guard', text)
    # The page carries the colours the checks below hold to.
    assert html._CSS.strip() in text


def _scheme(css: str, dark: bool) -> dict[str, str]:
    block = css.split("@media (prefers-color-scheme: dark)")[1 if dark else 0]
    return dict(re.findall(r"--([a-z0-9-]+):\s*(#[0-9a-f]{6})", block))


def _luminance(colour: str) -> float:
    def channel(v: int) -> float:
        c = v / 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
    return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b)


def _contrast(a: str, b: str) -> float:
    hi, lo = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


STATES = ["ran", "oom", "lifted", "backstop", "guard", "record", "timeout", "failed", "skipped"]


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_every_state_has_its_own_readable_colour(dark: bool) -> None:
    scheme = _scheme(html._CSS, dark)
    backgrounds = [scheme[f"{s}-bg"] for s in STATES]
    foregrounds = [scheme[s] for s in STATES]
    assert len(set(backgrounds)) == len(STATES), "two states share a cell colour"
    assert len(set(foregrounds)) == len(STATES), "two states share a text colour"
    for state in STATES:
        # A cell's glyph (the page's text colour) on the state's background: WCAG AA.
        assert _contrast(scheme["fg"], scheme[f"{state}-bg"]) >= 4.5, state
        # The state's own colour on the page: readable as text (AA for large, bold text).
        assert _contrast(scheme[state], scheme["bg"]) >= 3.0, state
    # The headroom heatmap's bands: distinct, and the percentage readable on each.
    bands = [scheme[f"h{i}"] for i in range(5)]
    assert len(set(bands)) == 5
    for band in bands:
        assert _contrast(scheme["fg"], band) >= 4.5, band
    # Each style rule names the state's own variable, so the colours above are what is drawn.
    for state in STATES:
        assert f"td.{state} {{ background: var(--{state}-bg); }}" in html._CSS
