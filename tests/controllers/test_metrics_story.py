"""Karpenter's metrics, read back from `nodewright.metrics.REGISTRY` after the workshop
runs on the in-memory world: what was created, what is running where, what the NodePool
holds, which conditions hold, and what goes away when the workload does.

The registry is process-wide (as Karpenter's is): counters are compared with what they
held before the story, and the state gauges are cleared first, so an earlier test's
world leaves nothing behind in them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from nodewright import metrics
from nodewright.api.quantity import parse_quantity
from tests.controllers.conftest import WORKSHOP
from tests.controllers.expectations import expect_no_controller_errors
from tests.controllers.metric_samples import samples, series
from tests.disruption.helpers import nodepool_with
from tests.harness import World

STATE_GAUGES = [
    metrics.PODS_STATE, metrics.NODEPOOLS_USAGE, metrics.NODEPOOLS_LIMIT, metrics.NODEPOOLS_COST,
    metrics.NODES_ALLOCATABLE, metrics.NODES_TOTAL_POD_REQUESTS, metrics.NODES_TOTAL_POD_LIMITS,
    metrics.NODES_TOTAL_DAEMON_REQUESTS, metrics.NODES_TOTAL_DAEMON_LIMITS,
    metrics.NODES_SYSTEM_OVERHEAD, metrics.NODES_CURRENT_LIFETIME, metrics.CLUSTER_UTILIZATION,
    metrics.STATUS_CONDITION_COUNT, metrics.STATUS_CONDITION_CURRENT_STATUS_SECONDS,
    metrics.TERMINATION_CURRENT_TIME, metrics.OFFERING_AVAILABLE,
    metrics.OFFERING_PRICE_ESTIMATE, metrics.PODS_UNBOUND_TIME, metrics.PODS_UNSTARTED_TIME,
    metrics.SCHEDULER_QUEUE_DEPTH, metrics.SCHEDULER_UNSCHEDULABLE_PODS,
]
CREATED = "karpenter_nodeclaims_created_total"
PROVISIONED = {"reason": "provisioned", "nodepool": "default", "min_values_relaxed": "false"}


@pytest.fixture(autouse=True)
def fresh_gauges() -> Iterator[None]:
    for gauge in STATE_GAUGES:
        gauge.clear()
    yield


def value(metric: str, /, **labels: str) -> float:
    return next((s.value for s in samples(metric) if s.labels == labels), 0.0)


def sample(metric: str, /, **labels: str) -> float:
    """The one sample with these labels (among others): fails when there is none or more."""
    found = [s.value for s in samples(metric)
             if all(s.labels.get(k) == v for k, v in labels.items())]
    assert len(found) == 1, f"{metric}{labels}: {len(found)} samples"
    return found[0]


def cores(quantity: Any) -> float:
    return parse_quantity(quantity) / 1000


def workshop_with(world: World, replicas: int) -> None:
    world.apply(WORKSHOP)
    world.scale("inflate", replicas)
    assert world.settle()
    world.advance(60)  # a minute of the metrics controllers' periodic runs


def test_the_workshop_at_five_replicas_in_karpenters_metrics(world: World) -> None:
    created_before = value(CREATED, **PROVISIONED)
    bound_before = value("karpenter_pods_bound_duration_seconds_count")
    started_before = value("karpenter_pods_startup_duration_seconds_count")
    creates_before = value("karpenter_cloudprovider_duration_seconds_count",
                           controller="nodeclaim.lifecycle", method="Create", provider="sim")
    workshop_with(world, 5)
    (claim,) = world.nodeclaims()
    (node,) = world.nodes()
    claim_name, node_name = claim["metadata"]["name"], node["metadata"]["name"]

    # One NodeClaim provisioned, one launch call through the lifecycle's metered cloud.
    assert value(CREATED, **PROVISIONED) - created_before == 1
    assert value("karpenter_cloudprovider_duration_seconds_count", controller="nodeclaim.lifecycle",
                 method="Create", provider="sim") - creates_before == 1

    # A karpenter_pods_state series per pod, Running and ready on the new node.
    pods = world.pods(labels={"app": "inflate"})
    states = series("karpenter_pods_state", namespace="default", owner=_owner(pods[0]))
    assert sorted(s["name"] for s in states) == sorted(p["metadata"]["name"] for p in pods)
    for state in states:
        assert state | {"name": ""} == {
            "name": "", "namespace": "default", "owner": _owner(pods[0]), "node": node_name,
            "scheduled": "true", "nodepool": "default",
            "zone": node["metadata"]["labels"]["topology.kubernetes.io/zone"],
            "arch": "amd64", "capacity_type": "on-demand", "instance_type": "m5.large",
            "phase": "Running", "ready": "true", "managed": "true"}
    # Every pod on the node (DaemonSet pods too) bound and started once, no longer waiting.
    on_node = [p for p in world.pods(namespace=None) if p["spec"].get("nodeName") == node_name]
    assert len(on_node) > 5
    assert value("karpenter_pods_bound_duration_seconds_count") - bound_before == len(on_node)
    assert value("karpenter_pods_startup_duration_seconds_count") - started_before == len(
        on_node)
    assert series("karpenter_pods_unbound_time_seconds", namespace="default") == []

    # The NodePool holds what its node holds, against its limits.
    capacity = node["status"]["capacity"]
    assert sample("karpenter_nodepools_usage", nodepool="default",
                  resource_type="cpu") == cores(capacity["cpu"])
    assert sample("karpenter_nodepools_usage", nodepool="default",
                  resource_type="memory") == parse_quantity(capacity["memory"]) / 1000
    assert sample("karpenter_nodepools_usage", nodepool="default", resource_type="nodes") == 1
    assert sample("karpenter_nodepools_limit", nodepool="default", resource_type="cpu") == 1000
    assert sample("karpenter_nodepools_limit", nodepool="default",
                  resource_type="memory") == 1000 * 2 ** 30
    assert sample("karpenter_nodepools_cost_total", nodepool="default") == sample(
        "karpenter_cloudprovider_instance_type_offering_price_estimate",
        instance_type="m5.large", capacity_type="on-demand",
        zone=node["metadata"]["labels"]["topology.kubernetes.io/zone"])

    # The node's own gauges, labeled with its well-known labels.
    allocatable = node["status"]["allocatable"]
    assert sample("karpenter_nodes_allocatable", node_name=node_name, resource_type="cpu",
                  instance_type="m5.large", nodepool="default",
                  managed="true") == cores(allocatable["cpu"])
    assert sample("karpenter_nodes_system_overhead", node_name=node_name,
                  resource_type="cpu") == pytest.approx(
                      cores(capacity["cpu"]) - cores(allocatable["cpu"]))
    # inflate requests memory only, the workshop's two DaemonSets cpu only (25m + 100m).
    requested = sample("karpenter_nodes_total_pod_requests", node_name=node_name,
                       resource_type="memory")
    assert requested == 5 * 2 ** 30
    assert sample("karpenter_nodes_total_daemon_requests", node_name=node_name,
                  resource_type="cpu") == sample("karpenter_nodes_total_pod_requests",
                                                 node_name=node_name, resource_type="cpu") == 0.125
    assert sample("karpenter_cluster_utilization_percent", resource_type="memory") == (
        pytest.approx(100 * requested / (parse_quantity(allocatable["memory"]) / 1000)))

    # Cluster state, the scheduler and the offerings.
    assert value("karpenter_cluster_state_synced") == 1
    assert value("karpenter_cluster_state_unsynced_time_seconds") == 0
    assert value("karpenter_cluster_state_node_count") == 1
    assert sample("karpenter_scheduler_queue_depth", controller="provisioner") == 0
    assert value("karpenter_scheduler_unschedulable_pods_count", controller="provisioner") == 0
    assert sample("karpenter_cloudprovider_instance_type_offering_available",
                  instance_type="m5.large", capacity_type="on-demand",
                  zone=node["metadata"]["labels"]["topology.kubernetes.io/zone"]) == 1
    assert value("karpenter_cloudprovider_instance_type_cpu_cores", instance_type="m5.large") == 2
    # EC2's SizeInMiB x 2^20, before the VM overhead the node's capacity is net of.
    raw_memory = value("karpenter_cloudprovider_instance_type_memory_bytes",
                       instance_type="m5.large")
    assert raw_memory == 8192 * 2**20 > parse_quantity(capacity["memory"]) / 1000

    # operatorpkg's status metrics for the NodeClaim, the NodePool and the EC2NodeClass
    # (whose status the operator's node class controller writes; here the test does).
    node_class = world.cluster.get("EC2NodeClass", "default")
    world.cluster.update({**node_class, "status": {"conditions": [{
        "type": "Ready", "status": "True", "reason": "Ready", "message": "",
        "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}, subresource="status")
    world.advance(5)
    for kind, name, group in (("NodeClaim", claim_name, "karpenter.sh"),
                              ("NodePool", "default", "karpenter.sh"),
                              ("EC2NodeClass", "default", "karpenter.k8s.aws")):
        ready = series("operator_status_condition_count", kind=kind, name=name, type="Ready")
        assert [(s["status"], s["group"], s["namespace"]) for s in ready] == [
            ("True", group, "")], kind
        assert sample("operator_status_condition_count", kind=kind, name=name,
                      type="Ready", status="True") == 1
    # ... and each kind's own families (operator_<kind>_*), the EC2NodeClass's included.
    assert sample("operator_ec2nodeclass_status_condition_count", name="default",
                  type="Ready", status="True") == 1
    assert sample("operator_nodepool_status_condition_count", name="default",
                  type="Ready", status="True") == 1
    assert sorted(s["type"] for s in series("operator_status_condition_count",
                                           kind="NodeClaim", name=claim_name)) == sorted(
        c["type"] for c in claim["status"]["conditions"])
    assert value("operator_status_condition_transitions_total", group="karpenter.sh",
                 kind="NodeClaim", type="Ready", status="True", reason="Ready") >= 1
    expect_no_controller_errors(world)


def _owner(pod: dict[str, Any]) -> str:
    owner = pod["metadata"]["ownerReferences"][0]
    return f"/apis/apps/v1/namespaces/default/replicasets/{owner['name']}"


def test_scaling_to_zero_counts_the_disruption_and_drops_the_gone_objects_series(
        world: World) -> None:
    workshop_with(world, 5)
    (claim,) = world.nodeclaims()
    (node,) = world.nodes()
    claim_name, node_name = claim["metadata"]["name"], node["metadata"]["name"]
    zone = node["metadata"]["labels"]["topology.kubernetes.io/zone"]
    disrupted = {"reason": "empty", "nodepool": "default", "capacity_type": "on-demand",
                 "consolidation_policy": "when_empty_or_underutilized",
                 "termination_mode": "graceful"}
    counters = {
        "disrupted": ("karpenter_nodeclaims_disrupted_total", disrupted),
        "decisions": ("karpenter_voluntary_disruption_decisions_total",
                      {"decision": "delete", "reason": "empty", "consolidation_type": "empty"}),
        "claims": ("karpenter_nodeclaims_terminated_total",
                   {"nodepool": "default", "capacity_type": "on-demand", "zone": zone}),
        "nodes": ("karpenter_nodes_terminated_total", {"nodepool": "default", "zone": zone}),
        "node_durations": ("karpenter_nodes_termination_duration_seconds_count",
                           {"nodepool": "default"}),
        "lifetimes": ("karpenter_nodes_lifetime_duration_seconds_count", {"nodepool": "default"}),
        "claim_durations": ("karpenter_nodeclaims_termination_duration_seconds_count",
                            {"nodepool": "default"}),
        "instance_durations": ("karpenter_nodeclaims_instance_termination_duration_seconds_count",
                               {"nodepool": "default"}),
        "terminations": ("operator_termination_duration_seconds_count",
                         {"group": "karpenter.sh", "kind": "NodeClaim"}),
        "claim_terminations": ("operator_nodeclaim_termination_duration_seconds_count",
                               {"karpenter_k8s_aws_ec2nodeclass": "default",
                                "karpenter_sh_nodepool": "default"}),
    }
    before = {key: value(name, **labels) for key, (name, labels) in counters.items()}

    world.scale("inflate", 0)
    assert world.settle()
    world.advance(60)
    assert world.nodeclaims() == [] and world.nodes() == []

    assert {key: value(name, **labels) - before[key]
            for key, (name, labels) in counters.items()} == {key: 1 for key in counters}
    # The gone pods, node and NodeClaim have no series left; the NodePool holds nothing.
    assert series("karpenter_pods_state", namespace="default") == []
    assert series("karpenter_nodes_allocatable", node_name=node_name) == []
    assert series("karpenter_nodes_current_lifetime_seconds", node_name=node_name) == []
    assert series("operator_status_condition_count", kind="NodeClaim", name=claim_name) == []
    assert series("operator_termination_current_time_seconds", name=claim_name) == []
    assert sample("karpenter_nodepools_usage", nodepool="default", resource_type="cpu") == 0
    assert sample("karpenter_nodepools_cost_total", nodepool="default") == 0
    assert value("karpenter_cluster_state_node_count") == 0
    expect_no_controller_errors(world)


def test_pods_nothing_can_hold_wait_unscheduled_in_the_metrics(world: World) -> None:
    world.apply(WORKSHOP)
    world.apply("""
