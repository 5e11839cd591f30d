"""Karpenter's launch-time instance filters, ported from its
pkg/providers/instance/filter/filter_test.go (v1.14.1), one test per It/Entry.

Karpenter hands each filter instance types with every offering and lets the filter skip
the unavailable and incompatible ones; here the provider's `launchable` does that first
(as `AwsCloudProvider.create` does), so each port runs the catalog through `launchable`
and then the one filter it names (`filter_reject`, Karpenter's FilterReject).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from nodewright.cloud.aws.offerings import launchable
from nodewright.scheduling.allocatable import (
    AMD_GPU,
    AWS_EFA,
    AWS_NEURON,
    AWS_NEURON_CORE,
    AWS_POD_ENI,
    HABANA_GAUDI,
    NVIDIA_GPU,
    Overhead,
)
from nodewright.scheduling.catalog import InstanceType, Offering
from nodewright.scheduling.launch_filters import _FILTERS, Choice, _Groups, filter_for_launch
from nodewright.scheduling.requirements import Requirements


def filter_reject(
    name: str, choices: Sequence[Choice], requirements: Requirements,
    requests: Mapping[str, int] | None = None,
) -> tuple[list[Choice], list[str]]:
    """One filter alone, as Karpenter's FilterReject: the choices it keeps and the instance
    types it takes out (a filter that would leave nothing keeps everything, but the fit)."""
    groups: _Groups = {}
    for choice in choices:
        groups.setdefault(choice.instance_type.name, []).append(choice)
    kept = dict(_FILTERS)[name](groups, requirements, requests or {})
    return ([choice for group in kept.values() for choice in group],
            [type_name for type_name in groups if type_name not in kept])

ZONES = ("zone-1a", "zone-1b", "forbidden-zone", "1", "2")
EXOTIC = (NVIDIA_GPU, AMD_GPU, AWS_NEURON, AWS_NEURON_CORE, HABANA_GAUDI)
# Karpenter's WellKnownResources less the exotic ones.
NORMAL = ("cpu", "memory", "ephemeral-storage", "pods", AWS_POD_ENI, AWS_EFA)

FITS = "compatible-available-filter"
RESERVATION_TYPE = "capacity-reservation-type-filter"
CAPACITY_BLOCK = "capacity-block-filter"
RESERVED_OFFERING = "reserved-offering-filter"
EXOTIC_FILTER = "exotic-instance-filter"
SPOT = "spot-offering-filter"


def offer(capacity_type: str, available: bool = True, *, price: float = 1.0,
          zone: str = "zone-1a", reservation_type: str | None = None,
          reservation_id: str | None = None, left: int = 0,
          interruptible: bool = False) -> Offering:
    if capacity_type == "reserved":
        reservation_type = reservation_type or "default"
        reservation_id = reservation_id or (
            f"cr-{reservation_type}-{interruptible}-{zone}-{price}")
    return Offering(zone, None, capacity_type, price, available=available,
                    reservation_id=reservation_id, reservation_type=reservation_type,
                    reservation_interruptible=interruptible, reservation_capacity=left)


# Karpenter's reservation kinds: (type, interruptible); capacity blocks are never interruptible.
RESERVATION_KINDS = [("default", False), ("capacity-block", False), ("default", True)]


def itype(name: str, *offerings: Offering, cpu_millis: int = 2000, size: str = "large",
          extra: Mapping[str, int] | None = None) -> InstanceType:
    return InstanceType(
        name=name,
        labels={"node.kubernetes.io/instance-type": name, "kubernetes.io/arch": "amd64",
                "karpenter.k8s.aws/instance-size": size},
        capacity={"cpu": cpu_millis, "memory": 4 * 1024**3 * 1000, "pods": 110_000,
                  **(extra or {})},
        overhead=Overhead({}, {}, {}),
        offerings=offerings or (offer("on-demand"),),
    )


def requirements(*terms: dict[str, Any]) -> Requirements:
    return Requirements.from_node_selector(terms)


def capacity_type(operator: str, *values: str) -> dict[str, Any]:
    return {"key": "karpenter.sh/capacity-type", "operator": operator, "values": list(values)}


def zone_in(*zones: str) -> dict[str, Any]:
    return {"key": "topology.kubernetes.io/zone", "operator": "In", "values": list(zones)}


def zone_not_in(*zones: str) -> dict[str, Any]:
    return {"key": "topology.kubernetes.io/zone", "operator": "NotIn", "values": list(zones)}


MIN_VALUES = {"key": "node.kubernetes.io/instance-type", "operator": "Exists", "minValues": 2}
ANY_CAPACITY = capacity_type("Exists")
RESERVED_ONLY = capacity_type("In", "reserved")
NOT_RESERVED = capacity_type("NotIn", "reserved")


def run(name: str, catalog: Sequence[InstanceType], reqs: Requirements,
        requests: Mapping[str, int] | None = None
        ) -> tuple[dict[str, list[Offering]], list[str]]:
    """The types (with the offerings) the filter keeps, and the types it rejects; types with
    no launchable offering count as rejected, as Karpenter's compatible-available filter."""
    choices = launchable(catalog, reqs, ZONES, ["amd64"])
    kept_choices, rejected = filter_reject(name, choices, reqs, requests)
    kept: dict[str, list[Offering]] = {}
    for choice in kept_choices:
        kept.setdefault(choice.instance_type.name, []).append(choice.offering)
    offered = {choice.instance_type.name for choice in choices}
    rejected += [t.name for t in catalog if t.name not in offered]
    return kept, rejected


