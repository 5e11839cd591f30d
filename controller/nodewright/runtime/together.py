"""Calls made together: Karpenter's `workqueue.ParallelizeUntil(ctx, n, n, ...)`, one
worker for each piece of work, on a bounded pool of threads.

Karpenter sends a round's NodeClaim creates (and a disruption command's replacements, and
a static NodePool's missing replicas) all at once, each from its own goroutine: against a
real API server each create is a round trip, and a burst's round holds up to a hundred
and fifty of them. Ours run on at most `TOGETHER_CEILING` threads (the operator's worker
ceiling, for the same reasons: `runtime.concurrency`); more wait for a free thread.

Under the simulator's single thread the calls run one after another, in order, so what
they produce (the in-memory cluster's generated names) stays what the seed gives.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from nodewright.runtime.concurrency import WORKER_CEILING

R = TypeVar("R")

TOGETHER_CEILING = WORKER_CEILING


def run_together(calls: Sequence[Callable[[], R]], *, parallel: bool,
                 ceiling: int = TOGETHER_CEILING) -> list[R]:
    """Each call's result, in the calls' order. With `parallel` (and more than one call)
    they run at once, on min(len(calls), `ceiling`) threads; otherwise one after another on
    the calling thread. A call returns its expected failures as its result (each create's
    error is its own); an exception is raised once every call has ended (the first one's),
    so no call is left running behind the caller."""
    if not parallel or len(calls) < 2:
        return [call() for call in calls]
    prefix = f"{threading.current_thread().name}-together"
    with ThreadPoolExecutor(max_workers=max(1, min(len(calls), ceiling)),
                            thread_name_prefix=prefix) as pool:
        futures = [pool.submit(call) for call in calls]
    # Leaving the `with` waited for every call.
    return [future.result() for future in futures]
