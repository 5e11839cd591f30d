"""`nodewright snapshot --redact`: the same snapshot with its names replaced by stable
hashes, for sharing.

Every name (objects, namespaces, nodes, NodeClaims, containers, images, IAM roles,
volumes), every value of a label that is not a well-known one (so selectors still match
what they matched), every tag value and every instance id becomes `r` and ten hex digits
of its hash: the same name always gives the same hash, so references stay consistent and
two snapshots of one cluster can be compared. Instance types, zones, resources and the
well-known labels are kept: the simulation needs them. The hash has no secret salt: a
guessed name can be checked against it.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

NAME_KEYS = frozenset({
    "name", "namespace", "generateName", "nodeName", "nodePool", "node", "claimName",
    "volumeName", "storageClassName", "serviceName", "priorityClassName", "image", "role",
    "instanceProfile", "volumeHandle", "nodeClass", "id",
})
LABEL_MAPS = frozenset({"labels", "matchLabels", "nodeSelector"})
HOSTNAME = "kubernetes.io/hostname"
NAME_LABELS = frozenset({HOSTNAME, "kubernetes.io/metadata.name",
                         "statefulset.kubernetes.io/pod-name", "batch.kubernetes.io/job-name",
                         "job-name"})
_SYSTEM_DOMAINS = ("kubernetes.io", "k8s.io", "amazonaws.com", "karpenter.sh", "k8s.aws",
                   "eksctl.io")
_PROVIDER_ID = re.compile(r"^aws:///([a-z0-9-]+)/(i-[0-9a-z]+)$")


def hashed(value: str) -> str:
    return "r" + hashlib.blake2b(value.encode(), digest_size=5).hexdigest()


def redact(document: dict[str, Any]) -> dict[str, Any]:
    redacted = _walk(document, "")
    assert isinstance(redacted, dict)
    redacted["description"] = "A redacted snapshot: names are stable hashes."
    return redacted


def _is_system(key: str) -> bool:
    domain = key.partition("/")[0] if "/" in key else ""
    return any(domain == d or domain.endswith("." + d) for d in _SYSTEM_DOMAINS)


def _label_value(key: str, value: object) -> object:
    if not isinstance(value, str) or not value:
        return value
    if key in NAME_LABELS or not _is_system(key):
        return hashed(value)
    return value


def _walk(value: Any, key: str) -> Any:
    if isinstance(value, dict):
        if isinstance(value.get("key"), str) and ("values" in value or "value" in value):
            return _requirement(value)
        out: dict[str, Any] = {}
        for k, v in value.items():
            if k in LABEL_MAPS and isinstance(v, dict):
                out[k] = {lk: _label_value(lk, lv) for lk, lv in v.items()}
            elif k == "tags" and isinstance(v, dict):
                out[k] = {tk: hashed(str(tv)) for tk, tv in v.items()}
            elif k == "providerID" and isinstance(v, str):
                match = _PROVIDER_ID.match(v)
                out[k] = f"aws:///{match[1]}/i-{hashed(match[2])[1:]}" if match else hashed(v)
            elif k in NAME_KEYS and isinstance(v, str):
                out[k] = hashed(v)
            else:
                out[k] = _walk(v, k)
        return out
    if isinstance(value, list):
        return [_walk(item, key) for item in value]
    return value


def _requirement(value: dict[str, Any]) -> dict[str, Any]:
    """A requirement, match expression, taint or toleration: its values hashed unless its
    key is well-known."""
    out = {k: _walk(v, k) for k, v in value.items() if k not in ("values", "value")}
    key = str(value["key"])
    if "values" in value:
        out["values"] = [_label_value(key, v) for v in value["values"] or []]
    if "value" in value:
        out["value"] = _label_value(key, value["value"])
    return out
