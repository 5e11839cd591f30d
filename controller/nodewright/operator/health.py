"""What /healthz checks beyond the controllers' own queues (`OperatorDriver.stalled`): the
process's other long-lived threads are running, and the Event queue moves.

A thread that dies takes its work with it without a word: a dead leader election
campaign never renews (or never takes) the Lease, a dead Event writer lets Events pile up
until the queue drops them. Either means the process should be restarted, which is what a
failing liveness probe asks of the kubelet.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping


def dead_thread(threads: Mapping[str, Callable[[], bool]]) -> str | None:
    """The first of `threads` (name -> is it alive) that has died, said for /healthz."""
    for name, alive in threads.items():
        if not alive():
            return f"the {name} thread has died"
    return None


def stuck_queue(queues: Mapping[str, Callable[[], float]], budget: float) -> str | None:
    """The first of `queues` (name -> for how long it has had work without progress) past
    `budget` seconds, said for /healthz."""
    for name, stuck_for in queues.items():
        waited = stuck_for()
        if waited > budget:
            return (f"the {name} has had work for {waited:.0f}s without progress "
                    f"(budget {budget:.0f}s)")
    return None
