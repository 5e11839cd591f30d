"""Events written off the reconcile path: a bounded queue and one writer thread.

The recorder (`cluster.events`) decides what to write while a reconcile runs; this writes
it afterwards, so an API server that is slow, throttling (429 with Retry-After) or away
costs a reconcile nothing for its Events. As client-go's broadcaster, the queue holds at
most 1000 Events and drops what does not fit (Events are best effort); a clean stop writes
what is queued, within the stop's time. On the way out each Event passes client-go's
correlator (`cluster.event_correlation`): repeats patch the earlier Event's series,
similar Events are combined, and a source that floods one object is filtered.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from nodewright.cluster.api import ClusterAPI
from nodewright.cluster.event_correlation import EventCorrelator, write_correlated
from nodewright.runtime.clock import Clock, SystemClock

log = logging.getLogger(__name__)

QUEUE_LENGTH = 1000


class EventWriter:
    def __init__(self, cluster: ClusterAPI, *, capacity: int = QUEUE_LENGTH,
                 world_lock: AbstractContextManager[object] | None = None,
                 clock: Clock | None = None) -> None:
        self._cluster = cluster
        self.correlator = EventCorrelator((clock or SystemClock()).now)
        self._queue: queue.Queue[dict[str, Any] | None] = queue.Queue(capacity)
        # Held around each write when the cluster is shared with other threads (tests).
        self._world_lock: AbstractContextManager[object] = world_lock or nullcontext()
        self._thread: threading.Thread | None = None
        self.written = 0
        self.dropped = 0
        # When the writer last took an Event or found none (monotonic), for /healthz.
        self._progress_at = time.monotonic()
        self._busy = False
        self._stopping = False

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="event-writer",
                                            daemon=True)
            self._thread.start()

    def submit(self, body: dict[str, Any]) -> None:
        """Queue one Event (from a reconcile: never blocks)."""
        try:
            self._queue.put_nowait(body)
        except queue.Full:
            self.dropped += 1
            if self.dropped == 1 or self.dropped % 1000 == 0:
                log.warning("event queue full (%d); %d events dropped so far",
                            self._queue.maxsize, self.dropped)

    def pending(self) -> int:
        return self._queue.qsize()

    def stop(self, timeout: float | None = None) -> bool:
        """Write what is queued, then end; True when that finished within `timeout` (one
        budget for the wait for room in the queue and the writing)."""
        if self._thread is None:
            return True
        self._stopping = True
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            self._queue.put(None, timeout=timeout)
        except queue.Full:
            return False
        self._thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
        return not self._thread.is_alive()

    def alive(self) -> bool:
        """False once the writer thread has ended without being stopped."""
        return self._thread is None or self._thread.is_alive() or self._stopping

    def stuck_for(self) -> float:
        """For how long the writer has had Events queued without writing one (0 when it
        keeps up)."""
        if self._queue.empty() and not self._busy:
            return 0.0
        return time.monotonic() - self._progress_at

    def _run(self) -> None:
        while True:
            self._progress_at = time.monotonic()
            body = self._queue.get()
            if body is None:
                return
            self._busy = True
            try:
                self._write(body)
            except Exception:  # a bug in one Event must not end the writer
                log.exception("writing an event failed: %s", body.get("reason"))
            finally:
                self._busy = False

    def _write(self, body: dict[str, Any]) -> None:
        correlated = self.correlator.correlate(body)
        if correlated is None:
            return
        with self._world_lock:
            written = write_correlated(self._cluster, correlated)
        if written:
            self.written += 1
