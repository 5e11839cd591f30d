"""The moto fixtures of the AWS provider suite (`tests.aws.conftest`: moto for one test,
the clients, the account of `tests.aws.world`), for the ported end-to-end suites."""

from __future__ import annotations

from tests.aws.conftest import (  # noqa: F401  (fixtures, found by name)
    _fake_credentials,
    aws,
    clients,
    recorder,
    world,
)
