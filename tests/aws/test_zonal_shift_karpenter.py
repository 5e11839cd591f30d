"""Zonal shift (ENABLE_ZONAL_SHIFT), ported from Karpenter v1.14.1: ARC's shifts on the cluster
make their zones' offerings unavailable, the provider asks EC2 nothing about an instance in
a shifted zone, and NodePools that can launch there get ZonalShiftActive / ZonalShiftCleared
events. Each test names the Karpenter test it comes from.

moto has no ARC: GetManagedResource is answered by botocore's Stubber, which also checks the
request we send (`resourceIdentifier`: the cluster's ARN) against the service model."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.provider import AwsCloudProvider
from nodewright.cloud.aws.zonal_shift import ZonalShifts, enable
from nodewright.cloud.provider import CloudProviderError, Instance, NodeClaimNotFoundError
from nodewright.cluster.events import EventRecorder
from nodewright.cluster.memory import InMemoryCluster
from nodewright.controllers.nodepool.zonal_shift import ZonalShiftEvents
from nodewright.controllers.registry import build_controllers
from nodewright.operator import main as operator_main
from nodewright.operator.config import OperatorConfig, add_arguments, load
from nodewright.runtime import VirtualClock
from nodewright.runtime.clock import SystemClock
from nodewright.scheduling.pricing import OfflinePriceSource
from tests.controllers.metric_samples import sample_value

from .conftest import REGION, CallRecorder
from .world import ACCOUNT, CLUSTER, FakeClock, World, node_class, nodeclaim

CLUSTER_ARN = f"arn:aws:eks:{REGION}:{ACCOUNT}:cluster/{CLUSTER}"


class Arc:
    """An ARC client behind a Stubber: each `answer` is the next GetManagedResource's."""

    def __init__(self) -> None:
        self.client = boto3.session.Session().client("arc-zonal-shift", region_name=REGION)
        self.stub = Stubber(self.client)
        self.stub.activate()

    def answer(self, *zone_ids: str, applied: bool = True, expires_in: float = 3600) -> None:
        now = datetime.now(UTC)
        self.stub.add_response("get_managed_resource", {
            "appliedWeights": {}, "autoshifts": [],
            "zonalShifts": [{
                "appliedStatus": "APPLIED" if applied else "NOT_APPLIED",
                "zonalShiftId": f"shift-{zone_id}", "resourceIdentifier": CLUSTER_ARN,
                "awayFrom": zone_id, "expiryTime": now + timedelta(seconds=expires_in),
                "startTime": now, "comment": "impaired"} for zone_id in zone_ids]},
            {"resourceIdentifier": CLUSTER_ARN})

    def shift(self, shifts: ZonalShifts, *zone_ids: str) -> None:
        self.answer(*zone_ids)
        shifts.update()


@pytest.fixture
def arc() -> Iterator[Arc]:
    stubbed = Arc()
    yield stubbed
    stubbed.stub.deactivate()


@pytest.fixture
def shifts(arc: Arc) -> ZonalShifts:
    return ZonalShifts(arc.client, CLUSTER_ARN)


@pytest.fixture
def shifted_provider(clients: AwsClients, world: World, clock: FakeClock,
                     shifts: ZonalShifts, arc: Arc) -> AwsCloudProvider:
    arc.shift(shifts)  # no shift to begin with
    return AwsCloudProvider(clients, CLUSTER, clock=clock, prices=OfflinePriceSource(),
                            zonal_shifts=shifts)


def zone_id(provider: AwsCloudProvider, zone: str) -> str:
    return next(s.zone_id for s in provider.resolve(node_class()).subnets if s.zone == zone)


def available_zones(provider: AwsCloudProvider, type_name: str) -> list[str]:
    (found,) = [t for t in provider.get_instance_types(node_class()) if t.name == type_name]
    return sorted(o.zone for o in found.offerings if o.available)


