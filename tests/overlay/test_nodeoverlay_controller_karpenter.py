"""Karpenter's NodeOverlay controller suite, ported: kubernetes-sigs/karpenter v1.14.1
pkg/controllers/nodeoverlay/suite_test.go. Each story names its Describe/Context and It,
or its DescribeTable and Entry.

As in Karpenter, the controller reconciles once against an API server and a fake cloud
(tests/overlay/karpenter_fixture.py), and the stories read the overlays' statuses and
what the store makes of the NodePools' instance types (Karpenter's store.ApplyAll is our
OverlayStore.apply; its UnevaluatedNodePoolError is our None). Karpenter's BeforeEach:
one NodePool and one instance type, default-instance-type, with a single spot offering in
test-zone-1 at 1.020.
"""

from __future__ import annotations

from typing import Any

import pytest

from nodewright.controllers.nodeoverlay.controller import UnevaluatedNodePools
from tests.overlay.karpenter_fixture import (
    ARCH,
    CAPACITY_TYPE,
    GI,
    INSTANCE_TYPE,
    NODEPOOL,
    OS,
    ZONE,
    Env,
    instance_type,
    nodepool,
    offering,
    overlay,
    price_overlaid,
    prices_in,
)

# A key Karpenter's runtime validation refuses (its name part is far over 63 characters).
INVALID_KEY = "test.com.test/test-" + "a1b2c3d4e5" * 25
FUSE = "smarter-devices/fuse"


@pytest.fixture
def env() -> Env:
    world = Env()
    world.cloud.instance_types = [instance_type(
        "default-instance-type", offering("spot", "test-zone-1", 1.020))]
    world.apply(nodepool())
    return world


def four_offerings() -> list[Any]:
    """The instance type of Describe("Offering Requirements")' BeforeEach."""
    return [instance_type("default-instance-type",
                          offering("spot", "test-zone-1", 1.020),
                          offering("on-demand", "test-zone-2", 2.020),
                          offering("spot", "test-zone-3", 3.020),
                          offering("reserved", "test-zone-4", 4.020))]


def three_offerings() -> list[Any]:
    return [instance_type("default-instance-type",
                          offering("spot", "test-zone-1", 1.020),
                          offering("on-demand", "test-zone-2", 2.020),
                          offering("reserved", "test-zone-4", 4.020))]


def zoned_types() -> list[Any]:
    return [instance_type("default-instance-type-zone-one",
                          offering("spot", "test-zone-1", 1.020)),
            instance_type("default-instance-type-zone-two",
                          offering("on-demand", "test-zone-2", 2.020)),
            instance_type("default-instance-type-zone-four",
                          offering("reserved", "test-zone-4", 4.020))]


PRICE = "price"
ADJUSTMENT = "priceAdjustment"


def entry(kind: str, value: str) -> dict[str, str]:
    return {kind: value}


# == Describe("Validation") ================================================================


def test_no_overlay_leaves_the_instance_types_alone(env: Env) -> None:
    """It("should return the same instance type when zero overlay are applied")."""
    env.reconcile()
    it = env.one()
    assert [o.price for o in it.offerings] == [1.020]


def test_a_single_overlay_passes_validation(env: Env) -> None:
    """It("should pass with a single overlay")."""
    env.apply(overlay("single", (INSTANCE_TYPE, "In", ["default-instance-type"])))
    env.reconcile()
    assert env.condition("single") == ("True", "ValidationSucceeded")


def test_an_invalid_requirement_key_fails_runtime_validation(env: Env) -> None:
    """Context("Runtime Validation") It("should fail validation for invalid requirements
    values")."""
    env.apply(overlay("invalid", (INVALID_KEY, "Exists", [])))
    env.reconcile()
    assert env.condition("invalid") == ("False", "RuntimeValidation")


