"""One notion of time: the `Clock` protocol, implemented by the real clock the operator
runs on and the virtual clock of the simulator; nothing else in the package keeps time."""

from __future__ import annotations

import ast
from datetime import UTC, datetime

from nodewright.runtime.clock import Clock, SystemClock, VirtualClock
from tests.conftest import REPO_ROOT

PACKAGE = REPO_ROOT / "controller" / "nodewright"


def test_both_clocks_are_the_one_clock_type() -> None:
    assert issubclass(SystemClock, Clock) and issubclass(VirtualClock, Clock)
    assert isinstance(SystemClock(), Clock) and isinstance(VirtualClock(), Clock)


def test_no_other_class_in_the_package_keeps_time() -> None:
    """A class with `now` and timers is a clock: it belongs in nodewright.runtime.clock."""
    clocks = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                methods = {item.name for item in node.body if isinstance(item, ast.FunctionDef)}
                if {"now", "call_later"} <= methods:
                    clocks.append(f"{path.relative_to(PACKAGE)}:{node.name}")
    assert sorted(clocks) == ["runtime/clock.py:Clock", "runtime/clock.py:SystemClock",
                              "runtime/clock.py:VirtualClock"]


def test_real_timers_wait_for_the_dispatcher_and_come_out_in_due_order() -> None:
    clock = SystemClock()
    woken: list[str] = []
    clock.wake = lambda: woken.append("wake")
    fired: list[str] = []
    clock.call_later(2.0, lambda: fired.append("later"))
    clock.call_at(datetime(2000, 1, 1, tzinfo=UTC), lambda: fired.append("overdue"))
    assert woken == ["wake", "wake"] and fired == []
    start = clock.monotonic()
    for callback in clock.due_callbacks(start):
        callback()
    assert fired == ["overdue"]
    due = clock.next_due()
    assert due is not None and due > start
    for callback in clock.due_callbacks(due):
        callback()
    assert fired == ["overdue", "later"] and clock.next_due() is None
