"""Durations as scenario files write them (Go syntax) and virtual time as printed."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nodewright.sim.durations import format_duration, format_offset, parse_duration


@pytest.mark.parametrize(("text", "seconds"), [
    ("500ms", 0.5), ("30s", 30), ("2m", 120), ("1h30m", 5400), ("1.5h", 5400),
    ("0", 0), ("1h0m10s", 3610), ("250us", 0.00025), ("+5s", 5),
])
def test_go_durations_are_read(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize(("text", "complaint"), [
    ("30", "a unit is required"),
    ("-5s", "is negative"),
    ("5 minutes", "is not a duration"),
    ("1d", "is not a duration"),
    ("", "is not a duration"),
    ("h", "is not a duration"),
])
def test_bad_durations_say_what_is_wrong(text: str, complaint: str) -> None:
    with pytest.raises(ValueError, match=complaint):
        parse_duration(text)


@given(st.integers(min_value=0, max_value=10**7))
def test_formatting_whole_seconds_reads_back(seconds: int) -> None:
    assert parse_duration(format_duration(seconds)) == seconds


def test_virtual_time_is_hours_minutes_seconds_past_a_day() -> None:
    assert format_offset(72.9) == "00:01:12"
    assert format_offset(26 * 3600 + 5) == "26:00:05"
