"""A CRD's structural schema applied to a write as the API server applies it: unknown
fields pruned (unless x-kubernetes-preserve-unknown-fields), defaults filled in, then
the OpenAPI checks (type, required, enum, pattern, bounds, lengths, item counts) and the
`x-kubernetes-validations` CEL rules, with the server's field paths and messages.

On an update, a part equal to the stored version's is taken as it is: it was pruned,
defaulted and validated when it was stored, and every check here depends only on the
value (transition rules, which see `oldSelf`, are always evaluated).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from nodewright.cluster.copying import deep_copy
from nodewright.cluster.memory.admission.cel import RuleSet
from nodewright.cluster.memory.admission.field_errors import (
    DUPLICATE,
    TOO_LONG,
    TOO_MANY,
    TYPE_INVALID,
    FieldError,
    invalid,
    not_supported,
    required,
)
from nodewright.cluster.memory.admission.versions import NEWEST, KubernetesVersion

MISSING: Any = object()
_NOT_CHECKED = ("some validation rules were not checked because the object was invalid; "
                "correct the existing errors to complete validation")


@dataclass(slots=True)
class Node:
    """One compiled schema node."""

    type: str | None = None
    properties: dict[str, Node] = field(default_factory=dict)
    required: tuple[str, ...] = ()
    items: Node | None = None
    additional: Node | None = None
    preserve_unknown: bool = False
    int_or_string: bool = False
    enum: tuple[Any, ...] | None = None
    pattern: re.Pattern[str] | None = None
    pattern_text: str = ""
    minimum: float | None = None
    maximum: float | None = None
    min_length: int | None = None
    max_length: int | None = None
    min_items: int | None = None
    max_items: int | None = None
    unique_items: bool = False  # x-kubernetes-list-type: set
    min_properties: int | None = None
    max_properties: int | None = None
    default: Any = MISSING
    rules: RuleSet | None = None
    transition_below: bool = False  # a rule here or below reads oldSelf


def compile_schema(schema: Mapping[str, Any]) -> Node:
    node = Node(
        type=schema.get("type"),
        required=tuple(schema.get("required") or ()),
        preserve_unknown=bool(schema.get("x-kubernetes-preserve-unknown-fields")),
        int_or_string=bool(schema.get("x-kubernetes-int-or-string")),
        enum=tuple(schema["enum"]) if "enum" in schema else None,
        minimum=schema.get("minimum"),
        maximum=schema.get("maximum"),
        min_length=schema.get("minLength"),
        max_length=schema.get("maxLength"),
        min_items=schema.get("minItems"),
        max_items=schema.get("maxItems"),
        unique_items=schema.get("x-kubernetes-list-type") == "set",
        min_properties=schema.get("minProperties"),
        max_properties=schema.get("maxProperties"),
        default=schema.get("default", MISSING),
    )
    if "pattern" in schema:
        node.pattern_text = str(schema["pattern"])
        node.pattern = re.compile(node.pattern_text)
    node.properties = {name: compile_schema(sub)
                       for name, sub in (schema.get("properties") or {}).items()}
    if isinstance(schema.get("items"), Mapping):
        node.items = compile_schema(schema["items"])
    if isinstance(schema.get("additionalProperties"), Mapping):
        node.additional = compile_schema(schema["additionalProperties"])
    if schema.get("x-kubernetes-validations"):
        node.rules = RuleSet(schema["x-kubernetes-validations"])
    children = [*node.properties.values(), node.items, node.additional]
    node.transition_below = bool(node.rules and node.rules.has_transition) or any(
        child.transition_below for child in children if child is not None)
    return node


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


def _type_matches(want: str, value: Any) -> bool:
    if want == "object":
        return isinstance(value, dict)
    if want == "array":
        return isinstance(value, list)
    if want == "string":
        return isinstance(value, str)
    if want == "boolean":
        return isinstance(value, bool)
    if want == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer())
    if want == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return True


@dataclass
class _Pending:
    rules: RuleSet
    path: str
    value: Any
    old: Any


class Admission:
    """One write's pass over the schema: `visit` returns the pruned and defaulted value,
    `errors` what is wrong with it (CEL rules only when nothing blocks them)."""

    def __init__(self, version: KubernetesVersion = NEWEST) -> None:
        self.version = version
        self.errors: list[FieldError] = []
        self._pending: list[_Pending] = []

    def finish(self) -> list[FieldError]:
        if self._pending:
            if any(error.type in self.version.cel_blocking for error in self.errors):
                self.errors.append(invalid(None, None, _NOT_CHECKED))
            else:
                for item in self._pending:
                    has_old = item.old is not MISSING
                    for verdict in item.rules.check(item.value, item.old if has_old else None,
                                                    has_old=has_old):
                        self.errors.append(invalid(item.path, json_type(item.value),
                                                   verdict.detail))
        return self.errors

    def visit(self, node: Node, value: Any, old: Any, path: str) -> Any:
        if old is not MISSING and not node.transition_below and (
                value is old or value == old):
            return old
        if node.int_or_string:
            if not isinstance(value, (str, int)) or isinstance(value, bool):
                actual = json_type(value)
                self.errors.append(FieldError(TYPE_INVALID, path, actual, (
                    f'{path} in body must be of type integer,string: "{actual}"')))
                self.errors.append(invalid(None, "", (
                    f'"{path}" must validate at least one schema (anyOf)')))
                self.errors.append(FieldError(TYPE_INVALID, path, actual, (
                    f'{path} in body must be of type integer: "{actual}"')))
                return value
        elif node.type and not _type_matches(node.type, value):
            actual = json_type(value)
            self.errors.append(FieldError(TYPE_INVALID, path, actual, (
                f'{path} in body must be of type {node.type}: "{actual}"')))
            return value
        if isinstance(value, dict):
            value = self._object(node, value, old if isinstance(old, dict) else MISSING, path)
        elif isinstance(value, list):
            value = self._array(node, value, old if isinstance(old, list) else MISSING, path)
        else:
            self._scalar(node, value, path)
        if node.enum is not None and value not in node.enum:
            self.errors.append(not_supported(path, value, node.enum))
        if node.rules is not None:
            self._pending.append(_Pending(node.rules, path, value, old))
        return value

    def _object(self, node: Node, value: dict[str, Any], old: Any, path: str
                ) -> dict[str, Any]:
        result: dict[str, Any] = {}
        changed = False
        for key, item in value.items():
            sub = node.properties.get(key) or node.additional
            if sub is None:
                if node.preserve_unknown:
                    result[key] = item
                else:
                    changed = True  # pruned
                continue
            if item is None and key in node.properties:
                changed = True  # a null for a non-nullable field is dropped
                continue
            before = old.get(key, MISSING) if old is not MISSING else MISSING
            after = self.visit(sub, item, before, _child(path, key))
            changed = changed or after is not item
            result[key] = after
        for key, sub in node.properties.items():
            if key not in result and sub.default is not MISSING:
                result[key] = self.visit(sub, deep_copy(sub.default), MISSING,
                                         _child(path, key))
                changed = True
        if not changed:
            result = value
        for key in node.required:
            if key not in result:
                self.errors.append(required(_child(path, key)))
        count = len(result)
        if node.min_properties is not None and count < node.min_properties:
            self.errors.append(invalid(path, count, (
                f"{path} in body should have at least {node.min_properties} properties")))
        if node.max_properties is not None and count > node.max_properties:
            self.errors.append(FieldError(TOO_MANY, path, count,
                                          f"must have at most {node.max_properties} items"))
        return result

    def _array(self, node: Node, value: list[Any], old: Any, path: str) -> list[Any]:
        result = value
        if node.items is not None:
            copied: list[Any] | None = None
            for index, item in enumerate(value):
                before = old[index] if old is not MISSING and index < len(old) else MISSING
                after = self.visit(node.items, item, before, f"{path}[{index}]")
                if after is not item:
                    if copied is None:
                        copied = list(value)
                    copied[index] = after
            if copied is not None:
                result = copied
        if node.unique_items:
            for index, item in enumerate(result):
                if item in result[:index]:
                    self.errors.append(FieldError(DUPLICATE, f"{path}[{index}]", item))
        count = len(result)
        if node.min_items is not None and count < node.min_items:
            self.errors.append(invalid(path, count, (
                f"{path} in body should have at least {node.min_items} items")))
        if node.max_items is not None and count > node.max_items:
            self.errors.append(FieldError(TOO_MANY, path, count,
                                          f"must have at most {node.max_items} items"))
        return result

    def _scalar(self, node: Node, value: Any, path: str) -> None:
        if isinstance(value, str):
            if node.min_length is not None and len(value) < node.min_length:
                self.errors.append(invalid(path, value, (
                    f"{path} in body should be at least {node.min_length} chars long")))
            if node.max_length is not None and len(value) > node.max_length:
                self.errors.append(FieldError(TOO_LONG, path, value,
                                              f"may not be longer than {node.max_length}"))
            if node.pattern is not None and not node.pattern.search(value):
                self.errors.append(invalid(path, value, (
                    f"{path} in body should match '{node.pattern_text}'")))
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            if node.minimum is not None and value < node.minimum:
                self.errors.append(invalid(path, value, (
                    f"{path} in body should be greater than or equal to {node.minimum}")))
            if node.maximum is not None and value > node.maximum:
                self.errors.append(invalid(path, value, (
                    f"{path} in body should be less than or equal to {node.maximum}")))


def _child(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key
