"""The record model, the line format and the record file (load, append, rewrite)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oomrec.core import records
from oomrec.core.errors import OomrecError
from oomrec.core.hardware import normalize
from oomrec.core.records import (
    NotARecord,
    OomRecord,
    RecordFile,
    evidence_key,
    format_line,
    parse_line,
    read_line,
)
from tests.profiles import examples

SHA = "9bef3f2334c4048d8540aa392ef030c97d4dad2c"


def test_harness_written_line_parses() -> None:
    line = f"gemma-4-31b-it-4bit,32768,2026-07-03,{SHA[:8]},,benchmarks/cuda_gb10.csv"
    assert parse_line(line) == OomRecord(
        model="gemma-4-31b-it-4bit",
        prompt_target_len=32768,
        date="2026-07-03",
        commit=SHA[:8],
        peak_bytes=None,
        source_csv="benchmarks/cuda_gb10.csv",
        hardware=None,
    )
    # A harness line without hardware is written back exactly as the harness wrote it.
    assert format_line(parse_line(line)) == line


def test_oomrec_line_with_quoted_source_round_trips() -> None:
    rec = OomRecord("m", 512, "2026-01-02", SHA, 123456789, 'runs/a,b "x".csv', "gb10")
    line = format_line(rec)
    assert line == f'm,512,2026-01-02,{SHA},123456789,"runs/a,b ""x"".csv",gb10,'
    assert parse_line(line) == rec


def test_fields_are_quoted_only_when_needed() -> None:
    rec = OomRecord("m", 1, "2026-01-02", "abc1234-dirty", None, "plain.csv", "m1ultra")
    assert format_line(rec) == "m,1,2026-01-02,abc1234-dirty,,plain.csv,m1ultra,"


_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), min_size=0, max_size=20
)


@given(
    model=st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789.-_", min_size=1, max_size=30),
    length=st.integers(min_value=0, max_value=10**7),
    commit=st.one_of(st.just("unknown"), st.text(alphabet="0123456789abcdef", min_size=7)),
    peak=st.one_of(st.none(), st.integers(min_value=0, max_value=2**50)),
    source=_text.filter(lambda s: s == s.strip()),
    hardware=st.one_of(
        st.none(),
        # Records hold normalized tags (a hand-written `GB10` reads as `gb10`).
        st.text(alphabet="abcdefgh0123456789-", min_size=1).filter(lambda h: normalize(h) == h),
    ),
    mem=st.one_of(st.none(), st.integers(min_value=0, max_value=2**63 - 1)),
    kind=st.one_of(st.none(), st.just("guard"), st.just("fake")),
)
def test_any_record_round_trips(
    model: str,
    length: int,
    commit: str,
    peak: int | None,
    source: str,
    hardware: str | None,
    mem: int | None,
    kind: str | None,
) -> None:
    rec = OomRecord(model, length, "2026-11-29", commit, peak, source, hardware, mem, kind)
    line = format_line(rec)
    assert parse_line(line) == rec
    # The harness reads fields 1-2 of a line with at least six, whatever follows.
    assert line.split(",")[:2] == [model, str(length)]
    assert len(line.split(",")) >= 6


def test_a_guard_record_is_nine_fields_and_other_evidence_than_an_oom() -> None:
    oom = OomRecord("m", 512, "2026-11-29", "abc1234", 10, "out.csv")
    guard = OomRecord("m", 512, "2026-11-29", "abc1234", 10, "out.csv", kind="guard")
    assert format_line(guard) == "m,512,2026-11-29,abc1234,10,out.csv,,,guard"
    assert format_line(oom) == "m,512,2026-11-29,abc1234,10,out.csv"
    assert evidence_key(oom) != evidence_key(guard)
    assert "kind" not in oom.to_dict()
    assert guard.to_dict()["kind"] == "guard"


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("m,512,2026-01-01,abc,", "5 fields, needs at least 6"),
        (",512,2026-01-01,abc,,s", "empty model"),
        ("m,abc,2026-01-01,abc,,s", "length 'abc' is not a number"),
        ("m,-1,2026-01-01,abc,,s", "length '-1' is not a number"),
        (
            "m," + "9" * 5000 + ",2026-01-01,abc,,s",
            "length '99999999999999999999'... (5000 characters) is out of range",
        ),
        ("m,9223372036854775808,2026-01-01,abc,,s", "length '9223372036854775808' is out of range"),
    ],
)
def test_unparsable_lines_say_why(line: str, reason: str) -> None:
    with pytest.raises(NotARecord) as info:
        parse_line(line)
    assert str(info.value) == reason


def test_load_tolerates_missing_and_empty_files(tmp_path: Path) -> None:
    assert RecordFile(tmp_path / "missing").load().lines == []
    (tmp_path / "empty").write_bytes(b"")
    assert RecordFile(tmp_path / "empty").load().lines == []


def test_load_tolerates_bom_crlf_blank_lines_and_reads_a_last_line_as_the_harness_does(
    tmp_path: Path,
) -> None:
    path = tmp_path / "rec"
    path.write_bytes(
        b"\xef\xbb\xbfa,1,2026-01-01,unknown,,s\r\n\r\n\nb,2,2026-01-02,unknown,,s,gb10"
    )
    loaded = RecordFile(path, shown_as="rec").load()
    # The last line may be an append cut short: `gb10` could be the start of a longer tag, so
    # it scopes nothing; its model and length are whole (a comma follows each).
    assert [(r.model, r.prompt_target_len, r.hardware) for r in loaded.records] == [
        ("a", 1, None),
        ("b", 2, None),
    ]
    assert [str(w) for w in loaded.warnings] == [
        f"warning: rec:1: {records.HARNESS_BOM}",
        f"warning: rec:4: {records.UNTERMINATED}",
    ]


def test_a_harness_reading_problem_is_warned_once_per_kind(tmp_path: Path) -> None:
    path = tmp_path / "rec"
    path.write_text(
        "a, 512,2026-01-01,unknown,,s\nb ,512,2026-01-01,unknown,,s\nc,02048,2026-01-01,u,,s\n"
        "d,512,2026-01-01,unknown,,s\ne,\t1,2026-01-01,unknown,,s\n"
    )
    loaded = RecordFile(path, shown_as="rec").load()
    assert [r.model for r in loaded.records] == ["a", "b", "c", "d", "e"]
    assert [str(w) for w in loaded.warnings] == [
        f"warning: rec:1: {records.HARNESS_PADDED} (and 2 more lines like it)",
        f"warning: rec:3: {records.HARNESS_ZERO}",
    ]


def test_unparsed_line_warns_once_with_its_line_number(tmp_path: Path) -> None:
    path = tmp_path / "rec"
    path.write_text("a,1,2026-01-01,u,,s\n\nbad,abc,2026-01-01,u,,s\n")
    loaded = RecordFile(path, shown_as="benchmarks/.oom-record").load()
    assert [str(w) for w in loaded.warnings] == [
        "warning: benchmarks/.oom-record:3: not a record (length 'abc' is not a number), kept as is"
    ]


def test_append_adds_lines_and_never_glues_onto_a_last_line(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "rec"
    record_file = RecordFile(path)
    assert record_file.append([OomRecord("a", 1, "2026-01-01", "unknown")]) == 1
    with path.open("a") as fh:
        fh.write("hand-written,2,2026-01-01,unknown,,s")  # no newline
    record_file.append([OomRecord("b", 3, "2026-01-01", "unknown", None, "x", "gb10")])
    # The harness honours a hand-added line without an ending: the append completes it.
    assert path.read_text() == (
        "a,1,2026-01-01,unknown,,\nhand-written,2,2026-01-01,unknown,,s\n"
        "b,3,2026-01-01,unknown,,x,gb10,\n"
    )
    assert not record_file.torn_path.exists()
    assert record_file.notices == [
        f"{path}: its last line had no line ending; completed it with one"
    ]
    # A line too short to be the harness's (a write cut short) is moved aside, never deleted.
    with path.open("a") as fh:
        fh.write("cut,4,2026")
    record_file.append([OomRecord("c", 5, "2026-01-01", "unknown")])
    assert path.read_text().endswith("b,3,2026-01-01,unknown,,x,gb10,\nc,5,2026-01-01,unknown,,\n")
    assert record_file.torn_path.read_text() == "cut,4,2026\n"


def test_rewrite_keeps_unparsed_lines_verbatim_and_in_order(tmp_path: Path) -> None:
    path = tmp_path / "rec"
    original = (
        "keep1,1,2026-01-01,unknown,,s\n"
        "# a comment someone wrote\n"
        "drop,2,2026-01-01,unknown,,s\n"
        "garbage \xe9\x0b with a vertical tab,,,\n"
        "keep2,3,2026-01-01,unknown,,s\r\n"
    )
    path.write_bytes(original.encode("utf-8") + b"raw \xff\xfe bytes,1\n")
    RecordFile(path).rewrite(
        lambda loaded: [
            line for line in loaded.lines if line.record is None or line.record.model != "drop"
        ]
    )
    assert path.read_bytes() == (
        b"keep1,1,2026-01-01,unknown,,s\n"
        b"# a comment someone wrote\n"
        + "garbage \xe9\x0b with a vertical tab,,,\n".encode()
        + b"keep2,3,2026-01-01,unknown,,s\r\n"
        b"raw \xff\xfe bytes,1\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rec", "rec.lock"]


def test_rewrite_keeps_the_file_mode(tmp_path: Path) -> None:
    path = tmp_path / "rec"
    path.write_text("a,1,2026-01-01,unknown,,s\n")
    path.chmod(0o640)
    RecordFile(path).rewrite(lambda loaded: loaded.lines)
    assert path.stat().st_mode & 0o777 == 0o640


def test_rewrite_refuses_a_symlink(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.write_text("a,1,2026-01-01,unknown,,s\n")
    link = tmp_path / "link"
    link.symlink_to(real)
    with pytest.raises(OomrecError, match=r"is a symlink; refusing to rewrite it"):
        RecordFile(link).rewrite(lambda loaded: [])
    assert real.read_text() == "a,1,2026-01-01,unknown,,s\n"
    assert link.is_symlink()


def test_rewrite_and_append_refuse_a_directory(tmp_path: Path) -> None:
    with pytest.raises(OomrecError, match="not a regular file"):
        RecordFile(tmp_path).rewrite(lambda loaded: [])
    with pytest.raises(OomrecError, match="not a regular file"):
        RecordFile(tmp_path).append([OomRecord("a", 1, "2026-01-01", "unknown")])


_APPENDER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from oomrec.core.records import OomRecord, RecordFile

    path, who, count = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    record_file = RecordFile(path)
    for i in range(count):
        record_file.append([OomRecord(f"w{who}", i, "2026-01-01", "unknown", i, "src", "hw")])
    """
)


