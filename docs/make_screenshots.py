"""Make the report screenshots under docs/ (light and dark): the HTML report of the small
history tests/report_corpus.py builds, rendered by headless Chromium at 1280 px.

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
sys.path.insert(0, str(ROOT))

from tests import report_corpus  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--browser", default=shutil.which("chromium") or "chromium")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "history"
        report_corpus.build(repo)
        page = Path(tmp) / "report.html"
        subprocess.run(
            [sys.executable, "-m", "oomrec", "report", "--html", str(page)],
            cwd=repo,
            check=True,
            stdout=subprocess.DEVNULL,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        for name, extra in (
            ("report-light.png", []),
            ("report-dark.png", ["--force-dark-mode", "--blink-settings=preferredColorScheme=0"]),
        ):
            subprocess.run(
                [
                    args.browser, "--headless", "--no-sandbox", "--disable-gpu",
                    "--hide-scrollbars", f"--user-data-dir={tmp}/profile",
                    "--window-size=1280,1700", *extra,
                    f"--screenshot={ROOT / 'docs' / name}", page.as_uri(),
                ],
                check=True, capture_output=True,
            )  # fmt: skip
            print(f"wrote docs/{name}")


if __name__ == "__main__":
    main()
