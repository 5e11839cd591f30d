"""Clients whose calls run outside the state lock.

A request (to the API server, to EC2, to the Pricing API) can take seconds: a paged
DescribeInstanceTypes, a CreateFleet, a 429 slept out under Retry-After. Made under the
state lock it would hold up every other controller, a spot interruption included. So the
controllers are handed their clients wrapped: each call steps out of the state lock for
its duration (`StateLock.requesting`, with the tests' world lock) and takes it back before
it returns, as controller-runtime's reconcilers read from the informers' cache and make
their requests without any lock another controller needs (docs/decisions.md,
"Concurrency").

The contract for code that makes a call: what it read from the state cache before the call
may have changed by the time the call returns. Read what the call needs first, and after
it, look again (or write with the object's resourceVersion, so the API server refuses a
stale write with a conflict, which the driver retries). The state's own accessors return
fresh lists, so a loop over them is never broken by a call inside it.

A lock other than the state lock must never be held around a wrapped call: the call takes
the state lock back while still inside that other lock, the opposite order to a thread that
holds the state lock and waits for the other one.
"""

from __future__ import annotations

import functools
from typing import Any, TypeVar, cast

from nodewright.runtime.statelock import StateLock

T = TypeVar("T")

class _OutsideStateLock:
    def __init__(self, target: object, lock: StateLock) -> None:
        self._target = target
        self._lock = lock

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        if name.startswith("_") or not callable(value) or isinstance(value, type):
            return value
        lock = self._lock

        @functools.wraps(value)
        def outside(*args: Any, **kwargs: Any) -> Any:
            with lock.requesting():
                return value(*args, **kwargs)

        return outside

    def __repr__(self) -> str:
        return f"outside_state_lock({self._target!r})"


def outside_state_lock(client: T, lock: StateLock) -> T:
    """`client`, each of whose methods runs with `lock` stepped out of (attributes that are
    not methods are the client's own)."""
    return cast(T, _OutsideStateLock(client, lock))

