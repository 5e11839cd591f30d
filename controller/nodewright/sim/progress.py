"""A status line for long runs on a terminal: virtual time reached and events so far.

It is drawn on stderr, redrawn at most a few times a second of wall time (the only wall
clock the simulator reads, and only for this display), and erased before any timeline
line is printed, so the two never mix. Off when the stream is not a terminal or with
`--quiet`.
"""

from __future__ import annotations

import time
from typing import TextIO

from nodewright.sim.durations import format_offset

_REDRAW_SECONDS = 0.2


class Progress:
    def __init__(self, stream: TextIO, enabled: bool, label: str = "") -> None:
        self._stream = stream
        self.enabled = enabled
        self.label = label
        self._shown = False
        self._last_draw = 0.0

    @classmethod
    def for_terminal(cls, stream: TextIO, quiet: bool) -> Progress:
        interactive = bool(getattr(stream, "isatty", lambda: False)())
        return cls(stream, interactive and not quiet)

    def due(self) -> bool:
        """Whether an `update` now would draw (what it shows is worth working out)."""
        return self.enabled and (
            not self._shown or time.monotonic() - self._last_draw >= _REDRAW_SECONDS)

    def update(self, virtual_seconds: float, events: int, nodes: int, pending: int) -> None:
        if not self.due():
            return
        self._last_draw = time.monotonic()
        label = f"{self.label}: " if self.label else ""
        text = (f"{label}virtual time {format_offset(virtual_seconds)}, {events} events, "
                f"{nodes} nodes, {pending} pending pods")
        self._stream.write(f"\r\x1b[2K{text}")
        self._stream.flush()
        self._shown = True

    def clear(self) -> None:
        if self._shown:
            self._stream.write("\r\x1b[2K")
            self._stream.flush()
            self._shown = False
