"""The custom resources (NodePool, NodeClaim, EC2NodeClass) checked against the CRDs the
project generates (`nodewright.api.crds`), as the API server checks them once those
CRDs are installed: compiled once per process."""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from nodewright.cluster.memory.admission.cel import preload
from nodewright.cluster.memory.admission.field_errors import FieldError, required
from nodewright.cluster.memory.admission.structural import (
    MISSING,
    Admission,
    Node,
    compile_schema,
)
from nodewright.cluster.memory.admission.versions import NEWEST, KubernetesVersion

# Fields of a custom resource that ObjectMeta's checks cover instead of the schema.
_OBJECT_FIELDS = ("apiVersion", "kind", "metadata")


@lru_cache(maxsize=1)
def schemas() -> Mapping[str, Node]:
    from nodewright.api.crds import generate_crds  # the API layer, loaded on first use

    crds = generate_crds()
    preload(_rules(crds))
    compiled: dict[str, Node] = {}
    for crd in crds:
        version = crd["spec"]["versions"][0]
        compiled[crd["spec"]["names"]["kind"]] = compile_schema(
            version["schema"]["openAPIV3Schema"])
    return compiled


def _rules(value: Any) -> list[str]:
    found: list[str] = []
    if isinstance(value, Mapping):
        found.extend(str(rule["rule"]) for rule in value.get("x-kubernetes-validations") or ())
        for item in value.values():
            found.extend(_rules(item))
    elif isinstance(value, list):
        for item in value:
            found.extend(_rules(item))
    return found


def is_custom(kind: str) -> bool:
    return kind in schemas()


def admit(kind: str, new: dict[str, Any], old: Mapping[str, Any] | None,
          version: KubernetesVersion = NEWEST) -> tuple[dict[str, Any], list[FieldError]]:
    """The object as stored (pruned, defaulted) and what is wrong with it, as the API server
    of `version` answers."""
    root = schemas()[kind]
    admission = Admission(version)
    result: dict[str, Any] = {}
    changed = False
    for key, value in new.items():
        if key in _OBJECT_FIELDS:
            result[key] = value
            continue
        sub = root.properties.get(key)
        if sub is None or value is None:
            changed = True  # pruned
            continue
        before = old.get(key, MISSING) if old is not None else MISSING
        after = admission.visit(sub, value, before, key)
        changed = changed or after is not value
        result[key] = after
    for key, sub in root.properties.items():
        if key not in result and key not in _OBJECT_FIELDS and sub.default is not MISSING:
            result[key] = admission.visit(sub, sub.default, MISSING, key)
            changed = True
    for key in root.required:
        if key not in result:
            admission.errors.append(required(key))
    errors = admission.finish()
    return (result if changed else new), errors
