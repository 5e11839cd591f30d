"""Fixtures of the controller stories: a World on a virtual clock, the workshop."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.conftest import EXAMPLES
from tests.harness import World

WORKSHOP = EXAMPLES / "workshop"


@pytest.fixture
def world() -> Iterator[World]:
    yield World()


@pytest.fixture
def make_world() -> Callable[..., World]:
    def make(**options: Any) -> World:
        return World(**options)

    return make


@pytest.fixture
def limit_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the pods whose container limits the node metrics read, in order (the
    limits series cleared first)."""
    from nodewright import metrics
    from nodewright.controllers.metrics import nodes as node_metrics

    metrics.NODES_TOTAL_POD_LIMITS.clear()
    reads: list[str] = []
    read = node_metrics._container_limits

    def counting(pod: Any) -> dict[str, int]:
        reads.append(str(pod["metadata"]["name"]))
        return read(pod)

    monkeypatch.setattr(node_metrics, "_container_limits", counting)
    return reads
