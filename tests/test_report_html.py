"""`report --html` in a real browser: headless Chromium renders the page at 1280 px, a script
measures what it drew (every label's box, every element's extent), and the test holds the
page to it: axis labels present, no two labels overlapping, nothing outside the viewport, in
both colour schemes. Skipped, with the reason, where no Chromium is installed (`.ci/run`
installs the distribution's package)."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from oomrec.core.schema import HEADER_15
from oomrec.report import html as report_html
from tests import cdp, report_corpus
from tests.conftest import CliResult
from tests.gitrepo import IDENTITY
from tests.test_report_states import STATES, _scheme

Cli = Callable[..., CliResult]
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")
WIDTH = 1280

# Run in the page after it is laid out: what the test asserts on, as JSON in a <pre>.
MEASURE = """
<script>
(() => {
  const box = (el) => { const r = el.getBoundingClientRect();
    return {l: r.left, r: r.right, t: r.top, b: r.bottom, w: r.width, h: r.height}; };
  const outside = [];
  for (const el of document.body.querySelectorAll('*')) {
    const wrap = el.closest('.wrap');
    if (wrap && wrap !== el) continue;  // scrolls inside its own box
    const r = box(el);
    if (r.w > 0 && (r.r > window.innerWidth + 0.5 || r.l < -0.5)) {
      outside.push(el.tagName + '.' + (el.getAttribute('class') || ''));
    }
  }
  const svgs = [...document.querySelectorAll('svg')].map((svg) => ({
    box: box(svg),
    texts: [...svg.querySelectorAll('text')].map((t) => ({
      cls: t.getAttribute('class') || '',
      text: t.firstChild ? t.firstChild.nodeValue : '',
      ...box(t),
    })),
  }));
  const out = {
    width: window.innerWidth,
    scrollWidth: document.documentElement.scrollWidth,
    outside,
    svgs,
    heatmaps: document.querySelectorAll('table.heat').length,
    heatCells: [...document.querySelectorAll('table.heat td')].map((td) => ({
      cls: td.className, title: td.title, text: td.textContent })),
    legend: document.querySelectorAll('ul.legend .swatch').length,
    background: getComputedStyle(document.body).backgroundColor,
  };
  const pre = document.createElement('pre');
  pre.id = 'layout-check';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>
"""


def _browser() -> str:
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    pytest.skip(f"no Chromium here (looked for {', '.join(BROWSERS)}): apt-get install chromium")


def _chromium(
    browser: str, page: Path, *extra: str, width: int = WIDTH, height: int = 1000
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            f"--user-data-dir={page.parent / 'profile'}",
            f"--window-size={width},{height}",
            *extra,
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def measure(browser: str, page: Path, dark: bool) -> dict[str, Any]:
    probe = page.with_name(page.stem + "-probe.html")
    probe.write_text(page.read_text().replace("</body>", MEASURE + "</body>"))
    scheme = ["--force-dark-mode", "--blink-settings=preferredColorScheme=0"] if dark else []
    done = _chromium(browser, probe, *scheme, "--virtual-time-budget=5000", "--dump-dom")
    found = re.search(r'<pre id="layout-check">(.*?)</pre>', done.stdout, re.S)
    assert found, f"the page did not run its check: {done.stderr[-2000:]}"
    return json.loads(html.unescape(found.group(1)))


def overlaps(a: dict[str, float], b: dict[str, float]) -> bool:
    return min(a["r"], b["r"]) - max(a["l"], b["l"]) > 0.5 and (
        min(a["b"], b["b"]) - max(a["t"], b["t"]) > 0.5
    )


def check_page(facts: dict[str, Any], machines: int) -> None:
    assert facts["width"] == WIDTH
    assert facts["scrollWidth"] <= WIDTH, "the page scrolls sideways"
    assert facts["outside"] == []
    assert facts["heatmaps"] == machines
    assert facts["legend"] >= 10
    for cell in facts["heatCells"]:
        assert cell["title"], cell
    assert facts["svgs"], "no timeline"
    for svg in facts["svgs"]:
        texts = [t for t in svg["texts"] if t["w"] > 0]
        by_cls = {name: [t for t in texts if name in t["cls"].split()] for name in
                  ("ylabel", "xlabel", "ytitle", "xtitle")}  # fmt: skip
        assert len(by_cls["ylabel"]) >= 2, "the length axis has no labelled ticks"
        assert len(by_cls["xlabel"]) >= 2, "the date axis has no labelled ticks"
        assert by_cls["ytitle"] and by_cls["xtitle"], "an axis has no title"
        dates = [t["text"] for t in by_cls["xlabel"]]
        assert len(dates) == len(set(dates)), f"a date twice on the axis: {dates}"
        assert all(re.fullmatch(r"\d{4}-\d{2}-\d{2}", d) for d in dates)
        frame = svg["box"]
        for t in texts:
            assert frame["l"] - 0.5 <= t["l"] and t["r"] <= frame["r"] + 0.5, f"cut: {t}"
            assert frame["t"] - 0.5 <= t["t"] and t["b"] <= frame["b"] + 0.5, f"cut: {t}"
        for i, a in enumerate(texts):
            for b in texts[i + 1 :]:
                assert not overlaps(a, b), f"labels overlap: {a['text']!r} and {b['text']!r}"


def _commit_fix(repo: Path, day: str, subject: str) -> None:
    stamp = f"{day}T12:00:00+00:00"
    env = {**os.environ, **IDENTITY, "GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp}
    subprocess.run(
        ["git", "commit", "-q", "--allow-empty", "-m", f"{subject}\n\nOOM-Fix: gemma-4-*"],
        cwd=repo,
        env=env,
        check=True,
    )


@pytest.fixture
def history(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    repo = tmp_path / "history"
    report_corpus.build(repo)
    monkeypatch.chdir(repo)
    return repo


def render(cli: Cli, where: Path) -> Path:
    page = where / "report.html"
    result = cli("report", "--html", str(page))
    assert result.exit_code == 0, result.stderr
    return page


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_the_page_is_a_picture_that_fits_and_reads(
    history: Path, cli: Cli, tmp_path: Path, dark: bool
) -> None:
    browser = _browser()
    facts = measure(browser, render(cli, tmp_path), dark)
    check_page(facts, machines=2)
    # The scheme took: a dark page is drawn on a dark background.
    channels = [int(c) for c in re.findall(r"\d+", facts["background"])[:3]]
    assert (sum(channels) < 150) == dark, facts["background"]
    oom = [c for c in facts["heatCells"] if "oom" in c["cls"].split()]
    assert oom and all("out of memory" in c["title"] and ".csv:" in c["title"] for c in oom)
    assert any("commit " in c["title"] for c in oom)


def test_fix_labels_close_together_do_not_overlap(history: Path, cli: Cli, tmp_path: Path) -> None:
    browser = _browser()
    for i, day in enumerate(("2026-06-25", "2026-06-26", "2026-06-27", "2026-06-28", "2026-06-29")):
        _commit_fix(history, day, f"Another fix of the long-prompt path, number {i}")
    facts = measure(browser, render(cli, tmp_path), dark=False)
    check_page(facts, machines=2)
    labels = [t for svg in facts["svgs"] for t in svg["texts"] if "fixlabel" in t["cls"]]
    assert len(labels) >= 3, "the fixes are not named"


def test_one_day_of_data_is_not_one_date_at_both_ends(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    browser = _browser()
    repo = tmp_path / "one-day"
    keep = dict(report_corpus.RUNS)
    monkeypatch.setattr(report_corpus, "RUNS", {"2026-06-02": keep["2026-06-02"]})
    report_corpus.build(repo)
    monkeypatch.chdir(repo)
    facts = measure(browser, render(cli, tmp_path), dark=False)
    check_page(facts, machines=2)


def test_a_screenshot_is_drawn(history: Path, cli: Cli, tmp_path: Path) -> None:
    browser = _browser()
    shot = tmp_path / "shot.png"
    done = _chromium(browser, render(cli, tmp_path), f"--screenshot={shot}")
    assert shot.exists(), done.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert shot.stat().st_size > 20_000


def _png_colours(data: bytes) -> set[tuple[int, int, int]]:
    """Every colour of an 8-bit RGB or RGBA PNG (what Chromium's screenshot writes)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks, head = 8, [], b""
    while pos < len(data):
        size = int.from_bytes(data[pos : pos + 4], "big")
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + size]
        if kind == b"IHDR":
            head = body
        elif kind == b"IDAT":
            chunks.append(body)
        pos += 12 + size
    width, height = int.from_bytes(head[0:4], "big"), int.from_bytes(head[4:8], "big")
    depth, colour_type, interlace = head[8], head[9], head[12]
    assert depth == 8 and colour_type in (2, 6) and interlace == 0, head
    bpp = 3 if colour_type == 2 else 4
    raw = zlib.decompress(b"".join(chunks))
    stride = width * bpp
    prev = bytearray(stride)
    colours: set[tuple[int, int, int]] = set()
    for row in range(height):
        start = row * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + a) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + b) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xFF
            elif kind == 4:
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                pred = a if pa <= pb and pa <= pc else b if pb <= pc else c
                line[i] = (line[i] + pred) & 0xFF
        colours.update((line[i], line[i + 1], line[i + 2]) for i in range(0, stride, bpp))
        prev = line
    return colours


