"""Waiting for something a background thread does, without asserting how long it takes."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

# Generous: a loaded CI machine is slow, and only a broken implementation waits this long.
PATIENCE = 30.0


def eventually(probe: Callable[[], T | None], what: str, patience: float = PATIENCE) -> T:
    """Call `probe` until it returns something truthy; fail naming `what` otherwise."""
    deadline = time.monotonic() + patience
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.01)