# --- CompatibleAvailableFilter ------------------------------------------------------------


def test_compatible_available_keeps_types_compatible_with_the_requirements() -> None:
    """It("should filter compatible instances (by requirements)")"""
    kept, rejected = run(FITS, [
        itype("compatible-instance", offer("on-demand", zone="zone-1a")),
        itype("incompatible-instance", offer("on-demand", zone="zone-1b")),
    ], requirements(zone_in("zone-1a")), {"cpu": 1000})
    assert list(kept) == ["compatible-instance"]
    assert rejected == ["incompatible-instance"]


def test_compatible_available_keeps_types_whose_allocatable_fits_the_requests() -> None:
    """It("should filter compatible instances (by requests)")"""
    kept, rejected = run(FITS, [
        itype("compatible-instance", cpu_millis=2000),
        itype("incompatible-instance", cpu_millis=500),
    ], requirements(zone_in("zone-1a")), {"cpu": 1000})
    assert list(kept) == ["compatible-instance"]
    assert rejected == ["incompatible-instance"]


def test_compatible_available_keeps_types_with_an_available_offering() -> None:
    """It("should filter available instances")"""
    kept, rejected = run(FITS, [
        itype("available-instance", offer("on-demand", True)),
        itype("unavailable-instance", offer("on-demand", False)),
    ], requirements(zone_in("zone-1a")), {"cpu": 1000})
    assert list(kept) == ["available-instance"]
    assert rejected == ["unavailable-instance"]


# --- CapacityReservationTypeFilter --------------------------------------------------------


