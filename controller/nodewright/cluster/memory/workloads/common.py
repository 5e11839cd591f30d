"""What the workload controllers share: pods from templates, the pods a controller owns,
watch keys from owner references, and status writes that change only what changed."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from nodewright.cluster import objects
from nodewright.cluster.api import ApiError, NotFoundError
from nodewright.cluster.copying import copy_object
from nodewright.cluster.memory.pod_status import TERMINAL_PHASES, is_ready
from nodewright.cluster.memory.store import InMemoryCluster
from nodewright.runtime.reconciler import WatchEvent

log = logging.getLogger(__name__)

# Like the ReplicaSet controller's burstReplicas: at most this many creations per sync.
BURST = 500


def replicas(obj: Mapping[str, Any], field: str = "replicas", default: int = 1) -> int:
    value = (obj.get("spec") or {}).get(field)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        log.warning("%s %s: spec.%s must be a non-negative integer, got %r",
                    obj.get("kind"), objects.key(obj), field, value)
        return 0
    return value


def owner_keys(kind: str) -> Callable[[WatchEvent], Iterable[str]]:
    """Watch keys: an event of a dependent makes its controlling `kind` due, and the one
    that controlled it before when that changed (Kubernetes' updatePod enqueues the old
    controller ref's owner too): a dependent patched free of its owner leaves it one
    short, and its event names that owner no more. Each keys function remembers, per
    dependent uid, the owner it last saw."""
    last_owner: dict[str, str] = {}

    def keys(event: WatchEvent) -> Iterable[str]:
        current = _owner_key(event, kind)
        uid = objects.uid(event.object)
        if not uid:
            return () if current is None else (current,)
        if current is None or event.type == "DELETED":
            previous = last_owner.pop(uid, None)
        else:
            previous = last_owner.get(uid)
            if previous != current:
                # One string per owner, not per dependent: a ReplicaSet has thousands.
                last_owner[uid] = sys.intern(current)
        if previous is None or previous == current:
            return () if current is None else (current,)
        return (previous,) if current is None else (previous, current)

    return keys


def _owner_key(event: WatchEvent, kind: str) -> str | None:
    owner = objects.controller_owner(event.object)
    if owner is None or owner.get("kind") != kind:
        return None
    namespace = event.namespace
    return f"{namespace}/{owner.get('name')}" if namespace else str(owner.get("name"))


def controlled(cluster: InMemoryCluster, owner: Mapping[str, Any], kind: str = "Pod"
               ) -> list[dict[str, Any]]:
    """Objects of `kind` whose controller is `owner` (read-only)."""
    owner_uid = owner["metadata"]["uid"]
    return [obj for obj in cluster.dependents(owner_uid, kind) if controlled_by(obj, owner_uid)]


def controlled_by(obj: Mapping[str, Any], owner_uid: str) -> bool:
    return any(ref.get("controller") and ref.get("uid") == owner_uid
               for ref in obj["metadata"].get("ownerReferences") or ())


def is_active(pod: Mapping[str, Any]) -> bool:
    """Not being deleted and not finished (Kubernetes' FilterActivePods)."""
    return not pod["metadata"].get("deletionTimestamp") and (
        (pod.get("status") or {}).get("phase") not in TERMINAL_PHASES
    )


def pod_from_template(
    owner: Mapping[str, Any],
    template: Mapping[str, Any],
    *,
    name: str | None = None,
    extra_labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A Pod for `owner` from its pod template (generateName `<owner>-` unless named)."""
    template_meta = template.get("metadata") or {}
    metadata: dict[str, Any] = {
        "namespace": objects.namespace(owner),
        "labels": {**(template_meta.get("labels") or {}), **(extra_labels or {})},
        "ownerReferences": [objects.owner_reference(owner)],
    }
    if name is None:
        metadata["generateName"] = f"{objects.name(owner)}-"
    else:
        metadata["name"] = name
    if template_meta.get("annotations"):
        metadata["annotations"] = dict(template_meta["annotations"])
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": copy_object(template.get("spec") or {}),
    }


def create(cluster: InMemoryCluster, obj: dict[str, Any]) -> bool:
    """Create `obj` (handed over to the cluster); failures are logged."""
    try:
        cluster.insert(obj)
    except ApiError as error:
        log.warning("%s: creating %s %s failed: %s", obj.get("kind"), obj.get("kind"),
                    objects.meta(obj).get("name") or objects.meta(obj).get("generateName"), error)
        return False
    return True


def delete(cluster: InMemoryCluster, obj: Mapping[str, Any]) -> None:
    try:
        cluster.delete(str(obj.get("kind")), objects.name(obj), objects.namespace(obj) or None,
                       uid=objects.uid(obj))
    except NotFoundError:
        pass
    except ApiError as error:
        log.info("deleting %s %s: %s", obj.get("kind"), objects.key(obj), error)


def ready_count(pods: Iterable[Mapping[str, Any]]) -> int:
    return sum(1 for pod in pods if is_ready(pod))
