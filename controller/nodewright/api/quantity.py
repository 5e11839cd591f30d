"""Kubernetes resource quantities as exact integers of milli-units.

Every amount is held as an `int` counting thousandths of the base unit (millicores for cpu,
millibytes for memory), so sums and differences are exact and comparisons are cheap.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from fractions import Fraction

Resources = dict[str, int]
"""Resource name -> amount in milli-units."""

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"

_BINARY_SUFFIXES: dict[str, int] = {
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "Ei": 2**60,
}
_DECIMAL_SUFFIXES: dict[str, Fraction] = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
_QUANTITY = re.compile(
    r"^(?P<sign>[+-]?)(?P<number>\d+(?:\.\d*)?|\.\d+)"
    r"(?:(?P<binary>Ki|Mi|Gi|Ti|Pi|Ei)|[eE](?P<exponent>[+-]?\d+)|(?P<decimal>[numkMGTPE]?))$"
)
_BYTE_RESOURCES = frozenset({MEMORY, EPHEMERAL_STORAGE, "storage", "hugepages"})


def parse_quantity(value: str | int | float) -> int:
    """Parse a Kubernetes quantity ("1930m", "2", "6903Mi", "1e3", "0.5Gi") into milli-units.

    Amounts finer than a milli-unit round up, as Kubernetes does when it reads milli values.
    Raises ValueError naming the value and the accepted syntax when it is not a quantity.
    """
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a quantity: expected a number or a string")
    if isinstance(value, int):
        return value * 1000
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{value!r} is not a quantity: it must be a finite number")
        return math.ceil(Fraction(repr(value)) * 1000)
    if not isinstance(value, str):
        raise ValueError(f"{value!r} is not a quantity: expected a number or a string")
    match = _QUANTITY.match(value.strip())
    if match is None:
        raise ValueError(
            f"{value!r} is not a quantity: expected a number with an optional suffix "
            "(m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei) or exponent (1e3), e.g. '500m' or '2Gi'"
        )
    amount = Fraction(match["number"])
    if match["binary"]:
        amount *= _BINARY_SUFFIXES[match["binary"]]
    elif match["exponent"] is not None:
        exponent = int(match["exponent"])
        if abs(exponent) > 30:
            raise ValueError(
                f"{value!r} is out of range: exponents from -30 to 30 are taken "
                "(1e30 is already more than any cluster holds)"
            )
        amount *= Fraction(10) ** exponent
    else:
        amount *= _DECIMAL_SUFFIXES[match["decimal"] or ""]
    millis = math.ceil(amount * 1000)
    return -millis if match["sign"] == "-" else millis


def parse_resources(values: Mapping[str, str | int | float]) -> Resources:
    """Parse a resource list ({"cpu": "500m", "memory": "1Gi"}) into milli-units per resource.

    Errors name the offending resource: "memory: '1Q' is not a quantity ...".
    """
    parsed: Resources = {}
    for name, raw in values.items():
        try:
            parsed[name] = parse_quantity(raw)
        except ValueError as error:
            raise ValueError(f"{name}: {error}") from None
    return parsed


def format_quantity(millis: int, resource: str = "") -> str:
    """Write milli-units back in Kubernetes style for the given resource.

    cpu: whole cores ("2") or millicores ("1930m"); memory and storage: the largest exact binary
    unit ("6903Mi", "17Gi", "512Ki") or plain bytes; anything else: a plain number or millis.
    """
    if millis % 1000:
        return f"{millis}m"
    units = millis // 1000
    if _is_byte_resource(resource) and units:
        for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
            size = _BINARY_SUFFIXES[suffix]
            if units % size == 0:
                return f"{units // size}{suffix}"
    return str(units)


def format_resources(resources: Mapping[str, int]) -> dict[str, str]:
    """Format every entry of a resource list, keeping the resource names."""
    return {name: format_quantity(amount, name) for name, amount in resources.items()}


def add(*lists: Mapping[str, int]) -> Resources:
    """Sum resource lists; a resource missing from one list counts as zero there."""
    total: Resources = {}
    for resources in lists:
        for name, amount in resources.items():
            total[name] = total.get(name, 0) + amount
    return total


def subtract(minuend: Mapping[str, int], subtrahend: Mapping[str, int]) -> Resources:
    """`minuend - subtrahend` over the minuend's resources only (the result may go negative)."""
    return {name: amount - subtrahend.get(name, 0) for name, amount in minuend.items()}


def fits(requests: Mapping[str, int], available: Mapping[str, int]) -> bool:
    """True when every requested amount is within what is available (absent means zero)."""
    return all(amount <= available.get(name, 0) for name, amount in requests.items() if amount > 0)


def exceeded(requests: Mapping[str, int], available: Mapping[str, int]) -> list[str]:
    """The names of the resources whose request is larger than what is available, sorted."""
    return sorted(
        name
        for name, amount in requests.items()
        if amount > 0 and amount > available.get(name, 0)
    )


def maximum(lists: Iterable[Mapping[str, int]]) -> Resources:
    """The per-resource maximum over resource lists (Kubernetes' rule for init containers)."""
    result: Resources = {}
    for resources in lists:
        for name, amount in resources.items():
            if amount > result.get(name, amount - 1):
                result[name] = amount
    return result


def _is_byte_resource(resource: str) -> bool:
    return resource in _BYTE_RESOURCES or resource.startswith("hugepages-")


def is_byte_resource(resource: str) -> bool:
    """Whether the resource counts bytes (Kubernetes writes it in binary units)."""
    return _is_byte_resource(resource)