def test_a_restricted_capacity_fails_runtime_validation(
        env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    """Context("Runtime Validation") It("should fail validation for invalid capacity
    values"). Karpenter adds testResource to its well-known resources for the test (the
    CRD refuses the real ones at admission); so does this one."""
    from nodewright.api import rules
    monkeypatch.setattr(rules, "RESTRICTED_CAPACITY", (*rules.RESTRICTED_CAPACITY,
                                                       "testResource"))
    env.apply(overlay("restricted", (INSTANCE_TYPE, "In", ["default-instance-type"]),
                      capacity={"testResource": "5"}))
    env.reconcile()
    assert env.condition("restricted") == ("False", "RuntimeValidation")


# -- Context("Requirements Validations") Describe("Instance types Requirements") ------------


def test_overlays_whose_requirements_overlap_conflict(env: Env) -> None:
    """Describe("Instance types Requirements") It("should fail when requirements overlays
    overlap"): Karpenter's default fake instance types (cloudProvider.Reset())."""
    env.cloud.instance_types = None
    env.apply(overlay("overlay-a", (ARCH, "In", ["arm64"]), price="1.03"),
              overlay("overlay-b", (CAPACITY_TYPE, "Exists", []), price="23"))
    env.reconcile()
    assert env.condition("overlay-a") == ("False", "Conflict")
    assert env.condition("overlay-b")[0] == "True"


def test_overlays_whose_requirements_do_not_overlap_pass(env: Env) -> None:
    """Describe("Instance types Requirements") It("should succeed with requirements
    overlays don't overlap")."""
    env.cloud.instance_types = [instance_type("arm-instance-type", arch="arm64"),
                                instance_type("amd-instance-type", os="ios")]
    env.apply(overlay("overlay-a", (ARCH, "In", ["arm64"]), price="1.03"),
              overlay("overlay-b", (OS, "In", ["ios"]), price="23"))
    env.reconcile()
    assert env.condition("overlay-a")[0] == "True"
    assert env.condition("overlay-b")[0] == "True"


# -- Describe("Offering Requirements") -----------------------------------------------------

OFFERING_CASES = [
    ("should fail with requirements overlays overlap on zone",
     (ZONE, "In", ["test-zone-1", "test-zone-4"]), (CAPACITY_TYPE, "Exists", []), True),
    ("should fail with requirements overlays overlap on capacity type",
     (CAPACITY_TYPE, "Exists", []), (CAPACITY_TYPE, "In", ["spot"]), True),
    ("should succeed with requirements overlays don't overlap",
     (ZONE, "In", ["test-zone-6", "test-zone-4"]), (CAPACITY_TYPE, "In", ["spot"]), False),
    ("should fail with requirements overlays overlap",
     (ZONE, "In", ["test-zone-1", "test-zone-4"]), (CAPACITY_TYPE, "In", ["spot"]), True),
]


@pytest.mark.parametrize(("it", "a", "b", "conflict"), OFFERING_CASES,
                         ids=[case[0] for case in OFFERING_CASES])
def test_offering_requirements(env: Env, it: str, a: Any, b: Any, conflict: bool) -> None:
    """Describe("Offering Requirements"), each It by its text: overlays of one weight
    pricing the same offering conflict; the later by name order (overlay-a) loses."""
    env.cloud.instance_types = four_offerings()
    env.apply(overlay("overlay-a", a, price="1.03"), overlay("overlay-b", b, price="23"))
    env.reconcile()
    assert env.condition("overlay-a") == (
        ("False", "Conflict") if conflict else ("True", "ValidationSucceeded"))
    assert env.condition("overlay-b")[0] == "True"


# -- Context("Pricing Updates") ------------------------------------------------------------

PRICING_TABLES = [
    ("should fail with conflicting pricing updates overlays with overlapping requirements",
     (["default-instance-type", "small-instance-type"], "In", 10),
     (["default-instance-type", "gpu-vendor-instance-type"], "In", 10),
     {"Price": ("1.03", "23"), "PriceAdjustment": ("+54", "-2")}, True),
    ("should fail with pricing updates are the same overlays with overlapping requirements",
     (["default-instance-type", "small-instance-type"], "In", 10),
     (["default-instance-type", "gpu-vendor-instance-type"], "In", 10),
     {"Price": ("100", "100"), "PriceAdjustment": ("+100", "+100")}, True),
    ("should pass with conflicting pricing updates overlays with mutually exclusive "
     "requirements",
     (["default-instance-type"], "In", 10), (["default-instance-type"], "NotIn", 10),
     {"Price": ("54", "23"), "PriceAdjustment": ("+54", "-2")}, False),
    ("should pass with conflicting pricing update overlays with mutually exclusive weights",
     (["default-instance-type"], "In", 10),
     (["default-instance-type", "gpu-vendor-instance-type"], "In", 20),
     {"Price": ("34", "2"), "PriceAdjustment": ("-4", "-2")}, False),
]
PRICING_CASES = [(table, a, b, kind, values, conflict)
                 for table, a, b, entries, conflict in PRICING_TABLES
                 for kind, values in entries.items()]


@pytest.mark.parametrize(("table", "a", "b", "kind", "values", "conflict"), PRICING_CASES,
                         ids=[f"{c[0]} / {c[3]}" for c in PRICING_CASES])
def test_pricing_updates(env: Env, table: str, a: Any, b: Any, kind: str,
                         values: tuple[str, str], conflict: bool) -> None:
    """Context("Pricing Updates"), each DescribeTable by its text and each Entry ("Price",
    "PriceAdjustment")."""
    field = PRICE if kind == "Price" else ADJUSTMENT
    (types_a, op_a, weight_a), (types_b, op_b, weight_b) = a, b
    env.apply(overlay("overlay-a", (INSTANCE_TYPE, op_a, types_a), weight=weight_a,
                      **entry(field, values[0])),
              overlay("overlay-b", (INSTANCE_TYPE, op_b, types_b), weight=weight_b,
                      **entry(field, values[1])))
    env.reconcile()
    assert env.condition("overlay-a") == (
        ("False", "Conflict") if conflict else ("True", "ValidationSucceeded"))
    assert env.condition("overlay-b")[0] == "True"


# -- Context("Capacity Adjustment") ---------------------------------------------------------

CAPACITY_CASES = [
    ("should fail with conflicting capacity overlays with overlapping requirements",
     [("overlay-a", ["default-instance-type", "small-instance-type"], 10, {FUSE: "1"}),
      ("overlay-b", ["default-instance-type", "gpu-vendor-instance-type"], 10, {FUSE: "54"})],
     {"overlay-a": False, "overlay-b": True}),
    ("should fail with conflicting capacity overlays with multiple overlays",
     [("conflicting-overlay-1", ["default-instance-type", "small-instance-type"], 10,
       {"hugepage-1Gi": "2Gi"}),
      ("good-overlay-1", ["default-instance-type"], 10, {FUSE: "1"}),
      ("conflicting-overlay-2", ["default-instance-type"], 10, {"hugepage-1Gi": "3Gi"})],
     {"conflicting-overlay-1": False, "good-overlay-1": True, "conflicting-overlay-2": True}),
    ("should pass with capacity adjustment are the same overlays with overlapping "
     "requirements",  # Karpenter's title says pass; its body expects overlay-a's Conflict
     [("overlay-a", ["default-instance-type", "small-instance-type"], 10, {FUSE: "54"}),
      ("overlay-b", ["default-instance-type", "gpu-vendor-instance-type"], 10, {FUSE: "54"})],
     {"overlay-a": False, "overlay-b": True}),
    ("should pass with conflicting capacity overlays with mutually exclusive weights",
     [("overlay-a", ["default-instance-type"], 10, {FUSE: "55"}),
      ("overlay-b", ["default-instance-type", "gpu-vendor-instance-type"], 20, {FUSE: "5"})],
     {"overlay-a": True, "overlay-b": True}),
    ("should pass with non conflicting capacity overlays with overlapping requirements",
     [("overlay-a", ["default-instance-type"], 10, {FUSE: "55"}),
      ("overlay-b", ["default-instance-type", "gpu-vendor-instance-type"], 20,
       {"smarter-devices/buz": "5"})],
     {"overlay-a": True, "overlay-b": True}),
]


@pytest.mark.parametrize(("it", "overlays", "valid"), CAPACITY_CASES,
                         ids=[case[0] for case in CAPACITY_CASES])
def test_capacity_adjustment(env: Env, it: str, overlays: list[Any],
                             valid: dict[str, bool]) -> None:
    """Context("Capacity Adjustment"), each It by its text (but the one below)."""
    env.apply(*(overlay(name, (INSTANCE_TYPE, "In", types), weight=weight, capacity=capacity)
                for name, types, weight, capacity in overlays))
    env.reconcile()
    for name, ok in valid.items():
        assert env.condition(name) == (
            ("True", "ValidationSucceeded") if ok else ("False", "Conflict")), name


def test_capacity_overlays_with_exclusive_requirements_pass(env: Env) -> None:
    """Context("Capacity Adjustment") It("should pass with conflicting capacity overlays
    with mutually exclusive requirements")."""
    env.apply(overlay("overlay-a", (INSTANCE_TYPE, "In", ["default-instance-type"]),
                      capacity={FUSE: "54"}),
              overlay("overlay-b", (INSTANCE_TYPE, "NotIn", ["default-instance-type"]),
                      capacity={FUSE: "5"}))
    env.reconcile()
    assert env.condition("overlay-a")[0] == "True"
    assert env.condition("overlay-b")[0] == "True"


# == Describe("Instance Type Controller") Context("Price Updates") =========================

PRICE_ENTRIES = {"Price": (PRICE, "13234.223", 13234.223),
                 "PriceAdjustment": (ADJUSTMENT, "+1000", 1001.020)}


@pytest.mark.parametrize("name", list(PRICE_ENTRIES))
def test_a_price_for_one_nodepool(env: Env, name: str) -> None:
    """Context("Requirements") DescribeTable("should pass with conflicting pricing update
    overlays with mutually exclusive weights"), Entry(name): an overlay selecting a
    NodePool by karpenter.sh/nodepool prices only that NodePool's offerings."""
    field, value, expected = PRICE_ENTRIES[name]
    env.apply(nodepool("two"), overlay("by-pool", (NODEPOOL, "In", ["default"]),
                                       **entry(field, value)))
    env.reconcile()
    assert [o.price for o in env.one().offerings] == pytest.approx([expected])
    assert [o.price for o in env.one("two").offerings] == [1.020]


@pytest.mark.parametrize(("name", "a", "b", "one", "two"), [
    ("Price", "13234.223", "232.11", 13234.223, 232.11),
    ("PriceAdjustment", "+1000", "+2500", 1001.020, 2501.020)])
def test_a_price_for_each_nodepool(env: Env, name: str, a: str, b: str, one: float,
                                   two: float) -> None:
    """Context("Requirements") DescribeTable("should pass with conflicting pricing update
    overlays for all nodepools"), Entry(name)."""
    field = PRICE if name == "Price" else ADJUSTMENT
    env.apply(nodepool("two"),
              overlay("for-default", (NODEPOOL, "In", ["default"]), **entry(field, a)),
              overlay("for-two", (NODEPOOL, "In", ["two"]), **entry(field, b)))
    env.reconcile()
    assert [o.price for o in env.one().offerings] == pytest.approx([one])
    assert [o.price for o in env.one("two").offerings] == pytest.approx([two])


@pytest.mark.parametrize("name", list(PRICE_ENTRIES))
def test_a_price_for_nodepools_with_a_template_label(env: Env, name: str) -> None:
    """Context("Requirements") DescribeTable("should only apply pricing updates for
    nodeclaim spec labels that defined in the overlay requirements"), Entry(name)."""
    field, value, expected = PRICE_ENTRIES[name]
    env.apply(nodepool("two", labels={"test-label": "test-value"}),
              overlay("labelled", ("test-label", "In", ["test-value"]),
                      **entry(field, value)))
    env.reconcile()
    assert [o.price for o in env.one().offerings] == [1.020]
    assert [o.price for o in env.one("two").offerings] == pytest.approx([expected])


@pytest.mark.parametrize("name", list(PRICE_ENTRIES))
def test_an_invalid_overlay_prices_nothing(env: Env, name: str) -> None:
    """DescribeTable("should not apply pricing updates for invalid overlays"),
    Entry(name)."""
    field, value, _ = PRICE_ENTRIES[name]
    env.apply(overlay("invalid", (INVALID_KEY, "Exists", []), **entry(field, value)))
    env.reconcile()
    assert env.condition("invalid")[0] == "False"
    assert [o.price for o in env.one().offerings] == [1.020]


@pytest.mark.parametrize("name", list(PRICE_ENTRIES))
def test_an_overlay_selecting_no_type_prices_nothing(env: Env, name: str) -> None:
    """DescribeTable("should not apply adjustments for overlays that do not overlap with
    instance types requirements"), Entry(name)."""
    field, value, _ = PRICE_ENTRIES[name]
    env.apply(overlay("elsewhere", (INSTANCE_TYPE, "In", ["default-instance-type-not-found"]),
                      **entry(field, value)))
    env.reconcile()
    assert [o.price for o in env.one().offerings] == [1.020]


@pytest.mark.parametrize("name", list(PRICE_ENTRIES))
def test_an_overlay_prices_its_instance_type(env: Env, name: str) -> None:
    """DescribeTable("should apply pricing updates for instances types"), Entry(name)."""
    field, value, expected = PRICE_ENTRIES[name]
    env.apply(overlay("priced", (INSTANCE_TYPE, "In", ["default-instance-type"]),
                      **entry(field, value)))
    env.reconcile()
    assert [o.price for o in env.one().offerings] == pytest.approx([expected])


@pytest.mark.parametrize(("name", "field", "value", "expected"), [
    ("Price", PRICE, "12321.32", 12321.32), ("PriceAdjustment", ADJUSTMENT, "+1000", 1005.020)])
def test_an_overlay_prices_one_capacity_type(env: Env, name: str, field: str, value: str,
                                              expected: float) -> None:
    """DescribeTable("should apply pricing updates for instances types for capacity
    type"), Entry(name)."""
    env.cloud.instance_types = [instance_type("default-instance-type",
                                              offering("spot", "test-zone-1", 1.020),
                                              offering("on-demand", "test-zone-1", 5.020))]
    env.apply(overlay("on-demand", (CAPACITY_TYPE, "In", ["on-demand"]), **entry(field, value)))
    env.reconcile()
    it = env.one()
    assert len(it.offerings) == 2
    assert prices_in(it, capacity_type="on-demand") == pytest.approx([expected])
    assert prices_in(it, capacity_type="spot") == pytest.approx([1.020])


@pytest.mark.parametrize(("name", "field", "value", "expected"), [
    ("Price", PRICE, "121.421", 121.421), ("PriceAdjustment", ADJUSTMENT, "+1000", 1001.020)])
def test_an_overlay_prices_one_zone(env: Env, name: str, field: str, value: str,
                                    expected: float) -> None:
    """DescribeTable("should apply pricing updates for instances types for availability
    zone"), Entry(name)."""
    env.cloud.instance_types = [instance_type("default-instance-type",
                                              offering("spot", "test-zone-1", 1.020),
                                              offering("spot", "test-zone-2", 5.020))]
    env.apply(overlay("zone-one", (ZONE, "In", ["test-zone-1"]), **entry(field, value)))
    env.reconcile()
    it = env.one()
    assert len(it.offerings) == 2
    assert prices_in(it, zone="test-zone-1") == pytest.approx([expected])
    assert prices_in(it, zone="test-zone-2") == pytest.approx([5.020])


@pytest.mark.parametrize(("name", "field", "a", "b", "zone2", "zone4", "spot"), [
    ("Price", PRICE, "121.421", "165.421", 121.421, 121.421, 165.421),
    ("PriceAdjustment", ADJUSTMENT, "+201", "-0.5", 203.020, 205.020, 0.52)])
def test_two_overlays_price_different_offerings(env: Env, name: str, field: str, a: str,
                                                b: str, zone2: float, zone4: float,
                                                spot: float) -> None:
    """DescribeTable("should update price updates offerings instance types from multiple
    overlays"), Entry(name)."""
    env.cloud.instance_types = three_offerings()
    env.apply(overlay("zones", (ZONE, "In", ["test-zone-2", "test-zone-4"]),
                      **entry(field, a)),
              overlay("spot", (CAPACITY_TYPE, "In", ["spot"]), **entry(field, b)))
    env.reconcile()
    it = env.one()
    assert len(it.offerings) == 3
    assert prices_in(it, zone="test-zone-2") == pytest.approx([zone2])
    assert prices_in(it, zone="test-zone-4") == pytest.approx([zone4])
    assert prices_in(it, capacity_type="spot") == pytest.approx([spot])


@pytest.mark.parametrize(("name", "field", "a", "b", "zone2", "zone4"), [
    ("Price", PRICE, "121.421", "165.421", 121.421, 165.421),
    ("PriceAdjustment", ADJUSTMENT, "+201", "-1.5", 203.020, 2.520)])
def test_the_heavier_overlay_prices_an_offering_first(env: Env, name: str, field: str,
                                                      a: str, b: str, zone2: float,
                                                      zone4: float) -> None:
    """DescribeTable("should update price updates offerings instance types from multiple
    overlays with different weights"), Entry(name)."""
    env.cloud.instance_types = three_offerings()
    env.apply(overlay("a-test-100", (ZONE, "In", ["test-zone-2"]), weight=20,
                      **entry(field, a)),
              overlay("b-test-100", (ZONE, "In", ["test-zone-2", "test-zone-4"]), weight=10,
                      **entry(field, b)))
    env.reconcile()
    it = env.one()
    assert len(it.offerings) == 3
    assert prices_in(it, zone="test-zone-2") == pytest.approx([zone2])
    assert prices_in(it, zone="test-zone-4") == pytest.approx([zone4])


PARTIAL = {"default-instance-type": False, "gpu-vendor-b-instance-type": False,
           "gpu-vendor-instance-type": True, "small-instance-type": True}


@pytest.mark.parametrize(("name", "field", "a", "b"), [
    ("Price", PRICE, "382", "100"), ("PriceAdjustment", ADJUSTMENT, "-23", "+10")])
def test_a_conflicting_price_overlay_prices_no_type_of_a_nodepool(
        env: Env, name: str, field: str, a: str, b: str) -> None:
    """DescribeTable("should not partial apply instance types in a nodepool"),
    Entry(name): overlay-a conflicts on small-instance-type, so it prices none of its
    types."""
    env.cloud.instance_types = None
    env.apply(overlay("overlay-a", (INSTANCE_TYPE, "In", [
        "default-instance-type", "small-instance-type", "gpu-vendor-b-instance-type"]),
        **entry(field, a)),
        overlay("overlay-b", (INSTANCE_TYPE, "In", [
            "small-instance-type", "gpu-vendor-instance-type"]), **entry(field, b)))
    env.reconcile()
    assert env.condition("overlay-a") == ("False", "Conflict")
    assert env.condition("overlay-b")[0] == "True"
    found = env.applied()
    assert found is not None and len(found) == 6
    assert {it.name: price_overlaid(it) for it in found if it.name in PARTIAL} == PARTIAL


@pytest.mark.parametrize(("name", "field", "a", "b"), [
    ("Price", PRICE, "382", "100"), ("PriceAdjustment", ADJUSTMENT, "+10", "-23")])
def test_a_conflicting_price_overlay_prices_no_nodepool(
        env: Env, name: str, field: str, a: str, b: str) -> None:
    """DescribeTable("should not partial apply for a subset of nodepools"), Entry(name)."""
    env.cloud.instance_types = None
    env.apply(nodepool(instance_types=["default-instance-type", "gpu-vendor-instance-type",
                                       "gpu-vendor-b-instance-type"]),
              nodepool("two", instance_types=["gpu-vendor-b-instance-type"]),
              overlay("overlay-a", (INSTANCE_TYPE, "In", [
                  "default-instance-type", "small-instance-type",
                  "gpu-vendor-b-instance-type"]), **entry(field, a)),
              overlay("overlay-b", (INSTANCE_TYPE, "In", [
                  "small-instance-type", "gpu-vendor-instance-type"]), **entry(field, b)))
    env.reconcile()
    assert env.condition("overlay-a") == ("False", "Conflict")
    assert env.condition("overlay-b")[0] == "True"
    for pool in ("default", "two"):
        found = env.applied(pool)
        assert found is not None and len(found) == 6
        assert {it.name: price_overlaid(it) for it in found if it.name in PARTIAL} == PARTIAL


# == Describe("Instance Type Controller") Context("Capacity") ==============================


def test_a_capacity_for_one_nodepool(env: Env) -> None:
    """Context("Requirements") It("should only apply override for nodepool that defined in
    the overlay requirements")."""
    env.apply(nodepool("two"), overlay("by-pool", (NODEPOOL, "In", ["default"]),
                                       capacity={FUSE: "1"}))
    env.reconcile()
    assert env.one().capacity[FUSE] == 1000
    assert len(env.one().offerings) == 1
    assert FUSE not in env.one("two").capacity


def test_a_capacity_for_each_nodepool(env: Env) -> None:
    """Context("Requirements") It("should pass with conflicting capcaity update overlays
    for all nodepools")."""
    env.apply(nodepool("two"),
              overlay("for-default", (NODEPOOL, "In", ["default"]), capacity={FUSE: "1"}),
              overlay("for-two", (NODEPOOL, "In", ["two"]), capacity={"dumb-devices/bar": "2"}))
    env.reconcile()
    assert env.one().capacity[FUSE] == 1000
    assert env.one("two").capacity["dumb-devices/bar"] == 2000


def test_a_capacity_for_nodepools_with_a_template_label(env: Env) -> None:
    """Context("Requirements") It("should only apply price adjustments for nodeclaim spec
    labels that defined in the overlay requirements") (a capacity overlay)."""
    env.apply(nodepool("two", labels={"test-label": "test-value"}),
              overlay("labelled", ("test-label", "In", ["test-value"]), capacity={FUSE: "1"}))
    env.reconcile()
    assert FUSE not in env.one().capacity
    assert env.one("two").capacity[FUSE] == 1000


def test_an_invalid_overlay_adds_no_capacity(env: Env) -> None:
    """It("should not apply capacity adjustments for invalid overlay")."""
    env.apply(overlay("invalid", (INVALID_KEY, "Exists", []), capacity={FUSE: "1"}))
    env.reconcile()
    assert FUSE not in env.one().capacity
    assert len(env.one().offerings) == 1


def test_an_overlay_selecting_no_type_adds_no_capacity(env: Env) -> None:
    """It("should not apply capacity adjustments for instances types that do not
    overlap")."""
    env.apply(overlay("elsewhere", (INSTANCE_TYPE, "In", ["default-instance-type-not-found"]),
                      capacity={FUSE: "1"}))
    env.reconcile()
    assert FUSE not in env.one().capacity


def test_an_overlay_adds_capacity_to_its_instance_type(env: Env) -> None:
    """It("should apply capacity adjustments for instances types")."""
    env.apply(overlay("fuse", (INSTANCE_TYPE, "In", ["default-instance-type"]),
                      capacity={FUSE: "1"}))
    env.reconcile()
    assert env.one().capacity[FUSE] == 1000
    assert len(env.one().offerings) == 1


def by_name(env: Env) -> dict[str, Any]:
    found = env.applied()
    assert found is not None
    return {it.name: it for it in found}


def test_two_capacity_overlays_on_different_types(env: Env) -> None:
    """It("should update capacity for instance types from multiple overlays")."""
    env.cloud.instance_types = zoned_types()
    env.apply(overlay("zones", (ZONE, "In", ["test-zone-2", "test-zone-4"]),
                      capacity={FUSE: "1"}),
              overlay("spot", (CAPACITY_TYPE, "In", ["spot"]),
                      capacity={"hugepages-1Gi": "2Gi"}))
    env.reconcile()
    types = by_name(env)
    assert len(types) == 3
    one = types["default-instance-type-zone-one"]
    assert prices_in(one) == [1.020] and one.capacity["hugepages-1Gi"] == 2 * GI
    two = types["default-instance-type-zone-two"]
    assert prices_in(two) == [2.020] and two.capacity[FUSE] == 1000
    four = types["default-instance-type-zone-four"]
    assert prices_in(four) == [4.020] and four.capacity[FUSE] == 1000


def test_two_capacity_overlays_on_one_type(env: Env) -> None:
    """It("should update capacity for one instance types from multiple overlays")."""
    env.cloud.instance_types = zoned_types()[:1]
    env.apply(overlay("fuse", (INSTANCE_TYPE, "In", ["default-instance-type-zone-one"]),
                      capacity={FUSE: "1"}),
              overlay("hugepages", (INSTANCE_TYPE, "In", ["default-instance-type-zone-one"]),
                      capacity={"hugepages-1Gi": "2Gi"}))
    env.reconcile()
    it = env.one()
    assert prices_in(it) == [1.020]
    assert it.capacity["hugepages-1Gi"] == 2 * GI
    assert it.capacity[FUSE] == 1000


def test_capacity_overlays_of_different_weights(env: Env) -> None:
    """It("should update price offerings instance types from multiple overlays with
    different weights") (capacity overlays)."""
    env.cloud.instance_types = zoned_types()
    env.apply(overlay("heavy", (ZONE, "In", ["test-zone-2"]), weight=20,
                      capacity={FUSE: "1"}),
              overlay("light", (ZONE, "In", ["test-zone-2", "test-zone-4"]), weight=10,
                      capacity={"hugepages-1Gi": "2Gi"}))
    env.reconcile()
    types = by_name(env)
    assert len(types) == 3
    two = types["default-instance-type-zone-two"]
    assert prices_in(two) == [2.020] and two.capacity[FUSE] == 1000
    four = types["default-instance-type-zone-four"]
    assert prices_in(four) == [4.020] and four.capacity["hugepages-1Gi"] == 2 * GI


def test_the_heavier_capacity_overlay_wins(env: Env) -> None:
    """It("should apply higher weight overlay when multiple overlays match the same
    instance type")."""
    env.apply(overlay("overlay-a", (INSTANCE_TYPE, "In", ["default-instance-type"]),
                      weight=10, capacity={FUSE: "5"}),
              overlay("overlay-b", (INSTANCE_TYPE, "In", ["default-instance-type"]),
                      weight=20, capacity={FUSE: "99"}))
    env.reconcile()
    assert env.condition("overlay-a")[0] == "True"
    assert env.condition("overlay-b")[0] == "True"
    assert env.one().capacity[FUSE] == 99000


def test_a_conflicting_capacity_overlay_changes_no_type_of_a_nodepool(env: Env) -> None:
    """It("should that there is not a partial application for instance types")."""
    env.cloud.instance_types = None
    env.apply(overlay("overlay-a", (INSTANCE_TYPE, "In", [
        "default-instance-type", "small-instance-type", "gpu-vendor-b-instance-type"]),
        capacity={"smarter-devices/buz": "54"}),
        overlay("overlay-b", (INSTANCE_TYPE, "In", [
            "small-instance-type", "gpu-vendor-instance-type"]),
            capacity={"smarter-devices/buz": "21"}))
    env.reconcile()
    assert env.condition("overlay-a") == ("False", "Conflict")
    assert env.condition("overlay-b")[0] == "True"
    found = env.applied()
    assert found is not None and len(found) == 6
    assert {it.name: it.capacity_overlaid for it in found if it.name in PARTIAL} == PARTIAL


def test_a_conflicting_capacity_overlay_changes_no_nodepool(env: Env) -> None:
    """It("should that there is not a partial application for nodepools")."""
    env.cloud.instance_types = None
    env.apply(nodepool(instance_types=["default-instance-type", "gpu-vendor-instance-type",
                                       "gpu-vendor-b-instance-type"]),
              nodepool("two", instance_types=["gpu-vendor-b-instance-type"]),
              overlay("overlay-a", (INSTANCE_TYPE, "In", [
                  "default-instance-type", "small-instance-type"]),
                  capacity={"smarter-devices/buz": "54"}),
              overlay("overlay-b", (INSTANCE_TYPE, "In", [
                  "small-instance-type", "gpu-vendor-instance-type"]),
                  capacity={"smarter-devices/buz": "21"}))
    env.reconcile()
    assert env.condition("overlay-a") == ("False", "Conflict")
    assert env.condition("overlay-b")[0] == "True"
    for pool in ("default", "two"):
        found = env.applied(pool)
        assert found is not None and len(found) == 6
        assert {it.name: it.capacity_overlaid for it in found
                if it.name in PARTIAL} == PARTIAL


# == Describe("Instance Type Controller"), its last Its ====================================


def test_a_price_and_a_capacity_overlay_on_one_type(env: Env) -> None:
    """It("should apply pricing and capacity adjustment from two overlays on the same
    instance type")."""
    env.apply(overlay("price", (INSTANCE_TYPE, "In", ["default-instance-type"]),
                      priceAdjustment="+1000.0"),
              overlay("capacity", (INSTANCE_TYPE, "In", ["default-instance-type"]),
                      capacity={FUSE: "1"}))
    env.reconcile()
    it = env.one()
    assert [o.price for o in it.offerings] == pytest.approx([1001.020])
    assert it.capacity[FUSE] == 1000


def test_no_instance_types_from_the_cloud_gives_none(env: Env) -> None:
    """It("should have an empty instance types set when cloudprovider does not return
    instance types")."""
    env.cloud.instance_types = []
    env.apply(overlay("capacity", (INSTANCE_TYPE, "In", ["default-instance-type"]),
                      capacity={FUSE: "1"}))
    env.reconcile()
    assert env.applied() == []


def test_a_cloud_error_leaves_the_nodepool_unevaluated(env: Env) -> None:
    """It("should have an empty instance types set when cloudprovider return an error"):
    the reconcile fails, and the store has nothing for the NodePool (not even none)."""
    env.cloud.errors_for_nodepool["default"] = "test error"
    env.apply(overlay("capacity", (INSTANCE_TYPE, "In", ["default-instance-type"]),
                      capacity={FUSE: "1"}))
    with pytest.raises(UnevaluatedNodePools, match="test error"):
        env.reconcile()
    assert env.applied() is None


def test_overlaid_types_carry_no_nodepool_labels(env: Env) -> None:
    """It("should not return instance type requirements with nodepool, nodeclass, and
    custom nodepool labels")."""
    env.apply(nodepool(labels={"test-label": "test-value"}),
              overlay("capacity", (INSTANCE_TYPE, "In", ["default-instance-type"]),
                      capacity={FUSE: "1"}))
    env.reconcile()
    labels = env.one().labels
    assert NODEPOOL not in labels
    assert "karpenter.k8s.aws/ec2nodeclass" not in labels
    assert "test-label" not in labels


# == Describe("Failure Isolation") =========================================================


def test_healthy_nodepools_are_evaluated_when_one_fails(env: Env) -> None:
    """It("should evaluate healthy NodePools when one NodePool fails GetInstanceTypes")."""
    env.apply(nodepool("broken"))
    env.cloud.errors_for_nodepool["broken"] = "resolving node class, AKSNodeClass not found"
    with pytest.raises(UnevaluatedNodePools, match='nodepool "broken"'):
        env.reconcile()
    found = env.applied()
    assert found is not None and len(found) == 1
    assert env.applied("broken") is None


def test_the_store_is_updated_when_one_nodepool_fails(env: Env) -> None:
    """It("should update the store even when one NodePool fails")."""
    env.apply(nodepool("broken"))
    env.cloud.errors_for_nodepool["broken"] = "resolving node class, AKSNodeClass not found"
    assert env.state.overlay_store is None or env.applied() is None  # nothing evaluated yet
    with pytest.raises(UnevaluatedNodePools):
        env.reconcile()
    found = env.applied()
    assert found is not None and len(found) == 1


def test_a_healthy_pass_requeues_after_six_hours(env: Env) -> None:
    """It("should use normal requeue interval when all NodePools succeed")."""
    assert env.reconcile().requeue_after == 6 * 3600


def test_a_failing_nodepool_recovers(env: Env) -> None:
    """It("should recover when a previously failing NodePool becomes healthy")."""
    env.apply(nodepool("broken"))
    env.cloud.errors_for_nodepool["broken"] = "resolving node class, AKSNodeClass not found"
    with pytest.raises(UnevaluatedNodePools):
        env.reconcile()
    assert env.applied("broken") is None
    del env.cloud.errors_for_nodepool["broken"]
    assert env.reconcile().requeue_after == 6 * 3600
    for pool in ("default", "broken"):
        found = env.applied(pool)
        assert found is not None and len(found) == 1
