"""The NodeClaim's Drifted condition: static (NodePool template hash), requirements,
instance type no longer offered (an hour after launch), then the cloud provider's own
checks; cleared when the NodeClaim is not launched or no longer drifted.

Ported from Karpenter v1.14.1 pkg/controllers/nodeclaim/disruption/drift_test.go
(Describe "Drift"). The rules are `nodewright.controllers.nodeclaim.drift.drift_of`; the
condition is written by the NodeClaimConditions controller, driven here on the bench."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from nodewright.api import hashes
from nodewright.api.nodepool import NodePool
from nodewright.controllers.nodeclaim.disruption_conditions import NodeClaimConditions
from nodewright.controllers.nodeclaim.drift import (
    INSTANCE_TYPE_NOT_FOUND,
    NODEPOOL_DRIFTED,
    REQUIREMENTS_DRIFTED,
    drift_of,
)
from nodewright.scheduling.catalog import InstanceType, Offering, offline_catalog
from tests.controllers.nodeclaim_bench import (
    bench,
    condition_of,
    create,
    get,
    launched,
    nodeclaim,
    set_condition,
    status_of,
)
from tests.harness import World, node_pool

NOW = datetime(2026, 1, 5, 12, tzinfo=UTC)
LONG_AGO = NOW - timedelta(hours=2)
TYPE = "m5.large"
CLAIM_LABELS = {"karpenter.sh/nodepool": "default", "node.kubernetes.io/instance-type": TYPE,
                "topology.kubernetes.io/zone": "us-east-1a", "karpenter.sh/capacity-type": "spot"}
CT = "karpenter.sh/capacity-type"
OS = "kubernetes.io/os"
ARCH = "kubernetes.io/arch"


def pool(requirements: Sequence[dict[str, Any]] = (), **template: Any) -> NodePool:
    return NodePool.model_validate(node_pool(requirements=requirements, capacity_types=(),
                                             **template))


def catalog() -> list[InstanceType]:
    return list(offline_catalog("us-east-1"))


def drift(nodepool: NodePool, labels: dict[str, str] | None = None, *,
          annotations: dict[str, str] | None = None,
          types: list[InstanceType] | None = None, created: datetime = NOW,
          cloud: str | None = None) -> str | None:
    found = drift_of(
        nodepool=nodepool,
        annotations=hashes.nodepool_hash_annotations(nodepool) if annotations is None
        else annotations,
        labels=CLAIM_LABELS if labels is None else labels, node_class=None,
        instance_types=catalog() if types is None else types, created=created, now=NOW,
        cloud=(lambda: cloud) if cloud is not None else None)
    return None if found is None else found.reason


# -- the controller on the bench ----------------------------------------------------------


class CloudDrift:
    """The bench's cloud with Karpenter's `cp.Drifted` set."""

    def __init__(self, inner: Any, reason: str | None) -> None:
        self._inner = inner
        self.reason = reason

    def drift_reason(self, *args: Any) -> str | None:
        return self.reason

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def conditions_of(world: World, reason: str | None = "drifted") -> NodeClaimConditions:
    controller = world.controllers.get("nodeclaim.disruption", NodeClaimConditions)
    assert controller is not None
    controller.provider = CloudDrift(controller.provider, reason)  # type: ignore[assignment]
    return controller


@pytest.mark.parametrize("managed", [True, False], ids=["managed", "unmanaged"])
def test_the_clouds_drift_marks_our_nodeclaims_only(managed: bool) -> None:
    """Entries "should detect drift" and "should ignore drift for NodeClaims not managed by
    this instance of Karpenter"."""
    world = bench()
    controller = conditions_of(world)
    (claim,) = create(world, nodeclaim(managed=managed))
    name = claim["metadata"]["name"]
    world.advance(5)
    if not managed:
        set_condition(world, "NodeClaim", name, "Launched", "True")
    controller.reconcile(name)
    drifted = status_of(get(world, name), "Drifted")
    assert drifted == ("True" if managed else None)


def test_a_nodeclaim_without_an_instance_type_label_is_drifted() -> None:
    """It "should detect stale instance type drift if the instance type label doesn't
    exist"."""
    labels = {k: v for k, v in CLAIM_LABELS.items() if k != "node.kubernetes.io/instance-type"}
    assert drift(pool(), labels, created=LONG_AGO) == INSTANCE_TYPE_NOT_FOUND


