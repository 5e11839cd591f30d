"""Wire formats shared by the models: quantities, durations, label keys.

Each is an Annotated type, so pydantic enforces it and the CRD generator
copies the same pattern into the OpenAPI schema.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import BeforeValidator, Field, StringConstraints

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
# Any Go time.Duration (kubelet grace periods).
GO_DURATION_PATTERN = r"^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$"
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
GoDuration = Annotated[str, StringConstraints(pattern=GO_DURATION_PATTERN)]
LabelKey = Annotated[str, StringConstraints(max_length=316, pattern=LABEL_KEY_PATTERN)]

_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_DURATION_PART = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ns|us|µs|ms|s|m|h)")


def parse_duration(text: str) -> float | None:
    """Seconds in a Go duration string; None for "Never"."""
    if text == "Never":
        return None
    if not re.fullmatch(GO_DURATION_PATTERN, text):
        raise ValueError(f"{text!r} is not a duration such as 30s, 5m or 720h")
    return sum(float(n) * _DURATION_UNITS[unit] for n, unit in _DURATION_PART.findall(text))
