"""What Karpenter's end-to-end regression suite (test/suites/regression, run against kwok)
sets up and checks, for the stories that port it onto the in-memory World.

`suite_pool` is the NodePool its BeforeEach makes from test/pkg/environment/common/
default_nodepool.yaml: Linux, on-demand, WhenEmptyOrUnderutilized with consolidateAfter
Never, a 100% budget, expireAfter 30h and no limits. Where kwok offers instance sizes
below 32 (or the c-16x / c-2x types a Context names) the pools here name EC2 types of the
same shape. The reads and expectations mirror the environment's helpers
(test/pkg/environment/common/expectations.go) of the same names.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from nodewright.cluster import objects
from nodewright.cluster.api import NotFoundError
from tests.harness import World, node_pool

DISRUPTED = "karpenter.sh/disrupted"
DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
NODEPOOL = "karpenter.sh/nodepool"
INITIALIZED = "karpenter.sh/initialized"
# The finalizer the suite puts on Nodes so that a terminated node stays to be counted.
TESTING_FINALIZER = "testing/finalizer"
LINUX = {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}
# Karpenter's polling interval of Eventually/Consistently over the cluster.
POLL = 5.0


def suite_pool(
    name: str = "default",
    *,
    types: Sequence[str] = ("m5.large", "m5.xlarge", "m5.2xlarge"),
    budgets: Sequence[Mapping[str, Any]] = ({"nodes": "100%"},),
    consolidate_after: str = "Never",
    template_annotations: Mapping[str, str] | None = None,
    template_labels: Mapping[str, str] | None = None,
    limits: Mapping[str, str] | None = None,
    replicas: int | None = None,
    **template_spec: Any,
) -> dict[str, Any]:
    """The regression suite's NodePool (its BeforeEach), with the changes a story makes."""
    template_spec.setdefault("expireAfter", "30h")
    body = node_pool(
        name, types=types, requirements=[LINUX], labels=template_labels,
        limits=dict(limits or {}),
        disruption={"consolidationPolicy": "WhenEmptyOrUnderutilized",
                    "consolidateAfter": consolidate_after, "budgets": list(budgets)},
        **template_spec)
    if template_annotations is not None:
        body["spec"]["template"].setdefault("metadata", {})["annotations"] = dict(
            template_annotations)
    if replicas is not None:
        body["spec"]["replicas"] = replicas
    return body


def deployment(
    name: str,
    replicas: int,
    *,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    requests: Mapping[str, str] | None = None,
    spread_by_hostname: bool = False,
    max_skew: int | None = None,
    grace_seconds: int | None = None,
    **pod_spec: Any,
) -> dict[str, Any]:
    """Karpenter's test.Deployment: pods with no requests unless given; hostname
    anti-affinity among its own pods (`spread_by_hostname`), or a hostname topology
    spread of `max_skew`."""
    labels = dict(labels or {"app": name})
    container: dict[str, Any] = {"name": "app", "image": "pause"}
    if requests:
        container["resources"] = {"requests": dict(requests)}
    spec: dict[str, Any] = {"containers": [container], **pod_spec}
    if grace_seconds is not None:
        spec["terminationGracePeriodSeconds"] = grace_seconds
    if spread_by_hostname:
        spec["affinity"] = {"podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [{
                "topologyKey": "kubernetes.io/hostname",
                "labelSelector": {"matchLabels": labels}}]}}
    if max_skew is not None:
        spec["topologySpreadConstraints"] = [{
            "maxSkew": max_skew, "topologyKey": "kubernetes.io/hostname",
            "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": labels}}]
    metadata: dict[str, Any] = {"labels": labels}
    if annotations:
        metadata["annotations"] = dict(annotations)
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": metadata, "spec": spec}}}


# -- reads ------------------------------------------------------------------------------


def initialized_nodes(world: World) -> list[dict[str, Any]]:
    return [n for n in world.nodes() if objects.labels(n).get(INITIALIZED) == "true"]


def tainted_nodes(world: World) -> list[str]:
    """Nodes carrying karpenter.sh/disrupted:NoSchedule."""
    return sorted(objects.name(n) for n in world.nodes()
                  if any(t.get("key") == DISRUPTED and t.get("effect") == "NoSchedule"
                         for t in (n.get("spec") or {}).get("taints") or []))


def healthy_pods(world: World, labels: Mapping[str, str]) -> list[dict[str, Any]]:
    """Bound, Running and Ready pods of `labels` (EventuallyExpectHealthyPodCount)."""
    return [p for p in world.running_pods() if objects.condition_is_true(p, "Ready")
            and all(objects.labels(p).get(k) == v for k, v in labels.items())]


