"""Make the report screenshots under docs/img/: the demo's HTML report (`oomrec sweep --demo`
twice, then `oomrec report --html`), rendered by headless Chromium, light and dark, at 1400 and
500 px.

    python docs/make_screenshots.py [--browser chromium]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Each width's window height: the demo's page, whole, with little below it.
SIZES = {1400: 2000, 500: 2080}
DARK = ["--force-dark-mode", "--blink-settings=preferredColorScheme=0"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--browser", default=shutil.which("chromium") or "chromium")
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    oomrec = [sys.executable, "-m", "oomrec"]
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(2):
            subprocess.run([*oomrec, "sweep", "--demo"], cwd=tmp, check=True, env=env,
                           capture_output=True)  # fmt: skip
        page = Path(tmp) / "report.html"
        demo = "oomrec-demo/benchmarks"
        subprocess.run(
            [*oomrec, "report", demo, "--record", f"{demo}/.oom-record", "--html", str(page)],
            cwd=tmp, check=True, env=env, capture_output=True,
        )  # fmt: skip
        for width, height in SIZES.items():
            for scheme, extra in (("light", []), ("dark", DARK)):
                name = f"report-{scheme}-{width}.png"
                subprocess.run(
                    [
                        args.browser, "--headless", "--no-sandbox", "--disable-gpu",
                        "--hide-scrollbars", "--no-first-run", "--disable-background-networking",
                        f"--user-data-dir={tmp}/profile-{scheme}-{width}",
                        f"--window-size={width},{height}", *extra,
                        f"--screenshot={ROOT / 'docs' / 'img' / name}", page.as_uri(),
                    ],
                    check=True, capture_output=True,
                )  # fmt: skip
                print(f"wrote docs/img/{name}")


if __name__ == "__main__":
    main()
