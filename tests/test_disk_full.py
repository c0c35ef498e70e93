"""A sweep on a full disk: it proves it can record an OOM before its first launch, on a real
small tmpfs (root only; skipped where none can be mounted)."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import CliResult
from tests.gitrepo import Repo
from tests.scripted_runner import Runner

Cli = Callable[..., CliResult]


@contextlib.contextmanager
def small_tmpfs(where: Path, size: str = "256k") -> Iterator[Path]:
    where.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip() or done.returncode})")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def fill(folder: Path) -> None:
    """Write until the filesystem refuses another byte."""
    with contextlib.suppress(OSError), (folder / "filler").open("ab", buffering=0) as out:
        while True:
            out.write(b"\0" * 4096)
    with contextlib.suppress(OSError), (folder / "filler2").open("ab", buffering=0) as out:
        while True:
            out.write(b"\0")


def test_a_full_disk_stops_the_sweep_before_its_first_launch(
    cli: Cli, repo: Repo, runner: Runner, models: Callable[..., None], tmp_path: Path
) -> None:
    models("a")
    runner.behave({"a:512": "row:SKIP:oom"})
    with small_tmpfs(tmp_path / "disk") as disk:
        fill(disk)
        record = disk / ".oom-record"
        result = cli("sweep", "--runner", runner.template, "--models", "a", "--lengths", "512",
                     "--record", str(record), "--output", str(repo.path / "out.csv"))  # fmt: skip
        assert result.exit_code == 2, result.stderr
        last = result.stderr.splitlines()[-1]
        assert last.startswith(f"oomrec: error: {record}: no room to record an OOM"), last
        assert last.endswith("(no cell was launched)")
        assert runner.launched() == []
        assert not record.exists()


def test_the_room_reserved_before_the_launch_takes_the_oom_when_the_disk_fills_meanwhile(
    cli: Cli, repo: Repo, runner: Runner, models: Callable[..., None], tmp_path: Path
) -> None:
    """The disk fills up while the cell runs (here: the runner itself fills it): the OOM it
    ends with is still recorded, in the room reserved before the launch."""
    models("a")
    with small_tmpfs(tmp_path / "disk") as disk:
        filler = runner.dir / "fill.py"
        filler.write_text(
            "import sys\n"
            "try:\n"
            "    with open(sys.argv[1], 'ab', buffering=0) as out:\n"
            "        while True: out.write(b'\\0' * 1024)\n"
            "except OSError: pass\n"
        )
        runner.behave({"a:512": "row:SKIP:oom"})
        record = disk / ".oom-record"
        # The runner fills the disk, then reports its OOM.
        template = f"sh -c 'python3 {filler} {disk}/filler; exec \"$@\"' sh {runner.template}"
        result = cli("sweep", "--runner", template, "--models", "a", "--lengths", "512",
                     "--record", str(record), "--output", str(repo.path / "out.csv"))  # fmt: skip
        assert result.exit_code == 0, result.stderr
        # The runner filled all but the reserved room (64 KiB of 256), then the OOM went in it.
        assert (disk / "filler").stat().st_size >= (256 - 64 - 8) * 1024
        lines = record.read_text().splitlines()
        assert [line.split(",")[:2] for line in lines] == [["a", "512"]]


def test_a_retract_the_disk_cannot_take_leaves_record_and_archive_as_they_were(
    cli: Cli, tmp_path: Path
) -> None:
    """The archive line fits, the rewrite of the record does not (its temp file needs a page
    more): the archive line is cut off again, so the record is not both in play and retracted,
    and a retry adds no second archive line. Then, with room, the retract goes through."""
    with small_tmpfs(tmp_path / "disk", "64k") as disk:
        record = disk / "rec"
        # Past one page: its rewrite needs two pages free.
        record.write_text("#" * 4095 + "\n")
        assert cli("record", "add", "q", "9", "--record", str(record), "-q").exit_code == 0
        kept = record.read_bytes()
        fill(disk)
        # One page free: the archive's line fits, the rewrite's temp file does not.
        (disk / "filler2").unlink()
        filler = disk / "filler"
        os.truncate(filler, filler.stat().st_size - 4096)
        for _ in range(2):
            done = cli("record", "retract", "q", "9", "--reason", "typo", "--record", str(record))
            assert done.exit_code == 2
            assert done.stderr == (
                f"oomrec: error: {record}: cannot rewrite it (No space left on device); it is "
                "as it was; check free disk space and permissions\n"
            )
            assert record.read_bytes() == kept
            assert not (disk / "rec.archive").exists()
        filler.unlink()
        done = cli("record", "retract", "q", "9", "--reason", "typo", "--record", str(record))
        assert done.exit_code == 0, done.stderr
        assert (disk / "rec.archive").read_text().count("\n") == 1
        listed = cli("record", "list", "--record", str(record))
        assert "q\t9" not in listed.stdout
