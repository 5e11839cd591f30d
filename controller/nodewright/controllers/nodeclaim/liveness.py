"""Liveness: a NodeClaim that has not launched within 5 minutes, or whose node has not
registered within 15 minutes of its creation, is deleted (its pods are provisioned again).
Either failure counts against its NodePool's registration health first."""

from __future__ import annotations

import logging

from nodewright import metrics
from nodewright.cluster import conditions, objects
from nodewright.cluster.api import NotFoundError
from nodewright.controllers.nodeclaim.context import (
    LifecycleContext,
    Object,
    name_of,
)
from nodewright.controllers.nodeclaim.launch import LAUNCHED
from nodewright.controllers.nodeclaim.registration import REGISTERED

log = logging.getLogger(__name__)

LAUNCH_TIMEOUT_SECONDS = 5 * 60.0
REGISTRATION_TIMEOUT_SECONDS = 15 * 60.0


class Liveness:
    def __init__(
        self,
        context: LifecycleContext,
        launch_timeout: float = LAUNCH_TIMEOUT_SECONDS,
        registration_timeout: float = REGISTRATION_TIMEOUT_SECONDS,
    ) -> None:
        self.context = context
        self.launch_timeout = launch_timeout
        self.registration_timeout = registration_timeout

    def reconcile(self, claim: Object) -> tuple[bool, float | None]:
        """(deleted, requeue_after)."""
        if objects.condition_is_true(claim, REGISTERED):
            return False, None
        now = self.context.clock.now()
        if not objects.condition_is_true(claim, LAUNCHED):
            since = conditions.transition_time(claim, LAUNCHED)
            if since is None:
                return False, 1.0
            left = self.launch_timeout - (now - since).total_seconds()
            if left > 0:
                return False, left
            return self._delete(claim, "launch_timeout", self.launch_timeout), None
        # As Karpenter: from Registered's last transition, which is the NodeClaim's creation
        # unless the condition went False in between (launch time included).
        since = conditions.transition_time(claim, REGISTERED)
        if since is None:
            return False, 1.0
        left = self.registration_timeout - (now - since).total_seconds()
        if left > 0:
            return False, left
        return self._delete(claim, "registration_timeout", self.registration_timeout), None

    def _delete(self, claim: Object, reason: str, timeout: float) -> bool:
        name = name_of(claim)
        if self.context.health is not None:
            self.context.health.failed(claim)
        log.info("deleting nodeclaim %s: %s after %.0fs", name, reason, timeout)
        try:
            self.context.cluster.delete("NodeClaim", name)
        except NotFoundError:
            return True
        metrics.NODECLAIMS_DISRUPTED.labels(**metrics.disrupted_labels(claim, reason)).inc()
        return True
