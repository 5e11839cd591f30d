"""A minimal, deterministic TOML writer for Bottlerocket settings (tables of scalars and
lists of scalars; the standard library only reads TOML)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(key: str) -> str:
    return key if _BARE_KEY.match(key) else json.dumps(key)


def _value(value: Any, where: str) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # JSON string escapes are valid TOML basic-string escapes
    if isinstance(value, list):
        return "[" + ", ".join(_value(item, where) for item in value) + "]"
    raise ValueError(f"{where}: cannot write {type(value).__name__} as TOML")


def dumps(document: Mapping[str, Any]) -> str:
    lines: list[str] = []
    _table(document, [], lines)
    return "\n".join(lines).strip() + "\n"


def _table(table: Mapping[str, Any], path: list[str], lines: list[str]) -> None:
    scalars = {k: v for k, v in table.items() if not isinstance(v, Mapping)}
    tables = {k: v for k, v in table.items() if isinstance(v, Mapping)}
    if path and (scalars or not tables):
        lines.append("[" + ".".join(_key(part) for part in path) + "]")
    where = ".".join(path) or "(top level)"
    for key, value in scalars.items():
        lines.append(f"{_key(key)} = {_value(value, f'{where}.{key}')}")
    if path and (scalars or not tables):
        lines.append("")
    for key, value in tables.items():
        _table(value, [*path, key], lines)