@pytest.mark.parametrize(("selected", "interruptible"), RESERVATION_KINDS)
def test_the_reservation_type_with_the_cheapest_offering_is_chosen(
    selected: str, interruptible: bool
) -> None:
    """DescribeTable("should prioritize the capacity reservation type with the cheapest
    offering"), Entry("when the type is default"), Entry("when the type is capacity-block")
    and Entry("when the type is default interruptible"); unavailable and other-zone
    offerings that are cheaper do not count."""
    others = [kind for kind in RESERVATION_KINDS if kind != (selected, interruptible)]
    catalog = [
        itype(f"cheap-instance-{selected}-{interruptible}",
              offer("reserved", price=5.0, reservation_type=selected,
                    interruptible=interruptible)),
        itype(f"expensive-instance-{selected}-{interruptible}",
              offer("reserved", price=10.0, reservation_type=selected,
                    interruptible=interruptible)),
        *(itype(f"expensive-instance-{kind}-{flag}",
                offer("reserved", price=10.0, reservation_type=kind, interruptible=flag),
                offer("reserved", False, price=1.0, reservation_type=kind, interruptible=flag),
                offer("reserved", price=1.0, zone="zone-1b", reservation_type=kind,
                      interruptible=flag))
          for kind, flag in others),
    ]
    kept, rejected = run(RESERVATION_TYPE, catalog,
                         requirements(RESERVED_ONLY, zone_in("zone-1a")))
    assert sorted(kept) == sorted([f"cheap-instance-{selected}-{interruptible}",
                                   f"expensive-instance-{selected}-{interruptible}"])
    assert sorted(rejected) == sorted(f"expensive-instance-{kind}-{flag}"
                                      for kind, flag in others)


@pytest.mark.parametrize(("selected", "rejected_kind"), [
    (("default", False), ("capacity-block", False)),
    (("capacity-block", False), ("default", True)),
    (("default", False), ("default", True)),
], ids=["default-over-capacity-block", "capacity-block-over-interruptible",
        "default-over-interruptible"])
def test_equal_prices_are_broken_by_reservation_priority(
    selected: tuple[str, bool], rejected_kind: tuple[str, bool]
) -> None:
    """DescribeTable("should break ties by priority"), Entry("when the two capacity
    reservations are default and capacity-block"), Entry("... are capacity-block and
    interruptible default") and Entry("... are default and interruptible default")"""
    selected_name = f"{selected[0]}-{selected[1]}"
    rejected_name = f"{rejected_kind[0]}-{rejected_kind[1]}"
    kept, rejected = run(RESERVATION_TYPE, [
        itype(selected_name, offer("reserved", price=5.0, reservation_type=selected[0],
                                   interruptible=selected[1])),
        itype(rejected_name, offer("reserved", price=5.0, reservation_type=rejected_kind[0],
                                   interruptible=rejected_kind[1])),
    ], requirements(RESERVED_ONLY))
    assert list(kept) == [selected_name]
    assert rejected == [rejected_name]


@pytest.mark.parametrize(("selected", "interruptible"), RESERVATION_KINDS)
def test_offerings_of_the_other_reservation_type_are_removed(
    selected: str, interruptible: bool
) -> None:
    """DescribeTable("should remove offerings which aren't the selected capacity
    reservation type"), Entry("when the type is default"), Entry("when the type is default
    interruptible") and Entry("when the type is capacity-block")"""
    kept, rejected = run(RESERVATION_TYPE, [
        itype("pin-instance", offer("reserved", price=1.0, reservation_type=selected,
                                    interruptible=interruptible)),
        itype("filter-instance",
              *(offer("reserved", price=5.0, reservation_type=kind, interruptible=flag)
                for kind, flag in RESERVATION_KINDS)),
    ], requirements(RESERVED_ONLY))
    assert sorted(kept) == ["filter-instance", "pin-instance"]
    assert rejected == []
    for offerings in kept.values():
        assert [(o.capacity_type, o.reservation_type, o.reservation_interruptible)
                for o in offerings] == [("reserved", selected, interruptible)]


def test_reservation_types_are_left_alone_when_the_nodeclaim_refuses_reserved() -> None:
    """It("should not filter instance types when the nodeclaim is not compatible with
    capacity type reserved")"""
    catalog = [itype(f"{kind}-instance", offer("on-demand"),
                     offer("reserved", price=1.0, reservation_type=kind))
               for kind in ("default", "capacity-block")]
    kept, rejected = run(RESERVATION_TYPE, catalog, requirements(NOT_RESERVED))
    assert sorted(kept) == ["capacity-block-instance", "default-instance"]
    assert rejected == []


# --- CapacityBlockFilter ------------------------------------------------------------------


def block(price: float, available: bool = True, zone: str = "zone-1a",
          reservation_id: str | None = None) -> Offering:
    return offer("reserved", available, price=price, zone=zone,
                 reservation_type="capacity-block", reservation_id=reservation_id)


