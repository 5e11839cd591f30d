"""Disruption budget schedules as Karpenter reads them (robfig/cron's standard parser):
five fields or one of the @ shorthands. croniter accepts more than that parser (a range
that runs backwards, such as `tue-mon`), so the fields' ranges are checked here first."""

from __future__ import annotations

from functools import lru_cache

from croniter import croniter

SHORTHANDS = frozenset(
    {"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"}
)
_MONTHS = {name: number for number, name in enumerate(
    ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"],
    start=1)}
_DAYS = {name: number for number, name in enumerate(
    ["sun", "mon", "tue", "wed", "thu", "fri", "sat"])}
# (minimum, maximum, names) of minute, hour, day of month, month, day of week.
_FIELDS: tuple[tuple[int, int, dict[str, int]], ...] = (
    (0, 59, {}), (0, 23, {}), (1, 31, {}), (1, 12, _MONTHS), (0, 6, _DAYS))


@lru_cache(maxsize=1024)  # every disruption pass asks again about the same few schedules
def cron_problem(expression: str) -> str | None:
    """Why Karpenter cannot read `expression` as a budget schedule, or None when it can."""
    schedule = expression.strip()
    if schedule in SHORTHANDS:
        return None
    fields = schedule.split()
    if len(fields) != 5:
        return f"expected exactly 5 fields, found {len(fields)}: {expression}"
    for field, (low, high, names) in zip(fields, _FIELDS, strict=True):
        for part in field.split(","):
            reason = _range_problem(part.split("/", 1)[0], low, high, names)
            if reason:
                return f"{reason}: {part}"
    if not croniter.is_valid(schedule):
        return f"not a cron schedule: {expression}"
    return None


def _range_problem(span: str, low: int, high: int, names: dict[str, int]) -> str | None:
    if span in ("*", "?"):
        return None
    first, _, last = span.partition("-")
    start, end = _number(first, names), _number(last or first, names)
    if start is None or end is None:
        return None  # not a number or a name: croniter's check has the last word
    if start < low:
        return f"beginning of range ({start}) below minimum ({low})"
    if end > high:
        return f"end of range ({end}) above maximum ({high})"
    if start > end:
        return f"beginning of range ({start}) beyond end of range ({end})"
    return None


def _number(text: str, names: dict[str, int]) -> int | None:
    if text.isdigit():
        return int(text)
    return names.get(text.lower())
