"""One controller process: the controllers of `controllers.registry` on the operator's driver,
behind leader election, with probes and a clean stop.

    operator = Operator(cluster, cloud, OperatorSettings(...))
    operator.start()
    ...
    operator.stop()          # SIGTERM: stop taking work, finish the reconcile in flight,
                             # release the Lease

`Operator` takes its cluster and cloud ready-made, so the tests run it against the
in-memory cluster and the simulated EC2 exactly as `nodewright controller` runs it against
a real API server (`operator.main` builds those).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

from nodewright.cloud.provider import CloudProvider
from nodewright.cluster.api import ClusterAPI
from nodewright.cluster.kube.access import LEADER_ELECTION_LEASE, watched_kinds
from nodewright.controllers.options import ControllerOptions
from nodewright.controllers.registry import Controllers, build_controllers
from nodewright.operator import health
from nodewright.operator.driver import HealthLimits, OperatorDriver
from nodewright.operator.events import EventWriter
from nodewright.operator.fencing import fenced
from nodewright.operator.leader import LeaderElector, LeaseTiming
from nodewright.operator.shutdown import Shutdown
from nodewright.runtime.clock import SystemClock
from nodewright.runtime.concurrency import DEFAULT_CPU_REQUESTS
from nodewright.runtime.reconciler import Reconciler
from nodewright.runtime.statelock import StateLock

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class OperatorSettings:
    identity: str
    leader_elect: bool = True
    lease_name: str = LEADER_ELECTION_LEASE
    lease_namespace: str = "nodewright"
    timing: LeaseTiming = field(default_factory=LeaseTiming)
    controllers: ControllerOptions = field(default_factory=ControllerOptions)
    # How long the driver may idle between looks at the watch stream.
    idle_interval: float = 0.02
    health: HealthLimits = field(default_factory=HealthLimits)
    # CPU_REQUESTS (millicores): sizes the controllers whose workers scale with the CPU.
    cpu_requests: int = DEFAULT_CPU_REQUESTS


class Operator:
    def __init__(
        self,
        cluster: ClusterAPI,
        cloud: CloudProvider,
        settings: OperatorSettings,
        *,
        clock: SystemClock | None = None,
        extra: Sequence[Reconciler] = (),
        world_lock: StateLock | None = None,
        lease_cluster: ClusterAPI | None = None,
    ) -> None:
        """`lease_cluster` is the client leader election uses (default: `cluster`): a
        client of its own, with its own rate limit, so a throttled main client never
        delays a renewal (as controller-runtime gives leader election its own client)."""
        self.settings = settings
        self.cluster = cluster
        self.clock = clock or SystemClock()
        self.lost_leadership = threading.Event()
        self.elector: LeaderElector | None = None
        if settings.leader_elect:
            self.elector = LeaderElector(
                lease_cluster or cluster,
                name=settings.lease_name,
                namespace=settings.lease_namespace,
                identity=settings.identity,
                timing=settings.timing,
                on_started_leading=self._lead,
                on_stopped_leading=self._step_down,
            )
        # What the controllers and the Event writer write through (operator.fencing).
        self.writer = fenced(cluster, self.elector)
        self.controllers: Controllers = build_controllers(self.writer, cloud, self.clock,
                                                          settings.controllers)
        kinds = watched_kinds(capacity_buffer=settings.controllers.capacity_buffer)
        self.driver = OperatorDriver(cluster, clock=self.clock, kinds=kinds,
                                     idle_interval=settings.idle_interval,
                                     name=settings.identity, world_lock=world_lock,
                                     state_lock=self.controllers.state.lock,
                                     health=settings.health,
                                     cpu_requests=settings.cpu_requests)
        self.controllers.attach(self.driver)
        self.events = EventWriter(self.writer, world_lock=world_lock, clock=self.clock)
        self.controllers.recorder.send_to(self.events.submit)
        self.driver.add(*extra)

    # --- running --------------------------------------------------------------------------

    def start(self) -> None:
        """Watch at once (a standby keeps warm caches); reconcile once leading."""
        self.events.start()
        self.driver.start(leading=False)
        if self.elector is None:
            self._lead()
        else:
            self.elector.start()

    def _lead(self) -> None:
        log.info("leading: starting the controllers", extra={"identity": self.settings.identity})
        self.controllers.kick(self.driver)
        self.driver.leading.set()

    def _step_down(self) -> None:
        """The Lease was lost: stop writing at once. The process then exits (as Karpenter
        does) and comes back as a candidate with fresh state."""
        self.driver.leading.clear()
        self.lost_leadership.set()
        if self.elector is not None:
            self.elector.stop(release=False)

    def stop(self, timeout: float | None = None) -> bool:
        """A clean stop (SIGTERM): no new work, the reconcile in flight finishes, then the
        Lease is released so a standby takes over at its next retry. True when every
        phase ended within `timeout`, which they share."""
        self.driver.leading.clear()
        budget = Shutdown(timeout)  # one budget for every phase (operator.shutdown)
        stopped = budget.run("the controllers", self.driver.stop)
        budget.run("the event writer", self.events.stop)
        elector = self.elector
        if elector is not None:
            budget.run("leader election",
                       lambda left: elector.stop(release=stopped, timeout=left))
        return budget.clean

    # --- state ----------------------------------------------------------------------------

    def is_leader(self) -> bool:
        return self.driver.leading.is_set()

    def healthy(self) -> str | None:
        """None when healthy, else why not (for /healthz)."""
        if not self.driver.alive():
            return "the controller loop is not running"
        if self.lost_leadership.is_set():
            return "lost the leader Lease"
        threads = {"event writer": self.events.alive}
        if self.elector is not None:
            threads["leader election"] = self.elector.alive
        return (health.dead_thread(threads) or self.driver.stalled()
                or health.stuck_queue({"event writer": self.events.stuck_for},
                                      self.settings.health.stall_budget))

    def ready(self) -> str | None:
        """None when ready, else why not (for /readyz): the caches have synced, the
        leader Lease can be read and written (a standby waiting for it is ready), and a
        leader's last renewal went through."""
        if not self.driver.synced():
            return "the watch caches have not synced yet"
        if self.elector is not None:
            return self.elector.problem() or self.elector.renewal_problem()
        return None
