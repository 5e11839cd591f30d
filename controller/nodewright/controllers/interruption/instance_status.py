"""Instance status health checks (Karpenter's interruption.instancestatus controller): every
minute, ask EC2 which instances are unhealthy and treat ours like interruption messages.

The source (`cloud.aws.instance_statuses.InstanceStatusProvider`, or the simulated EC2's)
reports instances with a failed instance check, a failed system check (each failed for 2
minutes) or a scheduled event. Each failed category of one of our NodeClaims' instances
becomes an interruption event acted on by the interruption controller's own handler:

| category       | kind            | action                                                |
|----------------|-----------------|-------------------------------------------------------|
| InstanceStatus | instance_status | InstanceUnhealthy event, NodeClaim terminated now     |
| SystemStatus   | system_status   | InstanceUnhealthy event, NodeClaim terminated now     |
| EventStatus    | event_status    | InstanceUnhealthy event, NodeClaim deleted (drained)  |
| EBSStatus      | -               | ignored (a pod's volume cannot be told from the root) |

karpenter_interruption_instance_status_unhealthy_total{category} counts each unhealthy
instance and category once while it stays unhealthy (again if it recovers and fails
anew), and only for instances that are ours. `dry_run` (Karpenter's InstanceStatusDryRun,
which no setting of its exposes) counts and logs without acting.

Without ec2:DescribeInstanceStatus in the controller's policy, one error says so and the
checks stop until the process restarts; everything else keeps running.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Final

from nodewright import metrics
from nodewright.cloud.aws.instance_statuses import UNAUTHORIZED_CODE, Category, HealthStatus
from nodewright.cloud.aws.interruption_events import EventKind, InterruptionEvent
from nodewright.cloud.capabilities import InstanceStatusSource
from nodewright.cloud.provider import CloudProviderError
from nodewright.cluster.api import ClusterAPI
from nodewright.cluster.events import EventRecorder
from nodewright.controllers.common import decision_log as ex
from nodewright.controllers.interruption.controller import InterruptionHandler
from nodewright.runtime.clock import Clock, format_time
from nodewright.runtime.reconciler import Result, Watch
from nodewright.state import ClusterState

log = logging.getLogger(__name__)

POLL_SECONDS: Final = 60.0
KINDS: Final = {
    Category.INSTANCE_STATUS: EventKind.INSTANCE_STATUS,
    Category.SYSTEM_STATUS: EventKind.SYSTEM_STATUS,
    Category.EVENT_STATUS: EventKind.EVENT_STATUS,
}


class InstanceStatusChecks(InterruptionHandler):
    name = "interruption.instancestatus"
    # EC2 is asked outside the state lock; the answer is acted on under it.
    manages_state_lock = True

    def __init__(
        self,
        cluster: ClusterAPI,
        clock: Clock,
        state: ClusterState,
        recorder: EventRecorder,
        source: InstanceStatusSource,
        decisions: ex.DecisionLog | None = None,
        *,
        dry_run: bool = False,
        poll_seconds: float = POLL_SECONDS,
    ) -> None:
        super().__init__(cluster, clock, state, recorder, None, decisions)
        self.source = source
        self.dry_run = dry_run
        self.poll_seconds = poll_seconds
        # (instance, category) counted in the metric and still unhealthy.
        self.seen: set[tuple[str, Category]] = set()
        self.stopped = False

    @property
    def watches(self) -> Sequence[Watch]:
        # A polling singleton: the wiring starts it; a NodePool seen at startup does too.
        return (Watch("NodePool", lambda e: ("",) if e.type == "ADDED" else ()),)

    def reconcile(self, key: str) -> Result:
        if self.stopped:
            return Result()
        try:
            statuses = self.source.list()
        except CloudProviderError as error:
            if error.code != UNAUTHORIZED_CODE:
                raise
            self.stopped = True
            log.error("ec2:DescribeInstanceStatus is not allowed: instance status health "
                      "checks are off; add it to the controller's IAM policy and restart "
                      "the controller to turn them on (%s)", error,
                      extra={"controller": self.name})
            return Result()
        with self.state.lock:
            self._handle(statuses)
        return Result(requeue_after=self.poll_seconds)

    def _handle(self, statuses: Sequence[HealthStatus]) -> None:
        machines = self.machines_by_instance()
        current: set[tuple[str, Category]] = set()
        failure: Exception | None = None
        for status in statuses:
            node = machines.get(status.instance_id)
            if node is None:
                continue
            deleted = False
            since = status.impaired_since
            # Category order puts the forceful kinds first: a broken instance that also has
            # maintenance scheduled is terminated now, not drained.
            for category in status.categories:
                kind = KINDS.get(category)
                if kind is None:
                    continue
                if not (self.dry_run or deleted):
                    event = InterruptionEvent(kind, status.instance_id, "", category.value,
                                              format_time(since) if since else "")
                    try:
                        deleted = self.act(event, node)
                    except Exception as error:  # the other instances still get acted on
                        failure = failure or error
                        continue
                self._count(status.instance_id, category, current)
        self.seen &= current
        if failure is not None:
            raise failure

    def _count(self, instance_id: str, category: Category,
               current: set[tuple[str, Category]]) -> None:
        key = (instance_id, category)
        current.add(key)
        if key in self.seen:
            return
        self.seen.add(key)
        log.info("detected unhealthy instance owned by cluster",
                 extra={"controller": self.name, "instanceID": instance_id,
                        "category": category.value})
        metrics.INTERRUPTION_INSTANCE_STATUS_UNHEALTHY.labels(category=category.value).inc()
