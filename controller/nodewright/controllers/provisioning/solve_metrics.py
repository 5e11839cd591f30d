"""The metrics Karpenter's Scheduler.Solve writes for each scheduling simulation, under the
controller that runs it ("provisioner", "disruption"): the duration, the pods queued (the
batch, then 0 once solved: the solve is one call here, not a queue popped pod by pod), how
long the solve in progress has run (read at scrape time, gone once it ends), and the
pending pods by effective zone (with the zones their topology terms leave them, when the
caller sets `zones` on the simulation). Each simulation drops the controller's previous
series of the queue, the zones and the unschedulable count, as Karpenter's does."""

from __future__ import annotations

import itertools
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field

from nodewright import metrics
from nodewright.scheduling.effective_zone import effective_zone
from nodewright.scheduling.pods import Pod

_ids = itertools.count(1)


@dataclass
class Simulation:
    """`zones`: per pending pod key, what `solver.zone_constraints` found (set before the
    simulation ends)."""

    zones: Mapping[str, frozenset[str] | None] = field(default_factory=dict)


@contextmanager
def scheduling_simulation(controller: str, queued: int,
                          pending: Iterable[Pod] = ()) -> Iterator[Simulation]:
    """Around one solve of `queued` pods; `pending`: those of them that are Pending."""
    for gauge in (metrics.SCHEDULER_UNSCHEDULABLE_PODS, metrics.SCHEDULER_PENDING_BY_ZONE,
                  metrics.SCHEDULER_QUEUE_DEPTH):
        metrics.remove_matching(gauge, controller=controller)
    pending = list(pending)
    simulation = Simulation()
    queue = {"controller": controller, "scheduling_id": f"{controller}-{next(_ids)}"}
    metrics.SCHEDULER_QUEUE_DEPTH.labels(**queue).set(queued)
    started = time.perf_counter()
    metrics.SCHEDULER_UNFINISHED_WORK.labels(**queue).set_function(
        lambda: time.perf_counter() - started)
    try:
        with metrics.measure(metrics.SCHEDULING_DURATION, controller=controller):
            yield simulation
    finally:
        metrics.SCHEDULER_UNFINISHED_WORK.remove(*queue.values())
        metrics.SCHEDULER_QUEUE_DEPTH.labels(**queue).set(0)
        zones = Counter(effective_zone(pod, simulation.zones.get(pod.key, frozenset()))
                        for pod in pending)
        for zone, count in zones.items():
            metrics.SCHEDULER_PENDING_BY_ZONE.labels(controller=controller, zone=zone).set(count)
