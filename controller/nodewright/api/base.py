"""The base of every API model: camelCase on the wire, unknown fields refused."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, JsonValue
from pydantic.alias_generators import to_camel


class CelRule:
    """A rule the API server checks with CEL (x-kubernetes-validations).

    The same rule is implemented in Python in `nodewright.api.rules`; this is
    only what the generated CRD carries so that kubectl users get it too.
    """

    def __init__(self, rule: str, message: str) -> None:
        self.rule = rule
        self.message = message

    def to_schema(self) -> dict[str, str]:
        return {"message": self.message, "rule": self.rule}


def cel_extra(rules: Iterable[Mapping[str, str]]) -> dict[str, JsonValue]:
    """`json_schema_extra` for a field that carries CEL rules into the CRD."""
    validations: list[JsonValue] = [
        {"message": rule["message"], "rule": rule["rule"]} for rule in rules
    ]
    return {"x-kubernetes-validations": validations}


class KubeModel(BaseModel):
    """A Kubernetes object or sub-object.

    Attributes are snake_case in Python and camelCase on the wire; fields whose
    wire name is not plain camelCase (kmsKeyID, clusterDNS, ...) carry an
    explicit alias.
    """

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        validate_assignment=True,
        # As the API server does: "5" is not an integer and "true" is not a boolean.
        strict=True,
        # The order of fields is the order in the CRD and in rendered YAML.
        protected_namespaces=(),
    )

    # CEL rules that span several fields of this object, for the CRD schema.
    cel_rules: ClassVar[tuple[CelRule, ...]] = ()

    def to_manifest(self) -> dict[str, Any]:
        """The object as Kubernetes YAML/JSON would carry it (camelCase, no nulls)."""
        dumped: dict[str, Any] = self.model_dump(mode="json", by_alias=True, exclude_none=True)
        return dumped
