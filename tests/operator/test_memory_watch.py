"""MEMORY_LIMIT: CPython has no GC soft limit to set (Karpenter sets Go's to 90 % of it);
the operator warns instead, once, when its resident memory passes 90 % of the limit, and
again only after it fell below 80 %."""

from __future__ import annotations

import logging

import pytest

from nodewright.operator.memory_watch import MemoryWatch, resident_bytes

LIMIT = 1000


def test_a_warning_when_resident_memory_nears_the_limit(
        caplog: pytest.LogCaptureFixture) -> None:
    readings = iter([500, 899, 900, 950, 850, 790, 920])
    watch = MemoryWatch(LIMIT, read_rss=lambda: next(readings))

    with caplog.at_level(logging.WARNING, logger="nodewright.operator.memory_watch"):
        warned = [watch.check() for _ in range(7)]

    assert warned == [False, False, True, False, False, False, True]
    assert len(caplog.records) == 2
    assert "90% of MEMORY_LIMIT" in caplog.records[0].getMessage()
    assert caplog.records[0].__dict__["memory-limit"] == LIMIT


def test_no_reading_no_warning() -> None:
    assert MemoryWatch(LIMIT, read_rss=lambda: None).check() is False


def test_this_process_has_a_resident_size() -> None:
    rss = resident_bytes()
    assert rss is None or rss > 0
