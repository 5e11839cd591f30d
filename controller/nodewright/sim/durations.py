"""Durations and virtual time as the timeline prints them (scenario files are read by
nodewright.api.formats.parse_duration)."""

from __future__ import annotations


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
