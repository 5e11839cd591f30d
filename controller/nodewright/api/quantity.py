"""Just enough quantity arithmetic for API validation (the scheduler has its own)."""

from __future__ import annotations

import re
from fractions import Fraction

_SUFFIXES: dict[str, Fraction] = {
    "": Fraction(1),
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
    "Ki": Fraction(1 << 10),
    "Mi": Fraction(1 << 20),
    "Gi": Fraction(1 << 30),
    "Ti": Fraction(1 << 40),
    "Pi": Fraction(1 << 50),
    "Ei": Fraction(1 << 60),
}
_QUANTITY = re.compile(
    r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(?:([eE][+-]?[0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]))?$"
)


def quantity_value(text: str) -> Fraction:
    """The exact value of a Kubernetes quantity string."""
    match = _QUANTITY.match(text.strip())
    if not match:
        raise ValueError(f"{text!r} is not a Kubernetes quantity such as 100m, 2, 20Gi or 1e3")
    number, exponent, suffix = match.groups()
    value = Fraction(number)
    if exponent:
        value *= Fraction(10) ** int(exponent[1:])
    return value * _SUFFIXES[suffix or ""]


def quantity_to_bytes(text: str) -> int:
    return int(quantity_value(text))
