"""Fixtures of the operator's stories: a real-time world, torn down after each test.

The controllers' own fixed waits (a drain lasts at least 5 s, a terminating instance is
looked at every 5 s, an eviction answered 429 is retried after 0.1 s doubling up to 10 s,
a failed launch is retried after 1 s doubling, pods still pending are solved again every
10 s), like the pod garbage
collector's 40 s quarantine of the pods of a deleted node, are module constants, not
settings; the stories run them at the same scale as the shortened settings of
`tests.operator.world` (a tenth of a second or so), or a scale-down would take ten seconds
of wall time for two polls.
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from nodewright.cluster.memory.kubelet import pods as kubelet
from nodewright.controllers.node.termination import controller as termination
from nodewright.controllers.node.termination import eviction
from nodewright.controllers.nodeclaim import finalize, launch
from nodewright.controllers.provisioning import provisioner
from nodewright.operator import logs
from nodewright.runtime.ratelimit import Backoff
from tests.conftest import EXAMPLES
from tests.operator.world import RealTimeWorld

WORKSHOP = EXAMPLES / "workshop"

FAST_WAITS = (
    (termination, "MIN_DRAIN_SECONDS", 0.2),
    (termination, "DRAIN_RECHECK_SECONDS", 0.1),
    (termination, "INSTANCE_CHECK_SECONDS", 0.1),
    (eviction, "BACKOFF", Backoff(initial=0.02, maximum=0.2)),
    (finalize, "INSTANCE_CHECK_SECONDS", 0.1),
    (launch, "BACKOFF", Backoff(initial=0.1, maximum=60.0)),
    (provisioner, "PENDING_RECHECK_SECONDS", 0.3),
    (kubelet, "ORPHAN_QUARANTINE", 0.2),
)


@pytest.fixture
def fast_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    for module, name, seconds in FAST_WAITS:
        assert hasattr(module, name), f"{module.__name__}.{name} is gone: update FAST_WAITS"
        monkeypatch.setattr(module, name, seconds)


@pytest.fixture
def world(fast_waits: None) -> Iterator[RealTimeWorld]:
    created = RealTimeWorld()
    yield created
    created.close()


@pytest.fixture
def make_world(fast_waits: None) -> Iterator[Callable[..., RealTimeWorld]]:
    """A world with other cloud settings, capacity or zones (RealTimeWorld's arguments)."""
    made: list[RealTimeWorld] = []

    def make(**options: Any) -> RealTimeWorld:
        made.append(RealTimeWorld(**options))
        return made[-1]

    yield make
    for created in made:
        created.close()


JsonLogs = Callable[[str], list[dict[str, Any]]]


@pytest.fixture
def json_logs() -> Iterator[JsonLogs]:
    """The operator's JSON log lines at INFO from now on (as `nodewright controller` writes
    them); call with a message to get the records that carry it, parsed."""
    stream = io.StringIO()
    handler = logs.json_handler(stream)
    handler.setLevel(logging.INFO)
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)

    def records(message: str) -> list[dict[str, Any]]:
        entries = [json.loads(line) for line in stream.getvalue().splitlines()]
        return [entry for entry in entries if entry["message"] == message]

    yield records
    root.removeHandler(handler)
    root.setLevel(level)
