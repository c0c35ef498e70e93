"""The record file under faults: concurrent writers through a symlink, SIGKILL mid-append,
killed rewrites, special files, odd line endings, huge numbers, and terminals that cannot show
every byte. Real processes and real files throughout."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from oomrec.core.errors import OomrecError
from oomrec.core.records import OomRecord, RecordFile, parse_text
from tests.conftest import CliResult
from tests.helpers import gone

Cli = Callable[..., CliResult]

APPENDER = textwrap.dedent(
    """
    import sys
    import time
    from pathlib import Path
    from oomrec.core.records import OomRecord, RecordFile

    path, who, count = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    rounds = Path(sys.argv[4]) if len(sys.argv) > 4 else None
    rf = RecordFile(path)
    seen = int(rounds.read_text()) if rounds else 0
    for i in range(count):
        if rounds and i == count // 2:
            # Half-way, wait until the rewriter has finished a round since this appender
            # started: the rewrites then truly interleave with the appends on a busy machine.
            while int(rounds.read_text()) <= seen:
                time.sleep(0.01)
        rf.append([OomRecord(f"m{who}", i, "2026-01-01", "unknown", None, "s", "gb10")])
    """
)

REWRITER = textwrap.dedent(
    """
    import os
    import sys
    from pathlib import Path
    from oomrec.core.records import RecordFile

    path, stop, done = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
    rf = RecordFile(path)
    rounds = 0
    while not stop.exists() or rounds == 0:
        rf.rewrite(lambda loaded: loaded.lines)
        rounds += 1
        done.with_suffix(".tmp").write_text(str(rounds))
        os.replace(done.with_suffix(".tmp"), done)
    print(rounds)
    """
)


def _python(code: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", code, *args], stdout=subprocess.PIPE, text=True, cwd=os.getcwd()
    )


def test_appends_through_a_symlink_and_rewrites_of_the_real_path_lose_nothing(
    tmp_path: Path,
) -> None:
    real = tmp_path / "data" / "oom-record"
    real.parent.mkdir()
    real.write_text("")
    link = tmp_path / "link-record"
    link.symlink_to(real)
    stop = tmp_path / "stop"
    rounds = tmp_path / "rounds"
    rounds.write_text("0")
    rewriter = _python(REWRITER, str(real), str(stop), str(rounds))
    appenders = [_python(APPENDER, str(link), str(who), "200", str(rounds)) for who in range(4)]
    for proc in appenders:
        assert proc.wait(timeout=120) == 0
    stop.touch()
    out, _ = rewriter.communicate(timeout=120)
    assert rewriter.returncode == 0
    assert int(out) > 1, "the rewriter must have raced the appenders"
    lines = real.read_text().splitlines()
    assert len(lines) == 800
    assert sorted(lines) == sorted(
        f"m{who},{i},2026-01-01,unknown,,s,gb10," for who in range(4) for i in range(200)
    )
    # One lock, beside the real file; none beside the link.
    assert RecordFile(link).lock_path == real.with_name("oom-record.lock")
    assert not link.with_name("link-record.lock").exists()


BATCH = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from oomrec.core.records import OomRecord, RecordFile

    rf = RecordFile(Path(sys.argv[1]))
    batch = [
        OomRecord(f"model-{i:05d}", 1000 + i, "2026-01-01", "a" * 40, 123456789, "s" * 60, "v100")
        for i in range(8000)
    ]
    print("go", flush=True)
    rf.append(batch)
    """
)


def _expected_batch_lines() -> set[str]:
    return {
        f"model-{i:05d},{1000 + i},2026-01-01,{'a' * 40},123456789,{'s' * 60},v100,"
        for i in range(8000)
    }


