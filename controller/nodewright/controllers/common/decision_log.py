"""Why each node was or was not disrupted: one record per candidate the loop looks at.

Every decision (a node disrupted, blocked, kept or a command rejected at validation) is a
`Decision`. The disruption, expiration and interruption controllers record them in a
`DecisionLog`; it keeps the latest per node (for `nodewright explain node` in process and
for tests), a bounded history, and calls its subscribers (the simulator's timeline) with
each new record. The same records become Kubernetes Events and the NodeClaim's
`DisruptionBlocked` condition, so a cluster answers the question too (see `events`).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

# Outcomes
DISRUPTED = "disrupted"  # a command was started for the node
BLOCKED = "blocked"  # something forbids disrupting the node at all right now
KEPT = "kept"  # the node could be disrupted, but this method found no reason to
REJECTED = "rejected"  # a command for it failed validation and was dropped

# Methods
EMPTINESS = "emptiness"
DRIFT = "drift"
MULTI_NODE = "multi-node consolidation"
SINGLE_NODE = "single-node consolidation"
EXPIRATION = "expiration"
INTERRUPTION = "interruption"

# Karpenter's event reasons
DISRUPTION_BLOCKED = "DisruptionBlocked"
DISRUPTION_LAUNCHING = "DisruptionLaunching"
DISRUPTION_WAITING_READINESS = "DisruptionWaitingReadiness"
DISRUPTION_TERMINATING = "DisruptionTerminating"
UNCONSOLIDATABLE = "Unconsolidatable"
CONSOLIDATION_CANDIDATE = "ConsolidationCandidate"
CONSOLIDATION_REJECTED = "ConsolidationRejected"

# Why a node is blocked or kept: short machine-readable causes (condition reasons).
CAUSE_NOT_INITIALIZED = "NotInitialized"
CAUSE_DELETING = "Deleting"
CAUSE_DO_NOT_DISRUPT = "DoNotDisrupt"
CAUSE_PDB = "PodDisruptionBudget"
CAUSE_BUDGET = "DisruptionBudget"
CAUSE_CONSOLIDATE_AFTER = "ConsolidateAfter"
CAUSE_CONSOLIDATION_DISABLED = "ConsolidationDisabled"
CAUSE_POLICY = "ConsolidationPolicy"
CAUSE_NO_CHEAPER = "NoCheaperReplacement"
CAUSE_PODS_DO_NOT_FIT = "PodsDoNotFit"
CAUSE_TOO_MANY_REPLACEMENTS = "WouldNeedSeveralNodes"
CAUSE_SPOT_TO_SPOT = "SpotToSpot"
CAUSE_NODEPOOL = "NodePoolNotFound"
CAUSE_INSTANCE_TYPE = "InstanceTypeUnknown"
CAUSE_NOMINATED = "Nominated"
CAUSE_VALIDATION = "ValidationFailed"
CAUSE_STATIC_SCALING = "StaticNodePoolScaling"
CAUSE_NODE_LIMIT = "NodeLimit"
CAUSE_BALANCED = "BalancedScore"
CAUSE_STATIC_NODEPOOL = "StaticNodePool"
CAUSE_BUFFER_PODS = "BufferPods"
CONSOLIDATION_APPROVED = "ConsolidationApproved"


@dataclass(frozen=True)
class Decision:
    """One explanation. `node` is the Node's name (the NodeClaim's when it has no Node)."""

    time: datetime
    node: str
    nodeclaim: str
    nodepool: str
    method: str
    outcome: str
    event_reason: str
    message: str
    cause: str = ""
    decision: str = ""  # "delete" | "replace" for disruptions
    replacements: tuple[str, ...] = ()
    savings: float | None = None
    details: dict[str, Any] = field(default_factory=dict, compare=False)

    def describe(self) -> str:
        head = f"{self.method}: {self.outcome}"
        if self.decision:
            head += f" ({self.decision})"
        return f"{head}: {self.message}"


Subscriber = Callable[[Decision], None]


class DecisionLog:
    """The decisions made in this process, newest last."""

    def __init__(self, history: int = 10_000) -> None:
        self._kept = history
        self._history: deque[Decision] = deque(maxlen=history)
        self._latest: dict[str, Decision] = {}
        self._subscribers: list[Subscriber] = []
        # The disruption loop records from outside the state lock while other
        # controllers (expiration, interruption) record under it.
        self._lock = threading.RLock()

    def subscribe(self, subscriber: Subscriber) -> None:
        self._subscribers.append(subscriber)

    def unsubscribe(self, subscriber: Subscriber) -> None:
        if subscriber in self._subscribers:
            self._subscribers.remove(subscriber)

    def record(self, decision: Decision) -> bool:
        """Keep the decision; False (and no subscriber called) when it only repeats the
        node's previous one, so a blocked node polled every 10 s does not flood anyone."""
        with self._lock:
            previous = self._latest.pop(decision.node, None)
            self._latest[decision.node] = decision  # re-inserted: newest last
            if len(self._latest) > self._kept:
                # Nodes come and go under fresh names: forget the one decided longest ago.
                del self._latest[next(iter(self._latest))]
            if previous is not None and _same(previous, decision):
                return False
            self._history.append(decision)
        for subscriber in list(self._subscribers):
            subscriber(decision)
        return True

    def latest(self, node: str) -> Decision | None:
        return self._latest.get(node)

    def forget(self, node: str) -> None:
        with self._lock:
            self._latest.pop(node, None)

    def __iter__(self) -> Iterator[Decision]:
        return iter(list(self._history))

    def __len__(self) -> int:
        return len(self._history)


def _same(a: Decision, b: Decision) -> bool:
    return (a.method, a.outcome, a.cause, a.message, a.decision) == (
        b.method, b.outcome, b.cause, b.message, b.decision)
