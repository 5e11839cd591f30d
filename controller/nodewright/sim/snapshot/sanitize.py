"""What of an object a snapshot keeps: its spec as the simulator needs it, never a value
that could be a secret.

Metadata keeps name, namespace, labels and the annotations that steer scheduling or
disruption (the rest can hold anything: kubectl's last-applied-configuration holds the
whole manifest, environment included). Containers keep name, image, resources, ports and
restartPolicy: no env, envFrom, command or args. Volumes backed by Secrets, ConfigMaps or
projections become emptyDir volumes of the same name; imagePullSecrets go.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

KEPT_ANNOTATION_PREFIXES = (
    "karpenter.sh/", "karpenter.k8s.aws/", "cluster-autoscaler.kubernetes.io/",
    "storageclass.kubernetes.io/", "volume.kubernetes.io/", "pv.kubernetes.io/",
    "volume.beta.kubernetes.io/", "compute.nodewright.io/",
)
CONTAINER_FIELDS = ("name", "image", "resources", "ports", "restartPolicy")
SECRET_VOLUME_SOURCES = ("secret", "configMap", "projected", "downwardAPI")


def metadata(obj: Mapping[str, Any], *, namespaced: bool) -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    kept: dict[str, Any] = {"name": meta.get("name")}
    if namespaced:
        kept["namespace"] = meta.get("namespace") or "default"
    if meta.get("labels"):
        kept["labels"] = dict(meta["labels"])
    annotations = kept_annotations(meta.get("annotations"))
    if annotations:
        kept["annotations"] = annotations
    return kept


def kept_annotations(annotations: object) -> dict[str, str]:
    if not isinstance(annotations, Mapping):
        return {}
    return {str(k): str(v) for k, v in annotations.items()
            if str(k).startswith(KEPT_ANNOTATION_PREFIXES)}


def pod_spec(spec: Mapping[str, Any] | None) -> dict[str, Any]:
    """A pod spec without env values, commands, secret volumes or pull secrets, and not
    bound to a node."""
    kept = {k: v for k, v in (spec or {}).items()
            if k not in ("nodeName", "imagePullSecrets", "containers", "initContainers",
                         "ephemeralContainers", "volumes", "serviceAccount",
                         "serviceAccountName", "automountServiceAccountToken")}
    kept["containers"] = [container(c) for c in (spec or {}).get("containers") or []]
    if (spec or {}).get("initContainers"):
        kept["initContainers"] = [container(c) for c in spec["initContainers"]]  # type: ignore[index]
    volumes = [volume(v) for v in (spec or {}).get("volumes") or []]
    if volumes:
        kept["volumes"] = volumes
    return kept


def container(body: Mapping[str, Any]) -> dict[str, Any]:
    return {k: body[k] for k in CONTAINER_FIELDS if k in body}


def volume(body: Mapping[str, Any]) -> dict[str, Any]:
    if any(source in body for source in SECRET_VOLUME_SOURCES):
        return {"name": body.get("name"), "emptyDir": {}}
    return dict(body)


def pod_template(template: Mapping[str, Any] | None, priority: int | None = None
                 ) -> dict[str, Any]:
    """A workload's pod template, sanitized; `priority` (what admission resolved for its
    pods' PriorityClass) is written in, as the simulator resolves no PriorityClasses."""
    template = template or {}
    meta = template.get("metadata") or {}
    kept_meta: dict[str, Any] = {}
    if meta.get("labels"):
        kept_meta["labels"] = dict(meta["labels"])
    annotations = kept_annotations(meta.get("annotations"))
    if annotations:
        kept_meta["annotations"] = annotations
    spec = pod_spec(template.get("spec"))
    if priority is not None and "priority" not in spec:
        spec["priority"] = priority
    return {"metadata": kept_meta, "spec": spec}
