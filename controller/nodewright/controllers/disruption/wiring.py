"""Building the disruption-side controllers for one cluster, cloud and clock, sharing the
core controllers' state cache and event recorder and one decision log.

`interruption_queue`: anything with `poll_once(handle)` (the SQS consumer of
`cloud.aws.interruption_queue`, the simulated EC2's `interruption_queue`); when not given,
the cloud's own `interruption_queue` attribute is used if it has one, and without a queue
there is no interruption controller. Offerings a spot interruption makes unavailable go to
the cloud's `unavailable` cache when it has one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from nodewright.cloud.metered import MeteredCloud
from nodewright.cloud.provider import CloudProvider
from nodewright.cluster.api import ClusterAPI
from nodewright.cluster.events import EventRecorder
from nodewright.controllers.common.decision_log import DecisionLog
from nodewright.controllers.disruption.controller import DisruptionController, DisruptionOptions
from nodewright.controllers.interruption.controller import (
    Interruption,
    InterruptionSource,
    OfferingMarker,
    ReservationMarker,
)
from nodewright.controllers.nodeclaim.disruption_conditions import NodeClaimConditions
from nodewright.controllers.nodeclaim.expiration import Expiration
from nodewright.controllers.nodepool.hash_annotations import HashController
from nodewright.runtime.clock import Clock
from nodewright.runtime.reconciler import Reconciler
from nodewright.state.cluster import ClusterState


@dataclass
class DisruptionControllers:
    decisions: DecisionLog
    disruption: DisruptionController
    conditions: NodeClaimConditions
    hashes: HashController
    expiration: Expiration
    interruption: Interruption | None

    @property
    def reconcilers(self) -> tuple[Reconciler, ...]:
        found: list[Reconciler] = [self.disruption, self.conditions, self.hashes,
                                   self.expiration]
        if self.interruption is not None:
            found.append(self.interruption)
        return tuple(found)

    @property
    def singletons(self) -> tuple[Reconciler, ...]:
        """Polling loops to start once with the key "" (no watch event starts them)."""
        found: list[Reconciler] = [self.disruption]
        if self.interruption is not None:
            found.append(self.interruption)
        return tuple(found)


def build_disruption(
    cluster: ClusterAPI,
    cloud: CloudProvider,
    clock: Clock,
    state: ClusterState,
    recorder: EventRecorder,
    *,
    options: DisruptionOptions | None = None,
    decisions: DecisionLog | None = None,
    interruption_queue: InterruptionSource | None = None,
) -> DisruptionControllers:
    decisions = decisions if decisions is not None else DecisionLog()
    queue = interruption_queue or cast(
        "InterruptionSource | None", getattr(cloud, "interruption_queue", None))
    unavailable = cast("OfferingMarker | None", getattr(cloud, "unavailable", None))
    return DisruptionControllers(
        decisions=decisions,
        disruption=DisruptionController(cluster, MeteredCloud(cloud, DisruptionController.name),
                                        clock, state, recorder, decisions, options),
        conditions=NodeClaimConditions(
            cluster, state, MeteredCloud(cloud, NodeClaimConditions.name), clock),
        hashes=HashController(cluster, state),
        expiration=Expiration(cluster, clock, state, recorder, decisions),
        interruption=(
            Interruption(cluster, clock, state, recorder, queue, unavailable, decisions,
                         reservations=reservations_of(cloud))
            if queue is not None else None
        ),
    )


def reservations_of(cloud: object) -> ReservationMarker | None:
    """The cloud's capacity reservation availability, when it can mark one unavailable."""
    reservations = getattr(cloud, "reservations", None)
    marker = getattr(reservations, "mark_unavailable", None)
    return cast("ReservationMarker", reservations) if callable(marker) else None