def _appenders(path: Path, writers: int, count: int) -> list[subprocess.Popen[bytes]]:
    return [
        subprocess.Popen([sys.executable, "-c", _APPENDER, str(path), str(w), str(count)])
        for w in range(writers)
    ]


def _expected_lines(writers: int, count: int) -> set[str]:
    line = "w{},{},2026-01-01,unknown,{},src,hw,"
    return {line.format(w, i, i) for w in range(writers) for i in range(count)}


def test_concurrent_appends_from_processes_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "rec"
    procs = _appenders(path, writers=8, count=500)
    assert [p.wait() for p in procs] == [0] * 8
    lines = path.read_text().splitlines()
    assert len(lines) == 4000
    assert set(lines) == _expected_lines(8, 500)


def test_rewrite_under_concurrent_appends_loses_nothing(tmp_path: Path) -> None:
    path = tmp_path / "rec"
    path.write_text("".join(f"old,{i},2026-01-01,unknown,,s\n" for i in range(200)))
    procs = _appenders(path, writers=2, count=300)
    record_file = RecordFile(path)
    rewrites = 0
    # Rewrite (dropping the old lines a few at a time) for as long as the appenders run.
    while any(p.poll() is None for p in procs) or rewrites < 3:
        floor = 2 * (rewrites + 1)
        record_file.rewrite(
            lambda loaded, floor=floor: [
                line
                for line in loaded.lines
                if line.record is None
                or line.record.model != "old"
                or line.record.prompt_target_len >= floor
            ]
        )
        rewrites += 1
    assert [p.wait() for p in procs] == [0, 0]
    lines = path.read_text().splitlines()
    appended = [line for line in lines if not line.startswith("old,")]
    assert len(appended) == 600
    assert set(appended) == _expected_lines(2, 300)
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    assert os.path.getsize(path) > 0