def _kill_when_it_grows(proc: subprocess.Popen[str], path: Path, size: int) -> None:
    """SIGKILL `proc` the moment `path` grows past `size`: while its write is under way."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if os.stat(path).st_size > size:
                break
        except FileNotFoundError:
            pass
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert gone(proc.pid)


def test_sigkill_mid_append_never_leaves_a_torn_line_that_scopes_a_record(
    tmp_path: Path,
) -> None:
    whole = _expected_batch_lines()
    heads = {",".join(line.split(",")[:5]) for line in whole}
    path = tmp_path / "rec"
    for trial in range(4):
        size = path.stat().st_size if path.exists() else 0
        proc = _python(BATCH, str(path))
        assert proc.stdout is not None
        assert proc.stdout.readline() == "go\n"
        _kill_when_it_grows(proc, path, size)
        loaded = RecordFile(path).load()
        for line in loaded.lines:
            if line.record is None or line.text in whole:
                continue
            # A torn last line is read as the harness reads it: model to peak are whole (a
            # comma follows each); what comes after may be cut, so it scopes nothing.
            assert line.ending == "", f"trial {trial}: a torn line inside the file"
            assert ",".join(line.text.split(",")[:5]) in heads, f"trial {trial}: {line.text}"
            assert line.record.hardware is None and line.record.mem_bytes is None
        # The next writer keeps a torn tail aside (never deleted), keeps the first six fields
        # of one that has them, and appends whole lines.
        rf = RecordFile(path)
        rf.append([OomRecord(f"after{trial}", 1, "2026-01-01", "unknown")])
        whole.add(f"after{trial},1,2026-01-01,unknown,,")
        assert path.read_text().endswith(f"after{trial},1,2026-01-01,unknown,,\n")
        for line in rf.load().lines:
            assert line.record is not None or line.is_blank
            if line.record is not None and line.text not in whole:
                assert line.text.count(",") == 5 and line.record.hardware is None
                # The kept head of a torn line: whole from now on, in later trials too.
                whole.add(line.text)


def test_a_cut_line_scopes_nothing_and_the_next_append_keeps_its_head(tmp_path: Path) -> None:
    path = tmp_path / "rec"
    # A tag cut short (`v100` -> `v10`) would read as another machine's record.
    path.write_bytes(b"a,1,2026-01-01,unknown,,s,v100,\nb,2,2026-01-01,unknown,,s,v10")
    loaded = RecordFile(path, shown_as="rec").load()
    assert [(r.model, r.hardware) for r in loaded.records] == [("a", "v100"), ("b", None)]
    [warning] = [str(w) for w in loaded.warnings]
    assert warning.startswith("warning: rec:2: no line ending: read as the harness reads it")
    rf = RecordFile(path, shown_as="rec")
    rf.append([OomRecord("c", 3, "2026-01-01", "unknown")])
    assert path.read_text() == (
        "a,1,2026-01-01,unknown,,s,v100,\nb,2,2026-01-01,unknown,,s\nc,3,2026-01-01,unknown,,\n"
    )
    assert rf.torn_path.read_text() == "b,2,2026-01-01,unknown,,s,v10\n"
    assert "kept its first six (the record applies on every machine)" in " ".join(rf.notices)


def test_a_short_cut_line_is_no_record_and_moves_aside(tmp_path: Path) -> None:
    path = tmp_path / "rec"
    path.write_bytes(b"a,1,2026-01-01,unknown,,s\nb,2,2026-01")
    loaded = RecordFile(path, shown_as="rec").load()
    assert [r.model for r in loaded.records] == ["a"]
    assert [str(w) for w in loaded.warnings] == [
        "warning: rec:2: not a record (no line ending (an append cut short?)), kept as is"
    ]
    rf = RecordFile(path, shown_as="rec")
    rf.append([OomRecord("c", 3, "2026-01-01", "unknown")])
    assert path.read_text() == "a,1,2026-01-01,unknown,,s\nc,3,2026-01-01,unknown,,\n"
    assert rf.torn_path.read_text() == "b,2,2026-01\n"


def test_a_failed_append_is_rolled_back_and_reported(tmp_path: Path) -> None:
    path = tmp_path / "rec"
    path.write_text("a,1,2026-01-01,unknown,,s\n")
    before = path.read_bytes()
    # RLIMIT_FSIZE makes the write come up short (the kernel stops at the limit), as a full
    # disk would; the append must leave the file as it was.
    code = textwrap.dedent(
        f"""
        import resource, signal, sys
        from pathlib import Path
        from oomrec.core.errors import OomrecError
        from oomrec.core.records import OomRecord, RecordFile
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, ({len(before) + 100}, {len(before) + 100}))
        try:
            RecordFile(Path(sys.argv[1])).append(
                [OomRecord(f"m{{i}}", i, "2026-01-01", "unknown") for i in range(100)]
            )
        except OomrecError as exc:
            print(exc)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "cannot append" in done.stdout and "nothing was added" in done.stdout
    assert path.read_bytes() == before


def test_a_killed_rewrites_temp_file_is_removed_by_the_next_writer(tmp_path: Path) -> None:
    path = tmp_path / "rec"
    path.write_text("a,1,2026-01-01,unknown,,s\n")
    leftover = tmp_path / ".rec.k3j_9xq2.tmp"
    leftover.write_text("a full copy a killed prune left behind\n")
    # Not ours: an archive's temp file, and a file that only looks alike.
    archive_tmp = tmp_path / ".rec.archive.abcdefgh.tmp"
    archive_tmp.write_text("x")
    other = tmp_path / ".rec.notes.tmp"
    other.write_text("x")
    RecordFile(path).append([OomRecord("b", 2, "2026-01-01", "unknown")])
    assert not leftover.exists()
    assert archive_tmp.exists() and other.exists()
    leftover.write_text("again")
    RecordFile(path).rewrite(lambda loaded: loaded.lines)
    assert not leftover.exists()


