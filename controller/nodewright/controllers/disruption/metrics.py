"""Disruption metrics `nodewright.metrics` does not define, in its shared REGISTRY, with
Karpenter's names and labels. The decision counter and the allowed-disruptions gauge are
`nodewright.metrics.DISRUPTION_DECISIONS` and `NODEPOOLS_ALLOWED_DISRUPTIONS`; the
pods-disruption counter is `nodewright.metrics.PODS_DISRUPTION_INITIATED`."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

from nodewright.metrics import DURATION_BUCKETS, NODEPOOL, REASON, REGISTRY

CONSOLIDATION_TYPE = "consolidation_type"

ELIGIBLE_NODES = Gauge(
    "karpenter_voluntary_disruption_eligible_nodes",
    "Number of nodes eligible for disruption by Karpenter. Labeled by disruption reason.",
    [REASON],
    registry=REGISTRY,
)
EVALUATION_DURATION = Histogram(
    "karpenter_voluntary_disruption_decision_evaluation_duration_seconds",
    "Duration of the disruption decision evaluation process in seconds. Labeled by method "
    "and consolidation type.",
    [REASON, CONSOLIDATION_TYPE],
    buckets=DURATION_BUCKETS,
    registry=REGISTRY,
)
DECISIONS_BY_NODEPOOL = Counter(
    "karpenter_voluntary_disruption_decisions_by_nodepool",
    "Number of disruption decisions performed by nodepool. Labeled by nodepool name, "
    "disruption decision, reason, and consolidation type.",
    [NODEPOOL, "decision", REASON, CONSOLIDATION_TYPE],
    registry=REGISTRY,
)
CONSOLIDATION_TIMEOUTS = Counter(
    "karpenter_voluntary_disruption_consolidation_timeouts",
    "Number of times the Consolidation algorithm has reached a timeout. Labeled by "
    "consolidation type.",
    [CONSOLIDATION_TYPE],
    registry=REGISTRY,
)
# Exported at 0 from the start, as Karpenter's init() does, so rate() sees the first one.
for _kind in ("multi", "single"):
    CONSOLIDATION_TIMEOUTS.labels(consolidation_type=_kind)
FAILED_VALIDATIONS = Counter(
    "karpenter_voluntary_disruption_failed_validations",
    "Number of candidates that were selected for disruption but failed validation. Labeled "
    "by consolidation type.",
    [CONSOLIDATION_TYPE],
    registry=REGISTRY,
)
QUEUE_FAILURES = Counter(
    "karpenter_voluntary_disruption_queue_failures",
    "The number of times that an enqueued disruption decision failed. Labeled by "
    "disruption method.",
    ["decision", REASON, CONSOLIDATION_TYPE],
    registry=REGISTRY,
)
NODES_CONSUMING_BUDGETS = Gauge(
    "karpenter_nodepools_nodes_consuming_budgets",
    "The number of nodes consuming the budget of a nodepool at a point in time. Labeled by "
    "NodePool.",
    [NODEPOOL, REASON],
    registry=REGISTRY,
)
CONSOLIDATION_SCORE = Histogram(
    "karpenter_consolidation_score",
    "Score of balanced consolidation moves. Labeled by decision, NodePool, and policy.",
    ["decision", NODEPOOL, "policy"],
    buckets=(0.1, 0.25, 0.33, 0.5, 1.0, 2.0, 5.0, 10.0),
    registry=REGISTRY,
)
CONSOLIDATION_MOVES = Counter(
    "karpenter_consolidation_moves",
    "Number of balanced consolidation moves. Labeled by decision, NodePool, and policy.",
    ["decision", NODEPOOL, "policy"],
    registry=REGISTRY,
)
