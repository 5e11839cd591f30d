"""Manifests and reads the static NodePool stories share."""

from __future__ import annotations

from typing import Any

from nodewright.cluster import objects
from nodewright.controllers.static.deprovisioning import StaticDeprovisioning
from nodewright.controllers.static.provisioning import StaticProvisioning
from tests.harness import NODE_CLASS, World, node_pool

DYNAMIC_POOL = node_pool("dynamic", types=["m5.large", "m5.xlarge"])


def static_pool(
    *,
    replicas: int,
    node_limit: int | None = None,
    labels: dict[str, str] | None = None,
    consolidate_after: str = "30s",
    drift_budget: str | None = None,
    capacity_types: tuple[str, ...] = ("on-demand",),
) -> dict[str, Any]:
    body = node_pool(
        "static", families=["m5"], labels=labels or {"team": "static"},
        capacity_types=capacity_types,
        limits=None if node_limit is None else {"nodes": str(node_limit)},
        disruption={"consolidateAfter": consolidate_after,
                    "budgets": [{"nodes": drift_budget or "10%"}]},
    )
    body["spec"]["replicas"] = replicas
    return body


def workload(
    name: str,
    replicas: int,
    cpu: str,
    *,
    node_selector: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    anti_affinity: bool = False,
) -> dict[str, Any]:
    pod_spec: dict[str, Any] = {
        "containers": [{"name": "app", "resources": {"requests": {"cpu": cpu}}}],
    }
    if node_selector:
        pod_spec["nodeSelector"] = node_selector
    if anti_affinity:
        pod_spec["affinity"] = {"podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [{
                "labelSelector": {"matchLabels": {"app": name}},
                "topologyKey": "kubernetes.io/hostname"}]}}
    metadata: dict[str, Any] = {"labels": {"app": name}}
    if annotations:
        metadata["annotations"] = annotations
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": metadata, "spec": pod_spec}},
    }


def claims_of(world: World, pool: str) -> list[dict[str, Any]]:
    return [c for c in world.nodeclaims()
            if objects.labels(c).get("karpenter.sh/nodepool") == pool]


def live_claims_of(world: World, pool: str) -> list[dict[str, Any]]:
    return [c for c in claims_of(world, pool) if not objects.is_deleting(c)]


def nodes_of(world: World, pool: str, *, ready: bool = False) -> list[dict[str, Any]]:
    found = []
    for node in world.nodes():
        if objects.labels(node).get("karpenter.sh/nodepool") != pool:
            continue
        if ready and not objects.condition_is_true(node, "Ready"):
            continue
        found.append(node)
    return found


def provisioner(world: World) -> StaticProvisioning:
    pair = world.controllers.static
    assert pair is not None
    return pair[0]


def deprovisioner(world: World) -> StaticDeprovisioning:
    pair = world.controllers.static
    assert pair is not None
    return pair[1]


def launched_pool(world: World, replicas: int) -> list[str]:
    """A static pool of `replicas` applied and settled: its NodeClaim names, sorted."""
    world.apply(NODE_CLASS, static_pool(replicas=replicas))
    assert world.settle()
    names = sorted(objects.name(c) for c in claims_of(world, "static"))
    assert len(names) == replicas
    return names
