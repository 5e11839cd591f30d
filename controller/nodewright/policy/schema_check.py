"""Checks a configuration value against the small JSON-schema subset rules use.

Rule options are declared as JSON schema because that is what the Pulumi
engine validates pack configuration with; the `nodewright policy check`
command reads the same configuration files without the engine, so it needs the
same checks. Supported keywords: type, items, properties,
additionalProperties, minimum, maximum, minLength, pattern.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

_TYPE_CHECKS = {
    "string": lambda value: isinstance(value, str),
    "integer": lambda value: isinstance(value, int) and not isinstance(value, bool),
    "number": lambda value: isinstance(value, int | float) and not isinstance(value, bool),
    "boolean": lambda value: isinstance(value, bool),
    "array": lambda value: isinstance(value, list),
    "object": lambda value: isinstance(value, Mapping),
}


def schema_errors(value: Any, schema: Mapping[str, Any], path: str) -> Iterator[str]:
    """Messages "path: what is wrong" for every way `value` breaks `schema`."""
    types = schema.get("type")
    if types is not None:
        allowed = [types] if isinstance(types, str) else list(types)
        if not any(_TYPE_CHECKS[name](value) for name in allowed):
            yield f"{path}: expected {' or '.join(allowed)}, got {_describe(value)}"
            return
    if isinstance(value, str):
        yield from _string_errors(value, schema, path)
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            yield f"{path}: {value} is below the minimum {schema['minimum']}"
        if "maximum" in schema and value > schema["maximum"]:
            yield f"{path}: {value} is above the maximum {schema['maximum']}"
    if isinstance(value, list) and "items" in schema:
        for index, item in enumerate(value):
            yield from schema_errors(item, schema["items"], f"{path}[{index}]")
    if isinstance(value, Mapping):
        yield from _object_errors(value, schema, path)


def _string_errors(value: str, schema: Mapping[str, Any], path: str) -> Iterator[str]:
    if len(value) < schema.get("minLength", 0):
        yield f"{path}: must not be empty"
    pattern = schema.get("pattern")
    if pattern is not None and not re.search(pattern, value):
        yield f"{path}: {value!r} does not match {pattern}"


def _object_errors(value: Mapping[str, Any], schema: Mapping[str, Any], path: str) -> Iterator[str]:
    properties: Mapping[str, Any] = schema.get("properties", {})
    extra = schema.get("additionalProperties", True)
    for key, item in value.items():
        child = f"{path}.{key}"
        if key in properties:
            yield from schema_errors(item, properties[key], child)
        elif extra is False:
            known = ", ".join(sorted(properties)) or "none"
            yield f"{child}: unknown setting (known: {known})"
        elif isinstance(extra, Mapping):
            yield from schema_errors(item, extra, child)


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list):
        return "a list"
    return f"{type(value).__name__} {value!r}"
