"""Prometheus metrics with Karpenter's names, labels and buckets (v1.14 reference).

Bottom layer (it imports nothing of ours), so every controller can record into it. The
objects live in one `REGISTRY` that the operator serves on its metrics port and tests can
read with `REGISTRY.get_sample_value(name, labels)`; nothing is registered in
prometheus-client's global default registry, so the simulator and many operators in one
test process never collide.

Names follow Karpenter where the meaning matches: dashboards built for Karpenter read
ours unchanged. The queue, reconcile, leader-election and API client metrics carry the names
controller-runtime and client-go give them, as they do in a Karpenter process.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

REGISTRY = CollectorRegistry(auto_describe=True)

# Label names as Karpenter spells them.
NODEPOOL = "nodepool"
REASON = "reason"
CAPACITY_TYPE = "capacity_type"
ZONE = "zone"
RESOURCE_TYPE = "resource_type"
CONTROLLER = "controller"

# Karpenter's duration buckets (controller-runtime's, extended for singleton controllers).
DURATION_BUCKETS = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8,
    0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30,
    40, 50, 60, 120, 150, 300, 450, 600,
)

# --- NodeClaims and nodes -------------------------------------------------------------

NODECLAIMS_CREATED = Counter(
    "karpenter_nodeclaims_created",
    "Number of nodeclaims created in total. Labeled by reason the nodeclaim was created, the "
    "owning nodepool, and if min values was relaxed for this nodeclaim.",
    [REASON, NODEPOOL, "min_values_relaxed"],
    registry=REGISTRY,
)
NODECLAIMS_TERMINATED = Counter(
    "karpenter_nodeclaims_terminated",
    "Number of nodeclaims terminated in total. Labeled by the owning nodepool, capacity type, "
    "and zone.",
    [NODEPOOL, CAPACITY_TYPE, ZONE],
    registry=REGISTRY,
)
NODECLAIMS_DISRUPTED = Counter(
    "karpenter_nodeclaims_disrupted",
    "Number of nodeclaims disrupted in total. Labeled by reason the nodeclaim was disrupted, "
    "the owning nodepool and its capacity type.",
    [REASON, NODEPOOL, CAPACITY_TYPE],
    registry=REGISTRY,
)
NODES_CREATED = Counter(
    "karpenter_nodes_created",
    "Number of nodes created in total. Labeled by owning nodepool and zone.",
    [NODEPOOL, ZONE],
    registry=REGISTRY,
)
NODES_TERMINATED = Counter(
    "karpenter_nodes_terminated",
    "Number of nodes terminated in total. Labeled by owning nodepool and zone.",
    [NODEPOOL, ZONE],
    registry=REGISTRY,
)
NODES_DRAINED = Counter(
    "karpenter_nodes_drained",
    "The total number of nodes drained. Labeled by the owning nodepool.",
    [NODEPOOL],
    registry=REGISTRY,
)
PODS_DRAINED = Counter(
    "karpenter_pods_drained",
    "The total number of pods drained during node termination, labeled by reason.",
    [REASON],
    registry=REGISTRY,
)

# --- Pods ---------------------------------------------------------------------------------

POD_STATE_LABELS = (
    "name", "namespace", "owner", "node", "scheduled", NODEPOOL, ZONE, "arch", CAPACITY_TYPE,
    "instance_type", "phase", "ready", "managed",
)
PODS_STATE = Gauge(
    "karpenter_pods_state",
    "Pod state is the current state of pods, labeled by the pod name, namespace, owner, node, "
    "nodepool name, zone, architecture, capacity type, instance type, pod phase and readiness.",
    list(POD_STATE_LABELS),
    registry=REGISTRY,
)

# --- Scheduling and the cloud provider ----------------------------------------------------

SCHEDULING_DURATION = Histogram(
    "karpenter_scheduler_scheduling_duration_seconds",
    "Duration of scheduling simulations used for deprovisioning and provisioning in seconds.",
    [CONTROLLER],
    buckets=DURATION_BUCKETS,
    registry=REGISTRY,
)
# The pre-v1 name, which the issue and many dashboards still use: the provisioner's own
# scheduling simulations only.
PROVISIONER_SCHEDULING_DURATION = Histogram(
    "karpenter_provisioner_scheduling_duration_seconds",
    "Duration of the provisioner's scheduling simulations in seconds.",
    buckets=DURATION_BUCKETS,
    registry=REGISTRY,
)
SCHEDULER_QUEUE_DEPTH = Gauge(
    "karpenter_scheduler_queue_depth",
    "The number of pods currently waiting to be scheduled.",
    [CONTROLLER],
    registry=REGISTRY,
)
CLOUDPROVIDER_DURATION = Histogram(
    "karpenter_cloudprovider_duration_seconds",
    "Duration of cloud provider method calls. Labeled by the controller, method name and "
    "provider.",
    [CONTROLLER, "method", "provider"],
    buckets=DURATION_BUCKETS,
    registry=REGISTRY,
)
CLOUDPROVIDER_ERRORS = Counter(
    "karpenter_cloudprovider_errors",
    "Total number of errors returned from CloudProvider calls.",
    [CONTROLLER, "method", "provider", "error"],
    registry=REGISTRY,
)

# --- NodePools ----------------------------------------------------------------------------

NODEPOOLS_USAGE = Gauge(
    "karpenter_nodepools_usage",
    "The amount of resources that have been provisioned for a nodepool. Labeled by nodepool "
    "name and resource type.",
    [RESOURCE_TYPE, NODEPOOL],
    registry=REGISTRY,
)
NODEPOOLS_LIMIT = Gauge(
    "karpenter_nodepools_limit",
    "Limits specified on the nodepool that restrict the quantity of resources provisioned. "
    "Labeled by nodepool name and resource type.",
    [RESOURCE_TYPE, NODEPOOL],
    registry=REGISTRY,
)
NODEPOOLS_ALLOWED_DISRUPTIONS = Gauge(
    "karpenter_nodepools_allowed_disruptions",
    "The number of nodes for a given NodePool that can be concurrently disrupting at a point "
    "in time. Labeled by NodePool and reason.",
    [NODEPOOL, REASON],
    registry=REGISTRY,
)

# --- Disruption and interruption ------------------------------------------------------------

DISRUPTION_DECISIONS = Counter(
    "karpenter_voluntary_disruption_decisions",
    "Number of disruption decisions performed. Labeled by disruption decision, reason, and "
    "consolidation type.",
    ["decision", REASON, "consolidation_type"],
    registry=REGISTRY,
)
INTERRUPTION_RECEIVED_MESSAGES = Counter(
    "karpenter_interruption_received_messages",
    "Count of messages received from the SQS queue. Broken down by message type and whether "
    "the message was actionable.",
    ["message_type"],
    registry=REGISTRY,
)
INTERRUPTION_MESSAGE_QUEUE_DURATION = Histogram(
    "karpenter_interruption_message_queue_duration_seconds",
    "Amount of time an interruption message is on the queue before it is processed.",
    buckets=DURATION_BUCKETS,
    registry=REGISTRY,
)

# --- Cluster state -------------------------------------------------------------------------

CLUSTER_STATE_SYNCED = Gauge(
    "karpenter_cluster_state_synced",
    "Returns 1 if cluster state is synced and 0 otherwise.",
    registry=REGISTRY,
)
CLUSTER_STATE_NODE_COUNT = Gauge(
    "karpenter_cluster_state_node_count",
    "Current count of nodes in cluster state.",
    registry=REGISTRY,
)
BUILD_INFO = Gauge(
    "karpenter_build_info",
    "A metric with a constant '1' value labeled by the version it was built from.",
    ["version"],
    registry=REGISTRY,
)

# --- The operator's runtime (controller-runtime and client-go names) ----------------------

RECONCILE_TOTAL = Counter(
    "controller_runtime_reconcile",
    "Total number of reconciliations per controller, by result (success, error, requeue_after).",
    [CONTROLLER, "result"],
    registry=REGISTRY,
)
RECONCILE_ERRORS = Counter(
    "controller_runtime_reconcile_errors",
    "Total number of reconciliation errors per controller.",
    [CONTROLLER],
    registry=REGISTRY,
)
RECONCILE_TIME = Histogram(
    "controller_runtime_reconcile_time_seconds",
    "Length of time per reconciliation per controller.",
    [CONTROLLER],
    buckets=DURATION_BUCKETS,
    registry=REGISTRY,
)
WORKQUEUE_DEPTH = Gauge(
    "workqueue_depth",
    "Current depth of the work queue.",
    ["name"],
    registry=REGISTRY,
)
WORKQUEUE_ADDS = Counter(
    "workqueue_adds",
    "Total number of adds handled by the work queue.",
    ["name"],
    registry=REGISTRY,
)
WORKQUEUE_RETRIES = Counter(
    "workqueue_retries",
    "Total number of retries handled by the work queue.",
    ["name"],
    registry=REGISTRY,
)
LEADER_ELECTION_STATUS = Gauge(
    "leader_election_master_status",
    "1 while this process holds the leader Lease, 0 otherwise.",
    ["name"],
    registry=REGISTRY,
)


@contextmanager
def measure(histogram: Histogram, **labels: str) -> Iterator[None]:
    """Observe how long the block takes (elapsed process time, not the controllers' Clock:
    a duration metric measures our own work, which the virtual clock does not see)."""
    start = time.perf_counter()
    try:
        yield
    finally:
        observed = histogram.labels(**labels) if labels else histogram
        observed.observe(time.perf_counter() - start)

# --- the API server client --------------------------------------------------------------

REST_CLIENT_REQUESTS = Counter(
    "rest_client_requests",
    "Number of HTTP requests, partitioned by status code, method, and host.",
    ["code", "host", "method"],
    registry=REGISTRY,
)
