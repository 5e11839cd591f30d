"""The production driver of the reconcilers (architecture, section 2b), in real time.

The same contract as `nodewright.controllers.driver.VirtualDriver`: `add` reconcilers,
`listen` to every watch event (the state cache), `enqueue` keys. Watch events from the
cluster feed the listeners and then each reconciler's work queue through its `watches`;
each controller has its own queue (deduplicated keys, rate-limited retries, timers for
`requeue_after`). One loop thread delivers events, fires timers and runs reconciles one
at a time, taking controllers in turn: the reconcilers and the state cache they share were
written for a single-threaded driver, and this keeps them so.

`world_lock`, when given, is held around every unit of work (a reconcile, a timer, a batch
of events): tests run several drivers (the cluster's actors, two operators) against one
in-memory cluster that is not thread-safe, and the lock makes them take turns.

`stalled()` is the liveness of the loop (/healthz): a controller that has had work for
longer than its budget without finishing a reconcile (time spent reconciling other
controllers is not charged to it, so one long disruption pass does not make the others
look stuck), or one reconcile running past its controller's budget, means the loop is
wedged and the kubelet should restart the process.

Only the leader reconciles: while `leading` is clear (a standby replica, or before the
Lease is won) events still reach the listeners and keys still gather in the queues, so a
replica that takes over starts with warm caches and its work already queued.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from datetime import datetime

from nodewright import metrics
from nodewright.cluster.api import ApiError, ClusterAPI, ConflictError, WatchStream
from nodewright.cluster.kube.access import WATCHED_KINDS
from nodewright.operator import logs
from nodewright.operator.clock import LoopClock
from nodewright.operator.workqueue import RateLimiter, WorkQueue
from nodewright.runtime.reconciler import Reconciler, WatchEvent

# Reconcile failures kept in `OperatorDriver.errors`.
ERRORS_KEPT = 200
FORBIDDEN_HINT = (" (the RBAC that `nodewright manifests` renders grants every request the "
                  "controller makes: apply the manifests again and check their bindings)")

Listener = Callable[[WatchEvent], None]


@dataclass(frozen=True)
class HealthLimits:
    """When /healthz fails. Generous: a restart costs a re-list of the whole cluster."""

    # How long a controller may have work without finishing one reconcile.
    stall_budget: float = 120.0
    # Controllers whose one reconcile may simulate the whole cluster.
    stall_budgets: Mapping[str, float] = field(
        default_factory=lambda: {"disruption": 600.0, "provisioner": 600.0})
    # How long an informer may go without an open watch.
    disconnected: float = 300.0

    def budget(self, controller: str) -> float:
        return self.stall_budgets.get(controller, self.stall_budget)

log = logging.getLogger(__name__)


class OperatorDriver:
    def __init__(
        self,
        cluster: ClusterAPI,
        *,
        clock: LoopClock | None = None,
        kinds: Iterable[str] = WATCHED_KINDS,
        idle_interval: float = 0.02,
        rate_limiter: Callable[[], RateLimiter] = RateLimiter,
        name: str = "nodewright",
        world_lock: AbstractContextManager[object] | None = None,
        health: HealthLimits | None = None,
    ) -> None:
        self.cluster = cluster
        self.clock = clock or LoopClock()
        self.clock.wake = self._wake
        self.name = name
        self._kinds = tuple(kinds)
        self._idle_interval = idle_interval
        self._rate_limiter = rate_limiter
        self._world_lock: AbstractContextManager[object] = world_lock or nullcontext()
        self._reconcilers: list[Reconciler] = []
        self._queues: dict[int, WorkQueue] = {}
        self._listeners: list[Listener] = []
        self._lock = threading.RLock()
        self._wakeup = threading.Event()
        self._stopping = threading.Event()
        self.leading = threading.Event()
        self._stream: WatchStream | None = None
        self._thread: threading.Thread | None = None
        self._turn = 0
        # The latest failures (for tests and debugging); bounded: a long-running process
        # sees conflicts all the time, and each error holds its traceback's frames.
        self.errors: deque[tuple[str, str, BaseException]] = deque(maxlen=ERRORS_KEPT)
        self.reconciles = 0
        self.health = health or HealthLimits()
        # Per controller: when it last finished a reconcile or had no work (monotonic),
        # moved forward by the time the loop spent on other controllers.
        self._progress: dict[int, float] = {}
        self._in_flight: tuple[Reconciler, float] | None = None

    # --- set-up -------------------------------------------------------------------------

    def add(self, *reconcilers: Reconciler) -> None:
        for reconciler in reconcilers:
            unwatched = sorted({w.kind for w in reconciler.watches} - set(self._kinds))
            if unwatched:
                raise ValueError(
                    f"controller {reconciler.name} watches {', '.join(unwatched)}, which the "
                    f"operator does not watch (nodewright.cluster.kube.access.WATCHED_KINDS "
                    f"is also the source of the RBAC rules: add the kind there)"
                )
            with self._lock:
                self._reconcilers.append(reconciler)
                self._queues[id(reconciler)] = WorkQueue(reconciler.name, self._rate_limiter())
                self._progress[id(reconciler)] = time.monotonic()

    def listen(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def start(self, *, leading: bool = True) -> None:
        """Open the watch (the current objects arrive as ADDED events) and start the loop.
        `leading=False` starts as a standby until `leading` is set."""
        if leading:
            self.leading.set()
        self._stream = self.cluster.watch(self._kinds)
        self._thread = threading.Thread(target=self._run, name=f"{self.name}-driver",
                                        daemon=True)
        self._thread.start()

    def stop(self, timeout: float | None = None) -> bool:
        """Stop taking work; the reconcile in progress finishes. True once the loop ended."""
        self._stopping.set()
        self._wake()
        stopped = True
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)
            stopped = not self._thread.is_alive()
        if self._stream is not None:
            self._stream.close()
        return stopped

    # --- state ----------------------------------------------------------------------------

    def synced(self) -> bool:
        return self._stream is not None and self._stream.synced()

    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def pending(self) -> int:
        with self._lock:
            return sum(len(queue) for queue in self._queues.values())

    def stalled(self) -> str | None:
        """Why the loop looks wedged, or None (see the module's docstring)."""
        if not self.leading.is_set():
            return None
        with self._lock:
            now = time.monotonic()
            busy_elsewhere = 0.0
            if self._in_flight is not None:
                current, started = self._in_flight
                running = now - started
                budget = self.health.budget(current.name)
                if running > budget:
                    return (f"controller {current.name} has been in one reconcile for "
                            f"{running:.0f}s (budget {budget:.0f}s)")
                busy_elsewhere = running
            for reconciler in self._reconcilers:
                if not self._queues[id(reconciler)].busy():
                    continue
                waited = now - self._progress[id(reconciler)]
                if self._in_flight is not None and self._in_flight[0] is not reconciler:
                    waited -= busy_elsewhere
                budget = self.health.budget(reconciler.name)
                if waited > budget:
                    return (f"controller {reconciler.name} has had work for {waited:.0f}s "
                            f"without finishing a reconcile (budget {budget:.0f}s)")
        return None

    @property
    def reconcilers(self) -> Sequence[Reconciler]:
        return tuple(self._reconcilers)

    # --- queues -----------------------------------------------------------------------------

    def enqueue(self, reconciler: Reconciler, key: str, when: datetime | None = None) -> None:
        """Make `key` due now or at `when`; safe from any thread."""
        delay = 0.0 if when is None else (when - self.clock.now()).total_seconds()
        with self._lock:
            queue = self._queues[id(reconciler)]
            queue.add_after(key, delay, time.monotonic())
        self._wake()

    def _wake(self) -> None:
        self._wakeup.set()

    # --- the loop -------------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stopping.is_set():
            self._wakeup.clear()
            with self._world_lock:
                worked = self._fire_timers()
            with self._world_lock:
                worked |= self._deliver()
            with self._world_lock:
                worked |= self._reconcile_one()
            if not worked:
                self._wakeup.wait(self._idle_wait())

    def _idle_wait(self) -> float:
        now = time.monotonic()
        candidates = [self._idle_interval]
        next_timer = self.clock.next_due()
        if next_timer is not None:
            candidates.append(next_timer - now)
        with self._lock:
            for queue in self._queues.values():
                due = queue.next_due()
                if due is not None:
                    candidates.append(due - now)
        return max(0.0, min(candidates))

    def _fire_timers(self) -> bool:
        callbacks = self.clock.due_callbacks(time.monotonic())
        for callback in callbacks:
            try:
                callback()
            except Exception:
                log.exception("timer callback failed")
        return bool(callbacks)

    def _deliver(self) -> bool:
        if self._stream is None:
            return False
        delivered = False
        events = self._stream.poll()
        while events:
            delivered = True
            for event in events:
                self._dispatch(event)
            events = self._stream.poll()
        return delivered

    def _dispatch(self, event: WatchEvent) -> None:
        for listener in self._listeners:
            try:
                listener(event)
            except Exception:
                log.exception("watch listener failed on %s %s", event.kind, event.key)
        with self._lock:
            for reconciler in self._reconcilers:
                for watch in reconciler.watches:
                    if watch.kind == event.kind:
                        for key in watch.keys(event):
                            self._queues[id(reconciler)].add(key)

    def _next_work(self) -> tuple[Reconciler, WorkQueue, str] | None:
        """The next ready key, taking controllers in turn so none starves the others."""
        with self._lock:
            now = time.monotonic()
            for reconciler_id, queue in self._queues.items():
                queue.promote_due(now)
                if not queue.busy():
                    self._progress[reconciler_id] = now
            count = len(self._reconcilers)
            for offset in range(count):
                index = (self._turn + offset) % count
                reconciler = self._reconcilers[index]
                queue = self._queues[id(reconciler)]
                key = queue.get()
                if key is not None:
                    self._turn = index + 1
                    return reconciler, queue, key
        return None

    def _reconcile_one(self) -> bool:
        # Checked here, under the world lock, not before taking it: a replica that stepped
        # down (or a test that froze it) while this thread waited must not write once more.
        if not self.leading.is_set() or self._stopping.is_set():
            with self._lock:  # a standby's queues fill up without anyone stalling
                now = time.monotonic()
                self._progress = dict.fromkeys(self._progress, now)
            return False
        work = self._next_work()
        if work is None:
            return False
        reconciler, queue, key = work
        self.reconciles += 1
        with self._lock:
            self._in_flight = (reconciler, time.monotonic())
        try:
            with metrics.measure(metrics.RECONCILE_TIME, controller=reconciler.name), \
                    logs.reconciling(reconciler.name, key):
                result = reconciler.reconcile(key)
        except Exception as error:
            self._finished(reconciler)
            with self._lock:
                queue.done(key)
                delay = queue.add_rate_limited(key, time.monotonic())
            self.errors.append((reconciler.name, key, error))
            metrics.RECONCILE_TOTAL.labels(controller=reconciler.name, result="error").inc()
            metrics.RECONCILE_ERRORS.labels(controller=reconciler.name).inc()
            level = logging.DEBUG if isinstance(error, ConflictError) else logging.ERROR
            log.log(level, "reconcile failed; retrying in %.3fs: %s%s", delay, error,
                    FORBIDDEN_HINT if isinstance(error, ApiError) and error.status == 403
                    else "", extra={"controller": reconciler.name, "key": key})
            return True
        self._finished(reconciler)
        with self._lock:
            queue.done(key)
            queue.forget(key)
            if result.requeue_after is not None:
                queue.add_after(key, result.requeue_after, time.monotonic())
        outcome = "success" if result.requeue_after is None else "requeue_after"
        metrics.RECONCILE_TOTAL.labels(controller=reconciler.name, result=outcome).inc()
        return True

    def _finished(self, reconciler: Reconciler) -> None:
        """A reconcile ended: progress for its controller; the others are not charged for
        the time it took."""
        with self._lock:
            now = time.monotonic()
            started = self._in_flight[1] if self._in_flight is not None else now
            self._in_flight = None
            for reconciler_id, progress in self._progress.items():
                self._progress[reconciler_id] = min(now, progress + (now - started))
            self._progress[id(reconciler)] = now