def termination_failures(zone: str, zone_id: str) -> float:
    return sample_value(
        "karpenter_cloudprovider_instance_termination_failures_total",
        {"zone": zone, "zone_id": zone_id}) or 0.0


# --- pkg/providers/arczonalshift: the provider --------------------------------------------


def test_an_applied_unexpired_shift_counts_and_an_empty_answer_clears_every_shift(
        shifts: ZonalShifts, arc: Arc) -> None:
    """arczonalshift.go UpdateZonalShifts / IsZonalShifted: applied and not expired; an
    answer with no shift resets the map."""
    arc.answer("usw2-az1")
    arc.answer("usw2-az2", applied=False)
    arc.answer("usw2-az3", expires_in=-60)
    arc.answer()

    shifts.update()
    assert shifts.is_shifted("usw2-az1")
    shifts.update()
    assert not shifts.is_shifted("usw2-az2")
    assert shifts.shifted_zones() == {"usw2-az1"}  # an answer with shifts keeps the others
    shifts.update()
    assert not shifts.is_shifted("usw2-az3")
    shifts.update()
    assert shifts.shifted_zones() == frozenset()
    arc.stub.assert_no_pending_responses()


def test_the_first_question_reads_the_shifts_once(shifts: ZonalShifts, arc: Arc) -> None:
    """arczonalshift.go ensureHydrated: IsZonalShifted before any update asks ARC once."""
    arc.answer("usw2-az1")

    assert shifts.is_shifted("usw2-az1")
    assert not shifts.is_shifted("usw2-az2")
    arc.stub.assert_no_pending_responses()


