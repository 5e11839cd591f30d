"""What happened during a run, in virtual time: timeline events, fleet samples, the
outcome of each `expect`, the disruption decisions and the fleet at the end.

These are plain data: the runner fills them, the terminal printer, the JSON writer, the
HTML report and the comparison read them. Times are seconds since the scenario's start,
so nothing depends on the wall clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from nodewright.sim.durations import format_offset


@dataclass(frozen=True)
class TimelineEvent:
    """One line of the timeline. `kind` is a stable machine-readable name
    (`nodeclaim.launched`, `disruption.disrupted`, `step`, `expect`, ...), `data` holds the
    facts the message states."""

    at: float
    source: str
    kind: str
    message: str
    data: Mapping[str, Any] = field(default_factory=dict)

    def format(self) -> str:
        return f"[{format_offset(self.at)}] {self.source}: {self.message}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "at": round(self.at, 3),
            "time": format_offset(self.at),
            "source": self.source,
            "kind": self.kind,
            "message": self.message,
            "data": dict(self.data),
        }


@dataclass(frozen=True)
class Sample:
    """The fleet at one moment: managed nodes by instance type, their hourly price, and the
    pods waiting for a node."""

    at: float
    nodes: Mapping[str, int]
    hourly_cost: float
    pending_pods: int

    @property
    def node_count(self) -> int:
        return sum(self.nodes.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "at": round(self.at, 3),
            "nodes": dict(self.nodes),
            "hourlyCost": round(self.hourly_cost, 6),
            "pendingPods": self.pending_pods,
        }


@dataclass(frozen=True)
class ExpectationResult:
    step: int
    line: int
    at: float
    differences: tuple[str, ...]

    @property
    def held(self) -> bool:
        return not self.differences

    def describe(self) -> str:
        where = f"step {self.step} (line {self.line})"
        if self.held:
            return f"{where}: ok"
        return f"{where}: FAILED: {'; '.join(self.differences)}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "line": self.line,
            "at": round(self.at, 3),
            "held": self.held,
            "differences": list(self.differences),
        }


@dataclass(frozen=True)
class DecisionRecord:
    """One disruption decision as the report explains it."""

    at: float
    node: str
    nodeclaim: str
    nodepool: str
    method: str
    outcome: str
    reason: str
    decision: str
    message: str
    cause: str = ""
    replacements: tuple[str, ...] = ()
    savings: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "at": round(self.at, 3),
            "node": self.node,
            "nodeclaim": self.nodeclaim,
            "nodepool": self.nodepool,
            "method": self.method,
            "outcome": self.outcome,
            "reason": self.reason,
            "decision": self.decision,
            "message": self.message,
            "cause": self.cause,
            "replacements": list(self.replacements),
            "savings": None if self.savings is None else round(self.savings, 6),
        }


@dataclass(frozen=True)
class FleetNode:
    name: str
    nodeclaim: str
    nodepool: str
    instance_type: str
    capacity_type: str
    zone: str
    price: float
    age: float
    pods: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "nodeclaim": self.nodeclaim,
            "nodepool": self.nodepool,
            "instanceType": self.instance_type,
            "capacityType": self.capacity_type,
            "zone": self.zone,
            "price": round(self.price, 6),
            "age": round(self.age, 3),
            "pods": self.pods,
        }


@dataclass(frozen=True)
class Violation:
    at: float
    kind: str  # pdb | budget | leaked-instance | drained-early
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {"at": round(self.at, 3), "kind": self.kind, "message": self.message}
