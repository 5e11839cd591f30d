"""Reconciles that failed during a run, so that a result never hides them.

A controller that raises is retried with backoff, as in a cluster, and a run goes on; but
a run whose controllers kept failing (a bug, an object they cannot handle) may look like a
plain result: nodes that were never replaced, pods that stayed pending. Each distinct
failure (controller, error) is put on the timeline the first time it happens and counted
after that; the summary and the JSON list them all.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from nodewright.sim.durations import format_offset
from nodewright.sim.recorder import Recorder

# An error's text is cut here: a message quoting a whole object says nothing more.
_MESSAGE_CHARS = 300


@dataclass
class ControllerError:
    controller: str
    error: str  # "TypeError: message"
    first_at: float  # virtual seconds from the start
    count: int = 1

    def to_dict(self) -> dict[str, Any]:
        return {"controller": self.controller, "error": self.error,
                "firstAt": self.first_at, "count": self.count}

    def describe(self) -> str:
        times = "once" if self.count == 1 else f"{self.count} times"
        return (f"{self.controller}: a reconcile failed {times}, first at "
                f"{format_offset(self.first_at)}: {self.error}")


def error_text(error: BaseException) -> str:
    message = " ".join(str(error).split())
    text = f"{type(error).__name__}: {message}" if message else type(error).__name__
    return text if len(text) <= _MESSAGE_CHARS else text[:_MESSAGE_CHARS - 3] + "..."


class ControllerErrorLog:
    """Listens to the driver's failed reconciles (`VirtualDriver.on_error`)."""

    def __init__(self, recorder: Recorder) -> None:
        self._recorder = recorder
        self._seen: dict[tuple[str, str], ControllerError] = {}

    def on_error(self, controller: str, key: str, error: BaseException) -> None:
        text = error_text(error)
        seen = self._seen.get((controller, text))
        if seen is not None:
            seen.count += 1
            return
        self._seen[(controller, text)] = ControllerError(controller, text,
                                                         self._recorder.offset())
        self._recorder.note("scenario", "error",
                            f"{controller}: reconcile {key or '(all)'} failed, retrying: {text}",
                            controller=controller, key=key)

    @property
    def errors(self) -> tuple[ControllerError, ...]:
        return tuple(self._seen.values())