def test_enabling_zonal_shift_refuses_a_cluster_arc_does_not_know(
        clients: AwsClients, world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """operator.go ValidateZonalShiftEnablement: the cluster's ARN from DescribeCluster, one
    GetManagedResource, and a clear error when ARC does not know the cluster."""
    arc = Arc()
    arc.stub.add_client_error("get_managed_resource", "ResourceNotFoundException",
                              "not registered", expected_params={
                                  "resourceIdentifier": CLUSTER_ARN})
    session = boto3.session.Session()
    monkeypatch.setattr(session, "client", lambda *_a, **_k: arc.client)

    with pytest.raises(CloudProviderError, match=r"ENABLE_ZONAL_SHIFT: cluster .* was not "
                                                 r"found in ARC zonal shift"):
        enable(clients, CLUSTER, session)


# --- pkg/providers/instancetype/suite_test.go ----------------------------------------------


def test_offerings_in_a_zone_shifted_away_from_are_unavailable(
        shifted_provider: AwsCloudProvider, shifts: ZonalShifts, arc: Arc) -> None:
    """instancetype/suite_test.go: It("should mark offerings as unavailable for zones shifted
    away from")."""
    provider = shifted_provider
    zones = available_zones(provider, "m5.large")
    shifted = zones[0]

    arc.shift(shifts, zone_id(provider, shifted))
    assert available_zones(provider, "m5.large") == [z for z in zones if z != shifted]

    arc.shift(shifts)
    assert available_zones(provider, "m5.large") == zones


# --- pkg/providers/instance/suite_test.go, Context("Zonal Shift") --------------------------


@pytest.fixture
def launched(shifted_provider: AwsCloudProvider, shifts: ZonalShifts, arc: Arc,
             recorder: CallRecorder) -> Iterator[Instance]:
    """An instance the provider has seen, then a shift away from its zone."""
    instance = shifted_provider.create(nodeclaim(), node_class())
    arc.shift(shifts, zone_id(shifted_provider, instance.zone))
    recorder.actions.clear()
    yield instance


def test_an_instance_in_a_shifted_zone_is_answered_without_describing_it(
        shifted_provider: AwsCloudProvider, launched: Instance, recorder: CallRecorder) -> None:
    """instance/suite_test.go: It("should not call DescribeInstances for instances in a
    zonally shifted AZ")."""
    got = shifted_provider.get(launched.provider_id)

    assert got.instance_id == launched.instance_id
    assert "ec2:DescribeInstances" not in recorder.actions


def test_an_instance_in_a_shifted_zone_is_not_terminated_and_no_failure_is_counted(
        shifted_provider: AwsCloudProvider, launched: Instance, recorder: CallRecorder) -> None:
    """instance/suite_test.go: It("should not call TerminateInstances for instances in a
    zonally shifted AZ")."""
    zone_id_ = zone_id(shifted_provider, launched.zone)
    before = termination_failures(launched.zone, zone_id_)

    with pytest.raises(CloudProviderError, match="zonally shifted"):
        shifted_provider.delete(launched.provider_id)

    assert "ec2:DescribeInstances" not in recorder.actions
    assert "ec2:TerminateInstances" not in recorder.actions
    assert termination_failures(launched.zone, zone_id_) == before


def test_a_provider_that_never_saw_the_instance_describes_it_then_does_not_terminate_it(
        clients: AwsClients, clock: FakeClock, shifts: ZonalShifts,
        launched: Instance, recorder: CallRecorder) -> None:
    """instance/suite_test.go, Context("Cache Miss"): It("should not call TerminateInstances
    even with a cold cache since Delete calls Get first")."""
    cold = AwsCloudProvider(clients, CLUSTER, clock=clock, prices=OfflinePriceSource(),
                            zonal_shifts=shifts)
    cold.resolve(node_class())  # zones and zone ids, as the status controller resolves them
    recorder.actions.clear()

    with pytest.raises(CloudProviderError, match="zonally shifted"):
        cold.delete(launched.provider_id)

    assert recorder.actions.count("ec2:DescribeInstances") == 1
    assert "ec2:TerminateInstances" not in recorder.actions


def terminated_behind_its_back(clients: AwsClients, instance: Instance) -> None:
    clients.ec2.terminate_instances(InstanceIds=[instance.instance_id])


def test_an_instance_list_no_longer_returns_is_forgotten(
        clients: AwsClients, world: World, clock: FakeClock) -> None:
    """instance/suite_test.go, Context("Cache Eviction"): It("should evict cached instances
    that are no longer returned by List")."""
    provider = AwsCloudProvider(clients, CLUSTER, clock=clock, prices=OfflinePriceSource())
    instance = provider.create(nodeclaim(), node_class())
    provider.get(instance.provider_id)
    terminated_behind_its_back(clients, instance)

    provider.list()

    with pytest.raises(NodeClaimNotFoundError):
        provider.get(instance.provider_id)


def test_an_instance_in_a_shifted_zone_is_kept_when_list_no_longer_returns_it(
        clients: AwsClients, shifted_provider: AwsCloudProvider, shifts: ZonalShifts,
        arc: Arc) -> None:
    """instance/suite_test.go, Context("Cache Eviction"): It("should not evict cached
    instances in a zonally shifted AZ when not returned by List")."""
    provider = shifted_provider
    instance = provider.create(nodeclaim(), node_class())
    provider.get(instance.provider_id)
    terminated_behind_its_back(clients, instance)
    arc.shift(shifts, zone_id(provider, instance.zone))

    provider.list()

    assert provider.get(instance.provider_id).instance_id == instance.instance_id


# --- pkg/controllers/arczonalshift/suite_test.go --------------------------------------------


class Shifts:
    """The controller's view of ARC: the zone ids it says are shifted."""

    def __init__(self) -> None:
        self.zones: frozenset[str] = frozenset()

    def update(self) -> None:
        return None

    def shifted_zones(self) -> frozenset[str]:
        return self.zones


class Controller:
    def __init__(self) -> None:
        self.clock = VirtualClock(datetime(2026, 1, 1, tzinfo=UTC))
        self.cluster = InMemoryCluster(self.clock)
        self.shifts = Shifts()
        self.controller = ZonalShiftEvents(self.cluster, EventRecorder(self.cluster, self.clock),
                                           self.shifts)
        node_class = self.cluster.create({
            "apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass",
            "metadata": {"name": "default"},
            "spec": {"role": "node", "amiSelectorTerms": [{"alias": "al2023@latest"}],
                     "subnetSelectorTerms": [{"tags": {"a": "b"}}],
                     "securityGroupSelectorTerms": [{"tags": {"a": "b"}}]}})
        self.cluster.set_status("EC2NodeClass", node_class["metadata"]["name"], None, {
            "subnets": [{"id": f"subnet-test{n}", "zone": f"test-zone-1{x}",
                         "zoneID": f"tstz1-1{x}"} for n, x in ((1, "a"), (2, "b"), (3, "c"))]})

    def nodepool(self, name: str = "default", zones: list[str] | None = None,
                 node_class: tuple[str, str] = ("karpenter.k8s.aws", "EC2NodeClass")) -> None:
        requirements: list[dict[str, Any]] = []
        if zones:
            requirements = [{"key": "topology.kubernetes.io/zone", "operator": "In",
                             "values": zones}]
        group, kind = node_class
        self.cluster.create({
            "apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": name},
            "spec": {"template": {"spec": {
                "nodeClassRef": {"group": group, "kind": kind, "name": "default"},
                "requirements": requirements}}}})

    def reconcile(self, *shifted: str) -> None:
        self.shifts.zones = frozenset(shifted)
        self.controller.reconcile("singleton")

    def events(self, reason: str) -> list[tuple[str, str, str]]:
        return [(e["regarding"]["name"], e["type"], e["note"])
                for e in self.cluster.list("Event") if e["reason"] == reason]