def test_an_instance_type_no_longer_listed_is_drifted() -> None:
    """It "should detect stale instance type drift if the instance type doesn't exist"."""
    assert drift(pool(), types=[], created=LONG_AGO) == INSTANCE_TYPE_NOT_FOUND


def _with_offerings(offerings: Sequence[Offering]) -> list[InstanceType]:
    return [dataclasses.replace(it, offerings=tuple(offerings)) if it.name == TYPE else it
            for it in catalog()]


def test_an_instance_type_without_offerings_is_drifted() -> None:
    """It "should detect stale instance type drift if the instance type offerings doesn't
    exist"."""
    assert drift(pool(), types=_with_offerings([]), created=LONG_AGO) == (
        INSTANCE_TYPE_NOT_FOUND)


def test_an_instance_type_offered_only_elsewhere_is_drifted() -> None:
    """It "should detect stale instance type drift if the instance type offerings aren't
    compatible with the nodeclaim"."""
    (m5,) = [it for it in catalog() if it.name == TYPE]
    elsewhere = [dataclasses.replace(o, zone="nowhere-1z") for o in m5.offerings]
    assert drift(pool(), types=_with_offerings(elsewhere), created=LONG_AGO) == (
        INSTANCE_TYPE_NOT_FOUND)
    assert drift(pool(), created=LONG_AGO) is None


def test_static_drift_is_found_before_the_clouds() -> None:
    """It "should detect static drift before cloud provider drift"."""
    stamped = {hashes.NODEPOOL_HASH: "test-123",
               hashes.NODEPOOL_HASH_VERSION: hashes.NODEPOOL_HASH_VERSION_VALUE}
    assert drift(pool(), annotations=stamped, cloud="drifted") == NODEPOOL_DRIFTED


def test_requirement_drift_is_found_before_the_clouds() -> None:
    """It "should detect node requirement drift before cloud provider drift"."""
    nodepool = pool([{"key": "node.kubernetes.io/instance-type", "operator": "DoesNotExist"}])
    assert drift(nodepool, cloud="drifted") == REQUIREMENTS_DRIFTED


@pytest.mark.parametrize("launch", [("Unknown", "Launching"), ("False", "LaunchFailed")],
                         ids=["unknown", "false"])
def test_an_unlaunched_nodeclaim_loses_its_drifted_condition(launch: tuple[str, str]
                                                             ) -> None:
    """Its "should remove the status condition from the nodeClaim when the nodeClaim launch
    condition is unknown" and "... is false"."""
    world = bench()
    controller = conditions_of(world)
    name = launched(world)
    controller.reconcile(name)
    assert status_of(get(world, name), "Drifted") == "True"
    set_condition(world, "NodeClaim", name, "Launched", *launch)
    controller.reconcile(name)
    assert status_of(get(world, name), "Drifted") is None


def test_a_nodeclaim_without_its_nodepool_is_not_judged() -> None:
    """It "should not detect drift if the nodePool does not exist"."""
    world = bench()
    controller = conditions_of(world)
    name = launched(world, pool="gone")
    controller.reconcile(name)
    assert status_of(get(world, name), "Drifted") is None


def test_a_nodeclaim_no_longer_drifted_loses_the_condition() -> None:
    """It "should remove the status condition from the nodeClaim if the nodeClaim is no
    longer drifted"."""
    world = bench()
    controller = conditions_of(world)
    name = launched(world)
    controller.reconcile(name)
    assert condition_of(get(world, name), "Drifted") == ("True", "drifted")
    controller.provider.reason = None  # type: ignore[attr-defined]
    controller.reconcile(name)
    assert status_of(get(world, name), "Drifted") is None


# -- Context "NodeRequirement Drift" ------------------------------------------------------

ON_DEMAND = {"key": CT, "operator": "In", "values": ["on-demand"]}
LINUX = {"key": OS, "operator": "In", "values": ["linux"]}


