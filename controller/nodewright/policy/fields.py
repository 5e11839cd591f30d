"""Reading loosely-typed resource properties without tripping over missing fields.

Rules run on what users wrote, before (or without) model validation, so any
field may be absent or of the wrong type; these helpers answer None or empty
instead of raising, and leave wrong types for validation to report.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def dig(value: Any, *path: str | int) -> Any:
    """The value at `path` inside nested mappings and lists, or None if any step is missing."""
    current = value
    for step in path:
        if isinstance(step, int):
            if not is_list(current) or not -len(current) <= step < len(current):
                return None
            current = current[step]
        else:
            if not isinstance(current, Mapping) or step not in current:
                return None
            current = current[step]
    return current


def is_list(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, str | bytes)


def items_of(value: Any) -> list[tuple[int, Any]]:
    """(index, item) pairs of a list; empty for anything that is not a list."""
    return list(enumerate(value)) if is_list(value) else []


def mapping_of(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def strings_of(value: Any) -> list[str]:
    """A list of strings from a string or a list (IAM allows both); other values are dropped."""
    if isinstance(value, str):
        return [value]
    return [item for _, item in items_of(value) if isinstance(item, str)]


def is_true(value: Any) -> bool:
    """True for YAML/JSON true and the strings "true"/"True" that templating often produces."""
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")