def test_cr_only_files_hold_one_record_per_line(tmp_path: Path) -> None:
    path = tmp_path / "rec"
    path.write_bytes(b"a,1,2026-01-01,u,,s\rb,2,2026-01-01,u,,s\rc,3,2026-01-01,u,,s\r")
    assert [r.model for r in RecordFile(path).load().records] == ["a", "b", "c"]
    RecordFile(path).rewrite(
        lambda loaded: [line for line in loaded.lines if line.text.startswith(("a", "c"))]
    )
    assert path.read_bytes() == b"a,1,2026-01-01,u,,s\rc,3,2026-01-01,u,,s\r"


def test_mixed_line_endings_each_end_a_line() -> None:
    lines = parse_text("a,1,2026-01-01,u,,s\r\nb,2,2026-01-01,u,,s\rc,3,2026-01-01,u,,s\n")
    assert [(line.record and line.record.model, line.ending) for line in lines] == [
        ("a", "\r\n"),
        ("b", "\r"),
        ("c", "\n"),
    ]


def test_huge_numbers_are_one_warning_never_a_traceback(tmp_path: Path, cli: Cli) -> None:
    path = tmp_path / "rec"
    huge = "9" * 5000
    path.write_text(
        f"a,{huge},2026-01-01,u,,s\n"
        f"b,2,2026-01-01,u,{huge},s\n"
        f"c,3,2026-01-01,u,,s,gb10,{huge}\n"
        f"d,4,2026-01-01,u,99999999999999999999,s\n"
    )
    result = cli("record", "list", "--no-git", "--json", "--record", str(path))
    assert result.exit_code == 0
    warnings = result.stderr.splitlines()
    assert len(warnings) == 4
    assert all(len(w) < 300 for w in warnings)
    assert "length '99999999999999999999'... (5000 characters) is out of range" in warnings[0]
    assert "read as unknown, the record applies" in warnings[1]
    records = json.loads(result.stdout)["records"]
    assert [(r["model"], r["peak_bytes"], r["mem_bytes"]) for r in records] == [
        ("b", None, None),
        ("c", None, None),
        ("d", None, None),
    ]
    added = cli("record", "add", "m", huge, "--record", str(path))
    assert added.exit_code == 2
    assert added.stderr.startswith("oomrec: error: length '") and added.stderr.count("\n") == 1


def read_and_append(path: Path, cwd: Path, timeout: int) -> list[subprocess.CompletedProcess[str]]:
    """`record list` and `record add` of the record at `path`, each in a fresh process."""
    return [
        subprocess.run(
            [sys.executable, "-m", "oomrec", *args, "--record", str(path)],
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=cwd,
        )
        for args in (["record", "list", "--no-git"], ["record", "add", "m", "1"])
    ]


@pytest.mark.parametrize("kind", ["fifo", "dir", "device"])
def test_only_regular_files_are_read_and_a_fifo_never_hangs(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "rec"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dir":
        path.mkdir()
    else:
        path.symlink_to("/dev/zero")
    for done in read_and_append(path, tmp_path, timeout=30):
        assert done.returncode == 2, done.stderr
        what = {"fifo": "a FIFO", "dir": "a directory", "device": "a character device"}[kind]
        assert done.stderr == (
            f"oomrec: error: {path}: is {what}, not a regular file; point --record at a file\n"
        )


@pytest.mark.parametrize("how", ["sparse", "pseudo-file"])
def test_a_file_no_record_could_be_is_refused_before_it_is_read_whole(
    tmp_path: Path, how: str
) -> None:
    """A record file is read whole: one of gigabytes with no newline (one huge last line for an
    append to tidy), or a pseudo-file that never ends, would take all memory. Refused in one
    line, the file as it was."""
    from oomrec.core.records import MAX_RECORD_BYTES

    path = tmp_path / "rec"
    if how == "sparse":
        with path.open("wb") as out:
            out.truncate(MAX_RECORD_BYTES + 1)
    else:
        path.symlink_to("/proc/self/pagemap")
    size = path.stat().st_size
    for done in read_and_append(path, tmp_path, timeout=120):
        assert done.returncode == 2, done.stderr
        assert done.stderr.startswith("oomrec: error: ")
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
        if how == "sparse":
            assert done.stderr == (
                f"oomrec: error: {path}: holds over 256 MiB, more than any OOM record file; "
                "point --record at the record file\n"
            )
        assert path.stat().st_size == size


def test_rewriting_a_fifo_is_refused_without_hanging(tmp_path: Path) -> None:
    path = tmp_path / "rec"
    os.mkfifo(path)
    with pytest.raises(OomrecError, match="is a FIFO, not a regular file"):
        RecordFile(path).rewrite(lambda loaded: loaded.lines)


@pytest.mark.parametrize("env", [{"PYTHONIOENCODING": "ascii"}, {"LC_ALL": "C", "PYTHONUTF8": "0"}])
def test_output_escapes_what_the_terminal_cannot_show(tmp_path: Path, env: dict[str, str]) -> None:
    path = tmp_path / "rec"
    path.write_bytes(b"caf\xc3\xa9-\xff,512,2026-01-01,unknown,,s\xfe.csv,gb10\n")
    extras: tuple[list[str], ...] = ([], ["--json"])
    for extra in extras:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "oomrec",
                "record",
                "list",
                "--no-git",
                "--record",
                str(path),
                *extra,
            ],
            capture_output=True,
            timeout=30,
            cwd=tmp_path,
            env={**os.environ, **env},
        )
        assert done.returncode == 0, done.stderr
        assert b"Traceback" not in done.stderr
        assert b"512" in done.stdout