@pytest.mark.parametrize("width", [1400, 500])
@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_each_states_colour_is_drawn_in_a_real_browser(
    history: Path, cli: Cli, tmp_path: Path, dark: bool, width: int
) -> None:
    """Issue 43: a screenshot holds each state's own colour (the legend's swatches and the
    cells), in light and dark, at 1400 and 500 px."""
    browser = _browser()
    page = render(cli, tmp_path)
    shot = tmp_path / f"shot-{width}-{dark}.png"
    scheme = ["--force-dark-mode", "--blink-settings=preferredColorScheme=0"] if dark else []
    done = _chromium(browser, page, *scheme, f"--screenshot={shot}", width=width, height=4000)
    assert shot.exists(), done.stderr[-2000:]
    drawn = _png_colours(shot.read_bytes())
    wanted = _scheme(report_html._CSS, dark)
    for state in STATES:
        colour = wanted[f"{state}-bg"]
        rgb = tuple(int(colour[i : i + 2], 16) for i in (1, 3, 5))
        assert any(
            max(abs(x - y) for x, y in zip(rgb, seen, strict=True)) <= 3 for seen in drawn
        ), f"{state}'s colour {colour} is not on the screen ({'dark' if dark else 'light'})"
    page_bg = wanted["bg"]
    assert tuple(int(page_bg[i : i + 2], 16) for i in (1, 3, 5)) in drawn


