"""The operator's clock is the runtime's real-time clock (timers fire on the dispatcher
thread); the name stays for the operator modules that import it."""

from __future__ import annotations

from nodewright.runtime.clock import SystemClock as LoopClock

__all__ = ["LoopClock"]
