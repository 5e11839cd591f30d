"""Karpenter's unavailable offerings cache suite (aws/karpenter-provider-aws v1.14.1
pkg/cache/suite_test.go, Context("Unavailable Offering Cache")), against
controller/nodewright/cloud/aws/unavailable.py. Karpenter marks a subnet out (its zone then
has no launchable offering); Nodewright marks the zone out per capacity type, which is
what a full subnet does to the zone's launches."""

from __future__ import annotations

from nodewright.cloud.aws.unavailable import (
    UNAVAILABLE_OFFERING_TTL_SECONDS,
    UnavailableOfferings,
)
from tests.aws.world import FakeClock

ZONE_A, ZONE_B = "us-west-2a", "us-west-2b"


def out(unavailable: UnavailableOfferings, *offering: str) -> bool:
    name, zone, capacity_type = offering
    return unavailable.is_unavailable(name, zone, capacity_type)


def marks_each_offering_alone(reason: str) -> None:
    unavailable = UnavailableOfferings(FakeClock())
    large_a = ("m5.large", ZONE_A, "on-demand")
    xlarge_b = ("m5.xlarge", ZONE_B, "spot")
    assert not out(unavailable, *large_a) and not out(unavailable, *xlarge_b)
    unavailable.mark_unavailable(*large_a, reason)
    assert out(unavailable, *large_a) and not out(unavailable, *xlarge_b)
    unavailable.mark_unavailable("m5.large", ZONE_B, "on-demand", reason)
    assert out(unavailable, *large_a) and not out(unavailable, *xlarge_b)
    unavailable.mark_unavailable(*xlarge_b, reason)
    assert out(unavailable, *large_a) and out(unavailable, *xlarge_b)


def test_mark_unavailable() -> None:
    """It("should mark offerings as unavailable when calling MarkUnavailable")."""
    marks_each_offering_alone("test")


def test_mark_unavailable_with_fleet_error_reasons() -> None:
    """It("should mark offerings as unavailable with fleet error reasons")."""
    marks_each_offering_alone("InsufficientInstanceCapacity")


def test_mark_capacity_type_unavailable() -> None:
    """It("should mark offerings as unavailable when calling MarkCapacityTypeUnavailable")."""
    unavailable = UnavailableOfferings(FakeClock())
    asked = [("m5.large", ZONE_A, "on-demand"), ("m5.xlarge", ZONE_A, "on-demand"),
             ("m5.xlarge", ZONE_A, "spot"), ("m5.xlarge", ZONE_B, "spot")]
    assert [out(unavailable, *o) for o in asked] == [False, False, False, False]
    unavailable.mark_capacity_type_unavailable("spot", "test")
    assert [out(unavailable, *o) for o in asked] == [False, False, True, True]
    unavailable.mark_capacity_type_unavailable("on-demand", "test")
    assert [out(unavailable, *o) for o in asked] == [True, True, True, True]


def test_mark_zone_unavailable() -> None:
    """It("should mark offerings as unavailable when calling MarkSubnetUnavailable"): the
    zone of the full subnet, for both capacity types."""
    unavailable = UnavailableOfferings(FakeClock())
    asked = [("m5.large", ZONE_A, "on-demand"), ("m5.xlarge", ZONE_A, "on-demand"),
             ("m5.xlarge", ZONE_A, "spot"), ("m5.xlarge", ZONE_B, "spot")]
    assert [out(unavailable, *o) for o in asked] == [False, False, False, False]
    for capacity_type in ("on-demand", "spot"):
        unavailable.mark_zone_unavailable(ZONE_A, capacity_type, "subnet full")
    assert [out(unavailable, *o) for o in asked] == [True, True, True, False]


def test_sequence_numbers_count_each_change_per_type(clock: FakeClock) -> None:
    """pkg/cache/suite_test.go It("should increase sequence number when unavailability
    changes"), with Nodewright's counterparts: a zone marked out for a capacity type for
    MarkSubnetUnavailable, and the three minutes passing for Delete (on m5.large, whose
    entry is the older one here)."""
    unavailable = UnavailableOfferings(clock)

    def numbers() -> tuple[int, int]:
        unavailable.seqnum()
        return unavailable.type_seqnum("m5.large"), unavailable.type_seqnum("m5.xlarge")

    assert numbers() == (0, 0)
    unavailable.mark_unavailable("m5.large", ZONE_A, "on-demand", "test")
    assert numbers() == (1, 0)
    clock.advance(1)
    unavailable.mark_unavailable("m5.xlarge", ZONE_A, "on-demand", "test")
    assert numbers() == (1, 1)
    unavailable.mark_zone_unavailable(ZONE_A, "spot", "subnets full")
    assert numbers() == (2, 2)
    unavailable.mark_zone_unavailable(ZONE_B, "spot", "subnets full")
    assert numbers() == (3, 3)
    unavailable.mark_capacity_type_unavailable("on-demand", "test")
    assert numbers() == (4, 4)
    clock.advance(UNAVAILABLE_OFFERING_TTL_SECONDS - 1)  # only m5.large's entry expires
    assert numbers() == (5, 4)

