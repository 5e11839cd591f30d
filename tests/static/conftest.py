"""Each story gets a fresh World on a virtual clock."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from nodewright.controllers.options import ControllerOptions
from tests.harness import World


@pytest.fixture
def world() -> Iterator[World]:
    """With the StaticCapacity feature gate on (Karpenter's default is off)."""
    yield World(options=ControllerOptions(static_capacity=True))
