"""The lock the controllers of one process share their state cache under.

The operator runs each controller on its own worker thread; the state cache and what
hangs off it (the simulated EC2, the timers) were written for one thread, so the driver
holds this lock while it delivers watch events and around each reconcile of an ordinary
controller. The CPU-heavy controllers (the provisioner, the disruption loop) take it
themselves and step out of it (`released`) while they compute on what they read, so a
solve never holds up an interruption, a drain or a registration (docs/decisions.md,
"Concurrency"). No request is made under it: the controllers' clients step out of it for
each call (`runtime.outside_lock`).

`concurrent` says whether anyone else may hold the lock: the simulator's virtual-time
driver runs every controller on one thread and leaves it False, so a controller that
would copy the state before stepping out needs no copy there (and the simulator stays
byte-for-byte what it was).

`outer` is a lock a request must step out of besides this one (`requesting`): the tests'
world lock, which the operator's driver holds around each unit of work so that several
drivers take turns at one in-memory cluster, and which that cluster's client takes for
each call. Held through a request, it would keep every other driver waiting on the
network, and a thread waiting on requests made by other threads (a round's NodeClaims
created together) would wait forever for them.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from types import TracebackType

_NOTHING_HELD: AbstractContextManager[None] = nullcontext()


class StateLock:
    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._local = threading.local()
        self.concurrent = False
        # Taken before this lock by whoever takes both (the operator's driver).
        self.outer: StateLock | None = None

    def _depth(self) -> int:
        return int(getattr(self._local, "depth", 0))

    def __enter__(self) -> StateLock:
        self._lock.acquire()
        self._local.depth = self._depth() + 1
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self._local.depth = self._depth() - 1
        self._lock.release()

    def held(self) -> bool:
        """Whether the calling thread holds the lock."""
        return self._depth() > 0

    @contextmanager
    def released(self) -> Iterator[None]:
        """Step out of the lock (however deeply this thread holds it) for the block, and
        take it back after. Whatever was read under the lock may change meanwhile: read
        what the block needs first, and check it again before acting on the result."""
        depth = self._depth()
        for _ in range(depth):
            self.__exit__(None, None, None)
        try:
            yield
        finally:
            for _ in range(depth):
                self.__enter__()

    def requesting(self) -> AbstractContextManager[None]:
        """Step out of this lock and of `outer` for a request, or for a wait on requests
        other threads make (no call to the API server or the cloud is made under a lock
        another thread needs); taken back as they are taken, `outer` first."""
        if self.outer is None and not self.held():
            # Nothing to step out of (the simulator's driver, every call it makes).
            return _NOTHING_HELD
        return self._stepped_out()

    @contextmanager
    def _stepped_out(self) -> Iterator[None]:
        with self.released():
            if self.outer is None:
                yield
            else:
                with self.outer.released():
                    yield
