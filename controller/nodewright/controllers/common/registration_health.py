"""NodePool registration health (Karpenter's nodepoolhealth state and the writes of its
lifecycle controller to the NodePool's `NodeRegistrationHealthy` condition).

Each NodePool (by uid) keeps the outcomes of its last four NodeClaims in a ring buffer:
True when the node registered, False when the NodeClaim timed out launching or
registering. The pool is unhealthy when failures make up at least half of the buffer's
size (two of four: one failure on a fresh buffer is not enough), healthy when any outcome
is recorded and that is not so, unknown when nothing is. The condition goes False with
the launch's reason (or `RegistrationFailed`) only when the outcome being recorded tips
the pool into unhealthy, and True only when a registration leaves it healthy. The
NodePool status controller resets the buffer (and sets the condition Unknown) when the
NodePool's spec or its EC2NodeClass changes, and refills it from the condition after a
restart. The condition is not one of Ready's dependents: an unhealthy pool still
provisions, as in Karpenter.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Iterable, Mapping
from enum import Enum
from typing import Any

from nodewright.cluster import conditions, objects
from nodewright.cluster.api import ClusterAPI, ConflictError, NotFoundError
from nodewright.cluster.conditions import NODEPOOL
from nodewright.cluster.copying import deep_copy
from nodewright.controllers.common.patching import patch_status
from nodewright.runtime.clock import Clock
from nodewright.state.wellknown import NODEPOOL_LABEL

log = logging.getLogger(__name__)

NODE_REGISTRATION_HEALTHY = "NodeRegistrationHealthy"
BUFFER_SIZE = 4
UNHEALTHY_FRACTION = 0.5
REGISTRATION_FAILED = ("RegistrationFailed", "Failed to register node")
_WRITE_ATTEMPTS = 3


class Health(Enum):
    UNKNOWN = "Unknown"
    HEALTHY = "Healthy"
    UNHEALTHY = "Unhealthy"


def health_of(outcomes: Iterable[bool]) -> Health:
    """Karpenter's threshold: failures / buffer size >= 0.5 is unhealthy."""
    recorded = list(outcomes)
    if not recorded:
        return Health.UNKNOWN
    failures = sum(1 for outcome in recorded if not outcome)
    return Health.UNHEALTHY if failures / BUFFER_SIZE >= UNHEALTHY_FRACTION else Health.HEALTHY


class RegistrationHealth:
    """The outcome buffers of every NodePool, shared by the NodeClaim lifecycle (which
    records outcomes) and the NodePool status controller (which resets them)."""

    def __init__(self) -> None:
        self._buffers: dict[str, deque[bool]] = {}

    def _buffer(self, pool_uid: str) -> deque[bool]:
        buffer = self._buffers.get(pool_uid)
        if buffer is None:
            buffer = self._buffers[pool_uid] = deque(maxlen=BUFFER_SIZE)
        return buffer

    def status(self, pool_uid: str) -> Health:
        return health_of(self._buffer(pool_uid))

    def status_with(self, pool_uid: str, registered: bool) -> Health:
        """The status the pool would have once this outcome is recorded."""
        return health_of([*self._buffer(pool_uid), registered][-BUFFER_SIZE:])

    def record(self, pool_uid: str, registered: bool) -> None:
        self._buffer(pool_uid).append(registered)

    def reset(self, pool_uid: str, health: Health = Health.UNKNOWN) -> None:
        """Empty the buffer, or fill it with the fewest outcomes that give `health`."""
        buffer = self._buffer(pool_uid)
        buffer.clear()
        if health is Health.HEALTHY:
            buffer.append(True)
        elif health is Health.UNHEALTHY:
            buffer.extend([False] * int(BUFFER_SIZE * UNHEALTHY_FRACTION))

    def outcomes(self, pool_uid: str) -> tuple[bool, ...]:
        return tuple(self._buffer(pool_uid))


class RegistrationHealthWriter:
    """Records a NodeClaim's outcome and writes the NodePool's condition when it flips."""

    def __init__(self, cluster: ClusterAPI, clock: Clock, health: RegistrationHealth) -> None:
        self.cluster = cluster
        self.clock = clock
        self.health = health

    def registered(self, claim: Mapping[str, Any]) -> None:
        self._record(claim, registered=True)

    def failed(self, claim: Mapping[str, Any]) -> None:
        self._record(claim, registered=False)

    def _record(self, claim: Mapping[str, Any], *, registered: bool) -> None:
        pool_name = ((claim.get("metadata") or {}).get("labels") or {}).get(NODEPOOL_LABEL)
        if not pool_name:
            return
        uid = ""
        for _ in range(_WRITE_ATTEMPTS):
            try:
                pool = self.cluster.get("NodePool", str(pool_name))
            except NotFoundError:
                return
            uid = str((pool.get("metadata") or {}).get("uid") or "")
            if not _owned_by(claim, uid):
                return
            try:
                self._write(pool, uid, claim, registered)
            except ConflictError:
                continue
            except NotFoundError:
                return
            break
        else:
            log.warning("nodepool %s: %s stayed in conflict; outcome recorded without the "
                        "write", pool_name, NODE_REGISTRATION_HEALTHY)
        self.health.record(uid, registered)

    def _write(self, pool: dict[str, Any], uid: str, claim: Mapping[str, Any],
               registered: bool) -> None:
        after = deep_copy(pool)
        now = self.clock.now()
        outcome = self.health.status_with(uid, registered)
        if registered:
            if outcome is Health.HEALTHY:
                NODEPOOL.set_true(after, NODE_REGISTRATION_HEALTHY, now)
        elif outcome is Health.UNHEALTHY and not _is_false(pool):
            reason, message = _failure(claim)
            NODEPOOL.set_false(after, NODE_REGISTRATION_HEALTHY, now, reason, message)
        patch_status(self.cluster, pool, after)


def _owned_by(claim: Mapping[str, Any], pool_uid: str) -> bool:
    return any(
        ref.get("kind") == "NodePool" and ref.get("uid") == pool_uid
        for ref in (claim.get("metadata") or {}).get("ownerReferences") or []
    )


def _is_false(pool: Mapping[str, Any]) -> bool:
    return conditions.status_of(pool, NODE_REGISTRATION_HEALTHY) == conditions.FALSE


def _failure(claim: Mapping[str, Any]) -> tuple[str, str]:
    """A NodeClaim that launched failed to register; one that did not failed to launch,
    and the NodePool carries the launch's reason and message."""
    launched = objects.condition(claim, "Launched")
    if launched is None or launched.get("status") == conditions.TRUE:
        return REGISTRATION_FAILED
    return str(launched.get("reason") or "LaunchFailed"), str(launched.get("message") or "")