def test_the_page_says_in_words_what_colour_says(history: Path, cli: Cli, tmp_path: Path) -> None:
    """What a screen reader gets (the accessibility tree's names, from the rendered DOM): every
    plot an image with a title, every grid cell a glyph or a title, every table headed."""
    browser = _browser()
    page = render(cli, tmp_path)
    done = _chromium(browser, page, "--virtual-time-budget=3000", "--dump-dom")
    dom = done.stdout
    assert '<html lang="en">' in dom
    svgs = re.findall(r"<svg[^>]*>(.*?)</svg>", dom, re.S)
    assert svgs
    for svg in svgs:
        assert re.match(r"\s*<title>[^<]+</title>", svg), svg[:200]
    assert len(re.findall(r'<svg[^>]*role="img"', dom)) == len(svgs)
    for table in re.findall(r"<table.*?</table>", dom, re.S):
        assert "<th" in table
    states = "|".join(STATES)
    for cell in re.findall(rf'<td class="(?:{states})"[^>]*>([^<]*)</td>', dom):
        assert cell.strip(), "a state shown by colour alone"


def test_chromiums_accessibility_tree_names_every_table_plot_and_cell(
    history: Path, cli: Cli, tmp_path: Path
) -> None:
    """Issue 43: what a screen reader gets, read from Chromium's own accessibility tree (the
    DevTools protocol's Accessibility.getFullAXTree, tests/cdp.py): every table and plot has a
    name, every column header a name, every cell of a state a glyph or figure as its name and
    what it means as its description (a cell never tried or a length without a peak too)."""
    browser = _browser()
    swept = history / "benchmarks" / "swept.csv"
    rows = "".join(
        f'sweep-m,./models/sweep-m,{n},32,1.0,2.0,3.0,4.0,2026-07-03,hw,0.3.3,release,32,"Hi",{n}\n'
        for n in (1024, 2048)
    )
    swept.write_text(HEADER_15 + "\n" + rows)
    cells = [
        {
            "model": "sweep-m",
            "length": n,
            "token": "ok",
            "row": line,
            "commit": "unknown",
            "runner": "r",
            "hardware": "gb10",
            "mem_bytes": None,
            "peak_bytes": peak,
            "limit_bytes": 1000,
        }
        for n, line, peak in zip((1024, 2048), rows.splitlines(), (300, 960), strict=True)
    ]
    swept.with_name("swept.csv.oomrec.json").write_text(
        json.dumps({"schema_version": 1, "cells": cells})
    )
    page = render(cli, tmp_path)
    with cdp.Browser(browser, tmp_path / "ax-profile") as chromium:
        nodes = chromium.accessibility_tree(page)
    roles = {n["role"] for n in nodes}
    assert {"table", "image", "columnheader", "cell", "heading"} <= roles, roles
    tables = [n for n in nodes if n["role"] == "table"]
    assert len(tables) >= 3 and all(n["name"] for n in tables), tables
    assert any(n["name"].startswith("Headroom on ") for n in tables), tables
    images = [n for n in nodes if n["role"] == "image"]
    assert images and all(n["name"] for n in images), images
    assert all(n["name"] for n in nodes if n["role"] == "columnheader")
    glyphs = set(report_html.GLYPHS.values()) | {"-", "."}
    stated = [n for n in nodes if n["role"] == "cell" and n["name"].strip() in glyphs]
    assert stated, "no state cell in the tree"
    for cell in stated:
        assert cell["description"], f"a cell {cell['name']!r} says nothing of what it means"
    figures = [n for n in nodes if n["role"] == "cell" and n["name"].endswith("%")]
    assert {n["name"] for n in figures} == {"30%", "96%"}, figures
    for cell in figures:
        # The description says the figure the cell shows.
        assert f"({cell['name']})" in cell["description"], cell


