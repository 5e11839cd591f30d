"""The outcome of one run: the summary numbers and everything the outputs are made from."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from nodewright.sim.controller_errors import ControllerError
from nodewright.sim.durations import format_offset
from nodewright.sim.timeline import (
    DecisionRecord,
    ExpectationResult,
    FleetNode,
    Sample,
    TimelineEvent,
    Violation,
)

EXIT_OK = 0
EXIT_EXPECTATION_FAILED = 1
EXIT_INVALID = 2


@dataclass(frozen=True)
class Summary:
    duration: float  # virtual seconds the run covered
    nodes: int
    nodes_by_type: Mapping[str, int]
    hourly_cost: float
    node_hours: float
    dollars_spent: float
    peak_nodes: int
    launched: int
    disruptions: Mapping[str, int]
    pods_evicted: int
    pending_pod_seconds: float
    violations: int
    expectations_held: int
    expectations_failed: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "duration": round(self.duration, 3),
            "nodes": self.nodes,
            "nodesByInstanceType": dict(self.nodes_by_type),
            "hourlyCost": round(self.hourly_cost, 6),
            "nodeHours": round(self.node_hours, 6),
            "dollarsSpent": round(self.dollars_spent, 6),
            "peakNodes": self.peak_nodes,
            "launched": self.launched,
            "disruptions": dict(self.disruptions),
            "podsEvicted": self.pods_evicted,
            "pendingPodSeconds": round(self.pending_pod_seconds, 3),
            "violations": self.violations,
            "expectations": {"held": self.expectations_held,
                             "failed": self.expectations_failed},
        }

    def lines(self) -> list[str]:
        by_type = ", ".join(f"{name}: {count}" for name, count in sorted(
            self.nodes_by_type.items())) or "none"
        disruptions = ", ".join(f"{reason} {count}" for reason, count in sorted(
            self.disruptions.items()) if count) or "none"
        total = self.expectations_held + self.expectations_failed
        return [
            f"  virtual time:   {format_offset(self.duration)}",
            f"  nodes:          {self.nodes} ({by_type}), peak {self.peak_nodes}, "
            f"{self.launched} launched",
            f"  cost:           ${self.hourly_cost:.4f}/hour now",
            f"  node-hours:     {self.node_hours:.2f}",
            f"  dollars spent:  ${self.dollars_spent:.4f}",
            f"  pending pods:   {self.pending_pod_seconds:.0f} pod-seconds waiting",
            f"  disruptions:    {disruptions}",
            f"  pods evicted:   {self.pods_evicted}",
            f"  violations:     {self.violations}",
            f"  expectations:   {self.expectations_held} of {total} held",
        ]


@dataclass(frozen=True)
class ScenarioInfo:
    name: str
    description: str
    file: str
    seed: int
    region: str
    zones: tuple[str, ...]
    start: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "file": self.file,
            "seed": self.seed,
            "region": self.region,
            "zones": list(self.zones),
            "start": self.start,
        }


@dataclass(frozen=True)
class RunResult:
    scenario: ScenarioInfo
    label: str  # "as written", or what the what-if changed
    timeline: tuple[TimelineEvent, ...]
    expectations: tuple[ExpectationResult, ...]
    samples: tuple[Sample, ...]
    decisions: tuple[DecisionRecord, ...]
    fleet: tuple[FleetNode, ...]
    violations: tuple[Violation, ...]
    summary: Summary
    errors: tuple[str, ...] = field(default=())
    # Reconciles that failed and were retried (not a verdict: the run went on).
    controller_errors: tuple[ControllerError, ...] = field(default=())

    @property
    def passed(self) -> bool:
        return not self.errors and all(result.held for result in self.expectations)

    @property
    def exit_code(self) -> int:
        return EXIT_OK if self.passed else EXIT_EXPECTATION_FAILED

    def to_dict(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario.to_dict(),
            "label": self.label,
            "passed": self.passed,
            "timeline": [event.to_dict() for event in self.timeline],
            "expectations": [result.to_dict() for result in self.expectations],
            "series": [sample.to_dict() for sample in self.samples],
            "decisions": [decision.to_dict() for decision in self.decisions],
            "fleet": [node.to_dict() for node in self.fleet],
            "violations": [violation.to_dict() for violation in self.violations],
            "summary": self.summary.to_dict(),
            "errors": list(self.errors),
            "controllerErrors": [error.to_dict() for error in self.controller_errors],
        }