def test_the_type_with_the_cheapest_capacity_block_is_the_only_one_kept() -> None:
    """It("should select the instance type with the cheapest capacity-block offering")"""
    kept, rejected = run(CAPACITY_BLOCK, [
        itype("cheap-instance", block(1.0), block(10.0, zone="zone-1b")),
        itype("expensive-instance", block(2.0), block(10.0, zone="zone-1b")),
    ], requirements(ANY_CAPACITY))
    assert list(kept) == ["cheap-instance"]
    assert rejected == ["expensive-instance"]
    assert len(kept["cheap-instance"]) == 1


@pytest.mark.parametrize(("expected", "offerings"), [
    pytest.param("cheapest", [block(1.0, reservation_id="cheapest"),
                              block(2.0, zone="zone-1b", reservation_id="expensive")],
                 id="should select the cheapest offering"),
    pytest.param("cheapest-available", [
        block(1.0, False, reservation_id="cheapest"),
        block(1.5, zone="zone-1b", reservation_id="cheapest-available"),
        block(2.0, zone="1", reservation_id="expensive")],
        id="should not select unavailable offerings"),
    pytest.param("cheapest-compatible", [
        block(1.0, zone="forbidden-zone", reservation_id="cheapest"),
        block(1.5, zone="zone-1b", reservation_id="cheapest-compatible"),
        block(2.0, zone="1", reservation_id="expensive")],
        id="should not select incompatible offerings"),
])
def test_capacity_block_offering_selection(expected: str, offerings: list[Offering]) -> None:
    """DescribeTable("OfferingSelection"), its three Entries"""
    kept, _ = run(CAPACITY_BLOCK, [itype("instance", *offerings)],
                  requirements(ANY_CAPACITY, zone_not_in("forbidden-zone")))
    assert [o.reservation_id for o in kept["instance"]] == [expected]


def test_default_reservations_are_not_narrowed_to_one_block() -> None:
    """DescribeTable("shouldn't filter instance types when the capacity reservation type is
    not capacity-block"), Entry("when the capacity reservation type is \"default\"")"""
    kept, rejected = run(CAPACITY_BLOCK, [
        itype("cheap-instance", offer("reserved", price=1.0),
              offer("reserved", price=10.0, zone="zone-1b")),
        itype("expensive-instance", offer("reserved", price=2.0),
              offer("reserved", price=10.0, zone="zone-1b")),
    ], requirements(ANY_CAPACITY))
    assert sorted(kept) == ["cheap-instance", "expensive-instance"]
    assert rejected == []
    assert all(len(offerings) == 2 for offerings in kept.values())


def test_capacity_blocks_are_left_alone_when_the_nodeclaim_refuses_reserved() -> None:
    """It("shouldn't filter instance types when the requirements aren't compatible with
    capacity type reserved"); the reserved offerings are incompatible, so `launchable`
    already leaves only the on-demand ones, which the filter keeps."""
    kept, rejected = run(CAPACITY_BLOCK, [
        itype("cheap-instance", block(1.0), offer("on-demand", price=1.0)),
        itype("expensive-instance", block(2.0), offer("on-demand", price=2.0)),
    ], requirements(NOT_RESERVED))
    assert sorted(kept) == ["cheap-instance", "expensive-instance"]
    assert rejected == []


# --- ReservedOfferingFilter ---------------------------------------------------------------


def test_no_available_reservation_leaves_every_type() -> None:
    """It("shouldn't filter instance types if there are no available reserved offerings")"""
    kept, rejected = run(RESERVED_OFFERING, [
        itype("non-reserved-instance", offer("on-demand"), offer("spot")),
        itype("reserved-instance", offer("on-demand"), offer("spot"), offer("reserved", False)),
    ], requirements(ANY_CAPACITY))
    assert sorted(kept) == ["non-reserved-instance", "reserved-instance"]
    assert rejected == []