@pytest.mark.parametrize(("old", "new", "labels", "drifted"), [
    ([ON_DEMAND, {"key": ARCH, "operator": "In", "values": ["amd64"]}, LINUX],
     [{"key": CT, "operator": "In", "values": ["spot"]}],
     {CT: "on-demand", ARCH: "amd64", OS: "linux"}, True),
    ([ON_DEMAND, LINUX], [ON_DEMAND, LINUX, {"key": ARCH, "operator": "In",
                                             "values": ["amd64"]}],
     {CT: "on-demand", OS: "linux"}, True),
    ([ON_DEMAND, {"key": OS, "operator": "In", "values": ["linux", "windows"]}],
     [ON_DEMAND, {"key": OS, "operator": "In", "values": ["windows"]}],
     {CT: "on-demand", OS: "linux"}, True),
    ([ON_DEMAND, LINUX], [ON_DEMAND, {"key": OS, "operator": "In",
                                      "values": ["linux", "windows"]}],
     {CT: "on-demand", OS: "linux"}, False),
    ([ON_DEMAND, LINUX], [ON_DEMAND, {"key": OS, "operator": "Exists"}],
     {CT: "on-demand", OS: "linux"}, False),
    ([ON_DEMAND, LINUX], [ON_DEMAND, {"key": OS, "operator": "DoesNotExist"}],
     {CT: "on-demand", OS: "linux"}, True),
    ([ON_DEMAND, {"key": "test-label", "operator": "Gt", "values": ["2"]}],
     [ON_DEMAND, {"key": "test-label", "operator": "Gt", "values": ["10"]}],
     {CT: "on-demand", "test-label": "5"}, True),
    ([ON_DEMAND, {"key": "test-label", "operator": "Lt", "values": ["5"]}],
     [ON_DEMAND, {"key": "test-label", "operator": "Lt", "values": ["1"]}],
     {CT: "on-demand", "test-label": "2"}, True),
], ids=[
    "should return drifted if the nodePool node requirement is updated",
    "should return drifted if a new node requirement is added",
    "should return drifted if a node requirement is reduced",
    "should not return drifted if a node requirement is expanded",
    "should not return drifted if a node requirement set to Exists",
    "should return drifted if a node requirement set to DoesNotExists",
    "should not return drifted if a nodeClaim is greater then node requirement",
    "should not return drifted if a nodeClaim is less then node requirement",
])
def test_a_changed_requirement_drifts_the_nodeclaims_it_no_longer_admits(
        old: list[dict[str, Any]], new: list[dict[str, Any]], labels: dict[str, str],
        drifted: bool) -> None:
    """The eight Entries of Context "NodeRequirement Drift" (named by the ids; the last two
    expect drift despite their names, as Karpenter's table does)."""
    claim_labels = {**CLAIM_LABELS, **labels}
    before = pool(old)
    assert drift(before, claim_labels, annotations={}) is None
    assert (drift(pool(new), claim_labels, annotations={}) == REQUIREMENTS_DRIFTED) is drifted


def test_only_the_nodeclaims_a_narrowed_nodepool_no_longer_admits_drift() -> None:
    """It "should return drifted only on NodeClaims that are drifted from an updated
    nodePool"."""
    both = pool([ON_DEMAND, {"key": OS, "operator": "In", "values": ["linux", "windows"]}])
    linux = {**CLAIM_LABELS, CT: "on-demand", OS: "linux"}
    windows = {**CLAIM_LABELS, CT: "on-demand", OS: "windows"}
    assert drift(both, linux, annotations={}) is None
    assert drift(both, windows, annotations={}) is None
    narrowed = pool([ON_DEMAND, LINUX])
    assert drift(narrowed, linux, annotations={}) is None
    assert drift(narrowed, windows, annotations={}) == REQUIREMENTS_DRIFTED


# -- Context "NodePool Static Drift" ------------------------------------------------------

STATIC = {"metadata": {"annotations": {"keyAnnotation": "valueAnnotation",
                                       "keyAnnotation2": "valueAnnotation2"},
                       "labels": {"keyLabel": "valueLabel", "keyLabel2": "valueLabel2"}},
          "spec": {"taints": [{"key": "keyvalue1", "effect": "NoExecute"}],
                   "startupTaints": [{"key": "startupkeyvalue1", "effect": "NoExecute"}],
                   "expireAfter": "5m", "terminationGracePeriod": "5m"}}


def static_pool(change: dict[str, Any] | None = None) -> NodePool:
    body = node_pool(capacity_types=())
    template = body["spec"]["template"]
    template["metadata"] = {k: dict(v) for k, v in STATIC["metadata"].items()}
    template["spec"].update(STATIC["spec"])
    for section, fields in (change or {}).items():
        for key, value in fields.items():
            target = template[section]
            target[key] = ({**target[key], **value} if isinstance(value, dict)
                           and isinstance(target.get(key), dict) else value)
    return NodePool.model_validate(body)


