"""Virtual time as printed (scenario durations are read by the api parser:
tests/api/test_durations.py)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from nodewright.api.formats import parse_duration
from nodewright.sim.durations import format_duration, format_offset


def test_virtual_time_is_hours_minutes_seconds_past_a_day() -> None:
    assert format_offset(72.9) == "00:01:12"
    assert format_offset(26 * 3600 + 5) == "26:00:05"


@given(st.integers(min_value=0, max_value=10**7))
def test_formatting_whole_seconds_reads_back(seconds: int) -> None:
    assert parse_duration(format_duration(seconds)) == seconds