def test_a_shift_warns_each_nodepool_that_can_launch_in_the_zone() -> None:
    """arczonalshift/suite_test.go: It("should emit a Warning event on an affected NodePool
    when a zone shifts")."""
    world = Controller()
    world.nodepool()

    world.reconcile("tstz1-1a")

    assert world.events("ZonalShiftActive") == [("default", "Warning", (
        "Zonal shift detected: offerings in zone test-zone-1a (tstz1-1a) are unavailable for "
        "this NodePool"))]


def test_a_shift_that_ends_is_announced_on_the_nodepool() -> None:
    """arczonalshift/suite_test.go: It("should emit a Normal event on an affected NodePool
    when a zone shift clears")."""
    world = Controller()
    world.nodepool()
    world.reconcile("tstz1-1a")

    world.reconcile()

    assert world.events("ZonalShiftCleared") == [("default", "Normal", (
        "Zonal shift cleared: offerings in zone test-zone-1a (tstz1-1a) are restored for this "
        "NodePool"))]


def test_a_nodepool_restricted_to_other_zones_hears_nothing() -> None:
    """arczonalshift/suite_test.go: It("should not emit an event on a NodePool restricted to
    different zones")."""
    world = Controller()
    world.nodepool(zones=["test-zone-1b", "test-zone-1c"])

    world.reconcile("tstz1-1a")

    assert world.events("ZonalShiftActive") == []


def test_a_nodepool_without_a_zone_requirement_is_warned() -> None:
    """arczonalshift/suite_test.go: It("should emit an event on a NodePool with no zone
    restriction")."""
    world = Controller()
    world.nodepool()

    world.reconcile("tstz1-1a")

    assert len(world.events("ZonalShiftActive")) == 1


def test_a_shift_in_a_zone_the_node_class_has_no_subnet_in_is_not_announced() -> None:
    """arczonalshift/suite_test.go: It("should not emit an event for a shift in a zone the
    NodeClass does not resolve to")."""
    world = Controller()
    world.nodepool()

    world.reconcile("tstz1-1z")

    assert world.events("ZonalShiftActive") == []


