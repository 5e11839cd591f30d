"""Karpenter's request batcher (pkg/batcher/batcher.go): calls made close together are sent
as one.

A call joins the open window, or opens one. The window closes once no call has joined for
`idle_seconds`, `max_seconds` after it opened whatever, or once it holds `max_items` calls.
Its calls are then grouped by key, and each group is handed to the executor once, on a
worker thread of its own (at most `max_workers` run at a time). Each caller blocks until its
own result is in: an output, or the error its call failed with.

No thread runs between windows: the caller that opens a window waits it out and dispatches
it. Windows are measured in wall time (time.monotonic), as Karpenter's timers are.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from nodewright import metrics

T = TypeVar("T")
U = TypeVar("U")


@dataclass(frozen=True)
class Result(Generic[U]):
    """One call's answer: `output`, or the `error` the call fails with."""

    output: U | None = None
    error: BaseException | None = None


@dataclass(frozen=True)
class Window:
    idle_seconds: float
    max_seconds: float
    max_items: int = 0  # 0: no limit
    max_workers: int = 100


class _Call(Generic[T, U]):
    __slots__ = ("done", "item", "key", "result")

    def __init__(self, item: T, key: Hashable) -> None:
        self.item = item
        self.key = key
        self.done = threading.Event()
        self.result: Result[U] = Result()


class Batcher(Generic[T, U]):
    """`execute(items)` answers a group of calls with one Result per item, in order (a
    missing one is an error for its caller; an exception is every caller's error)."""

    def __init__(self, name: str, window: Window,
                 execute: Callable[[list[T]], Sequence[Result[U]]],
                 key: Callable[[T], Hashable] = lambda _item: 0) -> None:
        self.name = name
        self.window = window
        self._execute = execute
        self._key = key
        self._cond = threading.Condition()
        self._pending: dict[Hashable, list[_Call[T, U]]] = {}
        self._count = 0
        self._opened: float | None = None
        self._last = 0.0
        self._workers = threading.BoundedSemaphore(window.max_workers)

    def add(self, item: T) -> U:
        """Join the window; the call's output once its group ran (its error raised)."""
        call: _Call[T, U] = _Call(item, self._key(item))
        with self._cond:
            self._pending.setdefault(call.key, []).append(call)
            self._count += 1
            self._last = time.monotonic()
            leads = self._opened is None
            if leads:
                self._opened = self._last
            else:
                self._cond.notify_all()
        if leads:
            self._close_window()
        call.done.wait()
        if call.result.error is not None:
            raise call.result.error
        assert call.result.output is not None, f"batcher {self.name}: a result with no output"
        return call.result.output

    def _close_window(self) -> None:
        window = self.window
        with self._cond:
            while not (window.max_items and self._count >= window.max_items):
                assert self._opened is not None
                deadline = min(self._last + window.idle_seconds,
                               self._opened + window.max_seconds)
                now = time.monotonic()
                if now >= deadline:
                    break
                self._cond.wait(deadline - now)
            groups = list(self._pending.values())
            opened = self._opened or time.monotonic()
            self._pending, self._count, self._opened = {}, 0, None
        metrics.BATCHER_BATCH_TIME.labels(self.name).observe(time.monotonic() - opened)
        for group in groups:
            self._workers.acquire()
            threading.Thread(target=self._run, args=(group,), daemon=True,
                             name=f"batcher-{self.name}").start()

    def _run(self, group: list[_Call[T, U]]) -> None:
        try:
            metrics.BATCHER_BATCH_SIZE.labels(self.name).observe(len(group))
            try:
                results = list(self._execute([call.item for call in group]))
            except Exception as error:  # every caller of the group gets the failure
                results = [Result(error=error)] * len(group)
            for index, call in enumerate(group):
                call.result = results[index] if index < len(results) else Result(
                    error=RuntimeError(f"batcher {self.name}: no result for this call"))
                call.done.set()
        finally:
            self._workers.release()