apiVersion: v1
kind: Pod
metadata: {name: too-big, namespace: default}
spec:
  nodeSelector: {type: karpenter}
  containers:
    - name: c
      image: pause
      resources: {requests: {cpu: "5000"}}
""")
    world.advance(120)
    assert world.pending_pods() and world.nodeclaims() == []

    assert value("karpenter_scheduler_unschedulable_pods_count", controller="provisioner") == 1
    (state,) = series("karpenter_pods_state", name="too-big")
    assert (state["phase"], state["scheduled"], state["node"], state["managed"]) == (
        "Pending", "false", "", "false")
    # Waiting since it was created: the gauge follows the virtual clock.
    assert value("karpenter_pods_unbound_time_seconds", name="too-big",
                 namespace="default") >= 60
    assert value("karpenter_pods_unstarted_time_seconds", name="too-big",
                 namespace="default") >= 60

    world.delete("Pod", "too-big", "default")
    world.advance(5)
    assert series("karpenter_pods_state", name="too-big") == []
    assert series("karpenter_pods_unbound_time_seconds", name="too-big") == []


def test_a_spot_interruption_is_counted_as_karpenter_counts_the_message(world: World) -> None:
    world.apply(WORKSHOP, nodepool_with(requirements={"karpenter.sh/capacity-type": ["spot"]}))
    world.scale("inflate", 5)
    assert world.settle()
    [instance] = world.live_instances()
    disrupted = {"reason": "spot_interrupted", "nodepool": "default", "capacity_type": "spot",
                 "consolidation_policy": "", "termination_mode": "graceful"}
    counters = {
        "received": ("karpenter_interruption_received_messages_total",
                     {"message_type": "spot_interrupted"}),
        "deleted": ("karpenter_interruption_deleted_messages_total", {}),
        "waited": ("karpenter_interruption_message_queue_duration_seconds_count", {}),
        "disrupted": ("karpenter_nodeclaims_disrupted_total", disrupted),
        "initiated": ("karpenter_pods_disruption_initiated_total", disrupted),
    }
    before = {key: value(name, **labels) for key, (name, labels) in counters.items()}

    world.cloud.interrupt(instance.instance_id, "spot")
    world.advance(30)

    assert {key: value(name, **labels) - before[key]
            for key, (name, labels) in counters.items()} == {
        "received": 1, "deleted": 1, "waited": 1, "disrupted": 1, "initiated": 0}
    expect_no_controller_errors(world)