def test_append_unless_present_checks_inside_the_lock(tmp_path: Path) -> None:
    path = tmp_path / "rec"
    path.write_text("a,1,2026-01-01,unknown,,s,hw,\n")
    record_file = RecordFile(path)

    def key(r: OomRecord) -> tuple[str, int]:
        return (r.model, r.prompt_target_len)

    batch = [
        OomRecord("a", 1, "2026-02-02", "abc", None, "t", "hw"),  # present in the file
        OomRecord("b", 2, "2026-02-02", "abc", None, "t", "hw"),
        OomRecord("b", 2, "2026-03-03", "def", None, "u", "hw"),  # repeated in the batch
    ]
    assert record_file.append(batch, unless_present=key) == 1
    assert record_file.append(batch, unless_present=key) == 0
    assert path.read_text() == "a,1,2026-01-01,unknown,,s,hw,\nb,2,2026-02-02,abc,,t,hw,\n"


def test_rewrite_keeps_a_bom_and_crlf_endings(tmp_path: Path) -> None:
    path = tmp_path / "rec"
    path.write_bytes(
        b"\xef\xbb\xbfjunk line\r\na,1,2026-01-01,unknown,,s\r\ndrop,2,2026-01-01,unknown,,s\r\n"
        b"last,3,2026-01-01,unknown,,s"
    )
    RecordFile(path).rewrite(
        lambda loaded: [
            line for line in loaded.lines if line.record is None or line.record.model != "drop"
        ]
    )
    # The last line, whole as the harness reads it, is completed.
    assert path.read_bytes() == (
        b"\xef\xbb\xbfjunk line\r\na,1,2026-01-01,unknown,,s\r\nlast,3,2026-01-01,unknown,,s\n"
    )
    assert not (tmp_path / "rec.torn").exists()


