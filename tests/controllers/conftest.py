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
