"""A small cluster for stories: the in-memory API server with its actors on a virtual
clock, and builders for the manifests the tests apply."""

from __future__ import annotations

from typing import Any

from nodewright.cluster import objects
from nodewright.cluster.memory import ActorSettings, InMemoryCluster, cluster_actors
from nodewright.controllers.driver import VirtualDriver
from nodewright.runtime.clock import VirtualClock

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"


class World:
    def __init__(self, *, pod_start_delay: float = 2.0) -> None:
        self.clock = VirtualClock()
        self.cluster = InMemoryCluster(self.clock)
        self.driver = VirtualDriver(self.clock, self.cluster, raise_errors=True)
        self.driver.add(
            *cluster_actors(self.cluster, ActorSettings(pod_start_delay=pod_start_delay))
        )
        self.driver.start()

    def apply(self, *manifests: dict[str, Any]) -> None:
        for manifest in manifests:
            self.cluster.create(manifest)
        self.run()

    def run(self, seconds: float = 0) -> None:
        """Deliver what the test wrote, then let `seconds` of cluster life pass."""
        self.driver.deliver()
        self.clock.advance(seconds)

    def pods(self, namespace: str | None = None) -> list[dict[str, Any]]:
        return self.cluster.list("Pod", namespace)

    def pod(self, name: str, namespace: str = "default") -> dict[str, Any]:
        return self.cluster.get("Pod", name, namespace)

    def placements(self) -> dict[str, str | None]:
        return {objects.name(p): (p.get("spec") or {}).get("nodeName") for p in self.pods()}

    def pending_message(self, name: str) -> str:
        condition = objects.condition(self.pod(name), "PodScheduled") or {}
        assert condition.get("status") == "False", f"{name} is not pending: {condition}"
        assert condition.get("reason") == "Unschedulable"
        return str(condition.get("message"))


def node(
    name: str,
    *,
    cpu: str = "2",
    memory: str = "4Gi",
    pods: int = 110,
    zone: str | None = None,
    labels: dict[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
    ready: bool = True,
    unschedulable: bool = False,
) -> dict[str, Any]:
    node_labels = {HOSTNAME: name, **(labels or {})}
    if zone:
        node_labels[ZONE] = zone
    conditions = [{"type": "Ready", "status": "True"}] if ready else []
    spec: dict[str, Any] = {"taints": taints or []}
    if unschedulable:
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": node_labels},
        "spec": spec,
        "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": str(pods)},
                   "capacity": {"cpu": cpu, "memory": memory, "pods": str(pods)},
                   "conditions": conditions},
    }


def pod_spec(
    *,
    cpu: str | None = None,
    memory: str | None = None,
    host_port: int | None = None,
    **extra: Any,
) -> dict[str, Any]:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v}
    container: dict[str, Any] = {"name": "app", "image": "app:1",
                                 "resources": {"requests": requests}}
    if host_port:
        container["ports"] = [{"containerPort": host_port, "hostPort": host_port}]
    return {"containers": [container], **extra}


def pod(name: str, *, labels: dict[str, str] | None = None,
        annotations: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": "default", "labels": labels or {}}
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": pod_spec(**spec)}


def workload(kind: str, name: str, replicas: int, *, labels: dict[str, str] | None = None,
             spec_extra: dict[str, Any] | None = None, **pod: Any) -> dict[str, Any]:
    template_labels = labels or {"app": name}
    api_version = "batch/v1" if kind == "Job" else "apps/v1"
    spec: dict[str, Any] = {
        "selector": {"matchLabels": template_labels},
        "template": {"metadata": {"labels": template_labels}, "spec": pod_spec(**pod)},
        **(spec_extra or {}),
    }
    if kind not in ("Job", "DaemonSet"):
        spec["replicas"] = replicas
    return {"apiVersion": api_version, "kind": kind,
            "metadata": {"name": name, "namespace": "default"}, "spec": spec}
