"""Wire formats shared by the models: quantities, durations, label keys.

Each is an Annotated type, so pydantic enforces it and the CRD generator
copies the same pattern into the OpenAPI schema.
"""

from __future__ import annotations

import functools
import re
from typing import Annotated

from pydantic import BeforeValidator, Field, StringConstraints

from nodewright.api import golang

# Kubernetes resource.Quantity (apimachinery's regular expression).
QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
    r"(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
# A quantity or a percentage, as kubelet eviction thresholds take them.
PERCENT_OR_QUANTITY_PATTERN = (
    r"^((\d{1,2}(\.\d{1,2})?|100(\.0{1,2})?)%|"
    r"(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
    r"(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?)$"
)
# Durations as Karpenter's v1 API accepts them.
DURATION_PATTERN = r"^([0-9]+(s|m|h))+$"
DURATION_OR_NEVER_PATTERN = r"^(([0-9]+(s|m|h))+|Never)$"
BUDGET_DURATION_PATTERN = r"^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$"
BUDGET_NODES_PATTERN = r"^((100|[0-9]{1,2})%|[0-9]+)$"
# A qualified label key: an optional DNS-subdomain prefix, then a name.
LABEL_KEY_PATTERN = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)

# A taint value as Karpenter's CRDs pattern it (the qualified-name form, written as they
# write it).
TAINT_VALUE_PATTERN = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(\/))?"
    r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$"
)


def _number_to_string(value: object) -> object:
    """YAML turns `nodes: 5` or `cpu: 1000` into numbers; the API keeps strings."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return str(value)
    return value


Quantity = Annotated[
    str,
    BeforeValidator(_number_to_string),
    StringConstraints(pattern=QUANTITY_PATTERN),
    Field(json_schema_extra={"x-kubernetes-int-or-string": True}),
]
PercentOrQuantity = Annotated[str, StringConstraints(pattern=PERCENT_OR_QUANTITY_PATTERN)]
Duration = Annotated[str, StringConstraints(pattern=DURATION_PATTERN)]
DurationOrNever = Annotated[str, StringConstraints(pattern=DURATION_OR_NEVER_PATTERN)]
BudgetDuration = Annotated[str, StringConstraints(pattern=BUDGET_DURATION_PATTERN)]
def _refuse_number(value: object) -> object:
    """Karpenter's budget `nodes` is a string: an unquoted 5 is refused by the API server."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        raise ValueError(f'must be a string: write nodes: "{value}" (quoted), or a percentage')
    return value


BudgetNodes = Annotated[
    str, BeforeValidator(_refuse_number), StringConstraints(pattern=BUDGET_NODES_PATTERN)
]
# Five cron fields, or one of the @ shorthands (croniter checks the fields themselves).
CRON_PATTERN = (
    r"^(@(annually|yearly|monthly|weekly|daily|midnight|hourly))|((.+)\s(.+)\s(.+)\s(.+)\s(.+))$"
)
CronSchedule = Annotated[str, StringConstraints(pattern=CRON_PATTERN)]
LABEL_VALUE_PATTERN = r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$"
LabelValue = Annotated[str, StringConstraints(max_length=63, pattern=LABEL_VALUE_PATTERN)]
LabelKey = Annotated[str, StringConstraints(max_length=316, pattern=LABEL_KEY_PATTERN)]

# Go's time.ParseDuration units (µ is U+00B5, μ U+03BC; Go takes both).
_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0,
                   "m": 60.0, "h": 3600.0}
_NUMBER = re.compile(r"([0-9]*)(\.[0-9]*)?")
_UNIT = re.compile(r"[^0-9.]*")
DURATION_EXAMPLES = "500ms, 30s, 2m or 1h30m"
_LONGEST_GO_DURATION = (2**63 - 1) / 1e9  # int64 nanoseconds: about 292 years


class DurationError(ValueError):
    """A duration that cannot be read: str() says so for a person, `go_message` in the words
    of Go's time.ParseDuration (which Karpenter copies into its events)."""

    def __init__(self, message: str, go_message: str) -> None:
        super().__init__(message)
        self.go_message = go_message


