"""Go-style durations ("90s", "1m30s", "2h", "1.5h") as Kubernetes annotations and
Karpenter's API write them; a bare number is seconds."""

from __future__ import annotations

import re

_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str) -> float:
    """Seconds; ValueError with the offending text when it is not a duration."""
    value = text.strip()
    try:
        return float(value)
    except ValueError:
        pass
    position, total = 0, 0.0
    for match in _PART.finditer(value):
        if match.start() != position:
            break
        total += float(match.group(1)) * _UNITS[match.group(2)]
        position = match.end()
    if not value or position != len(value):
        raise ValueError(f"{text!r} is not a duration (expected e.g. 90s, 5m, 1h30m)")
    return total