def test_hand_written_hardware_reads_as_its_tag_only_when_it_is_one() -> None:
    assert parse_line("m,1,2026-01-01,unknown,,s.csv,GB10").hardware == "gb10"
    assert parse_line("m,1,2026-01-01,unknown,,s,GB10,").hardware == "gb10"
    # Seven fields after a source that is no CSV's name: the harness's `--output
    # benchmarks/sweep,h200`, so no tag; the record applies on every machine (the safe side).
    rec, note = read_line("m,1,2026-01-01,unknown,,benchmarks/sweep,h200")
    assert (rec.hardware, rec.source_csv, note) == (
        None,
        "benchmarks/sweep,h200",
        records.UNQUOTED_SOURCE,
    )
    # Quoted, the source is oomrec's and whole: its seventh field is a tag.
    assert parse_line('m,1,2026-01-01,unknown,,"a,b",h200').hardware == "h200"
    assert parse_line("m,1,2026-01-01,unknown,,s,").hardware is None
    # Not a tag as oomrec writes it: the rest of an unquoted source path, on every machine.
    rec, note = read_line("m,1,2026-01-01,unknown,,s,NVIDIA_GB10_122GB")
    assert (rec.hardware, rec.source_csv, note) == (
        None,
        "s,NVIDIA_GB10_122GB",
        records.UNQUOTED_SOURCE,
    )


@pytest.mark.parametrize("bad", ["a\nb", "a\rb", "a\x00b"])
def test_format_refuses_a_field_with_a_line_break(bad: str) -> None:
    with pytest.raises(OomrecError, match="holds a line break or control character"):
        format_line(OomRecord("m", 1, "2026-01-01", "unknown", None, bad, "hw"))