def test_one_reservation_per_instance_pool_the_one_with_most_instances_left() -> None:
    """It("should only include one reserved offering per instance pool")"""
    kept, rejected = run(RESERVED_OFFERING, [
        itype("non-reserved-instance", offer("on-demand"), offer("spot")),
        itype("reserved-instance-a", offer("on-demand"), offer("spot"),
              offer("reserved", zone="1", reservation_id="kept-1", left=5),
              offer("reserved", zone="2", reservation_id="kept-2", left=6),
              offer("reserved", zone="2", reservation_id="rejected", left=5)),
        itype("reserved-instance-b", offer("on-demand"), offer("spot"),
              offer("reserved", zone="1", reservation_id="kept-3", left=1),
              offer("reserved", False, zone="1", reservation_id="rejected", left=2)),
    ], requirements(ANY_CAPACITY))
    assert sorted(kept) == ["reserved-instance-a", "reserved-instance-b"]
    assert rejected == ["non-reserved-instance"]
    assert len(kept["reserved-instance-a"]) == 2
    assert all(o.reservation_id and o.reservation_id.startswith("kept")
               for offerings in kept.values() for o in offerings)


def test_reserved_offerings_are_left_alone_when_the_nodeclaim_refuses_reserved() -> None:
    """It("shouldn't filter instance types if the requirements are not compatible with
    reserved offerings"); `launchable` has already dropped the incompatible reserved one."""
    kept, rejected = run(RESERVED_OFFERING, [
        itype("non-reserved-instance", offer("on-demand"), offer("spot")),
        itype("reserved-instance", offer("on-demand"), offer("spot"),
              offer("reserved", zone="1")),
    ], requirements(NOT_RESERVED))
    assert sorted(kept) == ["non-reserved-instance", "reserved-instance"]
    assert rejected == []
    assert sorted(len(offerings) for offerings in kept.values()) == [2, 2]


# --- ExoticInstanceFilter -----------------------------------------------------------------


@pytest.mark.parametrize("resource", EXOTIC)
def test_types_with_exotic_resources_are_rejected(resource: str) -> None:
    """DescribeTable("should reject instance types with exotic resources"), one Entry per
    well-known exotic resource"""
    kept, rejected = run(EXOTIC_FILTER, [
        itype("generic-instance-type"),
        itype("exotic-instance-type", extra={resource: 1000}),
    ], requirements())
    assert list(kept) == ["generic-instance-type"]
    assert rejected == ["exotic-instance-type"]


@pytest.mark.parametrize("resource", NORMAL)
def test_types_with_normal_resources_are_kept(resource: str) -> None:
    """DescribeTable("should not reject instance types with normal resources"), one Entry
    per well-known resource that is not exotic"""
    kept, rejected = run(EXOTIC_FILTER, [
        itype("generic-instance-type", extra={resource: 1000}),
        itype("exotic-instance-type", extra={EXOTIC[0]: 1000}),
    ], requirements())
    assert list(kept) == ["generic-instance-type"]
    assert rejected == ["exotic-instance-type"]


def test_metal_types_are_rejected() -> None:
    """It("should reject metal instance types")"""
    kept, rejected = run(EXOTIC_FILTER, [
        itype("generic-instance-type"),
        itype("generic-instance-type-metal", size="metal"),
    ], requirements())
    assert list(kept) == ["generic-instance-type"]
    assert rejected == ["generic-instance-type-metal"]


def test_metal_and_exotic_types_are_kept_when_nothing_else_is_left() -> None:
    """It("should include metal instance types and those with exotic resources if there
    are no other options")"""
    kept, rejected = run(EXOTIC_FILTER, [
        itype("exotic-instance-type", extra={EXOTIC[0]: 1000}),
        itype("generic-instance-type-metal", size="metal"),
    ], requirements())
    assert sorted(kept) == ["exotic-instance-type", "generic-instance-type-metal"]
    assert rejected == []


