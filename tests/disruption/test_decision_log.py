"""The decision log of a long-running controller stays bounded as nodes come and go."""

from __future__ import annotations

from datetime import UTC, datetime

from nodewright.controllers.common import decision_log as ex

NOW = datetime(2026, 1, 5, tzinfo=UTC)


def decision(node: str, outcome: str = "kept") -> ex.Decision:
    return ex.Decision(time=NOW, node=node, nodeclaim=node, nodepool="default",
                       method="emptiness", outcome=outcome, event_reason="DisruptionBlocked",
                       message="not empty")


def test_nodes_that_are_gone_are_forgotten_oldest_first() -> None:
    log = ex.DecisionLog(history=3)
    for name in ("a", "b", "c", "d"):
        assert log.record(decision(name))
    assert log.latest("a") is None  # decided longest ago: forgotten
    assert [log.latest(name) is not None for name in ("b", "c", "d")] == [True] * 3
    assert len(log) == 3


def test_a_node_decided_again_is_kept_as_the_newest() -> None:
    log = ex.DecisionLog(history=2)
    log.record(decision("a"))
    log.record(decision("b"))
    assert not log.record(decision("a"))  # a repeat: no new entry, but "a" is fresh again
    log.record(decision("c"))
    assert log.latest("a") is not None and log.latest("b") is None
