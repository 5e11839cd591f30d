"""One reader for every duration: Go's time.ParseDuration syntax, with the strictness each
caller names (negatives allowed or not, "Never" or not). The CRD patterns narrow the API's
fields further; they are tested with the models."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nodewright.api.formats import (
    DurationError,
    format_duration,
    parse_duration,
    parse_duration_or_never,
)


@pytest.mark.parametrize(("text", "seconds"), [
    ("30s", 30), ("2m", 120), ("720h", 2_592_000), ("1h30m", 5400), ("1.5h", 5400),
    ("500ms", 0.5), ("250us", 0.00025), ("250µs", 0.00025), ("250μs", 0.00025),
    ("100ns", 1e-7), (".5s", 0.5), ("5.s", 5), ("1h0m10s", 3610), ("+5s", 5),
    ("0", 0), ("-0", 0), ("0s", 0),
])
def test_go_durations_read_as_go_reads_them(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


def test_a_negative_duration_is_read_only_where_the_caller_allows_it() -> None:
    assert parse_duration("-5m", allow_negative=True) == -300
    assert parse_duration("-1.5h", allow_negative=True) == -5400
    with pytest.raises(DurationError, match=r"'-5m' is negative; a duration here counts"):
        parse_duration("-5m")


def test_never_is_a_value_only_for_fields_that_take_it() -> None:
    assert parse_duration_or_never("Never") is None
    assert parse_duration_or_never("720h") == 2_592_000
    with pytest.raises(DurationError, match="'Never' is not a duration such as 500ms"):
        parse_duration("Never")
    with pytest.raises(DurationError, match="is negative"):
        parse_duration_or_never("-1h")


@pytest.mark.parametrize(("text", "complaint", "go_words"), [
    ("30", "a unit is required", 'time: missing unit in duration "30"'),
    ("1.5", "a unit is required", 'time: missing unit in duration "1.5"'),
    ("1d", "unknown unit 'd'", 'time: unknown unit "d" in duration "1d"'),
    ("5 minutes", "unknown unit ' minutes'",
     'time: unknown unit " minutes" in duration "5 minutes"'),
    ("", "is not a duration", 'time: invalid duration ""'),
    ("-", "is not a duration", 'time: invalid duration "-"'),
    (".", "is not a duration", 'time: invalid duration "."'),
    ("h", "is not a duration", 'time: invalid duration "h"'),
    ("soon", "is not a duration", 'time: invalid duration "soon"'),
    (" 5s", "is not a duration", 'time: invalid duration " 5s"'),
    ("1s.m", "is not a duration", 'time: invalid duration "1s.m"'),
    ("3000000h", "is not a duration", 'time: invalid duration "3000000h"'),  # > int64 ns
    # The time package quotes with its own quote: non-ASCII and control characters as the
    # bytes of their UTF-8, where strconv.Quote (and JSON) would keep "é" as it is.
    ("5é", "unknown unit 'é'", 'time: unknown unit "\\xc3\\xa9" in duration "5\\xc3\\xa9"'),
    ("5\t", "unknown unit", 'time: unknown unit "\\x09" in duration "5\\x09"'),
])
def test_bad_durations_say_what_is_wrong_for_people_and_in_gos_words(
        text: str, complaint: str, go_words: str) -> None:
    with pytest.raises(DurationError, match=complaint) as refused:
        parse_duration(text, allow_negative=True)
    assert refused.value.go_message == go_words


@given(st.lists(st.tuples(st.integers(0, 500), st.sampled_from(["h", "m", "s", "ms"])),
                min_size=1, max_size=4))
def test_a_duration_is_the_sum_of_its_parts(parts: list[tuple[int, str]]) -> None:
    scale = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
    text = "".join(f"{value}{unit}" for value, unit in parts)
    assert parse_duration(text) == pytest.approx(sum(v * scale[u] for v, u in parts))



@pytest.mark.parametrize(
    ("text", "seconds"),
    # Go's own cases for Duration.String (time_test.go durationTests), within float precision.
    [("0s", 0), ("1ns", 1e-9), ("1.1µs", 1.1e-6), ("2.2ms", 2.2e-3), ("3.3s", 3.3),
     ("4m5s", 245), ("4m5.001s", 245.001), ("5h6m7.001s", 18367.001),
     ("8m0.000000001s", 480.000000001), ("-1m30s", -90), ("1h0m0s", 3600)],
)
def test_durations_are_written_as_go_writes_them(text: str, seconds: float) -> None:
    assert format_duration(seconds) == text


@pytest.mark.parametrize("text", ["1m", "90s", "1h30m", "1.5h", "500ms", "0", "24h"])
def test_a_written_duration_reads_back_as_the_same_length(text: str) -> None:
    seconds = parse_duration(text)
    assert parse_duration(format_duration(seconds).replace("µs", "us")) == pytest.approx(seconds)