def test_a_deeply_nested_pyproject_is_one_line(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "pyproject.toml").write_text("x = " + "[" * 100_000)
    monkeypatch.chdir(tmp_path)
    result = cli("record", "list", "--no-git")
    assert result.exit_code == 2
    assert result.stderr.startswith(f"oomrec: error: {tmp_path / 'pyproject.toml'}: cannot read")
    assert result.stderr.count("\n") == 1


def test_a_symlink_loop_is_one_line(tmp_path: Path, cli: Cli) -> None:
    path = tmp_path / "rec"
    path.symlink_to(path)
    for args in (["record", "list", "--no-git"], ["record", "add", "m", "1"]):
        result = cli(*args, "--record", str(path))
        assert result.exit_code == 2
        assert result.stderr == (
            f"oomrec: error: {path}: cannot read (Too many levels of symbolic links)\n"
        )


def test_a_torn_line_that_cannot_be_moved_aside_names_the_torn_file(tmp_path: Path) -> None:
    """Moving a torn last line aside fails (no room, no permission: here a folder in the way):
    the error names the .torn file, not "the output", and the record is left as it was."""
    from oomrec.core.errors import OomrecError
    from oomrec.core.records import OomRecord, RecordFile

    path = tmp_path / ".oom-record"
    torn_tail = "gemma-4-31b,8192,2026-07-03,abc1234,,x.csv,gb10,bits-of-a-note"
    path.write_text(f"a-4bit,512,2026-07-03,abc1234,,x.csv,gb10\n{torn_tail}")
    record = RecordFile(path)
    record.torn_path.mkdir()
    before = path.read_bytes()
    with pytest.raises(OomrecError, match=r"\.oom-record\.torn: cannot keep the record's torn"):
        record.append([OomRecord("b-4bit", 512, "2026-07-04", "abc1234", None, "y.csv", "gb10")])
    assert path.read_bytes() == before


def test_a_file_of_garbage_warns_a_screenful_and_keeps_every_line(tmp_path: Path, cli: Cli) -> None:
    """The wrong file named as the record (a log, a CSV): a warning for each of its first lines,
    then one for the rest, not a line per line on every command; a write keeps them all."""
    from oomrec.core.records import MAX_LINE_WARNINGS

    path = tmp_path / "rec"
    garbage = "".join(f"garbage line {i}\n" for i in range(2000))
    path.write_text(garbage)
    listed = cli("record", "list", "--record", str(path))
    assert listed.exit_code == 0
    warned = [line for line in listed.stderr.splitlines() if line.startswith("warning: ")]
    assert len(warned) == MAX_LINE_WARNINGS + 1
    assert warned[0] == f"warning: {path}:1: not a record (1 fields, needs at least 6), kept as is"
    assert warned[-1] == (
        f"warning: {path}:{MAX_LINE_WARNINGS + 1}: this line and "
        f"{2000 - MAX_LINE_WARNINGS - 1} more up to line 2000 are not records or have notes too, "
        "not listed one by one; every line is kept as is"
    )
    added = cli("record", "add", "m", "1", "--record", str(path), "-q")
    assert added.exit_code == 0, added.stderr
    assert path.read_text().startswith(garbage)
