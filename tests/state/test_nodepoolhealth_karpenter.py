"""Karpenter's NodePool registration-health state and the ring buffer under it, ported:
kubernetes-sigs/karpenter v1.14.1 pkg/state/nodepoolhealth/suite_test.go and
pkg/utils/ringbuffer/suite_test.go. Each test names its It.

Karpenter's `nodepoolhealth.State` is our `RegistrationHealth`
(controllers/common/registration_health.py): per NodePool uid, the outcomes of its last
four NodeClaims (True: the node registered). `Update` is `record`, `Status` is `status`,
`SetStatus` is `reset(uid, health)`, `DryRun(uid, outcome).Status()` is `status_with`.
Its ring buffer is the `deque` bounded to the buffer size that holds each pool's outcomes
(`outcomes`)."""

from __future__ import annotations

from nodewright.controllers.common.registration_health import (
    BUFFER_SIZE,
    Health,
    RegistrationHealth,
)

POOL = "6b1f7c56-0d7c-4c43-9f0e-2f8d1f9c3a11"


# -- pkg/state/nodepoolhealth/suite_test.go -------------------------------------------------


def test_a_new_nodepool_is_unknown() -> None:
    """It("should expect status unknown for a new nodePool with empty buffer")."""
    assert RegistrationHealth().status(POOL) is Health.UNKNOWN


def test_one_registration_makes_a_nodepool_healthy() -> None:
    """It("should expect status healthy for a nodePool with one true entry")."""
    health = RegistrationHealth()
    health.record(POOL, True)
    assert health.status(POOL) is Health.HEALTHY


def test_two_failures_make_a_nodepool_unhealthy() -> None:
    """It("should expect status unhealthy for a nodePool with two false entries")."""
    health = RegistrationHealth()
    health.record(POOL, False)
    assert health.status(POOL) is Health.HEALTHY  # one failure of four is not enough
    health.record(POOL, False)
    assert health.status(POOL) is Health.UNHEALTHY


def test_one_registration_after_two_failures_leaves_it_unhealthy() -> None:
    """It("should expect status unhealthy for a nodePool with two false entries and one
    true entry")."""
    health = RegistrationHealth()
    health.reset(POOL, Health.UNHEALTHY)
    health.record(POOL, True)
    assert health.outcomes(POOL) == (False, False, True)
    assert health.status(POOL) is Health.UNHEALTHY


def test_each_nodepool_has_its_own_health() -> None:
    """It("should return the correct status in case of multiple nodepools stored in the
    state")."""
    other = "0e9c2f5d-5a0b-4c1e-8e6a-7b2d9c4f1e22"
    health = RegistrationHealth()
    health.record(POOL, True)
    health.record(other, False)
    health.record(other, False)
    assert health.status(POOL) is Health.HEALTHY
    assert health.status(other) is Health.UNHEALTHY
    health.reset(other, Health.UNKNOWN)
    assert health.status(other) is Health.UNKNOWN
    assert health.status(POOL) is Health.HEALTHY


def test_a_dry_run_does_not_touch_the_recorded_outcomes() -> None:
    """It("should create a copy of the tracker and update it and not the original tracker
    in case of Dry Run")."""
    health = RegistrationHealth()
    health.reset(POOL, Health.HEALTHY)
    health.record(POOL, False)
    assert health.status(POOL) is Health.HEALTHY
    assert health.status_with(POOL, False) is Health.UNHEALTHY
    assert health.status(POOL) is Health.HEALTHY
    assert health.outcomes(POOL) == (True, False)


def test_setting_a_status_empties_the_buffer_first() -> None:
    """It("should reset the buffer first when setting status")."""
    health = RegistrationHealth()
    health.record(POOL, False)
    health.record(POOL, False)
    assert health.status(POOL) is Health.UNHEALTHY
    health.reset(POOL, Health.HEALTHY)
    assert health.outcomes(POOL) == (True,)
    assert health.status(POOL) is Health.HEALTHY


# -- pkg/utils/ringbuffer/suite_test.go -----------------------------------------------------


def test_the_buffer_holds_outcomes_until_reset() -> None:
    """It("should validate ring buffer functionality"): room for four, one recorded, then
    none after a reset."""
    health = RegistrationHealth()
    health.record(POOL, True)
    assert health.outcomes(POOL) == (True,)
    health.reset(POOL)
    assert health.outcomes(POOL) == ()
    for _ in range(BUFFER_SIZE + 3):
        health.record(POOL, True)
    assert len(health.outcomes(POOL)) == BUFFER_SIZE == 4


def test_a_full_buffer_lets_its_oldest_outcome_go() -> None:
    """It("should expect the oldest entry in the buffer to be replaced when the buffer is
    full")."""
    health = RegistrationHealth()
    for _ in range(BUFFER_SIZE):
        health.record(POOL, True)
    health.record(POOL, False)
    assert health.outcomes(POOL) == (True,) * (BUFFER_SIZE - 1) + (False,)
    health.record(POOL, False)
    assert health.outcomes(POOL) == (True,) * (BUFFER_SIZE - 2) + (False, False)
    assert health.status(POOL) is Health.UNHEALTHY
