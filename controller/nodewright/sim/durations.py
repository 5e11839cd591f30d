"""Durations as scenario files write them (Go syntax) and virtual time as the timeline
prints it."""

from __future__ import annotations

import re

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_WHOLE = re.compile(r"(?:(?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|ms|s|m|h))+")

EXAMPLES = "500ms, 30s, 2m or 1h30m"


def parse_duration(text: str) -> float:
    """Seconds in a Go duration (`time.ParseDuration`): `500ms`, `30s`, `1h30m`, `1.5h`, `0`.

    Negative durations make no sense for a scenario and are refused. ValueError says what
    is wrong with the text."""
    value = text.strip()
    if value == "0":
        return 0.0
    if value.startswith("-"):
        raise ValueError(f"{text!r} is negative; durations count forward ({EXAMPLES})")
    if value.startswith("+"):
        value = value[1:]
    if not value or not _WHOLE.fullmatch(value):
        hint = ""
        if value and value[-1].isdigit():
            hint = " (a unit is required: ns, us, ms, s, m or h)"
        raise ValueError(f"{text!r} is not a duration such as {EXAMPLES}{hint}")
    return sum(float(number) * _UNITS[unit] for number, unit in _PART.findall(value))


def format_duration(seconds: float) -> str:
    """The shortest Go-style spelling of whole seconds: 90 -> '1m30s', 3600 -> '1h'."""
    whole = round(seconds)
    if whole == 0:
        return "0s" if seconds == 0 else f"{round(seconds * 1000)}ms"
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    text = (f"{hours}h" if hours else "") + (f"{minutes}m" if minutes else "")
    return text + (f"{secs}s" if secs or not text else "")


def format_offset(seconds: float) -> str:
    """Virtual time since the scenario began as `HH:MM:SS` (hours go past 24)."""
    whole = int(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours:02d}:{minutes:02d}:{secs:02d}"
