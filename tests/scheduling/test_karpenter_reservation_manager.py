"""Karpenter's reservation manager suite, ported: kubernetes-sigs/karpenter v1.14.1
pkg/controllers/provisioning/scheduling/reservationmanager_test.go. Each test names its
Describe, Context and It. `ReservationBook` is the ReservationManager; Karpenter's panics are
`ReservationError`s."""

from __future__ import annotations

import pytest

from nodewright.scheduling.catalog import InstanceType, Offering
from nodewright.scheduling.reservations import ReservationBook, ReservationError
from tests.scheduling.karpenter_scheduling import fake_it, nodepool

SMALL, MEDIUM, LARGE = "small-reserved", "medium-reserved", "large-reserved"


def has_reservation(book: ReservationBook, hostname: str, reservation: str) -> bool:
    """Karpenter's ReservationManager.HasReservation, read from the book."""
    return reservation in book.held.get(hostname, ())


def _reserved(it: InstanceType, zone: str, reservation: str, capacity: int) -> InstanceType:
    offering = Offering(zone, None, "reserved", 0.0, reservation_id=reservation,
                        reservation_type="default", reservation_capacity=capacity)
    return InstanceType(it.name, it.labels, it.capacity, it.overhead, (offering,))


@pytest.fixture
def book() -> ReservationBook:
    """BeforeEach: three types, each with one reserved offering of 3, 2 and 1 instances."""
    types = [_reserved(fake_it(SMALL, cpu=2, memory_gi=4, pods=10), "test-zone-1", SMALL, 3),
             _reserved(fake_it(MEDIUM, cpu=4, memory_gi=8, pods=20), "test-zone-2", MEDIUM, 2),
             _reserved(fake_it(LARGE, cpu=8, memory_gi=16, pods=40), "test-zone-3", LARGE, 1)]
    return ReservationBook.of([nodepool(catalog=types)])


# Describe("CanReserve")

def test_can_reserve_while_capacity_is_available(book: ReservationBook) -> None:
    # Context("With Available Capacity") It("should return true when capacity is available")
    assert book.can_reserve("hostname-1", LARGE)


def test_can_reserve_what_the_hostname_already_holds(book: ReservationBook) -> None:
    # It("should return true when hostname already has the reservation")
    book.reserve("hostname-1", [LARGE])
    assert book.can_reserve("hostname-1", LARGE)


def test_cannot_reserve_once_capacity_is_exhausted(book: ReservationBook) -> None:
    # Context("With No Capacity") It("should return false when capacity is exhausted")
    book.reserve("hostname-0", [LARGE])
    assert not book.can_reserve("hostname-new", LARGE)


def test_the_holder_can_still_reserve_an_exhausted_reservation(book: ReservationBook) -> None:
    # It("should return true for existing hostname even when capacity is exhausted")
    book.reserve("hostname-1", [LARGE])
    assert book.can_reserve("hostname-1", LARGE)


def test_can_reserve_refuses_an_unknown_reservation(book: ReservationBook) -> None:
    # Context("Error Cases") It("should panic with non-existent reservation ID")
    with pytest.raises(ReservationError, match="i-dont-exist"):
        book.can_reserve("hostname-1", "i-dont-exist")


# Describe("Reserve")

def test_reserve_takes_an_instance(book: ReservationBook) -> None:
    # Context("Single Reservations") It("should successfully reserve capacity")
    book.reserve("hostname-1", [SMALL])
    assert has_reservation(book, "hostname-1", SMALL)


def test_reserving_twice_for_one_hostname_takes_one_instance(book: ReservationBook) -> None:
    # It("should not double-reserve for the same hostname and reservation")
    book.reserve("hostname-1", [MEDIUM])
    book.reserve("hostname-1", [MEDIUM])
    assert book.can_reserve("hostname-2", MEDIUM)


def test_reserve_decrements_the_capacity(book: ReservationBook) -> None:
    # It("should decrement available capacity")
    for host in ("hostname-1", "hostname-2", "hostname-3"):
        book.reserve(host, [SMALL])
    assert not book.can_reserve("hostname-4", SMALL)


def test_reserve_takes_several_reservations_at_once(book: ReservationBook) -> None:
    # Context("Multiple Reservations") It("should handle multiple offerings in a single call")
    book.reserve("hostname-1", [SMALL, MEDIUM])
    assert has_reservation(book, "hostname-1", SMALL)
    assert has_reservation(book, "hostname-1", MEDIUM)


def test_reserve_counts_a_held_reservation_once(book: ReservationBook) -> None:
    # It("should handle mixed new and existing reservations")
    book.reserve("hostname-1", [MEDIUM])
    book.reserve("hostname-1", [MEDIUM, LARGE])
    assert has_reservation(book, "hostname-1", MEDIUM)
    assert has_reservation(book, "hostname-1", LARGE)
    assert book.can_reserve("hostname-2", MEDIUM)