def parse_duration(text: str, *, allow_negative: bool = False) -> float:
    """Seconds in a Go duration, read as Go's time.ParseDuration reads it: a sign, then
    numbers each with a unit ("1h30m", "1.5h", ".5s", "500ms"); a bare "0" needs no unit.

    Strictness: a negative duration ("-5m") is refused unless `allow_negative` (kubelet
    settings and do-not-disrupt want Go's answer and judge the sign themselves). "Never" is
    not a duration; fields that take it are read by `parse_duration_or_never`. Fields the
    API restricts further (whole numbers of s, m or h) are checked by their CRD pattern, not
    here."""
    seconds = _go_duration(text)
    if seconds < 0 and not allow_negative:
        raise DurationError(f"{text!r} is negative; a duration here counts forward "
                            f"({DURATION_EXAMPLES})",
                            f"duration {golang.time_quote(text)} is negative")
    return seconds


def parse_duration_or_never(text: str) -> float | None:
    """Seconds in a duration field that also takes "Never" (None), such as expireAfter and
    consolidateAfter; negatives are refused."""
    return None if text == "Never" else parse_duration(text)


# A pure function of the text, asked again for the same few texts (each NodeClaim's
# expireAfter, each NodePool's consolidateAfter) for every machine of every disruption pass.
@functools.lru_cache(maxsize=1024)
def _go_duration(text: str) -> float:
    quoted = golang.time_quote(text)
    invalid = DurationError(f"{text!r} is not a duration such as {DURATION_EXAMPLES}",
                            f"time: invalid duration {quoted}")
    body = text[1:] if text[:1] in ("-", "+") else text
    sign = -1.0 if text[:1] == "-" else 1.0
    if body == "0":
        return 0.0
    if not body:
        raise invalid
    total = 0.0
    while body:
        number = _NUMBER.match(body)
        assert number is not None  # both groups may be empty, so it always matches
        whole, fraction = number[1], (number[2] or "")[1:]
        if not whole and not fraction:
            raise invalid
        body = body[number.end():]
        unit_match = _UNIT.match(body)
        unit = unit_match[0] if unit_match else ""
        if not unit:
            raise DurationError(
                f"{text!r} is not a duration such as {DURATION_EXAMPLES}: a unit is required "
                "(ns, us, ms, s, m or h)", f"time: missing unit in duration {quoted}")
        if unit not in _DURATION_UNITS:
            raise DurationError(
                f"{text!r} is not a duration such as {DURATION_EXAMPLES}: unknown unit "
                f"{unit!r} (use ns, us, ms, s, m or h)",
                f"time: unknown unit {golang.time_quote(unit)} in duration {quoted}")
        body = body[len(unit):]
        total += float(f"{whole or 0}.{fraction or 0}") * _DURATION_UNITS[unit]
        if total > _LONGEST_GO_DURATION:
            raise invalid
    return sign * total


def _fraction(value: int, digits: int) -> str:
    """`value` with its last `digits` digits as a decimal fraction, trailing zeros dropped."""
    whole, rest = divmod(value, 10**digits)
    decimals = f"{rest:0{digits}d}".rstrip("0")
    return f"{whole}.{decimals}" if decimals else str(whole)


def as_go_writes_it(text: str) -> str:
    """A duration the way Karpenter writes back the metav1.Duration it decoded ("5m" ->
    "5m0s"); text that is no duration is left as it is (validation reports it)."""
    try:
        return format_duration(parse_duration(text, allow_negative=True))
    except ValueError:
        return text


def format_duration(seconds: float) -> str:
    """A duration as Go's time.Duration.String writes it ("1m0s", "1h30m0s", "1.5s",
    "500ms"): how Karpenter renders a metav1.Duration it read, whatever form the user wrote."""
    nanos = round(seconds * 1e9)
    sign, nanos = ("-" if nanos < 0 else ""), abs(nanos)
    if nanos == 0:
        return "0s"
    if nanos < 1_000:
        return f"{sign}{nanos}ns"
    if nanos < 1_000_000:
        return f"{sign}{_fraction(nanos, 3)}µs"
    if nanos < 1_000_000_000:
        return f"{sign}{_fraction(nanos, 6)}ms"
    whole_seconds, fraction = divmod(nanos, 1_000_000_000)
    text = f"{_fraction(whole_seconds % 60 * 10**9 + fraction, 9)}s"
    minutes = whole_seconds // 60
    if minutes:
        text = f"{minutes % 60}m{text}"
        if minutes // 60:
            text = f"{minutes // 60}h{text}"
    return sign + text
