"""OpenAPI v3 structural schemas from the pydantic models, for the CRDs.

Walks the models' type annotations rather than pydantic's JSON Schema output:
Kubernetes wants inline structural schemas (no $ref, no anyOf for optionals,
no additionalProperties beside properties) with its own extensions.
"""

from __future__ import annotations

import types
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from annotated_types import GroupedMetadata
from pydantic import BaseModel
from pydantic.fields import FieldInfo

JSONSchema = dict[str, Any]
_SCALARS: dict[type, str] = {str: "string", int: "integer", bool: "boolean", float: "number"}


def object_schema(model: type[BaseModel], *, skip: frozenset[str] = frozenset()) -> JSONSchema:
    properties: dict[str, JSONSchema] = {}
    required: list[str] = []
    for name, field in model.model_fields.items():
        wire = field.alias or name
        if wire in skip:
            continue
        properties[wire] = field_schema(field, wire)
        if field.is_required():
            required.append(wire)
    schema: JSONSchema = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    if model.__doc__ and model.__module__.startswith("nodewright.api"):
        schema["description"] = " ".join(model.__doc__.split())
    rules = getattr(model, "cel_rules", ())
    if rules:
        schema["x-kubernetes-validations"] = [rule.to_schema() for rule in rules]
    return schema


def field_schema(field: FieldInfo, wire: str = "") -> JSONSchema:
    assert field.annotation is not None
    schema = type_schema(field.annotation, list(field.metadata), wire)
    if field.description:
        schema["description"] = field.description
    if not field.is_required():
        default = field.get_default(call_default_factory=True)
        if isinstance(default, BaseModel):
            schema["default"] = default.model_dump(mode="json", by_alias=True, exclude_none=True)
        elif isinstance(default, list) and default and isinstance(default[0], BaseModel):
            schema["default"] = [
                item.model_dump(mode="json", by_alias=True, exclude_none=True) for item in default
            ]
        elif default is not None and default != []:
            schema["default"] = default
    _merge_extra(schema, field.json_schema_extra)
    return schema


def type_schema(annotation: Any, metadata: list[Any], wire: str = "") -> JSONSchema:
    """`wire`: the field's name, for the messages of rules generated from its type."""
    origin = get_origin(annotation)
    if origin is Annotated:
        inner, *extra = get_args(annotation)
        return type_schema(inner, [*extra, *metadata], wire)
    if origin in (Union, types.UnionType):
        options = [arg for arg in get_args(annotation) if arg is not type(None)]
        if len(options) == 1:
            return type_schema(options[0], metadata, wire)
        schema: JSONSchema = {"x-kubernetes-int-or-string": True,
                              "anyOf": [{"type": "integer"}, {"type": "string"}]}
        return _constrain(schema, metadata, "string")
    if origin is Literal:
        values = list(get_args(annotation))
        kind = _SCALARS[type(values[0])]
        return _constrain({"type": kind, "enum": values}, metadata, kind)
    if origin is list:
        (item,) = get_args(annotation)
        return _constrain({"type": "array", "items": type_schema(item, [])}, metadata, "array")
    if origin is dict:
        key, value = get_args(annotation)
        if value is Any:
            schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        else:
            schema = {"type": "object", "additionalProperties": type_schema(value, [])}
        if get_origin(key) is Literal:
            # Karpenter's wording: valid keys for evictionHard are ['memory.available',...]
            allowed = "[" + ",".join(f"'{value}'" for value in get_args(key)) + "]"
            schema["x-kubernetes-validations"] = [
                {
                    "rule": f"self.all(x, x in {allowed})",
                    "message": f"valid keys for {wire or 'this map'} are {allowed}",
                }
            ]
        return _constrain(schema, metadata, "object")
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return _constrain(object_schema(annotation), metadata, "object")
    if annotation in _SCALARS:
        return _constrain({"type": _SCALARS[annotation]}, metadata, _SCALARS[annotation])
    raise TypeError(f"no CRD schema for annotation {annotation!r}")


def _flatten(metadata: list[Any]) -> list[Any]:
    flat: list[Any] = []
    for item in metadata:
        if isinstance(item, GroupedMetadata):
            flat.extend(_flatten(list(item)))
        elif isinstance(item, FieldInfo):
            flat.extend(_flatten(list(item.metadata)))
            flat.append(item)
        else:
            flat.append(item)
    return flat


_LENGTH_KEYS = {
    "string": ("minLength", "maxLength"),
    "array": ("minItems", "maxItems"),
    "object": ("minProperties", "maxProperties"),
}


def _constrain(schema: JSONSchema, metadata: list[Any], kind: str) -> JSONSchema:
    for item in _flatten(metadata):
        if isinstance(item, FieldInfo):
            _merge_extra(schema, item.json_schema_extra)
            continue
        pattern = getattr(item, "pattern", None)
        if pattern is not None:
            schema["pattern"] = pattern
        for attribute, key in (("ge", "minimum"), ("le", "maximum")):
            bound = getattr(item, attribute, None)
            if bound is not None:
                schema[key] = bound
        lower, upper = _LENGTH_KEYS.get(kind, ("minLength", "maxLength"))
        if getattr(item, "min_length", None) is not None:
            schema[lower] = item.min_length
        if getattr(item, "max_length", None) is not None:
            schema[upper] = item.max_length
    if "x-kubernetes-int-or-string" in schema and schema.get("type") == "string":
        del schema["type"]
        schema["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    return schema


def _merge_extra(schema: JSONSchema, extra: Any) -> None:
    if not isinstance(extra, dict):
        return
    for key, value in extra.items():
        if key == "x-kubernetes-validations":
            schema.setdefault(key, []).extend(value)
        else:
            schema[key] = value
