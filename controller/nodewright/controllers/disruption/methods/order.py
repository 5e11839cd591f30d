"""The four methods in the order the loop tries them, and those whose commands wait 15
seconds for validation."""

from __future__ import annotations

from collections.abc import Callable

from nodewright.controllers.common import decision_log as ex
from nodewright.controllers.disruption.commands import Command
from nodewright.controllers.disruption.methods.disruption_pass import Pass
from nodewright.controllers.disruption.methods.drift import drift
from nodewright.controllers.disruption.methods.emptiness import emptiness
from nodewright.controllers.disruption.methods.multi_node_consolidation import multi_node
from nodewright.controllers.disruption.methods.single_node_consolidation import single_node
from nodewright.controllers.disruption.methods.static_drift import static_drift

MethodFn = Callable[[Pass], Command | None]
METHODS: tuple[tuple[str, MethodFn], ...] = (
    (ex.EMPTINESS, emptiness),
    (ex.DRIFT, static_drift),
    (ex.DRIFT, drift),
    (ex.MULTI_NODE, multi_node),
    (ex.SINGLE_NODE, single_node),
)
VALIDATED = frozenset({ex.EMPTINESS, ex.MULTI_NODE, ex.SINGLE_NODE})
