"""Fixtures of the ported integration and storage end-to-end suites: the moto fixtures of
the AWS provider suite (`tests.aws.conftest`) and `env`, the cluster on them
(`moto_env.Env`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from nodewright.cloud.aws.clients import AwsClients
from tests.aws.conftest import (  # noqa: F401  (fixtures, found by name)
    _fake_credentials,
    aws,
    clients,
    recorder,
    world,
)
from tests.aws.world import World

from .moto_env import Env


@pytest.fixture
def env(clients: AwsClients, world: World) -> Iterator[Env]:  # noqa: F811
    built = Env(clients)
    yield built
    assert built.errors == []