_record_bytes = st.lists(
    st.one_of(
        st.sampled_from(
            [b",", b"\n", b"\r", b"\r\n", b'"', b"9" * 30, b"512", b"2026-01-01", b"gb10",
             b"\xef\xbb\xbf", b"\xff", b" ", b"m", b"-", b"yesterday"]
        ),
        st.binary(max_size=8),
    ),
    max_size=60,
).map(b"".join)  # fmt: skip


@settings(max_examples=examples(60), deadline=None)
@given(_record_bytes)
def test_any_bytes_load_without_a_traceback_and_rewrite_unchanged(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "rec"
        path.write_bytes(data)
        loaded = RecordFile(path).load()
        for line in loaded.lines:
            if line.record is not None:
                # A record is a whole line, with numbers in range.
                assert line.ending
                assert 0 <= line.record.prompt_target_len < 2**63
            for warning in [str(w) for w in loaded.warnings]:
                assert "\n" not in warning and len(warning) < 400
        # Keeping every line writes the same bytes back, bar a last line without its ending:
        # it goes to <record>.torn, whole, or, when blank, gets its line ending.
        RecordFile(path).rewrite(lambda current: current.lines)
        torn = Path(tmp) / "rec.torn"
        moved = torn.read_bytes()[:-1] if torn.exists() else b""
        assert path.read_bytes() + moved in (data, data + b"\n")


def _one_of(*values: str) -> st.SearchStrategy[str]:
    # The first three, oomrec's own forms, drawn as often as all the odd values together.
    return st.one_of(st.sampled_from(values[:3]), st.sampled_from(values[3:]))


_ODD = ("", " ", "\xa0", "\x1c", "é", "0", '"', "/")
# Each field from values oomrec writes and values it must not take as they are, so that both
# readings meet on lines of every shape.
_plain_lines = st.tuples(
    _one_of("m", "org/m", "m/", "/", "a..b", *_ODD),
    _one_of("512", "0", "9" * 18, "0512", "08", "9" * 19, "1" * 30, *_ODD),
    _one_of("2026-07-03", "", "2026-02-30", "yesterday", *_ODD),
    _one_of("abc1234", "unknown", "abc-dirty", *_ODD),
    _one_of("", "123", "0", "9" * 19, "12GB", *_ODD),
    _one_of("s.csv", "s", "benchmarks/x.csv", "x.CSV", " s.csv ", "a b.csv", *_ODD),
    st.lists(_one_of("gb10", "", "csv", "h200", "GB10", "nvidia_gb10", *_ODD), max_size=1),
    st.lists(_one_of("", "96", "0", "9" * 19, "12GB", *_ODD), max_size=1),
    st.lists(_one_of("guard", "fake", "", "other", *_ODD), max_size=1),
    st.integers(0, 3),
).map(lambda f: ",".join([*f[:6], *(f[6] + f[7] + f[8])[: f[9]]]))


@settings(max_examples=examples(1000), deadline=None)
@given(_plain_lines)
def test_the_fast_reading_of_a_common_line_is_read_lines_own(text: str) -> None:
    """read_plain takes the common shape in a third of read_line's time; where it takes a line
    at all, it reads it exactly as read_line does, with nothing to note."""
    fast = records.read_plain(text)
    # The same with the tails remembered across examples, as parse_text remembers them across
    # lines: a tail read once is read alike after any other line.
    assert records.read_plain(text, _TAILS) == fast
    assert records.read_plain(text, _TAILS) == fast
    if fast is None:
        return
    record, note = read_line(text)
    assert (record, note) == (fast, None)


_TAILS: dict[str, Any] = {}


def test_the_fast_reading_takes_what_oomrec_and_the_harness_write() -> None:
    for line in (
        "m,512,2026-07-03,abc1234,,benchmarks/x.csv",
        "org/m,512,,unknown,123,s,gb10,",
        "m,512,2026-07-03,abc1234,,x.csv,gb10",
        "m,512,2026-07-03,abc1234,,s,gb10,96,guard",
    ):
        assert records.read_plain(line) == read_line(line)[0], line
    # Left to read_line: an octal-looking length, a comma path's seventh field, a padded model.
    for line in ("m,0512,,x,,s", "m,512,,x,,benchmarks/sweep,h200", " m,512,,x,,s"):
        assert records.read_plain(line) is None, line
