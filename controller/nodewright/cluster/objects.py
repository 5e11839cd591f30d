"""Small accessors for objects in their wire shape (dicts), so controllers read
`name(pod)` instead of `pod["metadata"]["name"]` and write conditions one way."""

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from nodewright.runtime.clock import parse_time

Object = dict[str, Any]


def meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    value = obj.get("metadata")
    # Nearly always a dict: the type test first, isinstance of the Mapping ABC is slower.
    return value if type(value) is dict or isinstance(value, Mapping) else {}


def name(obj: Mapping[str, Any]) -> str:
    return str(meta(obj).get("name") or "")


def namespace(obj: Mapping[str, Any]) -> str:
    return str(meta(obj).get("namespace") or "")


def key(obj: Mapping[str, Any]) -> str:
    """`namespace/name`, or `name` for cluster-scoped objects."""
    ns = namespace(obj)
    return f"{ns}/{name(obj)}" if ns else name(obj)


def uid(obj: Mapping[str, Any]) -> str:
    return str(meta(obj).get("uid") or "")


def labels(obj: Mapping[str, Any]) -> dict[str, str]:
    return dict(meta(obj).get("labels") or {})


def annotations(obj: Mapping[str, Any]) -> dict[str, str]:
    return dict(meta(obj).get("annotations") or {})


def finalizers(obj: Mapping[str, Any]) -> list[str]:
    return list(meta(obj).get("finalizers") or [])


def owner_references(obj: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list(meta(obj).get("ownerReferences") or [])


def controller_owner(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    return next((ref for ref in owner_references(obj) if ref.get("controller")), None)


def is_deleting(obj: Mapping[str, Any]) -> bool:
    return bool(meta(obj).get("deletionTimestamp"))


def deletion_time(obj: Mapping[str, Any]) -> datetime | None:
    value = meta(obj).get("deletionTimestamp")
    return parse_time(value) if value else None


def creation_time(obj: Mapping[str, Any]) -> datetime | None:
    value = meta(obj).get("creationTimestamp")
    return parse_time(value) if value else None


def owner_reference(owner: Mapping[str, Any], *, controller: bool = True,
                    block_owner_deletion: bool = True) -> dict[str, Any]:
    return {
        "apiVersion": owner.get("apiVersion"),
        "kind": owner.get("kind"),
        "name": name(owner),
        "uid": uid(owner),
        "controller": controller,
        "blockOwnerDeletion": block_owner_deletion,
    }


# ---------------------------------------------------------------------------------------
# Status conditions (metav1.Condition)


def conditions(obj: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    status = obj.get("status")
    if type(status) is not dict and not isinstance(status, Mapping):
        return []
    return list(status.get("conditions") or [])


def condition(obj: Mapping[str, Any], condition_type: str) -> Mapping[str, Any] | None:
    return next((c for c in conditions(obj) if c.get("type") == condition_type), None)


def condition_is_true(obj: Mapping[str, Any], condition_type: str) -> bool:
    found = condition(obj, condition_type)
    return found is not None and found.get("status") == "True"
