"""NodeOverlays (NodeOverlay gate), ported from Karpenter's nodeoverlay suites: prices set
or adjusted and extended resources added per requirement selector and weight, conflicts
and invalid overlays reported in their status, and the NodeClaims they shaped annotated."""

from __future__ import annotations

from typing import Any

import pytest

from nodewright.cluster import objects
from nodewright.cluster.api import ApiError
from nodewright.controllers.options import ControllerOptions
from nodewright.scheduling.overlays import adjusted_price
from tests.harness import NODE_CLASS, World, node_pool
from tests.static.helpers import workload

POOL = node_pool(types=["m5.large", "c5.large"])


def overlay(name: str, *, types: list[str], weight: int | None = None,
            **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "karpenter.sh/v1alpha1", "kind": "NodeOverlay",
        "metadata": {"name": name},
        "spec": {"requirements": [{"key": "node.kubernetes.io/instance-type",
                                   "operator": "In", "values": types}], **spec},
    }
    if weight is not None:
        body["spec"]["weight"] = weight
    return body


def _world(*overlays: dict[str, Any], gate: bool = True) -> World:
    world = World(options=ControllerOptions(node_overlay=gate))
    world.apply(NODE_CLASS, POOL, *overlays)
    return world


def _conditions(world: World, name: str) -> dict[str, tuple[str, str]]:
    body = world.cluster.get("NodeOverlay", name)
    return {c["type"]: (c["status"], c.get("reason") or "")
            for c in (body.get("status") or {}).get("conditions") or []}


def test_without_an_overlay_the_cheaper_c5_large_is_launched() -> None:
    world = _world()
    world.apply(workload("app", 1, "1"))
    assert world.settle()
    assert world.instance_types() == ["c5.large"]


def test_a_price_adjustment_makes_the_m5_large_the_cheaper_choice() -> None:
    world = _world(overlay("pricier-c5", types=["c5.large"], priceAdjustment="+50%"))
    world.apply(workload("app", 1, "1"))
    assert world.settle()
    assert world.instance_types() == ["m5.large"]
    assert _conditions(world, "pricier-c5") == {
        "ValidationSucceeded": ("True", "ValidationSucceeded"), "Ready": ("True", "Ready")}


def test_a_nodeclaim_whose_types_were_repriced_says_so() -> None:
    world = _world(overlay("discount-m5", types=["m5.large"], price="0.01"))
    world.apply(workload("app", 1, "1"))
    assert world.settle()
    assert world.instance_types() == ["m5.large"]
    (claim,) = world.nodeclaims()
    assert objects.annotations(claim)["karpenter.sh/price-overlay-applied"] == "true"
    assert "karpenter.sh/capacity-overlay-applied" not in objects.annotations(claim)


def test_the_heavier_overlay_wins_a_price() -> None:
    world = _world(
        overlay("cheap-m5", types=["m5.large"], price="0.01", weight=10),
        overlay("dear-m5", types=["m5.large"], price="5", weight=20),
    )
    world.apply(workload("app", 1, "1"))
    assert world.settle()
    assert world.instance_types() == ["c5.large"]  # m5.large costs 5 (weight 20)
    assert _conditions(world, "cheap-m5")["ValidationSucceeded"][0] == "True"


def test_equal_weights_on_the_same_price_conflict() -> None:
    world = _world(
        overlay("a", types=["m5.large"], price="0.01", weight=10),
        overlay("b", types=["m5.large"], price="0.02", weight=10),
    )
    assert world.settle()
    # Equal weights: "b" comes first (later in the alphabet) and applies; "a" conflicts.
    assert _conditions(world, "b")["Ready"][0] == "True"
    assert _conditions(world, "a")["ValidationSucceeded"] == ("False", "Conflict")
    assert _conditions(world, "a")["Ready"][0] == "False"
    world.apply(workload("app", 1, "1"))
    assert world.settle()
    assert world.instance_types() == ["m5.large"]  # at b's 0.02


