"""The pure parts of the status controllers: the registration-health buffer, the pod
event filter and how condition sets follow generations."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from nodewright.cluster import objects
from nodewright.cluster.conditions import NODEPOOL
from nodewright.controllers.common.registration_health import (
    BUFFER_SIZE,
    Health,
    RegistrationHealth,
    health_of,
)
from nodewright.controllers.nodeclaim.podevents import PodPhase, is_pod_event

UID = "pool-uid"


def test_nothing_recorded_is_unknown_and_one_failure_is_not_unhealthy() -> None:
    assert health_of([]) is Health.UNKNOWN
    assert health_of([False]) is Health.HEALTHY
    assert health_of([True, False]) is Health.HEALTHY
    assert health_of([False, False]) is Health.UNHEALTHY
    assert health_of([True, True, False, False]) is Health.UNHEALTHY
    assert health_of([True, True, True, False]) is Health.HEALTHY


def test_after_two_failures_three_registrations_make_the_pool_healthy_again() -> None:
    health = RegistrationHealth()
    health.record(UID, False)
    health.record(UID, False)
    for _ in range(2):
        assert health.status_with(UID, True) is Health.UNHEALTHY
        health.record(UID, True)
    assert health.status_with(UID, True) is Health.HEALTHY


def test_a_reset_refills_the_buffer_with_what_the_condition_said() -> None:
    health = RegistrationHealth()
    health.reset(UID, Health.UNHEALTHY)
    assert health.status(UID) is Health.UNHEALTHY
    assert health.status_with(UID, True) is Health.UNHEALTHY
    health.reset(UID, Health.HEALTHY)
    assert health.outcomes(UID) == (True,)
    health.reset(UID)
    assert health.status(UID) is Health.UNKNOWN


@given(st.lists(st.booleans(), max_size=12), st.booleans())
def test_the_buffer_judges_the_last_four_outcomes(outcomes: list[bool], extra: bool) -> None:
    health = RegistrationHealth()
    for outcome in outcomes:
        health.record(UID, outcome)
    last = outcomes[-BUFFER_SIZE:]
    assert health.outcomes(UID) == tuple(last)
    expected = (Health.UNKNOWN if not last
                else Health.UNHEALTHY if last.count(False) >= 2 else Health.HEALTHY)
    assert health.status(UID) is expected
    predicted = health.status_with(UID, extra)
    health.record(UID, extra)
    assert health.status(UID) is predicted


UNBOUND = PodPhase("", False, False)
BOUND = PodPhase("node-a", False, False)


def test_binding_terminating_and_going_terminal_are_pod_events() -> None:
    assert is_pod_event(UNBOUND, BOUND)
    assert is_pod_event(BOUND, PodPhase("node-a", False, True))
    assert is_pod_event(BOUND, PodPhase("node-a", True, False))


def test_status_updates_of_a_bound_pod_and_unbound_changes_are_not() -> None:
    assert not is_pod_event(BOUND, BOUND)
    assert not is_pod_event(UNBOUND, UNBOUND)
    assert not is_pod_event(UNBOUND, PodPhase("", True, False))
    assert not is_pod_event(PodPhase("node-a", True, True), PodPhase("node-a", True, True))


def test_conditions_start_at_creation_and_ready_waits_for_the_current_generation() -> None:
    created = datetime(2026, 1, 5, tzinfo=UTC)
    pool: dict[str, Any] = {"metadata": {"generation": 1,
                                         "creationTimestamp": "2026-01-05T00:00:00Z"}}
    later = created + timedelta(minutes=1)
    NODEPOOL.initialize(pool, later)
    awaiting = objects.condition(pool, "NodeClassReady")
    assert awaiting is not None and awaiting["lastTransitionTime"] == "2026-01-05T00:00:00Z"
    NODEPOOL.set_true(pool, "ValidationSucceeded", later)
    NODEPOOL.set_false(pool, "NodeClassReady", later, "NodeClassNotFound", "gone")
    assert (objects.condition(pool, "Ready") or {}).get("status") == "False"

    # The spec changes: a False written for generation 1 no longer decides Ready.
    pool["metadata"]["generation"] = 2
    NODEPOOL.set_true(pool, "ValidationSucceeded", later)
    ready = objects.condition(pool, "Ready")
    assert ready is not None and (ready["status"], ready["reason"]) == (
        "Unknown", "ReconcilingDependents")
    NODEPOOL.set_true(pool, "NodeClassReady", later)
    assert (objects.condition(pool, "Ready") or {}).get("status") == "True"
    assert all(c["observedGeneration"] == 2 for c in pool["status"]["conditions"])
