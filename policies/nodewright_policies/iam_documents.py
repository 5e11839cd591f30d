"""Reading IAM policy documents as Pulumi resources carry them (a JSON string or a mapping)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from nodewright.policy.fields import items_of, strings_of


class DocumentError(ValueError):
    """The value is not an IAM policy document."""


def parse_document(value: Any) -> Mapping[str, Any]:
    """The document as a mapping; raises DocumentError with a reason when it is not one."""
    if isinstance(value, Mapping):
        return value
    if not isinstance(value, str):
        raise DocumentError(f"expected a JSON policy document, got {type(value).__name__}")
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError as error:
        raise DocumentError(f"the policy document is not valid JSON ({error.msg})") from None
    if not isinstance(parsed, Mapping):
        raise DocumentError("the policy document is not a JSON object")
    return parsed


def statements(document: Mapping[str, Any]) -> list[tuple[int, Mapping[str, Any]]]:
    """(index, statement) pairs; a single statement object counts as statement 0."""
    raw = document.get("Statement")
    if isinstance(raw, Mapping):
        return [(0, raw)]
    return [(index, item) for index, item in items_of(raw) if isinstance(item, Mapping)]


def label(index: int, statement: Mapping[str, Any]) -> str:
    sid = statement.get("Sid")
    return f"statement {sid!r}" if isinstance(sid, str) and sid else f"statement #{index}"


def actions(statement: Mapping[str, Any]) -> list[str]:
    return strings_of(statement.get("Action"))


def resources(statement: Mapping[str, Any]) -> list[str]:
    return strings_of(statement.get("Resource"))


def is_allow(statement: Mapping[str, Any]) -> bool:
    return statement.get("Effect") == "Allow"
