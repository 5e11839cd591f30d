"""The garbage collector's thresholds for the length of a simulation.

A simulation allocates millions of short-lived containers (each object the in-memory API
server stores or hands out, each scheduling model) while hundreds of thousands live on
(the cluster, the state cache, the metrics). With CPython's default first threshold (700
allocations) many of the short-lived ones are still alive at a young collection, get
promoted, and count towards the full collections of the whole heap that follow: at 200
nodes 18 of those and about a fifth of the run's CPU went to the collector. A first
threshold of 10,000 lets them die by reference count before a young collection sees
them.

At 2,000 nodes that was still not enough: 2,585 collections took 50 s of a 315 s run, 24 s
of it in 18 full collections of a heap of millions of objects, and all of them together
found about 50,000 objects in cycles. Almost everything a simulation frees goes by its
reference count, so the young threshold is now a million net allocations: collections
took 6 s of that run, and the peak RSS stayed the same (913 MiB against 929 MiB). Nothing a
simulation decides depends on when cycles are freed; the thresholds are put back
afterwards (tests run simulations inside the test process).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

# Young collections every million net allocations, a middle one every 20 of them, a full
# one every 100 middle ones (and then only when the heap grew by a quarter, as CPython
# decides).
SIMULATION_THRESHOLDS: Final = (1_000_000, 20, 100)


@contextmanager
def tuned_collector() -> Iterator[None]:
    """Run the body with `SIMULATION_THRESHOLDS`, then restore the thresholds it found."""
    before = gc.get_threshold()
    gc.set_threshold(*SIMULATION_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*before)
