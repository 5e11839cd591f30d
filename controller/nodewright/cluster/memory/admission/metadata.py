"""ObjectMeta as the API server checks it on every write (apimachinery's
ValidateObjectMeta): name and generateName, namespace, labels, annotations, owner
references and finalizers, with the server's field paths and messages."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from nodewright.cluster.api import Kind
from nodewright.cluster.memory.admission import names
from nodewright.cluster.memory.admission.field_errors import (
    TOO_LONG,
    FieldError,
    forbidden,
    invalid,
    required,
)

TOTAL_ANNOTATION_BYTES = 256 * 1024
# Finalizers the core kinds accept without a domain prefix.
STANDARD_FINALIZERS = frozenset({"kubernetes", "orphan", "foregroundDeletion"})
# Kinds served by the API server itself: their finalizers must also be fully qualified.
_CUSTOM_GROUPS = frozenset({"karpenter.sh", "karpenter.k8s.aws"})

NameCheck = Callable[[str], list[str]]


def name_check(info: Kind) -> NameCheck:
    return names.dns1123_label if info.kind == "Namespace" else names.dns1123_subdomain


def validate(info: Kind, meta: Mapping[str, Any]) -> list[FieldError]:
    errors: list[FieldError] = []
    check = name_check(info)
    prefix = meta.get("generateName")
    if prefix:
        for problem in check(names.mask_trailing_dash(str(prefix))):
            errors.append(invalid("metadata.generateName", prefix, problem))
    name = meta.get("name")
    if not name:
        errors.append(required("metadata.name", "name or generateName is required"))
    else:
        for problem in check(str(name)):
            errors.append(invalid("metadata.name", name, problem))
    namespace = meta.get("namespace")
    if info.namespaced:
        if not namespace:
            errors.append(required("metadata.namespace"))
        else:
            for problem in names.dns1123_label(str(namespace)):
                errors.append(invalid("metadata.namespace", namespace, problem))
    elif namespace:
        errors.append(forbidden("metadata.namespace", "not allowed on this type"))
    errors.extend(_labels(meta.get("labels")))
    errors.extend(_annotations(meta.get("annotations")))
    errors.extend(_owner_references(meta.get("ownerReferences")))
    errors.extend(_finalizers(meta.get("finalizers"), core=info.group not in _CUSTOM_GROUPS))
    return errors


def _labels(labels: Any) -> list[FieldError]:
    if labels is None:
        return []
    if not isinstance(labels, Mapping):
        return [invalid("metadata.labels", labels, "must be a map of strings to strings")]
    errors = []
    for key, value in labels.items():
        if not isinstance(value, str):
            errors.append(invalid("metadata.labels", value, "must be a string"))
            continue
        for problem in names.qualified_name(str(key)):
            errors.append(invalid("metadata.labels", key, problem))
        for problem in names.label_value(value):
            errors.append(invalid("metadata.labels", value, problem))
    return errors


def _annotations(annotations: Any) -> list[FieldError]:
    if annotations is None:
        return []
    if not isinstance(annotations, Mapping):
        return [invalid("metadata.annotations", annotations,
                        "must be a map of strings to strings")]
    errors = []
    size = 0
    for key, value in annotations.items():
        if not isinstance(value, str):
            errors.append(invalid("metadata.annotations", value, "must be a string"))
            continue
        # Case does not matter in annotation keys.
        for problem in names.qualified_name(str(key).lower()):
            errors.append(invalid("metadata.annotations", key, problem))
        size += len(str(key)) + len(value)
    if size > TOTAL_ANNOTATION_BYTES:
        errors.append(FieldError(TOO_LONG, "metadata.annotations",
                                 detail=f"must have at most {TOTAL_ANNOTATION_BYTES} bytes"))
    return errors


def _owner_references(refs: Any) -> list[FieldError]:
    if refs is None:
        return []
    where = "metadata.ownerReferences"
    if not isinstance(refs, list):
        return [invalid(where, refs, "must be a list")]
    errors = []
    controller = ""
    for ref in refs:
        if not isinstance(ref, Mapping):
            errors.append(invalid(where, ref, "must be an object"))
            continue
        version = str(ref.get("apiVersion") or "").rpartition("/")[2]
        for field, value, what in (("apiVersion", version, "version"),
                                   ("kind", ref.get("kind"), "kind"),
                                   ("name", ref.get("name"), "name"),
                                   ("uid", ref.get("uid"), "uid")):
            if not value:
                errors.append(invalid(f"{where}.{field}", ref.get(field) or "",
                                      f"{what} must not be empty"))
        if ref.get("controller") is True:
            current = f"{ref.get('kind')}/{ref.get('name')}"
            if controller:
                errors.append(invalid(where, refs, (
                    'Only one reference can have Controller set to true. Found "true" in '
                    f"references for {controller} and {current}")))
            else:
                controller = current
    return errors


def _finalizers(finalizers: Any, *, core: bool) -> list[FieldError]:
    if finalizers is None:
        return []
    where = "metadata.finalizers"
    if not isinstance(finalizers, list) or not all(isinstance(f, str) for f in finalizers):
        return [invalid(where, finalizers, "must be a list of strings")]
    errors = []
    for finalizer in finalizers:
        for problem in names.qualified_name(finalizer):
            errors.append(invalid(where, finalizer, problem))
    if core:
        for index, finalizer in enumerate(finalizers):
            if "/" not in finalizer and finalizer not in STANDARD_FINALIZERS:
                errors.append(invalid(f"{where}[{index}]", finalizer,
                                      "name is neither a standard finalizer name nor is it "
                                      "fully qualified"))
    return errors

