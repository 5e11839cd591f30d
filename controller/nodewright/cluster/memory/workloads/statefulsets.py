"""The StatefulSet controller: pods `<name>-0` .. `<name>-N-1`, each recreated under the
same name once its predecessor is gone. With the default OrderedReady policy a pod is
created only when all lower ordinals are Running and Ready, and scale-down removes the
highest ordinal first, one at a time, while the others are healthy; with Parallel
everything happens at once. Each pod mounts its own claims from the volumeClaimTemplates
(`<template>-<name>-<ordinal>`), created with it and kept after it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nodewright.cluster import objects
from nodewright.cluster.copying import copy_object
from nodewright.cluster.memory.actor_support import split_key, write_status
from nodewright.cluster.memory.pod_status import is_ready, is_terminal, phase
from nodewright.cluster.memory.store import InMemoryCluster
from nodewright.cluster.memory.workloads.common import (
    controlled,
    create,
    delete,
    owner_keys,
    pod_from_template,
    ready_count,
    replicas,
)
from nodewright.runtime.reconciler import Result, Watch

POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"


def _healthy(pod: Mapping[str, Any]) -> bool:
    return not objects.is_deleting(pod) and phase(pod) == "Running" and is_ready(pod)


class StatefulSetController:
    name = "statefulset-controller"

    def __init__(self, cluster: InMemoryCluster) -> None:
        self.cluster = cluster
        self._watches = (Watch("StatefulSet"), Watch("Pod", owner_keys("StatefulSet")))

    @property
    def watches(self) -> Sequence[Watch]:
        return self._watches

    def reconcile(self, key: str) -> Result:
        namespace, name = split_key(key)
        stateful_set = self.cluster.peek("StatefulSet", name, namespace)
        if stateful_set is None or objects.is_deleting(stateful_set):
            return Result()
        spec = stateful_set.get("spec") or {}
        ordered = spec.get("podManagementPolicy", "OrderedReady") != "Parallel"
        wanted = replicas(stateful_set)
        by_ordinal = self._pods_by_ordinal(stateful_set)
        self._scale_up(stateful_set, wanted, by_ordinal, ordered)
        self._scale_down(wanted, by_ordinal, ordered)
        pods = list(self._pods_by_ordinal(stateful_set).values())
        live = [pod for pod in pods if not objects.is_deleting(pod)]
        ready = ready_count(live)
        write_status(self.cluster, stateful_set, {
            "observedGeneration": objects.meta(stateful_set).get("generation"),
            "replicas": len(live),
            "readyReplicas": ready,
            "currentReplicas": len(live),
            "updatedReplicas": len(live),
            "availableReplicas": ready,
        })
        return Result()

    def _pods_by_ordinal(self, stateful_set: Mapping[str, Any]) -> dict[int, dict[str, Any]]:
        prefix = f"{objects.name(stateful_set)}-"
        found = {}
        for pod in controlled(self.cluster, stateful_set):
            suffix = objects.name(pod)[len(prefix):]
            if objects.name(pod).startswith(prefix) and suffix.isdigit():
                found[int(suffix)] = pod
        return found

    def _scale_up(self, stateful_set: Mapping[str, Any], wanted: int,
                  by_ordinal: Mapping[int, Mapping[str, Any]], ordered: bool) -> None:
        for ordinal in range(wanted):
            pod = by_ordinal.get(ordinal)
            if pod is None:
                self._create(stateful_set, ordinal)
                if ordered:
                    return
            elif is_terminal(pod) and not objects.is_deleting(pod):
                delete(self.cluster, pod)
                if ordered:
                    return
            elif ordered and not _healthy(pod):
                return

    def _scale_down(self, wanted: int, by_ordinal: Mapping[int, Mapping[str, Any]],
                    ordered: bool) -> None:
        condemned = sorted((o for o in by_ordinal if o >= wanted), reverse=True)
        if not condemned:
            return
        if not ordered:
            for ordinal in condemned:
                if not objects.is_deleting(by_ordinal[ordinal]):
                    delete(self.cluster, by_ordinal[ordinal])
            return
        if any(objects.is_deleting(pod) for pod in by_ordinal.values()):
            return
        if not all(_healthy(by_ordinal[o]) for o in by_ordinal if o < wanted):
            return
        delete(self.cluster, by_ordinal[condemned[0]])

    def _create(self, stateful_set: Mapping[str, Any], ordinal: int) -> None:
        name = f"{objects.name(stateful_set)}-{ordinal}"
        spec = stateful_set.get("spec") or {}
        pod = pod_from_template(
            stateful_set, spec.get("template") or {}, name=name,
            extra_labels={POD_NAME_LABEL: name, POD_INDEX_LABEL: str(ordinal)},
        )
        pod["spec"]["hostname"] = name
        if spec.get("serviceName"):
            pod["spec"]["subdomain"] = spec["serviceName"]
        self._claims(stateful_set, pod, ordinal)
        create(self.cluster, pod)

    def _claims(self, stateful_set: Mapping[str, Any], pod: dict[str, Any], ordinal: int
                ) -> None:
        """Each volumeClaimTemplate's claim `<template>-<set>-<ordinal>`, created when
        missing (kept when the pod goes: the default Retain policy), mounted by the pod."""
        templates = (stateful_set.get("spec") or {}).get("volumeClaimTemplates") or []
        volumes = [v for v in pod["spec"].get("volumes") or []
                   if v.get("name") not in {(t.get("metadata") or {}).get("name")
                                            for t in templates}]
        namespace = objects.namespace(stateful_set)
        for template in templates:
            template_name = str((template.get("metadata") or {}).get("name") or "")
            claim_name = f"{template_name}-{objects.name(stateful_set)}-{ordinal}"
            if self.cluster.peek("PersistentVolumeClaim", claim_name, namespace) is None:
                labels = dict(((stateful_set.get("spec") or {}).get("selector") or {})
                              .get("matchLabels") or {})
                create(self.cluster, {
                    "apiVersion": "v1",
                    "kind": "PersistentVolumeClaim",
                    "metadata": {"name": claim_name, "namespace": namespace,
                                 "labels": labels},
                    "spec": copy_object(template.get("spec") or {}),
                })
            volumes.append({"name": template_name,
                            "persistentVolumeClaim": {"claimName": claim_name}})
        if templates:
            pod["spec"]["volumes"] = volumes