@pytest.mark.parametrize("change", [
    {"metadata": {"annotations": {"keyAnnotationTest": "valueAnnotationTest"}}},
    {"metadata": {"labels": {"keyLabelTest": "valueLabelTest"}}},
    {"spec": {"taints": [{"key": "keytest2taint", "effect": "NoExecute"}]}},
    {"spec": {"startupTaints": [{"key": "keytest2taint", "effect": "NoExecute"}]}},
    {"spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                               "name": "testName"}}},
    {"spec": {"expireAfter": "100m"}},
    {"spec": {"terminationGracePeriod": "100m"}},
], ids=["Annoations", "Labels", "Taints", "StartupTaints", "NodeClassRef Name", "ExpireAfter",
        "TerminationGracePeriod"])
def test_a_change_to_a_static_field_drifts_the_nodeclaim(change: dict[str, Any]) -> None:
    """The seven Entries of "should detect drift on changes to the static fields"."""
    launched_from = hashes.nodepool_hash_annotations(static_pool())
    assert drift(static_pool(), annotations=launched_from) is None
    assert drift(static_pool(change), annotations=launched_from) == NODEPOOL_DRIFTED


def test_a_nodeclaim_without_the_hash_is_not_statically_drifted() -> None:
    """It "should not return drifted if karpenter.sh/nodepool-hash annotation is not
    present on the NodeClaim"."""
    changed = static_pool({"spec": {"expireAfter": "100m"}})
    only_version = {hashes.NODEPOOL_HASH_VERSION: hashes.NODEPOOL_HASH_VERSION_VALUE}
    assert drift(changed, annotations=only_version) is None


def test_a_nodeclaim_of_another_hash_version_is_not_statically_drifted() -> None:
    """It "should not return drifted if the NodeClaim's karpenter.sh/nodepool-hash-version
    annotation does not match the NodePool's"."""
    other = {hashes.NODEPOOL_HASH: "test-hash-2", hashes.NODEPOOL_HASH_VERSION: "test-version-2"}
    assert drift(static_pool(), annotations=other) is None


def test_a_nodeclaim_without_the_hash_version_is_not_statically_drifted() -> None:
    """It "should not return drifted if karpenter.sh/nodepool-hash-version annotation is
    not present on the NodeClaim"."""
    assert drift(static_pool(), annotations={hashes.NODEPOOL_HASH: "test-hash-111111111"}) is None


# -- Context "Reserved Capacity" ----------------------------------------------------------

RESERVED_LABELS = {**CLAIM_LABELS, CT: "reserved",
                   "karpenter.k8s.aws/capacity-reservation-id": "cr-0123456789abcdef0"}


@pytest.mark.parametrize(("drifted", "capacity_types"), [
    (False, ("reserved", "on-demand")),
    (False, ("reserved",)),
    (False, ("on-demand",)),
    (True, ("spot",)),
    (True, ()),
], ids=[
    "shouldn't drift when a matching instance type exists with reserved and on-demand "
    "offerings",
    "shouldn't drift when a matching instance type exists with reserved offerings",
    "shouldn't drift when a matching instance type exists with on-demand offerings",
    "should drift when a matching instance type exists but the only offering is spot",
    "should drift when a matching instance type exists but there are no compatible "
    "offerings",
])
def test_a_reserved_nodeclaim_drifts_only_without_reserved_or_on_demand_offerings(
        drifted: bool, capacity_types: tuple[str, ...]) -> None:
    """The five Entries of Context "Reserved Capacity", DescribeTable
    "InstanceTypeNotFound" (the reservation's own id is the provider's to judge)."""
    (m5,) = [it for it in catalog() if it.name == TYPE]
    base = next(o for o in m5.offerings if o.zone == "us-east-1a")
    offerings = [dataclasses.replace(base, capacity_type=ct,
                                     reservation_id="cr-other" if ct == "reserved" else None)
                 for ct in capacity_types]
    found = drift(pool(), RESERVED_LABELS, types=_with_offerings(offerings),
                  created=LONG_AGO)
    assert (found == INSTANCE_TYPE_NOT_FOUND) is drifted
