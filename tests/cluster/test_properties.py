"""Invariants of the in-memory cluster, over generated histories."""

from __future__ import annotations

import contextlib
from collections import defaultdict
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nodewright.api.quantity import parse_quantity
from nodewright.cluster import objects
from nodewright.cluster.api import ApiError
from nodewright.cluster.memory import InMemoryCluster
from nodewright.runtime.clock import VirtualClock
from tests.cluster.world import HOSTNAME, ZONE, World, node, pod

NAMES = st.sampled_from(["a", "b", "c"])
OPERATIONS = st.lists(
    st.tuples(
        st.sampled_from(["create", "patch", "delete", "finalize", "bind"]),
        NAMES,
        st.integers(min_value=0, max_value=3),
    ),
    max_size=30,
)


def apply_operation(cluster: InMemoryCluster, operation: str, name: str, value: int) -> None:
    if operation == "create":
        cluster.create({"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": name, "finalizers": ["x"] * (value % 2), "labels": {"v": str(value)}},
            "spec": {"containers": [{"name": "c", "image": "i"}]}})
    elif operation == "patch":
        cluster.patch("Pod", name, {"metadata": {"labels": {"v": str(value)}}}, "default")
    elif operation == "delete":
        cluster.delete("Pod", name, "default", grace_period_seconds=value)
    elif operation == "finalize":
        cluster.patch("Pod", name, {"metadata": {"finalizers": None}}, "default")
    else:
        cluster.bind(name, "default", f"node-{value}")


@settings(max_examples=120, deadline=None)
@given(OPERATIONS)
def test_replaying_the_watch_rebuilds_the_store(operations: list[tuple[str, str, int]]) -> None:
    cluster = InMemoryCluster(VirtualClock())
    stream = cluster.watch(["Pod"])
    for operation, name, value in operations:
        with contextlib.suppress(ApiError):
            apply_operation(cluster, operation, name, value)
    replica: dict[str, dict[str, Any]] = {}
    versions = []
    for event in stream.poll():
        versions.append(int(event.object["metadata"]["resourceVersion"]))
        if event.type == "DELETED":
            del replica[event.key]
        else:
            replica[event.key] = dict(event.object)
    assert versions == sorted(set(versions))
    assert replica == {objects.key(p): p for p in cluster.list("Pod")}


NODE_SHAPES = st.lists(
    st.tuples(st.sampled_from(["1", "2", "4"]), st.sampled_from(["a", "b", "c"])),
    min_size=1, max_size=5,
)
POD_SHAPES = st.lists(
    st.tuples(st.sampled_from(["100m", "500m", "1", "3"]), st.booleans(), st.booleans()),
    max_size=25,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(NODE_SHAPES, POD_SHAPES)
def test_the_scheduler_never_overcommits_and_explains_every_pending_pod(
    node_shapes: list[tuple[str, str]], pod_shapes: list[tuple[str, bool, bool]]
) -> None:
    world = World()
    world.apply(*[node(f"n{i}", cpu=cpu, zone=zone) for i, (cpu, zone) in enumerate(node_shapes)])
    for i, (cpu, lonely, spread) in enumerate(pod_shapes):
        extra: dict[str, Any] = {}
        if lonely:
            extra["affinity"] = {"podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [{
                    "labelSelector": {"matchLabels": {"lonely": "true"}},
                    "topologyKey": HOSTNAME}]}}
        if spread:
            extra["topologySpreadConstraints"] = [{
                "maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"spread": "true"}}}]
        labels = {"lonely": str(lonely).lower(), "spread": str(spread).lower()}
        world.cluster.create(pod(f"p{i}", cpu=cpu, labels=labels, **extra))
    world.run()
    capacity = {f"n{i}": parse_quantity(cpu) for i, (cpu, _) in enumerate(node_shapes)}
    zone_of = {f"n{i}": zone for i, (_, zone) in enumerate(node_shapes)}
    used: dict[str, int] = defaultdict(int)
    lonely_per_node: dict[str, int] = defaultdict(int)
    spread_per_zone: dict[str, int] = defaultdict(int)
    for each in world.pods():
        where = each["spec"].get("nodeName")
        if where is None:
            condition = objects.condition(each, "PodScheduled") or {}
            assert condition.get("reason") == "Unschedulable"
            assert str(condition.get("message")).startswith(f"0/{len(node_shapes)} nodes")
            continue
        used[where] += parse_quantity(each["spec"]["containers"][0]["resources"]["requests"]
                                      ["cpu"])
        lonely_per_node[where] += objects.labels(each)["lonely"] == "true"
        spread_per_zone[zone_of[where]] += objects.labels(each)["spread"] == "true"
    assert all(used[name] <= capacity[name] for name in used)
    assert all(count <= 1 for count in lonely_per_node.values())
    zones = set(zone_of.values())
    counts = [spread_per_zone[zone] for zone in zones]
    assert max(counts) - min(counts) <= 1