def test_an_unchanged_shift_is_not_announced_again() -> None:
    """arczonalshift/suite_test.go: It("should not emit events when there is no state change
    between reconciles")."""
    world = Controller()
    world.nodepool()
    world.reconcile("tstz1-1a")
    world.clock.advance(600)  # past the recorder's dedupe window: silence is the controller's

    world.reconcile("tstz1-1a")

    assert len(world.events("ZonalShiftActive")) == 1
    assert world.events("ZonalShiftCleared") == []


def test_only_the_nodepools_that_can_launch_in_the_shifted_zone_are_warned() -> None:
    """arczonalshift/suite_test.go: It("should only emit on NodePools affected by the shifted
    zone")."""
    world = Controller()
    world.nodepool()
    world.nodepool("restricted", zones=["test-zone-1b"])

    world.reconcile("tstz1-1a")

    assert [name for name, _, _ in world.events("ZonalShiftActive")] == ["default"]


def test_a_nodepool_of_another_provider_hears_nothing_of_our_shifts() -> None:
    """Karpenter's nodepoolutils.IsManaged, as every other controller applies it: a NodePool
    whose nodeClassRef names another provider's node class is not ours, even when an
    EC2NodeClass of the same name can launch in the shifted zone. (Karpenter v1.14.1's
    arczonalshift controller Gets an EC2NodeClass by the name alone: see
    docs/karpenter-differences.md.)"""
    world = Controller()
    world.nodepool()
    world.nodepool("kwok", node_class=("karpenter.kwok.sh", "KWOKNodeClass"))

    world.reconcile("tstz1-1a")
    world.reconcile()

    assert [name for name, _, _ in world.events("ZonalShiftActive")] == ["default"]
    assert [name for name, _, _ in world.events("ZonalShiftCleared")] == ["default"]


# --- ENABLE_ZONAL_SHIFT (pkg/operator/options/options.go, operator.go) ----------------------


def operator_config(env: dict[str, str]) -> OperatorConfig:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return load(parser.parse_args([]), {"CLUSTER_NAME": CLUSTER, "AWS_REGION": REGION, **env})


def test_zonal_shift_is_off_unless_enabled_and_then_the_operator_watches_it(
        world: World, shifts: ZonalShifts, monkeypatch: pytest.MonkeyPatch) -> None:
    """options.go: --enable-zonal-shift / ENABLE_ZONAL_SHIFT, default false; on, the
    provider gets the shifts and the zonal shift controller runs."""
    monkeypatch.setattr(operator_main, "enable_zonal_shift", lambda clients, name: shifts)
    off, _ = operator_main.build_cloud(operator_config({}), InMemoryCluster(VirtualClock()),
                                       SystemClock())  # type: ignore[arg-type]
    on, _ = operator_main.build_cloud(operator_config({"ENABLE_ZONAL_SHIFT": "true"}),
                                      InMemoryCluster(VirtualClock()),
                                      SystemClock())  # type: ignore[arg-type]

    assert isinstance(off, AwsCloudProvider) and off.zonal_shifts is None
    assert isinstance(on, AwsCloudProvider) and on.zonal_shifts is shifts
    clock = VirtualClock()
    names = {r.name for r in build_controllers(InMemoryCluster(clock), on, clock).reconcilers}
    assert "zonalshift" in names
    assert "zonalshift" not in {
        r.name for r in build_controllers(InMemoryCluster(clock), off, clock).reconcilers}


def test_the_operator_does_not_start_when_arc_does_not_know_the_cluster(
        world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """operator.go: Karpenter panics "Unable to find Cluster ... in Zonal Shift"."""
    def refuse(clients: AwsClients, name: str) -> ZonalShifts:
        raise CloudProviderError("ENABLE_ZONAL_SHIFT: cluster demo was not found in ARC")

    monkeypatch.setattr(operator_main, "enable_zonal_shift", refuse)

    with pytest.raises(operator_main.StartupError, match="not found in ARC"):
        operator_main.build_cloud(operator_config({"ENABLE_ZONAL_SHIFT": "true"}),
                                  InMemoryCluster(VirtualClock()),
                                  SystemClock())  # type: ignore[arg-type]