def test_exotic_types_are_kept_for_a_nodeclaim_with_min_values() -> None:
    """It("should include instance types with exotic resources if minValues is set")"""
    kept, rejected = run(EXOTIC_FILTER, [
        itype("generic-instance-type"),
        itype("exotic-instance-type", extra={EXOTIC[0]: 1000}),
    ], requirements(MIN_VALUES))
    assert sorted(kept) == ["exotic-instance-type", "generic-instance-type"]
    assert rejected == []


# --- SpotOfferingFilter -------------------------------------------------------------------


def test_spot_offerings_dearer_than_the_cheapest_on_demand_are_dropped() -> None:
    """It("should filter out expensive spot offerings while keeping instance types with
    remaining offerings")"""
    kept, rejected = run(SPOT, [
        itype("od-instance", offer("on-demand", price=5.0),
              offer("on-demand", price=10.0, zone="zone-1b")),
        itype("cheap-spot-instance", offer("spot", price=1.0),
              offer("spot", price=2.0, zone="zone-1b")),
        itype("mixed-spot-instance", offer("spot", price=1.0),
              offer("spot", price=10.0, zone="zone-1b")),
    ], requirements(ANY_CAPACITY))
    assert rejected == []
    assert {name: [o.price for o in offerings] for name, offerings in kept.items()} == {
        "od-instance": [5.0, 10.0], "cheap-spot-instance": [1.0, 2.0],
        "mixed-spot-instance": [1.0]}


def test_a_type_left_without_offerings_is_rejected() -> None:
    """It("should reject instance types with no remaining offerings after filtering")"""
    kept, rejected = run(SPOT, [
        itype("od-instance", offer("on-demand", price=5.0)),
        itype("expensive-spot-instance", offer("spot", price=10.0),
              offer("spot", price=15.0, zone="zone-1b")),
    ], requirements(ANY_CAPACITY))
    assert {name: len(offerings) for name, offerings in kept.items()} == {"od-instance": 1}
    assert rejected == ["expensive-spot-instance"]


def test_spot_is_kept_when_there_is_no_on_demand_offering() -> None:
    """It("should not filter when no on-demand offerings exist")"""
    kept, rejected = run(SPOT, [itype("spot-instance", offer("spot", price=10.0))],
                         requirements(ANY_CAPACITY))
    assert {name: len(offerings) for name, offerings in kept.items()} == {"spot-instance": 1}
    assert rejected == []


def test_spot_is_kept_when_the_nodeclaim_does_not_allow_both() -> None:
    """It("should not filter when requirements don't support both spot and on-demand")"""
    kept, rejected = run(SPOT, [itype("spot-instance", offer("spot", price=10.0))],
                         requirements(capacity_type("In", "spot")))
    assert {name: len(offerings) for name, offerings in kept.items()} == {"spot-instance": 1}
    assert rejected == []


def test_spot_is_kept_for_a_nodeclaim_with_min_values() -> None:
    """It("should not filter when minValues is set")"""
    kept, rejected = run(SPOT, [
        itype("od-instance", offer("on-demand", price=5.0)),
        itype("expensive-spot-instance", offer("spot", price=10.0)),
    ], requirements(ANY_CAPACITY, MIN_VALUES))
    assert sorted(kept) == ["expensive-spot-instance", "od-instance"]
    assert rejected == []


# --- the chain, as the provider runs it (ours) --------------------------------------------


def test_a_filter_that_would_leave_nothing_leaves_everything_but_the_fit_does_not() -> None:
    catalog = [itype("small", cpu_millis=500), itype("gpu", cpu_millis=500, extra={NVIDIA_GPU: 1})]
    reqs = requirements(ANY_CAPACITY)
    choices: list[Choice] = launchable(catalog, reqs, ZONES, ["amd64"])

    assert {c.instance_type.name for c in filter_for_launch(choices, reqs, {}).choices} == {
        "small"}
    too_big = filter_for_launch(choices, reqs, {"cpu": 1000})
    assert too_big.choices == [] and too_big.emptied_by == FITS
