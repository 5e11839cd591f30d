"""A stop within one budget, shared by all its phases.

SIGTERM gives the process the Pod's terminationGracePeriodSeconds before SIGKILL. The stop
has phases (the controllers finish the reconcile in flight, the Event writer writes what is
queued, the Lease is released, the endpoints and API clients close), and each may wait on
the network. Given the whole timeout each, they could add up past the grace period (a 1 s
budget once took 3.48 s) and the process would be killed mid-write. Here each phase gets
what is left of one deadline, and a phase that overruns it is cut: it is left running on
its daemon thread (the process is about to exit) and the next phase starts at once, so
even the phases that must run (closing the clients) do, and the whole stop ends by the
deadline.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

log = logging.getLogger(__name__)


class Shutdown:
    def __init__(self, timeout: float | None,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self._monotonic = monotonic
        self.deadline = None if timeout is None else monotonic() + timeout
        # False once a phase was cut or reported that it did not finish cleanly.
        self.clean = True

    def left(self) -> float | None:
        """Seconds left of the budget (None: no limit)."""
        if self.deadline is None:
            return None
        return max(0.0, self.deadline - self._monotonic())

    def run(self, name: str, phase: Callable[[float | None], object]) -> bool:
        """Run `phase(seconds left)` on a thread of its own and wait for it until the
        deadline at most. False when it was cut or returned False."""
        left = self.left()
        outcome: list[object] = []

        def target() -> None:
            try:
                outcome.append(phase(left))
            except Exception:
                log.exception("stopping: %s failed", name)
                outcome.append(False)

        thread = threading.Thread(target=target, name=f"stop-{name}", daemon=True)
        thread.start()
        thread.join(self.left())
        if thread.is_alive():
            log.warning("stopping: %s did not finish within the stop budget; going on "
                        "without it", name)
            self.clean = False
            return False
        finished = outcome[0] is not False
        self.clean = self.clean and finished
        return finished
