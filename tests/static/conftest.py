"""Each story gets a fresh World on a virtual clock."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.harness import World


@pytest.fixture
def world() -> Iterator[World]:
    yield World()
