"""Injectable monotonic seconds (`Seconds`) and a small TTL cache, so expiry is testable
without sleeping. Not a clock: the one `Clock` type is nodewright.runtime.clock's; this is
the source of seconds the AWS provider's caches measure their TTLs by."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

Seconds = Callable[[], float]  # monotonic enough for TTLs
K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


def system_clock() -> float:
    return time.monotonic()


@dataclass
class TTLCache(Generic[K, V]):
    """Entries that expire `ttl_seconds` after they were put. Safe to share between the
    controllers' threads (a launch runs outside the state lock)."""

    ttl_seconds: float
    clock: Seconds = system_clock
    # Told the key of every entry found expired and dropped (Karpenter's OnEvicted).
    on_expire: Callable[[K], None] | None = None
    _entries: dict[K, tuple[float, V]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def get(self, key: K) -> V | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            stored_at, value = entry
            if self.clock() - stored_at >= self.ttl_seconds:
                del self._entries[key]
                self._expired(key)
                return None
            return value

    def drop_expired(self) -> None:
        """Drop every expired entry now (each told to `on_expire`), not when next read."""
        with self._lock:
            now = self.clock()
            for key in [key for key, (stored_at, _) in self._entries.items()
                        if now - stored_at >= self.ttl_seconds]:
                del self._entries[key]
                self._expired(key)

    def _expired(self, key: K) -> None:
        if self.on_expire is not None:
            self.on_expire(key)

    def put(self, key: K, value: V) -> None:
        with self._lock:
            self._entries[key] = (self.clock(), value)

    def live_keys(self) -> list[K]:
        with self._lock:
            keys = list(self._entries)
        return [key for key in keys if self.get(key) is not None]

    def values(self) -> list[V]:
        return [value for key in self.live_keys() if (value := self.get(key)) is not None]

    def drop_where(self, matches: Callable[[K], bool]) -> None:
        with self._lock:
            for key in [key for key in self._entries if matches(key)]:
                del self._entries[key]

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
