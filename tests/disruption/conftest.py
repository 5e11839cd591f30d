"""Fixtures of the disruption stories: a World (the controllers' harness) per test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.harness import World


@pytest.fixture
def world() -> Iterator[World]:
    yield World()


@pytest.fixture
def make_world() -> Callable[..., World]:
    def make(**options: Any) -> World:
        return World(**options)

    return make
