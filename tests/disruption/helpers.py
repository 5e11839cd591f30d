"""Helpers of the disruption stories: the workshop NodePool with changes, decisions read
from the controllers' log."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from nodewright.controllers.common import decision_log as ex
from tests.controllers.conftest import WORKSHOP
from tests.harness import World


def nodepool_with(
    *,
    requirements: Mapping[str, Sequence[str]] | None = None,
    disruption: Mapping[str, Any] | None = None,
    template: Mapping[str, Any] | None = None,
    labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The workshop NodePool, with requirement values, spec.disruption fields, template
    spec fields or template labels replaced."""
    body: dict[str, Any] = yaml.safe_load((WORKSHOP / "nodepool.yaml").read_text())
    spec = body["spec"]
    for item in spec["template"]["spec"]["requirements"]:
        if requirements and item["key"] in requirements:
            item["values"] = list(requirements[item["key"]])
    spec.setdefault("disruption", {}).update(disruption or {})
    spec["template"]["spec"].update(template or {})
    if labels is not None:
        spec["template"]["metadata"]["labels"] = dict(labels)
    return body


def log(world: World) -> ex.DecisionLog:
    assert world.controllers.disruption is not None
    return world.controllers.disruption.decisions


def decisions(world: World, node: str | None = None) -> list[ex.Decision]:
    return [d for d in log(world) if node is None or d.node == node]


def started(world: World) -> list[ex.Decision]:
    """Disruptions the disruption loop started, oldest first."""
    return [d for d in log(world) if d.outcome == ex.DISRUPTED
            and d.method in (ex.EMPTINESS, ex.DRIFT, ex.MULTI_NODE, ex.SINGLE_NODE)]
