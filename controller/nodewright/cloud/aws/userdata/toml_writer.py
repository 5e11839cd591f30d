"""TOML as pelletier/go-toml v2 writes it (Karpenter's Bottlerocket user data): a table's
key/values first, then its sub-tables, each under its full `[a.b.c]` header (a table with
only sub-tables still gets its own header), a blank line before every sub-table but the
first of a table without key/values; a mapping's keys sorted, a struct's fields in their
declaration order (`Struct`); strings single-quoted unless they hold a quote or a control
character; keys bare when they can be."""

from __future__ import annotations

import datetime
import math
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

_BARE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r",
            "\t": "\\t"}


@dataclass(frozen=True)
class Field:
    key: str
    value: Any
    omitempty: bool = True


@dataclass(frozen=True)
class Struct:
    """A Go struct's fields in declaration order; a None value (a nil pointer) is left out,
    an empty one too when the field is `omitempty`."""

    fields: tuple[Field, ...]


def _needs_quoting(text: str) -> bool:
    return any(char in "'\r\n" or (char < " " and char != "\t") or char == "\x7f"
               for char in text)


def _quoted(text: str) -> str:
    out = ['"']
    for char in text:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif char < " " or char == "\x7f":
            out.append(f"\\u00{ord(char):02X}")
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


def string(text: str) -> str:
    return _quoted(text) if _needs_quoting(text) else f"'{text}'"


def key(text: str) -> str:
    if not text:
        return "''"
    if all(char in _BARE for char in text):
        return text
    if "'" in text or _needs_quoting(text):
        return _quoted(text)
    return f"'{text}'"


def _float(value: float) -> str:
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if math.trunc(value) == value:
        return f"{value:.1f}"
    return format(Decimal(repr(value)), "f")


def _datetime(value: datetime.datetime | datetime.date | datetime.time) -> str:
    if isinstance(value, datetime.datetime):
        text = value.strftime("%Y-%m-%dT%H:%M:%S")
        if value.microsecond:
            text += f".{value.microsecond:06d}".rstrip("0")
        offset = value.utcoffset()
        if offset is None:
            return text
        if not offset:
            return text + "Z"
        minutes = int(offset.total_seconds()) // 60
        sign = "-" if minutes < 0 else "+"
        return f"{text}{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"
    if isinstance(value, datetime.date):
        return value.isoformat()
    text = value.strftime("%H:%M:%S")
    if value.microsecond:
        text += f".{value.microsecond:06d}".rstrip("0")
    return text


def _is_table(value: Any) -> bool:
    return isinstance(value, Mapping | Struct)


def _is_table_or_array_table(value: Any) -> bool:
    if isinstance(value, list):
        return bool(value) and all(_is_table(item) for item in value)
    return _is_table(value)


def _is_empty(value: Any) -> bool:
    if isinstance(value, Struct):
        return all(item.value is None or _is_empty(item.value) for item in value.fields)
    if isinstance(value, str | list | Mapping):
        return len(value) == 0
    if isinstance(value, bool | int | float):
        return not value
    return False


def _entries(value: Mapping[str, Any] | Struct) -> list[Field]:
    if isinstance(value, Struct):
        return [item for item in value.fields if item.value is not None]
    return [Field(name, value[name], False) for name in sorted(value)
            if value[name] is not None]


def inline(value: Any) -> str:
    """A value on the right of `key = `."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _float(value)
    if isinstance(value, str):
        return string(value)
    if isinstance(value, datetime.datetime | datetime.date | datetime.time):
        return _datetime(value)
    if isinstance(value, list):
        return "[" + ", ".join(inline(item) for item in value) + "]"
    if isinstance(value, Mapping | Struct):
        pairs = [f"{key(item.key)} = {inline(item.value)}" for item in _entries(value)
                 if not (item.omitempty and _is_empty(item.value))]
        return "{" + ", ".join(pairs) + "}"
    raise ValueError(f"cannot write {type(value).__name__} as TOML")


def _table(out: list[str], path: list[str], value: Mapping[str, Any] | Struct,
           header: bool = True) -> None:
    if path and header:
        out.append("[" + ".".join(key(part) for part in path) + "]\n")
    entries = [item for item in _entries(value)
               if not (item.omitempty and _is_empty(item.value))]
    values = [item for item in entries if not _is_table_or_array_table(item.value)]
    tables = [item for item in entries if _is_table_or_array_table(item.value)]
    for item in values:
        out.append(f"{key(item.key)} = {inline(item.value)}\n")
    for number, item in enumerate(tables):
        if number or values:
            out.append("\n")
        _sub_table(out, [*path, item.key], item.value)


def _sub_table(out: list[str], path: list[str], value: Any) -> None:
    if not isinstance(value, list):
        _table(out, path, value)
        return
    header = "[[" + ".".join(key(part) for part in path) + "]]\n"
    for number, item in enumerate(value):
        if number:
            out.append("\n")
        out.append(header)
        _table(out, path, item, header=False)


def dumps(document: Mapping[str, Any] | Struct) -> str:
    out: list[str] = []
    _table(out, [], document)
    return "".join(out)
