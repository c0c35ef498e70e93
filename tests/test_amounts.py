"""Lengths and durations as people type them (core.amounts): every accepted form reads as
meant, every other is one line naming the form that works."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oomrec.core.amounts import parse_duration, parse_length, parse_lengths
from oomrec.core.errors import OomrecError
from tests.profiles import examples


@settings(max_examples=examples(200))
@given(
    lengths=st.lists(st.integers(min_value=1, max_value=2**40), min_size=1, max_size=8),
    data=st.data(),
)
def test_any_spelling_of_a_ladder_reads_back_as_the_ladder(
    lengths: list[int], data: st.DataObject
) -> None:
    words = []
    for n in lengths:
        k = n % 1024 == 0 and data.draw(st.booleans())
        words.append(f"{n // 1024}{data.draw(st.sampled_from('kK'))}" if k else str(n))
    seps = [data.draw(st.sampled_from([" ", ",", ", ", "  ,"])) for _ in words[1:]]
    text = words[0] + "".join(s + w for s, w in zip(seps, words[1:], strict=True))
    got, warnings = parse_lengths(text, "--lengths")
    assert got == tuple(dict.fromkeys(lengths))
    assert len(warnings) == len(lengths) - len(set(lengths))


@pytest.mark.parametrize(
    ("text", "value"),
    [("512", 512), ("2k", 2048), ("32K", 32768), ("0", None), ("1.5k", None), ("2kb", None),
     ("-512", None), ("", None), ("k", None), ("9" * 30, None)],
)  # fmt: skip
def test_one_length(text: str, value: int | None) -> None:
    assert parse_length(text) == value


def test_a_bad_length_names_the_forms_that_work() -> None:
    with pytest.raises(OomrecError) as err:
        parse_lengths("512 2x", "--lengths")
    assert str(err.value) == (
        "--lengths: '2x' is not a prompt length; give token counts, e.g. \"512 2048 8192\" or "
        '"512,2k,8k" (k = 1024)'
    )


def test_a_length_given_twice_runs_once_with_a_warning() -> None:
    assert parse_lengths("512 512 2048", "--lengths") == (
        (512, 2048),
        ["warning: --lengths: 512 is given twice; it runs once"],
    )


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("1800", 1800.0), ("30m", 1800.0), ("1h30m", 5400.0), ("90s", 90.0), ("500ms", 0.5),
     ("1.5h", 5400.0), ("2m 30s", 150.0), (" 45 ", 45.0), ("0.25", 0.25), ("1e3", 1000.0)],
)  # fmt: skip
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text, "--timeout") == seconds


@pytest.mark.parametrize("text", ["", "x", "1h30", "5h5h", "-5", "inf", "nan", "1e999", "m", "0"])
def test_a_bad_duration_is_one_line_with_the_forms_that_work(text: str) -> None:
    with pytest.raises(OomrecError) as err:
        parse_duration(text, "--timeout")
    assert "give seconds or a duration, e.g. 1800, 30m, 1h30m, 90s" in str(err.value)
    assert "\n" not in str(err.value)


def test_zero_where_zero_means_none() -> None:
    assert parse_duration("0", "--cooldown", allow_zero=True) == 0.0
