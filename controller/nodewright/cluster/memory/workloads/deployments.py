"""The Deployment controller: one ReplicaSet per pod template, named
`<deployment>-<hash of the template>`, whose pods carry the `pod-template-hash` label.
The current template's ReplicaSet gets all the replicas and the older ones none (a
template change replaces every pod at once: there is no rolling update); status sums
the ReplicaSets'."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from nodewright.cluster import objects
from nodewright.cluster.api import ApiError
from nodewright.cluster.copying import copy_object
from nodewright.cluster.memory.actor_support import split_key, write_status
from nodewright.cluster.memory.store import InMemoryCluster
from nodewright.cluster.memory.workloads.common import (
    controlled,
    create,
    log,
    owner_keys,
    replicas,
)
from nodewright.cluster.names import SUFFIX_ALPHABET
from nodewright.runtime.reconciler import Result, Watch

TEMPLATE_HASH_LABEL = "pod-template-hash"
_HASH_LENGTH = 10


def template_hash(template: Mapping[str, Any]) -> str:
    """A short, stable name-safe hash of a pod template."""
    digest = hashlib.sha256(json.dumps(template, sort_keys=True, default=str).encode()).digest()
    number = int.from_bytes(digest[:8], "big")
    chars = []
    for _ in range(_HASH_LENGTH):
        number, index = divmod(number, len(SUFFIX_ALPHABET))
        chars.append(SUFFIX_ALPHABET[index])
    return "".join(chars)


class DeploymentController:
    name = "deployment-controller"

    def __init__(self, cluster: InMemoryCluster) -> None:
        self.cluster = cluster
        self._watches = (Watch("Deployment"), Watch("ReplicaSet", owner_keys("Deployment")))

    @property
    def watches(self) -> Sequence[Watch]:
        return self._watches

    def reconcile(self, key: str) -> Result:
        namespace, name = split_key(key)
        deployment = self.cluster.peek("Deployment", name, namespace)
        if deployment is None or objects.is_deleting(deployment):
            return Result()
        spec = deployment.get("spec") or {}
        template = spec.get("template") or {}
        current_name = f"{name}-{template_hash(template)}"
        owned = controlled(self.cluster, deployment, "ReplicaSet")
        wanted = replicas(deployment)
        current = next((rs for rs in owned if objects.name(rs) == current_name), None)
        if current is None:
            create(self.cluster, self._replica_set(deployment, current_name, wanted))
        elif not spec.get("paused"):
            self._scale(current, wanted)
        if not spec.get("paused"):
            for old in owned:
                if objects.name(old) != current_name:
                    self._scale(old, 0)
        self._report(deployment, current_name)
        return Result()

    def _replica_set(self, deployment: Mapping[str, Any], name: str, count: int
                     ) -> dict[str, Any]:
        spec = deployment.get("spec") or {}
        template = copy_object(spec.get("template") or {})
        hash_value = name.rpartition("-")[2]
        template_meta = template.setdefault("metadata", {})
        labels = {**(template_meta.get("labels") or {}), TEMPLATE_HASH_LABEL: hash_value}
        template_meta["labels"] = labels
        selector = copy_object(spec.get("selector") or {})
        selector["matchLabels"] = {**(selector.get("matchLabels") or {}),
                                   TEMPLATE_HASH_LABEL: hash_value}
        replica_set_spec: dict[str, Any] = {
            "replicas": count, "selector": selector, "template": template}
        if spec.get("minReadySeconds"):
            replica_set_spec["minReadySeconds"] = spec["minReadySeconds"]
        return {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": name,
                "namespace": objects.namespace(deployment),
                "labels": labels,
                "ownerReferences": [objects.owner_reference(deployment)],
            },
            "spec": replica_set_spec,
        }

    def _scale(self, replica_set: Mapping[str, Any], count: int) -> None:
        if replicas(replica_set) == count:
            return
        try:
            self.cluster.patch("ReplicaSet", objects.name(replica_set),
                               {"spec": {"replicas": count}}, objects.namespace(replica_set))
        except ApiError as error:
            log.info("scaling %s: %s", objects.key(replica_set), error)

    def _report(self, deployment: Mapping[str, Any], current_name: str) -> None:
        owned = controlled(self.cluster, deployment, "ReplicaSet")

        def total(field: str, only: str | None = None) -> int:
            return sum(int((rs.get("status") or {}).get(field) or 0) for rs in owned
                       if only is None or objects.name(rs) == only)

        available = total("availableReplicas")
        write_status(self.cluster, deployment, {
            "observedGeneration": objects.meta(deployment).get("generation"),
            "replicas": total("replicas"),
            "updatedReplicas": total("replicas", current_name),
            "readyReplicas": total("readyReplicas"),
            "availableReplicas": available,
            "unavailableReplicas": max(0, replicas(deployment) - available),
        })
