"""The scripted runner of the sweep tests: a real executable that behaves per cell as a test
tells it, and logs every launch."""

from __future__ import annotations

import json
from pathlib import Path

from oomrec.core.schema import HEADER_15

# A runner that behaves per cell as told in behaviour.json ("model:length" or "model" -> action)
# and logs every launch: `ok`, `row:TOKEN` (the runner's own skip row), `exit:N:TEXT`,
# `twice:TOKEN` (its row twice; the second with TOKEN unless empty),
# `alloc:MIB:TEXT` (touch MIB MiB, print TEXT, exit 1), `block:PATH:TEXT` (mkdir PATH, print
# TEXT, exit 1), `sleep` (write its pid, then sleep), `argv` (write its argv as JSON).
# A key "before model:length" lists commands (argv lists) the runner runs first, each to its end
# (another process writing the record meanwhile, say). (Kill verdicts: test_sweep_cells.py.)
RUNNER = r"""#!/usr/bin/env python3
import json, os, sys, time
from pathlib import Path

here = Path(__file__).parent
model, model_path, length, cell_csv = sys.argv[1:5]
with open(here / "launched.txt", "a") as log:
    log.write(f"{model}:{length}\n")
table = json.loads((here / "behaviour.json").read_text())
action = table.get(f"{model}:{length}", table.get(model, "ok"))
for command in table.get(f"before {model}:{length}", []):
    import subprocess
    subprocess.run(command, check=True)
header = "HEADER"
tail = f'2026-07-03,hw,0.3.3,release,32,"Hello, how are you today?",{length}'
row = f"{model},{model_path},,,,,,,{tail}"
if action == "ok":
    ok = f"{model},{model_path},{length},32,1.0,2.0,3.0,4.0,{tail}"
    Path(cell_csv).write_text(f"{header}\n{ok}\n")
elif action.startswith("row:"):
    Path(cell_csv).write_text(f"{header}\n{row},{action[4:]}\n")
elif action.startswith("twice:"):
    # Its row twice: the same success row, or a success row and then one with TOKEN.
    ok = f"{model},{model_path},{length},32,1.0,2.0,3.0,4.0,{tail}"
    second = f"{row},{action[6:]}" if action[6:] else ok
    Path(cell_csv).write_text(f"{header}\n{ok}\n{second}\n")
elif action.startswith("exit:"):
    _, code, text = action.split(":", 2)
    print("loading model...", flush=True)
    print(text, file=sys.stderr, flush=True)
    sys.exit(int(code))
elif action.startswith("block:"):
    # Put a directory where the sweep will write its CSV, then fail as an OOM.
    os.makedirs(action.split(":", 2)[1])
    print(action.split(":", 2)[2], file=sys.stderr, flush=True)
    sys.exit(1)
elif action.startswith("alloc:"):
    _, mib, text = action.split(":", 2)
    held = bytearray(int(mib) << 20)
    held[::4096] = b"x" * (len(held) // 4096)
    print(text, file=sys.stderr, flush=True)
    sys.exit(1)
elif action == "argv":
    (here / "argv.json").write_text(json.dumps(sys.argv[1:]))
    Path(cell_csv).write_text(f"{header}\n{row}\n")
elif action == "sleep":
    import subprocess
    child = subprocess.Popen(["sleep", "60"])
    (here / "pids.txt").write_text(f"{os.getpid()} {child.pid}\n")
    time.sleep(60)
""".replace("HEADER", HEADER_15)


class Runner:
    """The scripted runner of one test, in its own directory outside the repository."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        directory.mkdir(parents=True, exist_ok=True)
        self.script = directory / "runner.py"
        self.script.write_text(RUNNER)
        self.script.chmod(0o755)
        self.behave({})

    def behave(self, table: dict[str, str | list[list[str]]]) -> None:
        (self.dir / "behaviour.json").write_text(json.dumps(table))

    @property
    def template(self) -> str:
        return f"{self.script} {{model}} {{model_path}} {{length}} {{cell_csv}}"

    def launched(self) -> list[str]:
        log = self.dir / "launched.txt"
        return log.read_text().split() if log.exists() else []
