"""The production driver of the reconcilers (architecture, section 2b), in real time.

The same contract as `nodewright.controllers.driver.VirtualDriver`: `add` reconcilers,
`listen` to every watch event (the state cache), `enqueue` keys. As in controller-runtime,
each controller has its own work queue (deduplicated keys, rate-limited retries, delays
for `requeue_after`) and its own worker thread (or several, when the reconciler says
`max_concurrent_reconciles`: sized with the container's CPU request as Karpenter sizes
them, and capped, `runtime.concurrency`; the queue's retries are paced by the controller's
`retry_limits`, `runtime.ratelimit`), so a provisioning solve or a disruption pass never
holds up an interruption, a drain or a registration, and a burst of launches runs side by
side. The queue never hands one key to two workers at once. One dispatcher thread reads
the watch stream, hands each event to the listeners, queues the keys the controllers'
`watches` map it to, and fires the clock's timers.

The state cache and what the controllers share were written for one thread. `state_lock`
(the cache's `StateLock`) is held while the dispatcher delivers events or fires timers
and around each reconcile, except for the reconcilers that say
`manages_state_lock = True`: the CPU-heavy provisioner and disruption loop take it
themselves, read (or copy) what they need, and compute outside it (docs/decisions.md,
"Concurrency").

`world_lock`, when given, is held around every unit of work (a reconcile, a timer, a batch
of events) but for its requests: tests run several drivers (the cluster's actors, two
operators) against one in-memory cluster that is not thread-safe, and the lock makes them
take turns. A request steps out of it as out of the state lock (it is the state lock's
`outer`: `StateLock.requesting`), and that cluster's client takes it for each call: held
through a request it would keep the other drivers waiting on the network, and a reconcile
waiting on requests its own threads make (a round's NodeClaims created together) would
wait forever for the lock it holds.

`stalled()` is the liveness of each controller (/healthz): one that has had work for
longer than its budget without finishing a reconcile, or one reconcile running past its
controller's budget, means that controller is wedged and the kubelet should restart the
process. Each controller is judged on its own worker alone.

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
from nodewright.cluster.fencing import FencedError
from nodewright.cluster.kube.access import WATCHED_KINDS
from nodewright.operator import logs
from nodewright.operator.workqueue import RateLimiter, WorkQueue
from nodewright.runtime.clock import SystemClock
from nodewright.runtime.concurrency import DEFAULT_CPU_REQUESTS
from nodewright.runtime.reconciler import (
    Reconciler,
    WatchEvent,
    concurrent_reconciles,
    manages_state_lock,
    retry_limiter,
    size_for_cpu,
)
from nodewright.runtime.statelock import StateLock

# Reconcile failures kept in `OperatorDriver.errors`.
ERRORS_KEPT = 200
FORBIDDEN_HINT = (" (the RBAC that `nodewright manifests` renders grants every request the "
                  "controller makes: apply the manifests again and check their bindings)")
# The longest an idle worker sleeps before it looks at its queue again (it is woken at
# once when a key is added, leadership changes or the driver stops).
WORKER_IDLE_SECONDS = 1.0

# Watch events delivered under one hold of the state lock.
DELIVERY_BATCH = 100

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


class _Flag(threading.Event):
    """A threading.Event that says when it changes (leadership wakes the workers)."""

    def __init__(self, changed: Callable[[], None]) -> None:
        super().__init__()
        self._changed = changed

    def set(self) -> None:
        super().set()
        self._changed()

    def clear(self) -> None:
        super().clear()
        self._changed()


class _Worker:
    """One controller's queue and the threads that work it off (one unless the
    reconciler asks for more: `concurrent_reconciles`)."""

    def __init__(self, reconciler: Reconciler, queue: WorkQueue,
                 lock: threading.RLock) -> None:
        self.reconciler = reconciler
        self.queue = queue
        self.wakeup = threading.Condition(lock)
        self.threads: list[threading.Thread] = []
        # When it last finished a reconcile, had no work, or was not leading (monotonic).
        self.progress = time.monotonic()
        # When each reconcile in progress started, by thread.
        self.in_flight: dict[int, float] = {}


class OperatorDriver:
    def __init__(
        self,
        cluster: ClusterAPI,
        *,
        clock: SystemClock | None = None,
        kinds: Iterable[str] = WATCHED_KINDS,
        idle_interval: float = 0.02,
        rate_limiter: Callable[[], RateLimiter] | None = None,
        name: str = "nodewright",
        world_lock: StateLock | None = None,
        state_lock: StateLock | None = None,
        health: HealthLimits | None = None,
        cpu_requests: int = DEFAULT_CPU_REQUESTS,
    ) -> None:
        """`cpu_requests` (millicores, Karpenter's CPU_REQUESTS) sizes the controllers
        whose workers scale with the CPU (`runtime.concurrency`), and the retry buckets
        sized with those workers. `rate_limiter`, when given, replaces every controller's
        own retry limiter (`retry_limiter`)."""
        self.cluster = cluster
        self.cpu_requests = cpu_requests
        self.clock = clock or SystemClock()
        self.clock.wake = self._wake
        self.name = name
        self._kinds = tuple(kinds)
        self._idle_interval = idle_interval
        self._rate_limiter = rate_limiter
        self._world_lock: AbstractContextManager[object] = world_lock or nullcontext()
        self._state_lock: AbstractContextManager[object] = state_lock or nullcontext()
        if state_lock is not None:
            state_lock.concurrent = True
            # Taken before the state lock here, and stepped out of with it for requests.
            state_lock.outer = world_lock
        self._workers: list[_Worker] = []
        # By the id of its reconciler, which the worker holds (so the id stays its own).
        self._by_reconciler: dict[int, _Worker] = {}
        self._listeners: list[Listener] = []
        # Guards the queues and the workers' bookkeeping (short sections only).
        self._lock = threading.RLock()
        self._wakeup = threading.Event()
        self._stopping = threading.Event()
        self.leading: threading.Event = _Flag(self._wake_workers)
        self._stream: WatchStream | None = None
        self._thread: threading.Thread | None = None
        # The latest failures (for tests and debugging); bounded: a long-running process
        # sees conflicts all the time, and each error holds its traceback's frames.
        self.errors: deque[tuple[str, str, BaseException]] = deque(maxlen=ERRORS_KEPT)
        self.reconciles = 0
        self.health = health or HealthLimits()

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
            limiter = (self._rate_limiter() if self._rate_limiter is not None
                       else retry_limiter(reconciler, self.cpu_requests))
            size_for_cpu(reconciler, self.cpu_requests)
            worker = _Worker(reconciler, WorkQueue(reconciler.name, limiter), self._lock)
            with self._lock:
                self._workers.append(worker)
                self._by_reconciler[id(reconciler)] = worker
            if self._thread is not None:
                self._start_worker(worker)

    def listen(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def start(self, *, leading: bool = True) -> None:
        """Open the watch (the current objects arrive as ADDED events) and start the
        dispatcher and the workers. `leading=False` starts as a standby until `leading`
        is set."""
        if leading:
            self.leading.set()
        self._stream = self.cluster.watch(self._kinds)
        self._thread = threading.Thread(target=self._dispatch_loop, name=f"{self.name}-driver",
                                        daemon=True)
        self._thread.start()
        for worker in list(self._workers):
            self._start_worker(worker)

    def workers(self, reconciler: Reconciler) -> int:
        """How many threads work `reconciler`'s queue."""
        return concurrent_reconciles(reconciler, self.cpu_requests)

    def retry_limiter(self, reconciler: Reconciler) -> RateLimiter:
        """What paces the retries of `reconciler`'s failed keys."""
        with self._lock:
            return self._by_reconciler[id(reconciler)].queue.limiter

    def _start_worker(self, worker: _Worker) -> None:
        count = self.workers(worker.reconciler)
        name = worker.reconciler.name
        metrics.controller_started(name, count)
        for number in range(count):
            suffix = f"-{number}" if count > 1 else ""
            thread = threading.Thread(
                target=self._work_loop, args=(worker,), daemon=True,
                name=f"{self.name}-{worker.reconciler.name}{suffix}")
            worker.threads.append(thread)
            thread.start()

    def _threads(self) -> list[threading.Thread | None]:
        threads: list[threading.Thread | None] = [self._thread]
        for worker in self._workers:
            threads.extend(worker.threads or [None])
        return threads

    def stop(self, timeout: float | None = None) -> bool:
        """Stop taking work; reconciles in progress finish. True once every thread ended
        within `timeout` (shared by them all)."""
        self._stopping.set()
        self._wake()
        self._wake_workers()
        deadline = None if timeout is None else time.monotonic() + timeout
        stopped = True
        for thread in self._threads():
            if thread is None or thread is threading.current_thread():
                continue
            thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
            stopped = stopped and not thread.is_alive()
        if self._stream is not None:
            self._stream.close()
        return stopped

    # --- state ----------------------------------------------------------------------------

    def synced(self) -> bool:
        return self._stream is not None and self._stream.synced()

    def alive(self) -> bool:
        return all(thread is not None and thread.is_alive() for thread in self._threads())

    def pending(self) -> int:
        with self._lock:
            return sum(len(worker.queue) for worker in self._workers)

    def stalled(self) -> str | None:
        """Why a controller looks wedged, or None (see the module's docstring)."""
        if not self.leading.is_set():
            return None
        with self._lock:
            now = time.monotonic()
            for worker in self._workers:
                name = worker.reconciler.name
                budget = self.health.budget(name)
                started = min(worker.in_flight.values(), default=None)
                if started is not None:
                    # A reconcile under way is judged by its own age alone: the queue's
                    # wait before it started is not the controller being wedged.
                    if now - started > budget:
                        return (f"controller {name} has been in one reconcile for "
                                f"{now - started:.0f}s (budget {budget:.0f}s)")
                    continue
                if not worker.queue.busy():
                    continue
                waited = now - worker.progress
                if waited > budget:
                    return (f"controller {name} has had work for {waited:.0f}s "
                            f"without finishing a reconcile (budget {budget:.0f}s)")
        return None

    @property
    def reconcilers(self) -> Sequence[Reconciler]:
        return tuple(worker.reconciler for worker in self._workers)

    # --- queues -----------------------------------------------------------------------------

    def enqueue(self, reconciler: Reconciler, key: str, when: datetime | None = None) -> None:
        """Make `key` due now or at `when`; safe from any thread."""
        delay = 0.0 if when is None else (when - self.clock.now()).total_seconds()
        with self._lock:
            worker = self._by_reconciler[id(reconciler)]
            self._mark_busy(worker)
            worker.queue.add_after(key, delay, time.monotonic())
            worker.wakeup.notify()

    def _mark_busy(self, worker: _Worker) -> None:
        """Work arrives at an idle controller: its wait starts now (under `_lock`)."""
        if not worker.queue.busy():
            worker.progress = time.monotonic()

    def _wake(self) -> None:
        self._wakeup.set()

    def _wake_workers(self) -> None:
        with self._lock:
            for worker in self._workers:
                worker.wakeup.notify_all()

    # --- the dispatcher: watch events and timers ---------------------------------------

    def _dispatch_loop(self) -> None:
        while not self._stopping.is_set():
            self._wakeup.clear()
            with self._world_lock, self._state_lock:
                worked = self._fire_timers()
            worked |= self._deliver()
            if not worked:
                self._wakeup.wait(self._idle_wait())

    def _idle_wait(self) -> float:
        candidates = [self._idle_interval]
        next_timer = self.clock.next_due()
        if next_timer is not None:
            candidates.append(next_timer - time.monotonic())
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
        """Hand what the watch has to the listeners and queues, taking the state lock for
        at most DELIVERY_BATCH events at a time (the initial list of a large cluster is
        tens of thousands: the workers get their turns in between)."""
        if self._stream is None:
            return False
        delivered = False
        while not self._stopping.is_set():
            with self._world_lock:
                events = self._stream.poll()
            if not events:
                break
            delivered = True
            for start in range(0, len(events), DELIVERY_BATCH):
                with self._world_lock, self._state_lock:
                    for event in events[start:start + DELIVERY_BATCH]:
                        self._dispatch(event)
        return delivered

    def _dispatch(self, event: WatchEvent) -> None:
        for listener in self._listeners:
            try:
                listener(event)
            except Exception:
                log.exception("watch listener failed on %s %s", event.kind, event.key)
        for worker in self._workers:
            for watch in worker.reconciler.watches:
                if watch.kind != event.kind:
                    continue
                keys = list(watch.keys(event))
                if not keys:
                    continue
                with self._lock:
                    self._mark_busy(worker)
                    for key in keys:
                        worker.queue.add(key)
                    worker.wakeup.notify()

    # --- the workers ------------------------------------------------------------------------

    def _work_loop(self, worker: _Worker) -> None:
        while not self._stopping.is_set():
            if not self._wait_for_work(worker):
                continue
            # Leadership is checked under the world lock, not before taking it: a replica
            # that stepped down (or a test that froze it) while this thread waited must not
            # write once more.
            with self._world_lock:
                if not self.leading.is_set() or self._stopping.is_set():
                    continue
                with self._lock:
                    key = worker.queue.get()
                    if key is None:
                        continue
                    worker.in_flight[threading.get_ident()] = time.monotonic()
                    metrics.ACTIVE_WORKERS.labels(controller=worker.reconciler.name).set(
                        len(worker.in_flight))
                    self.reconciles += 1
                self._reconcile(worker, key)

    def _wait_for_work(self, worker: _Worker) -> bool:
        """True once the worker's queue has a key ready and the driver leads; else sleeps
        until woken or its next delayed key is due, and returns False."""
        with self._lock:
            now = time.monotonic()
            if not worker.queue.busy():
                worker.progress = now
            ready = worker.queue.ready()
            worker.queue.promote_due(now)
            promoted = worker.queue.ready() - ready
            if promoted > 1:
                # Keys that came due together: one more worker for each beyond this one's.
                worker.wakeup.notify(promoted - 1)
            leading = self.leading.is_set()
            if leading and worker.queue.ready():
                return True
            if not leading:
                # A standby's queues fill up without anyone stalling.
                worker.progress = now
            timeout = WORKER_IDLE_SECONDS
            due = worker.queue.next_due()
            if leading and due is not None:
                timeout = min(timeout, max(0.0, due - now))
            if not self._stopping.is_set():
                worker.wakeup.wait(timeout)
            return False

    def _reconcile(self, worker: _Worker, key: str) -> None:
        reconciler, queue = worker.reconciler, worker.queue
        state_lock = nullcontext() if manages_state_lock(reconciler) else self._state_lock
        fields: Mapping[str, str] = {}
        try:
            with state_lock, metrics.measure(metrics.RECONCILE_TIME, controller=reconciler.name), \
                    logs.reconciling(reconciler.name, key) as fields:
                result = reconciler.reconcile(key)
        except Exception as error:
            with self._lock:
                self._finished(worker)
                queue.done(key)
                delay = queue.add_rate_limited(key, time.monotonic())
            self.errors.append((reconciler.name, key, error))
            metrics.RECONCILE_TOTAL.labels(controller=reconciler.name, result="error").inc()
            metrics.RECONCILE_ERRORS.labels(controller=reconciler.name).inc()
            # Conflicts are routine; a fenced write was logged by the fence.
            quiet = isinstance(error, ConflictError | FencedError)
            level = logging.DEBUG if quiet else logging.ERROR
            # controller-runtime's line (internal/controller/controller.go: log.Error(err,
            # "Reconciler error")), with the reconcile's fields and the retry's delay.
            hint = FORBIDDEN_HINT if isinstance(error, ApiError) and error.status == 403 else ""
            log.log(level, "Reconciler error", extra={
                **fields, "controller": reconciler.name, "key": key,
                "error": f"{error}{hint}", "retryAfter": f"{delay:.3f}s"})
            return
        with self._lock:
            self._finished(worker)
            queue.done(key)
            queue.forget(key)
            if result.requeue_after is not None:
                queue.add_after(key, result.requeue_after, time.monotonic())
        outcome = "success" if result.requeue_after is None else "requeue_after"
        metrics.RECONCILE_TOTAL.labels(controller=reconciler.name, result=outcome).inc()

    @staticmethod
    def _finished(worker: _Worker) -> None:
        worker.in_flight.pop(threading.get_ident(), None)
        metrics.ACTIVE_WORKERS.labels(controller=worker.reconciler.name).set(
            len(worker.in_flight))
        worker.progress = time.monotonic()
