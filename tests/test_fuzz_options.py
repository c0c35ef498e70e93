"""Fuzz the option and value parsers with arbitrary text: a value is either read or refused with
one short OomrecError line, never another exception (no ValueError on 5,000 digits, no
OverflowError, no RecursionError), and never slowly."""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import given, settings
from hypothesis import strategies as st

from oomrec.core import hardware
from oomrec.core.errors import OomrecError
from oomrec.core.records import NotARecord, check_length, parse_line
from oomrec.sweep import options as sweep_config
from tests.profiles import examples

# Text that reaches the parsers' corners: digits, separators, huge numbers, odd characters.
TEXT = st.one_of(
    st.text(max_size=200),
    st.text(alphabet="0123456789:,/ .-+eE%GiBgmk", max_size=60),
    st.integers(min_value=0, max_value=10**40).map(str),
    st.integers(min_value=4000, max_value=6000).map(lambda n: "9" * n),
    st.builds(lambda a, b: f"{a}:{b}", st.text(max_size=20), st.text(max_size=5000)),
)

PARSERS: list[tuple[str, Callable[[str], object]]] = [
    ("lengths", lambda t: sweep_config.parse_lengths(t, "--lengths")),
    ("fake_oom", lambda t: sweep_config.parse_fake_oom(t, "--fake-oom")),
    ("models", lambda t: sweep_config.parse_models(t, "--models")),
    ("shard", sweep_config.parse_shard),
    ("length", check_length),
]


@settings(max_examples=examples(150), deadline=None)
@given(text=TEXT)
def test_option_parsers_read_or_refuse_in_one_line(text: str) -> None:
    for _, parse in PARSERS:
        try:
            parse(text)
        except OomrecError as exc:
            message = str(exc)
            assert "\n" not in message
            assert len(message) < 600
    # Sizes and tags never raise at all: unknown is None.
    size = hardware.parse_size(text)
    assert size is None or 0 < size <= 2**63 - 1
    tag = hardware.normalize(text)
    assert tag is None or hardware.normalize(tag) == tag


@settings(max_examples=examples(150), deadline=None)
@given(fields=st.lists(TEXT, min_size=1, max_size=9))
def test_a_record_line_is_read_or_kept_with_a_reason(fields: list[str]) -> None:
    line = ",".join(f.replace("\n", " ").replace("\r", " ") for f in fields)
    try:
        record = parse_line(line)
    except NotARecord as exc:
        assert "\n" not in str(exc)
        return
    assert 0 <= record.prompt_target_len <= 2**63 - 1
    assert record.peak_bytes is None or 0 <= record.peak_bytes <= 2**63 - 1
