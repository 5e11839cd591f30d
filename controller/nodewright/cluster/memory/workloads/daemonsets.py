"""The DaemonSet controller: one pod on every node the pod template fits, by node
selector, required node affinity and taints (with the tolerations Kubernetes adds to
every daemon pod). Daemon pods are pinned to their node with a `metadata.name`
matchFields affinity and bound at creation (`spec.nodeName`), not through the
scheduler; resources are not checked, as in Kubernetes. Pods on nodes that no longer exist or
fit are deleted (a NoSchedule taint added later leaves a running daemon pod alone, as in
Kubernetes), failed ones replaced."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from nodewright.cluster import objects
from nodewright.cluster.memory.actor_support import split_key, write_status
from nodewright.cluster.memory.kube_scheduler.snapshot import NodeInfo, node_info
from nodewright.cluster.memory.pod_status import FAILED, node_name, phase, set_pod_condition
from nodewright.cluster.memory.store import InMemoryCluster
from nodewright.cluster.memory.workloads.common import (
    controlled,
    create,
    delete,
    owner_keys,
    pod_from_template,
    ready_count,
)
from nodewright.runtime.reconciler import Result, Watch, WatchEvent
from nodewright.scheduling.pods import Pod, SpecError, parse_pod_spec, untolerated
from nodewright.scheduling.requirements import Requirements

log = logging.getLogger(__name__)

DAEMON_TOLERATIONS: tuple[tuple[str, str], ...] = (
    ("node.kubernetes.io/not-ready", "NoExecute"),
    ("node.kubernetes.io/unreachable", "NoExecute"),
    ("node.kubernetes.io/disk-pressure", "NoSchedule"),
    ("node.kubernetes.io/memory-pressure", "NoSchedule"),
    ("node.kubernetes.io/pid-pressure", "NoSchedule"),
    ("node.kubernetes.io/unschedulable", "NoSchedule"),
)
NETWORK_UNAVAILABLE = ("node.kubernetes.io/network-unavailable", "NoSchedule")


def daemon_pod_spec(template_spec: Mapping[str, Any]) -> dict[str, Any]:
    """The template's spec with the tolerations Kubernetes adds to daemon pods."""
    spec = dict(template_spec)
    tolerations = [dict(t) for t in spec.get("tolerations") or []]
    added = list(DAEMON_TOLERATIONS)
    if spec.get("hostNetwork"):
        added.append(NETWORK_UNAVAILABLE)
    for key, effect in added:
        wanted = {"key": key, "operator": "Exists", "effect": effect}
        if wanted not in tolerations:
            tolerations.append(wanted)
    spec["tolerations"] = tolerations
    return spec


def pinned_affinity(spec: Mapping[str, Any], node: str) -> dict[str, Any]:
    affinity = dict(spec.get("affinity") or {})
    node_affinity = dict(affinity.get("nodeAffinity") or {})
    node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}
    affinity["nodeAffinity"] = node_affinity
    return affinity


def _selects(pod: Pod, node: NodeInfo) -> bool:
    if not Requirements.from_labels(pod.node_selector).satisfied_by_labels(node.labels):
        return False
    return not pod.required_terms or any(
        term.satisfied_by_labels(node.labels) for term in pod.required_terms)


def should_run(pod: Pod, node: NodeInfo) -> bool:
    """Whether a daemon pod is placed on `node`: selected, every hard taint tolerated."""
    hard = [taint for taint in node.taints if taint.effect in ("NoSchedule", "NoExecute")]
    return _selects(pod, node) and untolerated(hard, pod.tolerations) is None


def should_continue_running(pod: Pod, node: NodeInfo) -> bool:
    """Whether a daemon pod already on `node` stays: a NoSchedule taint it does not
    tolerate keeps new pods off but leaves a running one alone; only an untolerated
    NoExecute taint (or the node no longer selected) removes it (Kubernetes'
    NodeShouldRunDaemonPod)."""
    no_execute = [taint for taint in node.taints if taint.effect == "NoExecute"]
    return _selects(pod, node) and untolerated(no_execute, pod.tolerations) is None


class DaemonSetController:
    name = "daemonset-controller"

    def __init__(self, cluster: InMemoryCluster) -> None:
        self.cluster = cluster
        self._watches = (
            Watch("DaemonSet"),
            Watch("Pod", owner_keys("DaemonSet")),
            Watch("Node", self._all_daemonsets),
        )

    @property
    def watches(self) -> Sequence[Watch]:
        return self._watches

    def _all_daemonsets(self, event: WatchEvent) -> Iterable[str]:
        return [objects.key(ds) for ds in self.cluster.peek_all("DaemonSet")]

    def reconcile(self, key: str) -> Result:
        namespace, name = split_key(key)
        daemon_set = self.cluster.peek("DaemonSet", name, namespace)
        if daemon_set is None or objects.is_deleting(daemon_set):
            return Result()
        template = (daemon_set.get("spec") or {}).get("template") or {}
        spec = daemon_pod_spec(template.get("spec") or {})
        labels = (template.get("metadata") or {}).get("labels") or {}
        try:
            pod = parse_pod_spec(namespace, name, labels, spec, "spec.template.spec")
        except SpecError as error:
            log.warning("DaemonSet %s: %s", key, error)
            return Result()
        nodes = [info for info in (node_info(n) for n in self.cluster.peek_all("Node", sort=True))
                 if info is not None]
        pods_by_node: dict[str, list[dict[str, Any]]] = {}
        for daemon_pod in controlled(self.cluster, daemon_set):
            if phase(daemon_pod) == FAILED and not objects.is_deleting(daemon_pod):
                delete(self.cluster, daemon_pod)
            elif not objects.is_deleting(daemon_pod):
                pods_by_node.setdefault(node_name(daemon_pod), []).append(daemon_pod)
        desired: set[str] = set()
        for node in nodes:
            running = pods_by_node.pop(node.name, [])
            if should_run(pod, node):
                desired.add(node.name)
                if not running:
                    self._create(daemon_set, template, spec, node.name)
                for extra in running[1:]:
                    delete(self.cluster, extra)
            elif not should_continue_running(pod, node):
                for misplaced in running:
                    delete(self.cluster, misplaced)
        for orphans in pods_by_node.values():  # nodes that no longer exist
            for orphan in orphans:
                delete(self.cluster, orphan)
        self._report(daemon_set, desired)
        return Result()

    def _create(self, daemon_set: Mapping[str, Any], template: Mapping[str, Any],
                spec: Mapping[str, Any], node: str) -> None:
        pod = pod_from_template(daemon_set, {**template, "spec": spec})
        pod["spec"]["affinity"] = pinned_affinity(spec, node)
        pod["spec"]["nodeName"] = node
        pod["status"] = {"phase": "Pending"}
        set_pod_condition(pod, "PodScheduled", "True", self.cluster.clock.now())
        create(self.cluster, pod)

    def _report(self, daemon_set: Mapping[str, Any], desired: set[str]) -> None:
        pods = [p for p in controlled(self.cluster, daemon_set) if not objects.is_deleting(p)]
        on_nodes = {node_name(p) for p in pods}
        scheduled = len(on_nodes & desired)
        ready = ready_count(p for p in pods if node_name(p) in desired)
        write_status(self.cluster, daemon_set, {
            "observedGeneration": objects.meta(daemon_set).get("generation"),
            "desiredNumberScheduled": len(desired),
            "currentNumberScheduled": scheduled,
            "updatedNumberScheduled": scheduled,
            "numberMisscheduled": len(on_nodes - desired),
            "numberReady": ready,
            "numberAvailable": ready,
        })
