"""MEMORY_LIMIT: Karpenter sets Go's GC soft limit to 90 % of it; CPython has no such
limit (reference counting frees memory as it goes; the cycle collector runs by
allocation counts, not by heap size). What is useful instead: a warning when the
process's resident memory passes 90 % of the container's limit, before the kernel's OOM
killer ends it, so the log says why the container restarted and that the limit (or the
cluster's size) needs a look.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)

SOFT_FRACTION = 0.9  # Karpenter's: GC soft limit = 90 % of MEMORY_LIMIT
# Warn again only after falling below this share of the limit (no warning per check).
REARM_FRACTION = 0.8
CHECK_SECONDS = 30.0
_STATM = "/proc/self/statm"


def resident_bytes() -> int | None:
    """The process's resident set size (Linux /proc), None where it cannot be read."""
    try:
        with open(_STATM, encoding="ascii") as statm:
            pages = int(statm.read().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE")


class MemoryWatch:
    def __init__(self, limit_bytes: int, *,
                 read_rss: Callable[[], int | None] = resident_bytes,
                 interval: float = CHECK_SECONDS) -> None:
        self.limit = limit_bytes
        self._read_rss = read_rss
        self._interval = interval
        self._warned = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def check(self) -> bool:
        """Read the resident memory once; True when this check logged the warning."""
        rss = self._read_rss()
        if rss is None:
            return False
        if rss < REARM_FRACTION * self.limit:
            self._warned = False
            return False
        if rss < SOFT_FRACTION * self.limit or self._warned:
            return False
        self._warned = True
        log.warning("resident memory is %.0f%% of MEMORY_LIMIT; the container may be "
                    "OOM-killed: raise its memory limit (and MEMORY_LIMIT with it)",
                    100 * rss / self.limit,
                    extra={"resident-bytes": rss, "memory-limit": self.limit})
        return True

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="memory-watch", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            self.check()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=1.0)
