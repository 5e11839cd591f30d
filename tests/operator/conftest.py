"""Fixtures of the operator's stories: a real-time world, torn down after each test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import EXAMPLES
from tests.operator.world import RealTimeWorld

WORKSHOP = EXAMPLES / "workshop"


@pytest.fixture
def world() -> Iterator[RealTimeWorld]:
    created = RealTimeWorld()
    yield created
    created.close()