def test_reserve_refuses_to_over_reserve(book: ReservationBook) -> None:
    # Context("Error Cases") It("should panic when trying to over-reserve")
    for n in range(3):
        book.reserve(f"hostname-{n}", [SMALL])
    with pytest.raises(ReservationError, match="over-reserve"):
        book.reserve("hostname-new", [SMALL])


def test_reserve_refuses_an_unknown_reservation(book: ReservationBook) -> None:
    # It("should panic with non-existent reservation ID")
    with pytest.raises(ReservationError, match="i-dont-exist"):
        book.reserve("hostname-1", ["i-dont-exist"])


# Describe("Release")

def test_release_gives_a_reservation_back(book: ReservationBook) -> None:
    # Context("Valid Releases") It("should release a single reservation")
    book.reserve("hostname-1", [SMALL])
    book.release("hostname-1", [SMALL])
    assert not has_reservation(book, "hostname-1", SMALL)


def test_releasing_what_is_not_held_is_harmless(book: ReservationBook) -> None:
    # It("should handle releasing non-existent reservations gracefully")
    book.release("hostname-1", [SMALL])
    assert book.remaining(SMALL) == 3


def test_releasing_from_another_hostname_is_harmless(book: ReservationBook) -> None:
    # It("should handle releasing from non-existent hostname gracefully")
    book.reserve("hostname-1", [SMALL])
    book.release("hostname-2", [SMALL])
    assert book.remaining(SMALL) == 2
    assert has_reservation(book, "hostname-1", SMALL)


def test_release_gives_several_back_at_once(book: ReservationBook) -> None:
    # Context("Multiple Releases") It("should handle multiple offerings in a single call")
    book.reserve("hostname-1", [SMALL, MEDIUM])
    book.release("hostname-1", [SMALL, MEDIUM])
    assert not has_reservation(book, "hostname-1", SMALL)
    assert not has_reservation(book, "hostname-1", MEDIUM)


def test_release_of_one_keeps_the_other(book: ReservationBook) -> None:
    # It("should handle partial releases")
    book.reserve("hostname-1", [SMALL, MEDIUM])
    book.release("hostname-1", [SMALL])
    assert not has_reservation(book, "hostname-1", SMALL)
    assert has_reservation(book, "hostname-1", MEDIUM)


def test_release_restores_capacity(book: ReservationBook) -> None:
    # Context("Capacity Restoration") It("should restore capacity when releasing reservations")
    for host in ("hostname-1", "hostname-2", "hostname-3"):
        book.reserve(host, [SMALL])
    assert book.remaining(SMALL) == 0
    book.release("hostname-1", [SMALL])
    assert book.remaining(SMALL) == 1


def test_capacity_after_reserve_release_cycles(book: ReservationBook) -> None:
    # It("should correctly track capacity after multiple reserve/release cycles")
    book.reserve("hostname-1", [SMALL])
    book.release("hostname-1", [SMALL])
    book.reserve("hostname-2", [SMALL])
    assert book.remaining(SMALL) == 2


# Describe("Integration Scenarios")

def test_complex_reservation_patterns(book: ReservationBook) -> None:
    # It("should handle complex reservation patterns")
    book.reserve("host-1", [MEDIUM, SMALL])
    book.reserve("host-2", [MEDIUM, LARGE])
    book.reserve("host-3", [SMALL])
    held = [("host-1", SMALL), ("host-1", MEDIUM), ("host-2", MEDIUM), ("host-2", LARGE),
            ("host-3", SMALL)]
    assert all(has_reservation(book, host, rid) for host, rid in held)
    assert (book.remaining(MEDIUM), book.remaining(SMALL), book.remaining(LARGE)) == (0, 1, 0)


def test_consistency_during_mixed_operations(book: ReservationBook) -> None:
    # It("should maintain consistency during mixed operations")
    book.reserve("host-1", [MEDIUM, SMALL])
    book.reserve("host-2", [SMALL, LARGE])
    book.release("host-1", [MEDIUM])
    book.reserve("host-3", [MEDIUM])
    book.release("host-2", [LARGE])
    assert not has_reservation(book, "host-1", MEDIUM)
    assert has_reservation(book, "host-1", SMALL)
    assert has_reservation(book, "host-2", SMALL)
    assert not has_reservation(book, "host-2", LARGE)
    assert has_reservation(book, "host-3", MEDIUM)
    # Karpenter's test reads the medium reservation three times; each reservation here.
    assert (book.remaining(MEDIUM), book.remaining(SMALL), book.remaining(LARGE)) == (1, 1, 1)
