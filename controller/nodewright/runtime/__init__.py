"""The controller runtime contract: a clock with timers and the reconciler protocol.

Bottom layer beside `nodewright.api`: standard library only. The drivers that run
reconcilers live above it (`nodewright.controllers.driver` on a virtual clock, the
operator's work queues in real time).
"""

from nodewright.runtime.clock import Clock, SystemClock, VirtualClock, format_time, parse_time
from nodewright.runtime.reconciler import Reconciler, Result, Watch, WatchEvent

__all__ = [
    "Clock",
    "Reconciler",
    "Result",
    "SystemClock",
    "VirtualClock",
    "Watch",
    "WatchEvent",
    "format_time",
    "parse_time",
]
