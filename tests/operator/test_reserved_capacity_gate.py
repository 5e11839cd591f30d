"""FEATURE_GATES=ReservedCapacity=false and DISABLE_CLUSTER_STATE_OBSERVABILITY from the
operator's settings to what the controllers do.

ReservedCapacity off, as Karpenter: no capacity reservation is offered or launched into
(core's offeringsToReserve reserves nothing; the AWS provider resolves no reserved
offerings), so a NodePool allowing `reserved` gets on-demand capacity while reservations
sit unused. Cluster state observability off, as Karpenter's controllers.go: the pod,
NodePool, Node and status-condition metrics controllers do not run."""

from __future__ import annotations

import argparse
from typing import Any

from nodewright import metrics
from nodewright.cloud.sim import SimulatedEC2
from nodewright.cloud.sim.reservations import SimReservation
from nodewright.cloud.unreserved import WithoutReservedCapacity, without_reserved
from nodewright.operator.config import add_arguments, load
from nodewright.operator.main import IMPLEMENTED_GATES, controller_options
from tests.cloudsim.conftest import node_class, nodeclaim
from tests.harness import CAPACITY_TYPE, RESERVING_CLASS, World, node_pool
from tests.static.helpers import workload

RESERVATION = SimReservation("cr-ml", "m5.large", "us-east-1a", 2, tags={"team": "ml"})
ANY = ("reserved", "spot", "on-demand")


def world_with(env: dict[str, str]) -> World:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    config = load(parser.parse_args([]), {"CLUSTER_NAME": "demo", "NODEWRIGHT_CLOUD": "sim",
                                          **env})
    world = World(options=controller_options(config))
    world.cloud = SimulatedEC2(world.clock, cluster=world.cluster, reservations=[RESERVATION])
    world.restart_controllers()
    return world


def launched_capacity_type(env: dict[str, str]) -> str:
    world = world_with(env)
    world.apply(RESERVING_CLASS, node_pool(types=["m5.large"],
                                           capacity_types=["reserved", "on-demand"]))
    world.apply(workload("train", 1, "500m"))
    assert world.settle()
    (claim,) = world.nodeclaims()
    labels: dict[str, Any] = claim["metadata"]["labels"]
    return str(labels[CAPACITY_TYPE])


def test_with_the_gate_on_a_reservation_is_launched_into() -> None:
    assert launched_capacity_type({}) == "reserved"


def test_with_the_gate_off_the_reservation_is_not_used() -> None:
    assert "ReservedCapacity" in IMPLEMENTED_GATES
    assert launched_capacity_type({"FEATURE_GATES": "ReservedCapacity=false"}) == "on-demand"


def node_class_status(env: dict[str, str]) -> dict[str, Any]:
    world = world_with(env)
    world.apply(RESERVING_CLASS)
    assert world.settle()
    status: dict[str, Any] = world.cluster.get("EC2NodeClass", "default")["status"]
    return status


def test_with_the_gate_on_the_node_class_reports_its_reservations() -> None:
    status = node_class_status({})
    conditions = {c["type"]: c["status"] for c in status["conditions"]}
    assert conditions["CapacityReservationsReady"] == "True"
    assert [r["id"] for r in status["capacityReservations"]] == ["cr-ml"]


def test_with_the_gate_off_the_node_class_reconciles_no_reservation() -> None:
    """Karpenter's nodeclass controller skips its capacity reservation reconciler without
    the gate: no CapacityReservationsReady, no status.capacityReservations, Ready all the
    same (capacityreservation_test.go Entry "when reserved capacity feature flag is
    disabled", on the controllers the operator runs)."""
    status = node_class_status({"FEATURE_GATES": "ReservedCapacity=false"})
    conditions = {c["type"]: c["status"] for c in status["conditions"]}
    assert "CapacityReservationsReady" not in conditions
    assert conditions["Ready"] == "True"
    assert "capacityReservations" not in status


def test_without_reserved_capacity_no_reserved_offering_is_offered() -> None:
    ec2 = SimulatedEC2(World().clock, reservations=[RESERVATION])
    reserving = node_class(capacityReservationSelectorTerms=[{"tags": {"team": "ml"}}])
    offered = {o.capacity_type for it in ec2.get_instance_types(reserving)
               for o in it.offerings}
    unreserved = {o.capacity_type for it in WithoutReservedCapacity(ec2).get_instance_types(
        reserving) for o in it.offerings}
    assert "reserved" in offered
    assert unreserved == offered - {"reserved"}


def test_a_type_offered_only_as_reserved_capacity_is_left_out() -> None:
    ec2 = SimulatedEC2(World().clock, reservations=[RESERVATION])
    reserving = node_class(capacityReservationSelectorTerms=[{"tags": {"team": "ml"}}])
    (m5_large,) = [it for it in ec2.get_instance_types(reserving) if it.name == "m5.large"]
    only_reserved = type(m5_large)(m5_large.name, m5_large.labels, m5_large.capacity,
                                   m5_large.overhead, tuple(
                                       o for o in m5_large.offerings
                                       if o.capacity_type == "reserved"))
    assert without_reserved([only_reserved]) == []


def test_a_nodeclaim_allowing_reserved_launches_on_demand_without_the_gate() -> None:
    ec2 = SimulatedEC2(World().clock, reservations=[RESERVATION])
    reserving = node_class(capacityReservationSelectorTerms=[{"tags": {"team": "ml"}}])
    claim = nodeclaim("a", types=("m5.large",), capacity_types=("reserved", "on-demand"))
    asked = list(claim.spec.requirements)
    assert WithoutReservedCapacity(ec2).create(claim, reserving).capacity_type == "on-demand"
    assert claim.spec.requirements == asked  # the NodeClaim given is left as it was
    assert ec2.create(nodeclaim("b", types=("m5.large",), capacity_types=ANY),
                      reserving).capacity_type == "reserved"


def pod_metric_names(pod_prefix: str) -> set[str]:
    return {sample.labels["name"] for family in metrics.PODS_STATE.collect()
            for sample in family.samples if sample.labels.get("name", "").startswith(pod_prefix)}


def test_cluster_state_observability_off_runs_no_cluster_state_metrics() -> None:
    world = world_with({"DISABLE_CLUSTER_STATE_OBSERVABILITY": "true"})
    names = {reconciler.name for reconciler in world.controllers.reconcilers}
    assert "metrics.offerings" in names  # Karpenter writes these from its cloud provider
    assert not names & {"metrics.pod", "metrics.node", "metrics.nodepool", "metrics.status"}
    world.apply(RESERVING_CLASS, node_pool(types=["m5.large"]))
    world.apply(workload("unobserved", 1, "500m"))
    assert world.settle()
    assert pod_metric_names("unobserved") == set()


def test_cluster_state_observability_on_by_default() -> None:
    world = world_with({})
    names = {reconciler.name for reconciler in world.controllers.reconcilers}
    assert {"metrics.pod", "metrics.node", "metrics.nodepool", "metrics.status"} <= names
    world.apply(RESERVING_CLASS, node_pool(types=["m5.large"]))
    world.apply(workload("observed", 1, "500m"))
    assert world.settle()
    assert pod_metric_names("observed")
