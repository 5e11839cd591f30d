"""NodeOverlay prices at launch: the fleet's override priorities and allocation strategies.

Ported from karpenter-provider-aws v1.14.1 pkg/providers/instance/suite_test.go (the two
NodeOverlay Its; their two defaults are in tests/aws/test_instance_karpenter.py) and the
getOverrides / CreateFleetInputBuilder behaviour they rest on (instance.go, types.go):
every override carries Priority, its offering's price as the NodeClaim's NodePool sees it
through the overlays; a NodeClaim annotated karpenter.sh/price-overlay-applied asks EC2 to
follow the priorities (on-demand prioritized, spot capacity-optimized-prioritized).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from nodewright.api.nodeclaim import NodeClaim
from nodewright.api.nodeoverlay import NodeOverlay
from nodewright.api.nodepool import NodePool
from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.provider import AwsCloudProvider
from nodewright.cloud.provider import CloudProviderError
from nodewright.cluster.memory import InMemoryCluster
from nodewright.controllers.options import ControllerOptions
from nodewright.controllers.registry import build_controllers
from nodewright.runtime import VirtualClock
from nodewright.scheduling.overlays import OverlayStore, build_store
from tests.aws.fake_ec2 import FakeEC2
from tests.aws.provisioning_loop import publish_accelerated_images
from tests.aws.test_instance_karpenter import claim
from tests.aws.world import CLUSTER, FakeClock, node_class

PRICE_OVERLAY_APPLIED = "karpenter.sh/price-overlay-applied"


def annotated(built: NodeClaim) -> NodeClaim:
    """The NodeClaim as the provisioner writes it when overlay prices chose its types."""
    manifest = built.to_manifest()
    manifest["metadata"]["annotations"] = {PRICE_OVERLAY_APPLIED: "true"}
    return NodeClaim.model_validate(manifest)


def overlay(name: str, types: list[str], **spec: Any) -> NodeOverlay:
    return NodeOverlay.model_validate({
        "apiVersion": "karpenter.sh/v1alpha1", "kind": "NodeOverlay",
        "metadata": {"name": name},
        "spec": {"requirements": [{"key": "node.kubernetes.io/instance-type",
                                   "operator": "In", "values": types}], **spec}})


def default_pool() -> NodePool:
    return NodePool.model_validate({
        "apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "default"},
        "spec": {"template": {"spec": {"nodeClassRef": {
            "group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}}}}})


def store_for(provider: AwsCloudProvider, *overlays: NodeOverlay) -> OverlayStore:
    """The nodeoverlay controller's store for the NodePool "default" of the world's node
    class (the suite's NodeClaims belong to it)."""
    store, conflicting = build_store(
        overlays, {"default": (default_pool(), provider.get_instance_types(node_class()))})
    assert conflicting == []
    return store


def priorities(ec2: FakeEC2) -> dict[tuple[str, str], float | None]:
    return {(o.instance_type, o.zone): o.priority for o in ec2.overrides()}


def test_an_on_demand_nodeclaim_priced_by_an_overlay_uses_prioritized(
    provider: AwsCloudProvider, ec2: FakeEC2
) -> None:
    """It("should use priotiztied allocation stragaty for an on-demand nodeclaim using
    nodeoverlay pricing")"""
    provider.create(annotated(claim(["m5.large"], ["on-demand"])), node_class())

    request = ec2.last("CreateFleet")
    assert request["OnDemandOptions"] == {"AllocationStrategy": "prioritized"}
    assert "SpotOptions" not in request


def test_a_spot_nodeclaim_priced_by_an_overlay_uses_capacity_optimized_prioritized(
    provider: AwsCloudProvider, ec2: FakeEC2
) -> None:
    """It("should use capacity optimized prioritized allocation stragaty for an spot
    nodeclaim using nodeoverlay")"""
    provider.create(annotated(claim(["m5.large"], ["spot"])), node_class())

    request = ec2.last("CreateFleet")
    assert request["SpotOptions"] == {"AllocationStrategy": "capacity-optimized-prioritized"}
    assert "OnDemandOptions" not in request


def test_every_override_is_prioritized_by_its_offerings_price(
    provider: AwsCloudProvider, ec2: FakeEC2
) -> None:
    """getOverrides: Priority is the offering's price on every override, overlays or not
    (EC2 reads it only under the prioritized strategies)."""
    provider.create(claim(["m5.large", "c5.large"], ["on-demand"]), node_class())

    prices = {(t.name, o.zone): o.price for t in provider.get_instance_types(node_class())
              for o in t.offerings if o.capacity_type == "on-demand"}
    sent = priorities(ec2)
    assert sent and sent == {key: prices[key] for key in sent}
    assert {name for name, _ in sent} == {"m5.large", "c5.large"}


def test_an_overlay_price_becomes_the_priority_of_its_offerings(
    provider: AwsCloudProvider, ec2: FakeEC2
) -> None:
    """A NodeClaim of a NodePool an overlay reprices launches with the overlay's price as
    the priority of the offerings it selects (Karpenter's CloudProvider.Create applies the
    InstanceTypeStore before the instance provider builds the overrides)."""
    store = store_for(provider, overlay("cheap-c5", ["c5.large"], price="0.001"))
    provider.use_overlays(lambda: store)

    provider.create(annotated(claim(["m5.large", "c5.large"], ["on-demand"])), node_class())

    sent = priorities(ec2)
    assert {p for (name, _), p in sent.items() if name == "c5.large"} == {0.001}
    assert all(p is not None and p > 0.001 for (name, _), p in sent.items()
               if name == "m5.large")
    assert ec2.last("CreateFleet")["OnDemandOptions"] == {"AllocationStrategy": "prioritized"}


def test_a_nodepool_the_overlays_have_not_evaluated_launches_nothing(
    provider: AwsCloudProvider, ec2: FakeEC2
) -> None:
    """InstanceTypeStore.ApplyAll: a NodePool not evaluated yet is an error (retried), not a
    launch at prices the overlays may be about to change."""
    provider.use_overlays(lambda: OverlayStore())

    with pytest.raises(CloudProviderError, match="awaiting nodeoverlay evaluation"):
        provider.create(claim(["m5.large"], ["on-demand"]), node_class())
    assert ec2.calls("CreateFleet") == []


def test_the_gate_hands_the_overlay_store_to_the_provider(
    provider: AwsCloudProvider, ec2: FakeEC2
) -> None:
    """With the NodeOverlay gate on, the controllers' store is what launches read; with it
    off, the provider launches at the cloud's prices."""
    clock = VirtualClock()
    controllers = build_controllers(InMemoryCluster(clock), provider, clock,
                                    ControllerOptions(node_overlay=True))
    controllers.state.overlay_store = store_for(
        provider, overlay("cheap-m5", ["m5.large"], price="0.002"))

    provider.create(claim(["m5.large"], ["on-demand"]), node_class())

    assert set(priorities(ec2).values()) == {0.002}


def test_without_the_gate_the_provider_ignores_overlays(
    provider: AwsCloudProvider, ec2: FakeEC2
) -> None:
    clock = VirtualClock()
    controllers = build_controllers(InMemoryCluster(clock), provider, clock,
                                    ControllerOptions(node_overlay=False))
    controllers.state.overlay_store = store_for(
        provider, overlay("cheap-m5", ["m5.large"], price="0.002"))

    provider.create(claim(["m5.large"], ["on-demand"]), node_class())

    assert 0.002 not in set(priorities(ec2).values())



def test_an_overlay_prices_an_unpriced_preview_type_at_launch(
    provider: AwsCloudProvider, clients: AwsClients, ec2: FakeEC2
) -> None:
    """Context("NodeOverlay Preview Instance Pricing") It("should mark offerings as available
    when a NodeOverlay defines a price for an unpriced instance type"), its intent: the
    preview type (p5e.48xlarge, which moto describes and no price list here knows) is
    launchable at the overlay's price. With offline prices (this provider's) an unpriced
    type's offerings stay available at an estimated price (docs/pricing.md); with the
    overlay the NodePool's NodeClaims launch it with the overlay's price as its fleet
    priority. With prices from AWS it is unavailable until an overlay prices it: see the
    gate test below and tests/scheduling/test_unpriced_offerings.py."""

    publish_accelerated_images(clients)  # it has GPUs: it boots the NVIDIA image
    (preview,) = [it for it in provider.get_instance_types(node_class())
                  if it.name == "p5e.48xlarge"]
    on_demand = [o for o in preview.offerings if o.capacity_type == "on-demand"]
    assert on_demand and all(o.available and o.price_estimated for o in on_demand)
    store = store_for(provider, overlay("preview-price", ["p5e.48xlarge"], price="98.32"))
    provider.use_overlays(lambda: store)

    provider.create(annotated(claim(["p5e.48xlarge"], ["on-demand"])), node_class())

    assert {o.instance_type for o in ec2.overrides()} == {"p5e.48xlarge"}
    assert set(priorities(ec2).values()) == {98.32}


@pytest.mark.parametrize("gate", [True, False])
def test_an_unpriced_preview_type_launches_only_through_an_overlay_with_the_gate_on(
    clients: AwsClients, world: object, clock: FakeClock, ec2: FakeEC2, gate: bool
) -> None:
    """Context("NodeOverlay Preview Instance Pricing") It("should not mark offerings as
    available when NodeOverlay feature gate is disabled"), beside its gate-on sibling: with
    prices read from AWS (no price list knows p5e.48xlarge, so its offerings are unpriced and
    unavailable), a NodeOverlay pricing it makes it launchable only when the NodeOverlay gate
    hands the overlay store to the provider."""
    publish_accelerated_images(clients)  # it has GPUs: it boots the NVIDIA image
    ec2.respond("DescribeSpotPriceHistory", {"SpotPriceHistory": [{
        "AvailabilityZone": "us-west-2a", "InstanceType": "m5.large", "SpotPrice": "0.04",
        "Timestamp": datetime.now(UTC)}]})  # moto would price every type
    live = AwsCloudProvider(clients, CLUSTER, clock=clock)
    (preview,) = [it for it in live.get_instance_types(node_class())
                  if it.name == "p5e.48xlarge"]
    assert not any(o.available for o in preview.offerings)
    virtual = VirtualClock()
    controllers = build_controllers(InMemoryCluster(virtual), live, virtual,
                                    ControllerOptions(node_overlay=gate))
    controllers.state.overlay_store = store_for(
        live, overlay("preview-price", ["p5e.48xlarge"], price="98.32"))
    launch = annotated(claim(["p5e.48xlarge"], ["on-demand"]))

    if gate:
        live.create(launch, node_class())
        assert {o.instance_type for o in ec2.overrides()} == {"p5e.48xlarge"}
    else:
        with pytest.raises(CloudProviderError):
            live.create(launch, node_class())
        assert ec2.calls("CreateFleet") == []