def claim_names(world: World) -> set[str]:
    return {objects.name(c) for c in world.nodeclaims()}


def ready_claims(world: World) -> list[dict[str, Any]]:
    return [c for c in world.nodeclaims() if objects.condition_is_true(c, "Ready")]


def drifted(world: World, names: set[str]) -> bool:
    """Every one of `names` exists and is Drifted=True (EventuallyExpectDrifted)."""
    found = {objects.name(c): c for c in world.nodeclaims()}
    return all(n in found and objects.condition_is_true(found[n], "Drifted") for n in names)


def node_of(world: World, claim: str) -> str:
    return str((world.cluster.get("NodeClaim", claim).get("status") or {}).get("nodeName"))


# -- changes the suite makes ------------------------------------------------------------


def add_testing_finalizer(world: World, kind: str, name: str) -> None:
    body = world.cluster.get(kind, name)
    world.cluster.patch(kind, name, {"metadata": {
        "finalizers": [*objects.finalizers(body), TESTING_FINALIZER]}})
    world.deliver()


def remove_testing_finalizer(world: World, kind: str, name: str) -> None:
    """ExpectTestingFinalizerRemoved: a gone object is fine."""
    try:
        body = world.cluster.get(kind, name)
    except NotFoundError:
        return
    world.cluster.patch(kind, name, {"metadata": {"finalizers": [
        f for f in objects.finalizers(body) if f != TESTING_FINALIZER]}})
    world.deliver()


def annotate_template(world: World, annotations: Mapping[str, str],
                      pool: str = "default") -> None:
    """Drift a NodePool: set its template's annotations (ExpectUpdated)."""
    world.cluster.patch("NodePool", pool, {"spec": {"template": {"metadata": {
        "annotations": dict(annotations)}}}})
    world.deliver()


# -- the suite's Eventually / Consistently ----------------------------------------------


def eventually(world: World, done: Callable[[], bool], timeout: float = 600.0) -> None:
    assert world.run_until(done, timeout=timeout, step=POLL), "timed out"


def consistently(world: World, check: Callable[[], None], duration: float) -> None:
    """`check` holds at every poll for `duration` virtual seconds."""
    world.deliver()
    check()
    waited = 0.0
    while waited < duration:
        world.advance(POLL)
        waited += POLL
        check()


def expect_disruptions_until_none_left(
    world: World, at_start: int, most_disrupting: int, timeout: float,
    until: Callable[[], bool] = lambda: True,
) -> int:
    """ConsistentlyExpectDisruptionsUntilNoneLeft: until no node is tainted disrupted,
    never more than `at_start + most_disrupting` NodeClaims (those whose instance is
    terminating not counted) nor Nodes (theirs not counted), nor more than
    `most_disrupting` tainted Nodes. Karpenter's returns at the first poll with no tainted
    node; this one waits for a disruption to have happened and for `until` (the story's
    end: every original node gone). Returns the most tainted at once seen."""
    most = 0
    waited = 0.0
    world.deliver()
    while True:
        removed: set[str] = set()
        claims = 0
        for claim in world.nodeclaims():
            if objects.condition_is_true(claim, "InstanceTerminating"):
                removed.add(str((claim.get("status") or {}).get("providerID")))
            else:
                claims += 1
        assert claims <= at_start + most_disrupting, f"{claims} nodeclaims"
        nodes = [n for n in world.nodes()
                 if (n.get("spec") or {}).get("providerID") not in removed]
        assert len(nodes) <= at_start + most_disrupting, f"{len(nodes)} nodes"
        counted = {objects.name(n) for n in nodes}
        disrupting = [n for n in tainted_nodes(world) if n in counted]
        assert len(disrupting) <= most_disrupting, f"{len(disrupting)} disrupting"
        most = max(most, len(disrupting))
        if not disrupting and most and until():
            return most
        assert waited < timeout, "disruptions did not finish"
        world.advance(POLL)
        waited += POLL


def expect_no_disruptions(world: World, node_count: int, duration: float) -> None:
    """ConsistentlyExpectNoDisruptions: exactly `node_count` NodeClaims and Nodes, none
    tainted, for `duration`."""
    def check() -> None:
        assert len(world.nodeclaims()) == node_count
        assert len(world.nodes()) == node_count
        assert tainted_nodes(world) == []
    consistently(world, check, duration)


def expect_nodeclaims_not_exceed(world: World, count: int, duration: float) -> None:
    def check() -> None:
        assert len(world.nodeclaims()) <= count
    consistently(world, check, duration)