def test_capacity_adds_an_extended_resource_pods_can_request() -> None:
    world = _world(overlay("slices", types=["m5.large"],
                           capacity={"example.com/slices": "4"}))
    app = workload("app", 2, "500m")
    app["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"][
        "example.com/slices"] = "2"
    world.apply(app)
    # The pods wait for the device plugin that advertises the resource on the node (the
    # simulator has none), but the NodeClaim the overlay made possible launches.
    assert world.run_until(lambda: bool(world.live_instances()), timeout=600)
    assert world.instance_types() == ["m5.large"]
    (claim,) = world.nodeclaims()
    assert objects.annotations(claim)["karpenter.sh/capacity-overlay-applied"] == "true"
    assert claim["spec"]["resources"]["requests"]["example.com/slices"] == "4"
    # As Karpenter's provider reads the launched type from the overlaid list (AWS
    # pkg/cloudprovider/cloudprovider.go Create), the NodeClaim's status has the slices.
    assert world.run_until(lambda: "capacity" in (world.nodeclaims()[0].get("status") or {}),
                           timeout=60)
    status = world.nodeclaims()[0]["status"]
    assert status["capacity"]["example.com/slices"] == "4"
    assert status["allocatable"]["example.com/slices"] == "4"


def test_an_overlay_with_a_key_too_long_fails_runtime_validation() -> None:
    # The CRD's pattern takes the key; Karpenter's RuntimeValidate (IsQualifiedName) does not.
    bad = overlay("bad", types=["m5.large"], price="0.01")
    bad["spec"]["requirements"].append(
        {"key": f"example.com/{'x' * 64}", "operator": "Exists"})
    world = _world(bad)
    world.apply(workload("app", 1, "1"))
    assert world.settle()
    status, reason = _conditions(world, "bad")["ValidationSucceeded"]
    assert (status, reason) == ("False", "RuntimeValidation")
    assert world.instance_types() == ["c5.large"]  # not applied


def test_without_the_gate_overlays_change_nothing() -> None:
    world = _world(overlay("pricier-c5", types=["c5.large"], priceAdjustment="+50%"),
                   gate=False)
    world.apply(workload("app", 1, "1"))
    assert world.settle()
    assert world.instance_types() == ["c5.large"]


@pytest.mark.parametrize(("spec", "message"), [
    ({"price": "1", "priceAdjustment": "+1"}, "cannot set both 'price' and 'priceAdjustment'"),
    ({"capacity": {"cpu": "4"}}, "invalid resource restricted"),
    ({"priceAdjustment": "-150%"}, "priceAdjustment"),
    ({"weight": 0}, "weight"),
    ({"requirements": [{"key": "karpenter.k8s.aws/nonsense", "operator": "Exists"}]},
     'label domain "karpenter.k8s.aws" is restricted'),
])
def test_the_api_server_refuses_what_karpenters_crd_refuses(
        spec: dict[str, Any], message: str) -> None:
    world = World()
    with pytest.raises(ApiError, match=message):
        world.cluster.create(overlay("x", types=["m5.large"], **spec))


@pytest.mark.parametrize(("price", "change", "expected"), [
    (1.0, "", 1.0), (1.0, "0.5", 0.5), (1.0, "+0.25", 1.25), (1.0, "-0.25", 0.75),
    (1.0, "+10%", 1.1), (1.0, "-15%", 0.85), (1.0, "-100%", 0.0), (0.1, "-1", 0.0),
])
def test_adjusted_price(price: float, change: str, expected: float) -> None:
    assert adjusted_price(price, change) == pytest.approx(expected)


def test_validate_reports_karpenters_runtime_rules() -> None:
    from nodewright.api.manifests import Document
    from nodewright.api.validation import parse_document

    body = overlay("bad", types=["m5.large"], price="1", priceAdjustment="+1",
                   capacity={"memory": "1Gi"})
    body["spec"]["requirements"].append({"key": "karpenter.k8s.aws/nonsense",
                                         "operator": "Exists"})
    model, problems = parse_document(Document("o.yaml", 1, body))
    found = {(p.path, p.message) for p in problems}
    assert model is None
    assert ("spec.priceAdjustment", "cannot set both 'price' and 'priceAdjustment'") in found
    assert ("spec.capacity.memory", "invalid capacity: memory in resource, restricted") in found
    assert any(p == "spec.requirements[1].key" and "restricted" in m for p, m in found)
    wrong = {**overlay("x", types=["m5.large"]), "apiVersion": "karpenter.sh/v1"}
    _, refused = parse_document(Document("o.yaml", 1, wrong))
    assert "NodeOverlay is karpenter.sh/v1alpha1" in refused[0].message
