"""Manifests and reads the CapacityBuffer stories share."""

from __future__ import annotations

from typing import Any

from nodewright.cluster import objects
from nodewright.controllers.options import ControllerOptions
from tests.harness import NODE_CLASS, World, node_pool

POOL = node_pool(types=["m5.large", "m5.xlarge", "m5.2xlarge"], disruption={
    "consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "30s"})


def pod_spec(cpu: str, **extra: Any) -> dict[str, Any]:
    return {"containers": [{"name": "chunk", "image": "pause",
                            "resources": {"requests": {"cpu": cpu}}}], **extra}


def pod_template(name: str, cpu: str, *, labels: dict[str, str] | None = None,
                 **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "PodTemplate",
            "metadata": {"name": name, "namespace": "default"},
            "template": {"metadata": {"labels": labels or {"buffer": name}},
                         "spec": pod_spec(cpu, **extra)}}


def buffer(name: str = "headroom", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "autoscaling.x-k8s.io/v1beta1", "kind": "CapacityBuffer",
            "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def world(*more: Any, gate: bool = True) -> World:
    w = World(options=ControllerOptions(capacity_buffer=gate))
    w.apply(NODE_CLASS, POOL, *more)
    return w


def conditions(w: World, name: str = "headroom") -> dict[str, tuple[str, str]]:
    body = w.cluster.get("CapacityBuffer", name, "default")
    return {c["type"]: (c["status"], c.get("reason") or "") for c in objects.conditions(body)}


def status(w: World, name: str = "headroom") -> dict[str, Any]:
    return dict(w.cluster.get("CapacityBuffer", name, "default").get("status") or {})
