from __future__ import annotations

import subprocess
import sys


def test_version_through_python_m() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "oomrec", "--version"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0
    assert done.stdout.startswith("oomrec ")
