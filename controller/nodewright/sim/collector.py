"""The garbage collector's thresholds for the length of a simulation.

A simulation allocates millions of short-lived containers (each object the in-memory API
server stores or hands out, each scheduling model) while hundreds of thousands live on
(the cluster, the state cache, the metrics). With CPython's default first threshold (700
allocations) many of the short-lived ones are still alive at a young collection, get
promoted, and count towards the full collections of the whole heap that follow: at 200
nodes 18 of those and about a fifth of the run's CPU went to the collector. A first
threshold of 10,000 lets them die by reference count before a young collection sees
them. Nothing a simulation decides depends on when cycles are freed; the thresholds are
put back afterwards (tests run simulations inside the test process).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

# Young collections every 10,000 net allocations; the older generations as by default.
SIMULATION_THRESHOLDS: Final = (10_000, 10, 10)


@contextmanager
def tuned_collector() -> Iterator[None]:
    """Run the body with `SIMULATION_THRESHOLDS`, then restore the thresholds it found."""
    before = gc.get_threshold()
    gc.set_threshold(*SIMULATION_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*before)