def test_a_lifted_cross_is_drawn_under_the_runs_and_an_oom_in_play_over_them(
    history: Path, cli: Cli, tmp_path: Path
) -> None:
    """Issue 43: a cross out of play no longer hides a later success at its point; one in play
    still shows over it (hiding an OOM is the worse error)."""
    text = render(cli, tmp_path).read_text()
    svgs = re.findall(r"<svg[^>]*>.*?</svg>", text, re.S)
    lifted_seen = in_play_seen = False
    for svg in svgs:
        # Each element's position in the plot's drawing order.
        order = [m.group(0) for m in re.finditer(r'<circle|<path class="cross[^"]*"', svg)]
        circles = [i for i, tag in enumerate(order) if tag == "<circle"]
        lifted = [i for i, tag in enumerate(order) if tag.endswith('cross lifted"')]
        in_play = [i for i, tag in enumerate(order) if tag.endswith('"cross"')]
        if circles and lifted:
            lifted_seen = True
            assert max(lifted) < min(circles), "a lifted cross is drawn over a run"
        if circles and in_play:
            in_play_seen = True
            assert min(in_play) > max(circles), "a run is drawn over an OOM in play"
    assert lifted_seen and in_play_seen
    assert 'class="cross lifted"' in text and "stroke-dasharray: 2 2" in text
