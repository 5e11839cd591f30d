"""Expectations the controller stories share (Karpenter's `expectations` in spirit):
each reads the cluster and the simulated cloud and fails with what it found. They read
any `World`: the harness on a virtual clock, or the operator stories' real-time world."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any, Protocol

from nodewright.cloud.sim import SimulatedEC2
from nodewright.cluster.api import ClusterAPI


class World(Protocol):
    """What the expectations read (`tests.harness.World` has it)."""

    @property
    def cluster(self) -> ClusterAPI: ...

    @property
    def cloud(self) -> SimulatedEC2: ...

    @property
    def errors(self) -> list[tuple[str, str, BaseException]]: ...

    def nodes(self) -> list[dict[str, Any]]: ...

    def nodeclaims(self) -> list[dict[str, Any]]: ...

    def pods(self, namespace: str | None = "default",
             labels: Mapping[str, str] | None = None) -> list[dict[str, Any]]: ...

    def pending_pods(self, namespace: str | None = "default") -> list[dict[str, Any]]: ...

    def running_pods(self, namespace: str | None = "default") -> list[dict[str, Any]]: ...

    def live_instances(self) -> list[Any]: ...

    def instance_types(self) -> list[str]: ...


def claim_names(world: World) -> list[str]:
    return sorted(c["metadata"]["name"] for c in world.nodeclaims())


def expect_running(world: World, count: int, labels: Mapping[str, str] | None = None) -> None:
    pods = [p for p in world.running_pods()
            if all(p["metadata"].get("labels", {}).get(k) == v for k, v in (labels or {}).items())]
    pending = [p["metadata"]["name"] for p in world.pending_pods()]
    assert len(pods) == count, f"{len(pods)} pods running, expected {count}; pending: {pending}"


def expect_instance_types(world: World, *types: str) -> None:
    assert world.instance_types() == sorted(types), (
        f"instances {world.instance_types()}, expected {sorted(types)}")


def expect_no_controller_errors(world: World) -> None:
    assert world.errors == [], f"controller errors: {world.errors[:3]}"


def expect_consistent(world: World) -> None:
    """No duplicate instance, no orphaned instance, no NodeClaim without its instance and
    no pod bound to a node that does not exist."""
    instances = world.live_instances()
    per_claim = Counter(i.nodeclaim_name for i in instances)
    duplicates = {name: n for name, n in per_claim.items() if n > 1}
    assert not duplicates, f"NodeClaims with more than one instance: {duplicates}"
    claims = {c["metadata"]["name"]: c for c in world.nodeclaims()}
    provider_ids = {c.get("status", {}).get("providerID") for c in claims.values()}
    orphans = [i.instance_id for i in instances if i.provider_id not in provider_ids]
    assert not orphans, f"instances without a NodeClaim: {orphans}"
    live = {i.provider_id for i in instances}
    missing = [name for name, c in claims.items()
               if c.get("status", {}).get("providerID") not in live]
    assert not missing, f"NodeClaims without a live instance: {missing}"
    nodes = {n["metadata"]["name"] for n in world.nodes()}
    stray = [p["metadata"]["name"] for p in world.pods(None)
             if p["spec"].get("nodeName") and p["spec"]["nodeName"] not in nodes]
    assert not stray, f"pods bound to nodes that do not exist: {stray}"


def nodeclaim(world: World, name: str) -> dict[str, Any]:
    return world.cluster.get("NodeClaim", name)


def condition(obj: Mapping[str, Any], kind: str) -> str | None:
    for item in obj.get("status", {}).get("conditions", []):
        if item["type"] == kind:
            return str(item["status"])
    return None
