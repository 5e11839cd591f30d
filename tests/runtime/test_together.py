"""`run_together`: calls made at once on a bounded pool of threads (Karpenter's
workqueue.ParallelizeUntil with one worker per piece of work), or one after another under
the simulator's single thread."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from nodewright.runtime.together import run_together


class Meeting:
    """Calls that each wait until `together` of them have been running at once (at most
    10 s), and remember the most that ran at once and on which threads."""

    def __init__(self, together: int) -> None:
        self.together = together
        self.changed = threading.Condition()
        self.running = 0
        self.most = 0
        self.met = False  # once: a call that has left must not keep the others waiting
        self.threads: set[str] = set()

    def call(self, value: int) -> Callable[[], int]:
        def run() -> int:
            with self.changed:
                self.running += 1
                self.most = max(self.most, self.running)
                self.threads.add(threading.current_thread().name)
                self.met = self.met or self.running >= self.together
                self.changed.notify_all()
                self.changed.wait_for(lambda: self.met, timeout=10)
                self.running -= 1
            return value * 10
        return run


def test_the_calls_run_at_once_and_answer_in_their_order() -> None:
    meeting = Meeting(together=5)
    assert run_together([meeting.call(i) for i in range(5)], parallel=True) == [
        0, 10, 20, 30, 40]
    assert meeting.most == 5


def test_at_most_the_ceiling_run_at_once() -> None:
    meeting = Meeting(together=3)
    answers = run_together([meeting.call(i) for i in range(7)], parallel=True, ceiling=3)
    assert answers == [i * 10 for i in range(7)]
    assert meeting.most == 3
    assert len(meeting.threads) == 3


def test_without_other_threads_about_they_run_one_after_another_on_the_caller() -> None:
    meeting = Meeting(together=1)
    assert run_together([meeting.call(i) for i in range(3)], parallel=False) == [0, 10, 20]
    assert meeting.most == 1
    assert meeting.threads == {threading.current_thread().name}


def test_an_exception_is_raised_once_every_call_has_ended() -> None:
    finished: list[int] = []

    def fails() -> int:
        raise RuntimeError("a bug, not a refusal")

    def slow(value: int) -> Callable[[], int]:
        def run() -> int:
            threading.Event().wait(0.05)
            finished.append(value)
            return value
        return run

    with pytest.raises(RuntimeError, match="a bug"):
        run_together([slow(1), fails, slow(2)], parallel=True)
    assert sorted(finished) == [1, 2]
