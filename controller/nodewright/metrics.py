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

import math
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from collections.abc import Set as AbstractSet
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    Metric,
    ProcessCollector,
    disable_created_metrics,
)
from prometheus_client.values import MutexValue

# client_golang's text exposition has no `<name>_created` series; prometheus_client would add
# one per counter, histogram and summary child (`karpenter_nodes_created_created`, ...).
disable_created_metrics()  # type: ignore[no-untyped-call]
REGISTRY = CollectorRegistry(auto_describe=True)
# controller-runtime registers the process collector in its registry: process_cpu_seconds_total,
# process_resident_memory_bytes, process_open_fds, process_start_time_seconds, ...
ProcessCollector(registry=REGISTRY)
_MICROSECOND = timedelta(microseconds=1)

# Label names as Karpenter spells them.
NODEPOOL = "nodepool"
REASON = "reason"
CAPACITY_TYPE = "capacity_type"
ZONE = "zone"
RESOURCE_TYPE = "resource_type"
CONTROLLER = "controller"
CONSOLIDATION_POLICY = "consolidation_policy"
TERMINATION_MODE = "termination_mode"

# Karpenter's duration buckets (controller-runtime's, extended for singleton controllers).
DURATION_BUCKETS = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8,
    0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30,
    40, 50, 60, 120, 150, 300, 450, 600,
)
# client_golang's prometheus.DefBuckets, where Karpenter leaves a histogram's buckets unset
# (prometheus_client's own default adds 0.075, 0.75 and 7.5).
DEFAULT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)


def exponential_buckets(start: float, factor: float, count: int) -> tuple[float, ...]:
    """prometheus.ExponentialBuckets, multiplied out as Go does (the same floats)."""
    buckets: list[float] = []
    for _ in range(count):
        buckets.append(start)
        start *= factor
    return tuple(buckets)


# --- Summaries with quantiles ----------------------------------------------------------

# Karpenter's SummaryObjectives: these quantiles (epsilon 0.01) over client_golang's default
# ten-minute window.
SUMMARY_QUANTILES = (0.0, 0.5, 0.9, 0.99, 1.0)
SUMMARY_MAX_AGE_SECONDS = 600.0
# Observations kept per series; beyond this the oldest go first (the quantiles then cover
# the most recent ones, within the window).
SUMMARY_MAX_SAMPLES = 10_000


class _Window:
    def __init__(self) -> None:
        self.samples: deque[tuple[float, float]] = deque(maxlen=SUMMARY_MAX_SAMPLES)
        self.count = 0
        self.sum = 0.0

    def quantiles(self, since: float) -> list[tuple[float, float]]:
        while self.samples and self.samples[0][0] < since:
            self.samples.popleft()
        ordered = sorted(value for _, value in self.samples)
        if not ordered:
            return [(q, math.nan) for q in SUMMARY_QUANTILES]
        last = len(ordered) - 1
        return [(q, ordered[min(last, max(0, math.ceil(q * len(ordered)) - 1))])
                for q in SUMMARY_QUANTILES]


class QuantileSummary:
    """A Summary exported as client_golang exports one with objectives: the quantiles of
    the observations of the last ten minutes (exact, where client_golang estimates them
    within epsilon; NaN when the window is empty) next to the all-time _count and _sum.
    prometheus-client's own Summary has no quantiles. Used like it: `observe`, or
    `labels(...).observe`."""

    def __init__(self, name: str, documentation: str, labelnames: Iterable[str] = (), *,
                 registry: CollectorRegistry | None = None,
                 now: Callable[[], float] = time.monotonic) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = tuple(labelnames)
        self._now = now
        self._windows: dict[tuple[str, ...], _Window] = {}
        self._lock = threading.Lock()
        if registry is not None:
            registry.register(self)

    def labels(self, *values: str, **by_name: str) -> _SummaryChild:
        if by_name:
            values = tuple(str(by_name[label]) for label in self.labelnames)
        if len(values) != len(self.labelnames):
            raise ValueError(f"{self.name}: expected labels {self.labelnames}, got {values}")
        return _SummaryChild(self, tuple(str(v) for v in values))

    def observe(self, value: float) -> None:
        self.labels().observe(value)

    def _observe(self, key: tuple[str, ...], value: float) -> None:
        with self._lock:
            window = self._windows.get(key)
            if window is None:
                window = self._windows[key] = _Window()
            window.samples.append((self._now(), value))
            window.count += 1
            window.sum += value

    def remove(self, *values: str) -> None:
        with self._lock:
            self._windows.pop(tuple(values), None)

    def clear(self) -> None:
        with self._lock:
            self._windows.clear()

    def describe(self) -> list[Metric]:
        return [Metric(self.name, self.documentation, "summary")]

    def collect(self) -> list[Metric]:
        family = Metric(self.name, self.documentation, "summary")
        since = self._now() - SUMMARY_MAX_AGE_SECONDS
        with self._lock:
            for key, window in self._windows.items():
                labels = dict(zip(self.labelnames, key, strict=True))
                for quantile, value in window.quantiles(since):
                    family.add_sample(self.name, {**labels, "quantile": str(quantile)}, value)
                family.add_sample(f"{self.name}_count", labels, float(window.count))
                family.add_sample(f"{self.name}_sum", labels, window.sum)
        return [family]


@dataclass(frozen=True)
class _SummaryChild:
    summary: QuantileSummary
    key: tuple[str, ...]

    def observe(self, value: float) -> None:
        self.summary._observe(self.key, value)


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
DISRUPTED_LABELS = (REASON, NODEPOOL, CAPACITY_TYPE, CONSOLIDATION_POLICY, TERMINATION_MODE)
NODECLAIMS_DISRUPTED = Counter(
    "karpenter_nodeclaims_disrupted",
    "Number of nodeclaims disrupted in total. Labeled by reason the nodeclaim was disrupted, "
    "the owning nodepool, the capacity type, the consolidation policy, and the termination "
    "mode.",
    list(DISRUPTED_LABELS),
    registry=REGISTRY,
)
PODS_DISRUPTION_INITIATED = Counter(
    "karpenter_pods_disruption_initiated",
    "Number of pod disruptions initiated in total, incremented by the reschedulable pod count "
    "whenever the underlying nodeclaim is disrupted. Labeled like "
    "karpenter_nodeclaims_disrupted_total.",
    list(DISRUPTED_LABELS),
    registry=REGISTRY,
)
NODECLAIMS_INSTANCE_TERMINATION_DURATION = Histogram(
    "karpenter_nodeclaims_instance_termination_duration_seconds",
    "Duration of CloudProvider Instance termination in seconds.",
    [NODEPOOL],
    buckets=tuple(float(2 ** i) for i in range(11)),
    registry=REGISTRY,
)
NODECLAIMS_TERMINATION_DURATION = Histogram(
    "karpenter_nodeclaims_termination_duration_seconds",
    "Duration of NodeClaim termination in seconds.",
    [NODEPOOL],
    buckets=tuple(float(2 ** i) for i in range(12)),
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
NODES_TERMINATION_DURATION = QuantileSummary(
    "karpenter_nodes_termination_duration_seconds",
    "The time taken between a node's deletion request and the removal of its finalizer",
    [NODEPOOL],
    registry=REGISTRY,
)
_MINUTE, _HOUR, _DAY = 60.0, 3600.0, 86400.0
NODES_LIFETIME_DURATION = Histogram(
    "karpenter_nodes_lifetime_duration_seconds",
    "The lifetime duration of the nodes since creation.",
    [NODEPOOL],
    buckets=(
        15 * _MINUTE, 30 * _MINUTE, 45 * _MINUTE, _HOUR, 2 * _HOUR, 4 * _HOUR, 6 * _HOUR,
        8 * _HOUR, 10 * _HOUR, 12 * _HOUR, 16 * _HOUR, 20 * _HOUR, _DAY, 2 * _DAY, 3 * _DAY,
        5 * _DAY, 10 * _DAY, 15 * _DAY, 20 * _DAY, 25 * _DAY, 30 * _DAY,
    ),
    registry=REGISTRY,
)
PODS_DRAINED = Counter(
    "karpenter_pods_drained",
    "The total number of pods drained during node termination, labeled by reason.",
    [REASON],
    registry=REGISTRY,
)
PODS_EVICTION_REQUESTS = Counter(
    "karpenter_pods_eviction_requests",
    "The total number of pod eviction requests made, labeled by response code",
    ["code"],
    registry=REGISTRY,
)

# Node gauges carry every well-known label of the AWS build as its last path segment in
# snake case (karpenter.k8s.aws/instance-cpu -> instance_cpu), as Karpenter's node metrics
# controller does.
WELL_KNOWN_NODE_LABELS: dict[str, str] = {
    key: key.rsplit("/", 1)[1].lower().replace("-", "_")
    for key in (
        "karpenter.sh/nodepool", "topology.kubernetes.io/zone", "topology.kubernetes.io/region",
        "node.kubernetes.io/instance-type", "kubernetes.io/arch", "kubernetes.io/os",
        "karpenter.sh/capacity-type", "node.kubernetes.io/windows-build",
        "karpenter.k8s.aws/capacity-reservation-id",
        "karpenter.k8s.aws/capacity-reservation-type",
        "karpenter.k8s.aws/capacity-reservation-interruptible",
        "karpenter.k8s.aws/instance-hypervisor",
        "karpenter.k8s.aws/instance-encryption-in-transit-supported",
        "karpenter.k8s.aws/instance-category",
        "karpenter.k8s.aws/instance-capability-flex", "karpenter.k8s.aws/instance-family",
        "karpenter.k8s.aws/instance-generation", "karpenter.k8s.aws/instance-size",
        "karpenter.k8s.aws/instance-local-nvme", "karpenter.k8s.aws/instance-cpu",
        "karpenter.k8s.aws/instance-cpu-manufacturer",
        "karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz",
        "karpenter.k8s.aws/instance-memory", "karpenter.k8s.aws/instance-ebs-bandwidth",
        "karpenter.k8s.aws/instance-network-bandwidth", "karpenter.k8s.aws/instance-gpu-name",
        "karpenter.k8s.aws/instance-gpu-manufacturer", "karpenter.k8s.aws/instance-gpu-count",
        "karpenter.k8s.aws/instance-gpu-memory", "karpenter.k8s.aws/instance-accelerator-name",
        "karpenter.k8s.aws/instance-accelerator-manufacturer",
        "karpenter.k8s.aws/instance-accelerator-count", "topology.k8s.aws/zone-id",
        "karpenter.k8s.aws/instance-tenancy", "karpenter.k8s.aws/placement-group-id",
        "karpenter.k8s.aws/placement-group-partition",
    )
}
NODE_LABELS = (*WELL_KNOWN_NODE_LABELS.values(), "node_name", "phase", "managed")
NODE_RESOURCE_LABELS = (*NODE_LABELS, RESOURCE_TYPE)


def _node_gauge(name: str, documentation: str, labels: tuple[str, ...]) -> Gauge:
    return Gauge(name, documentation, list(labels), registry=REGISTRY)


NODES_ALLOCATABLE = _node_gauge(
    "karpenter_nodes_allocatable",
    "Node allocatable are the resources allocatable by nodes.", NODE_RESOURCE_LABELS)
NODES_TOTAL_POD_REQUESTS = _node_gauge(
    "karpenter_nodes_total_pod_requests",
    "Node total pod requests are the resources requested by pods bound to nodes, including "
    "the DaemonSet pods.", NODE_RESOURCE_LABELS)
NODES_TOTAL_POD_LIMITS = _node_gauge(
    "karpenter_nodes_total_pod_limits",
    "Node total pod limits are the resources specified by pod limits, including the "
    "DaemonSet pods.", NODE_RESOURCE_LABELS)
NODES_TOTAL_DAEMON_REQUESTS = _node_gauge(
    "karpenter_nodes_total_daemon_requests",
    "Node total daemon requests are the resource requested by DaemonSet pods bound to nodes.",
    NODE_RESOURCE_LABELS)
NODES_TOTAL_DAEMON_LIMITS = _node_gauge(
    "karpenter_nodes_total_daemon_limits",
    "Node total daemon limits are the resources specified by DaemonSet pod limits.",
    NODE_RESOURCE_LABELS)
NODES_SYSTEM_OVERHEAD = _node_gauge(
    "karpenter_nodes_system_overhead",
    "Node system daemon overhead are the resources reserved for system overhead, the "
    "difference between the node's capacity and allocatable values are reported by the "
    "status.", NODE_RESOURCE_LABELS)
NODES_CURRENT_LIFETIME = _node_gauge(
    "karpenter_nodes_current_lifetime_seconds", "Node age in seconds", NODE_LABELS)
CLUSTER_UTILIZATION = Gauge(
    "karpenter_cluster_utilization_percent",
    "Utilization of allocatable resources by pod requests",
    [RESOURCE_TYPE],
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
POD_KEY_LABELS = ("name", "namespace")
PODS_STARTUP_DURATION = QuantileSummary(
    "karpenter_pods_startup_duration_seconds",
    "The time from pod creation until the pod is running.",
    registry=REGISTRY,
)
PODS_UNSTARTED_TIME = Gauge(
    "karpenter_pods_unstarted_time_seconds",
    "The time from pod creation until the pod is running.",
    list(POD_KEY_LABELS),
    registry=REGISTRY,
)
PODS_BOUND_DURATION = Histogram(
    "karpenter_pods_bound_duration_seconds",
    "The time from pod creation until the pod is bound.",
    buckets=DURATION_BUCKETS,
    registry=REGISTRY,
)
PODS_UNBOUND_TIME = Gauge(
    "karpenter_pods_unbound_time_seconds",
    "The time from pod creation until the pod is bound.",
    list(POD_KEY_LABELS),
    registry=REGISTRY,
)
PODS_PROVISIONING_BOUND_DURATION = Histogram(
    "karpenter_pods_provisioning_bound_duration_seconds",
    "The time from when Karpenter first thinks the pod can schedule until it binds.",
    buckets=DURATION_BUCKETS,
    registry=REGISTRY,
)
PODS_PROVISIONING_UNBOUND_TIME = Gauge(
    "karpenter_pods_provisioning_unbound_time_seconds",
    "The time from when Karpenter first thinks the pod can schedule until it binds.",
    list(POD_KEY_LABELS),
    registry=REGISTRY,
)
PODS_PROVISIONING_STARTUP_DURATION = Histogram(
    "karpenter_pods_provisioning_startup_duration_seconds",
    "The time from when Karpenter first thinks the pod can schedule until the pod is running.",
    buckets=DURATION_BUCKETS,
    registry=REGISTRY,
)
PODS_PROVISIONING_UNSTARTED_TIME = Gauge(
    "karpenter_pods_provisioning_unstarted_time_seconds",
    "The time from when Karpenter first thinks the pod can schedule until the pod is running.",
    list(POD_KEY_LABELS),
    registry=REGISTRY,
)
PODS_SCHEDULING_UNDECIDED_TIME = Gauge(
    "karpenter_pods_provisioning_scheduling_undecided_time_seconds",
    "The time from when Karpenter has seen a pod without making a scheduling decision for "
    "the pod.",
    list(POD_KEY_LABELS),
    registry=REGISTRY,
)
PODS_SCHEDULING_DECISION_DURATION = Histogram(
    "karpenter_pods_scheduling_decision_duration_seconds",
    "The time it takes for Karpenter to first try to schedule a pod after it's been seen.",
    buckets=DURATION_BUCKETS,
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
    [CONTROLLER, "scheduling_id"],
    registry=REGISTRY,
)
SCHEDULER_UNFINISHED_WORK = Gauge(
    "karpenter_scheduler_unfinished_work_seconds",
    "How many seconds of work has been done that is in progress and hasn't been observed by "
    "scheduling_duration_seconds.",
    [CONTROLLER, "scheduling_id"],
    registry=REGISTRY,
)
SCHEDULER_IGNORED_PODS = Gauge(
    "karpenter_scheduler_ignored_pods_count",
    "Number of pods ignored during scheduling by Karpenter",
    registry=REGISTRY,
)
SCHEDULER_PENDING_BY_ZONE = Gauge(
    "karpenter_scheduler_pending_pods_by_effective_zone_count",
    "Pending pods dimensioned by effective zone constraint, or the intersection of pod-level "
    "zone signals, volume topology (PVC zones), and topology constraints. Values: specific "
    "zone name (e.g., 'us-west-2a'), 'flexible' (multiple zones), or 'none' (no valid "
    "intersection).",
    [CONTROLLER, ZONE],
    registry=REGISTRY,
)
SCHEDULER_UNSCHEDULABLE_PODS = Gauge(
    "karpenter_scheduler_unschedulable_pods_count",
    "The number of unschedulable Pods.",
    [CONTROLLER],
    registry=REGISTRY,
)
CLOUDPROVIDER_DURATION = Histogram(
    "karpenter_cloudprovider_duration_seconds",
    "Duration of cloud provider method calls. Labeled by the controller, method name and "
    "provider.",
    [CONTROLLER, "method", "provider"],
    buckets=DEFAULT_BUCKETS,
    registry=REGISTRY,
)
CLOUDPROVIDER_ERRORS = Counter(
    "karpenter_cloudprovider_errors",
    "Total number of errors returned from CloudProvider calls.",
    [CONTROLLER, "method", "provider", "error"],
    registry=REGISTRY,
)
OFFERING_LABELS = ("instance_type", CAPACITY_TYPE, ZONE)
OFFERING_AVAILABLE = Gauge(
    "karpenter_cloudprovider_instance_type_offering_available",
    "Instance type offering availability, based on instance type, capacity type, and zone",
    list(OFFERING_LABELS),
    registry=REGISTRY,
)
OFFERING_PRICE_ESTIMATE = Gauge(
    "karpenter_cloudprovider_instance_type_offering_price_estimate",
    "Instance type offering estimated hourly price used when making informed decisions on "
    "node cost calculation, based on instance type, capacity type, and zone.",
    list(OFFERING_LABELS),
    registry=REGISTRY,
)
INSTANCE_TYPE_CPU_CORES = Gauge(
    "karpenter_cloudprovider_instance_type_cpu_cores",
    "VCPUs cores for a given instance type.",
    ["instance_type"],
    registry=REGISTRY,
)
INSTANCE_TYPE_MEMORY_BYTES = Gauge(
    "karpenter_cloudprovider_instance_type_memory_bytes",
    "Memory, in bytes, for a given instance type.",
    ["instance_type"],
    registry=REGISTRY,
)
INSTANCE_LAUNCH_FAILURES = Counter(
    "karpenter_cloudprovider_instance_launch_failures",
    "Number of instance launch (CreateFleet offering) failures, dimensioned by availability "
    "zone, zone ID, capacity type, and launch failure reason.",
    [ZONE, "zone_id", CAPACITY_TYPE, REASON],
    registry=REGISTRY,
)
INSTANCE_TERMINATION_FAILURES = Counter(
    "karpenter_cloudprovider_instance_termination_failures",
    "Number of instance termination (TerminateInstances) failures, dimensioned by "
    "availability zone and zone ID.",
    [ZONE, "zone_id"],
    registry=REGISTRY,
)
EC2NODECLASS_USERDATA_BYTES = Gauge(
    "karpenter_ec2nodeclasses_userdata_bytes",
    "Size in bytes of the rendered user data (raw, pre-base64) for the EC2NodeClass",
    ["nodeclass"],
    registry=REGISTRY,
)
# Karpenter's batcher size buckets (pkg/batcher/metrics.go SizeBuckets).
BATCH_SIZE_BUCKETS = (
    1, 2, 4, 5, 10, 15, 20, 25, 30, 40, 50, 60, 70, 80, 90, 100, 125, 150, 175, 200, 225, 250,
    275, 300, 350, 400, 450, 500, 550, 600, 700, 800, 900, 1000,
)
BATCHER_BATCH_TIME = Histogram(
    "karpenter_cloudprovider_batcher_batch_time_seconds",
    "Duration of the batching window per batcher",
    ["batcher"],
    buckets=DURATION_BUCKETS,
    registry=REGISTRY,
)
BATCHER_BATCH_SIZE = Histogram(
    "karpenter_cloudprovider_batcher_batch_size",
    "Size of the request batch per batcher",
    ["batcher"],
    buckets=BATCH_SIZE_BUCKETS,
    registry=REGISTRY,
)

# --- AWS SDK requests (github.com/jonathan-innis/aws-sdk-go-prometheus v0.1.1) ---------------

AWS_SDK_LABELS = ("service", "action", "code")
# prometheus.ExponentialBuckets(0.01, 1.5, 20): 10 ms to about 22 s.
AWS_SDK_DURATION_BUCKETS = exponential_buckets(0.01, 1.5, 20)
AWS_SDK_REQUESTS = Counter(
    "aws_sdk_go_request", "The total number of AWS SDK Go requests", AWS_SDK_LABELS,
    registry=REGISTRY,
)
AWS_SDK_REQUEST_ATTEMPTS = Counter(
    "aws_sdk_go_request_attempt", "The total number of AWS SDK Go request attempts",
    AWS_SDK_LABELS, registry=REGISTRY,
)
AWS_SDK_REQUEST_LATENCY = Histogram(
    "aws_sdk_go_request_duration_seconds", "Latency of AWS SDK Go requests", AWS_SDK_LABELS,
    buckets=AWS_SDK_DURATION_BUCKETS, registry=REGISTRY,
)
AWS_SDK_REQUEST_ATTEMPT_LATENCY = Histogram(
    "aws_sdk_go_request_attempt_duration_seconds", "Latency of AWS SDK Go request attempts",
    AWS_SDK_LABELS, buckets=AWS_SDK_DURATION_BUCKETS, registry=REGISTRY,
)
AWS_SDK_REQUEST_RETRY_COUNT = Histogram(
    "aws_sdk_go_request_retry_count",
    "The total number of AWS SDK Go retry attempts per request", AWS_SDK_LABELS,
    buckets=tuple(range(11)), registry=REGISTRY,
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
NODEPOOLS_COST = Gauge(
    "karpenter_nodepools_cost_total",
    "Total cost of the nodepool from Karpenter's perspective (the hourly price of its "
    "machines' offerings). Not an authoritative source for billing.",
    [NODEPOOL],
    registry=REGISTRY,
)
NODEPOOLS_COST_TRACKER_ERRORS = Counter(
    "karpenter_nodepools_cost_tracker_errors_total",
    "Number of errors encountered during cost tracking operations. Labeled by nodepool and "
    "nodeclaim.",
    [NODEPOOL],
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
INTERRUPTION_DELETED_MESSAGES = Counter(
    "karpenter_interruption_deleted_messages",
    "Count of messages deleted from the SQS queue.",
    registry=REGISTRY,
)
INTERRUPTION_MESSAGE_QUEUE_DURATION = Histogram(
    "karpenter_interruption_message_queue_duration_seconds",
    "Amount of time an interruption message is on the queue before it is processed.",
    buckets=DURATION_BUCKETS,
    registry=REGISTRY,
)
INTERRUPTION_INSTANCE_STATUS_UNHEALTHY = Counter(
    "karpenter_interruption_instance_status_unhealthy",
    "Count of unique unhealthy instance statuses detected from EC2 DescribeInstanceStatus. "
    "Broken down by status check category.",
    ["category"],
    registry=REGISTRY,
)

# --- Cluster state -------------------------------------------------------------------------

CLUSTER_STATE_SYNCED = Gauge(
    "karpenter_cluster_state_synced",
    "Returns 1 if cluster state is synced and 0 otherwise. Synced checks that nodeclaims and "
    "nodes that are stored in the APIServer have the same representation as the cluster "
    "state.",
    registry=REGISTRY,
)
CLUSTER_STATE_NODE_COUNT = Gauge(
    "karpenter_cluster_state_node_count",
    "Current count of nodes in cluster state.",
    registry=REGISTRY,
)
CLUSTER_STATE_UNSYNCED_TIME = Gauge(
    "karpenter_cluster_state_unsynced_time_seconds",
    "The time for which cluster state is not synced",
    registry=REGISTRY,
)
BUILD_INFO = Gauge(
    "karpenter_build_info",
    "A metric with a constant '1' value labeled by the version it was built from.",
    ["version"],
    registry=REGISTRY,
)

# --- Status conditions (operatorpkg's status controller) ----------------------------------

STATUS_OBJECT_LABELS = ("namespace", "name", "group", "kind", "type", "status", "reason")
STATUS_CONDITION_COUNT = Gauge(
    "operator_status_condition_count",
    "The number of an condition for a given object, type and status. e.g. Alarm := "
    "Available=False > 0",
    list(STATUS_OBJECT_LABELS),
    registry=REGISTRY,
)
STATUS_CONDITION_CURRENT_STATUS_SECONDS = Gauge(
    "operator_status_condition_current_status_seconds",
    "The current amount of time in seconds that a status condition has been in a specific "
    "state. Alarm := P99(Updated=Unknown) > 5 minutes",
    list(STATUS_OBJECT_LABELS),
    registry=REGISTRY,
)
STATUS_CONDITION_TRANSITIONS = Counter(
    "operator_status_condition_transitions",
    "The count of transitions of a given object, type and status.",
    ["group", "kind", "type", "status", "reason"],
    registry=REGISTRY,
)
STATUS_CONDITION_TRANSITION_SECONDS = Histogram(
    "operator_status_condition_transition_seconds",
    "The amount of time a condition was in a given state before transitioning. e.g. Alarm := "
    "P99(Updated=False) > 5 minutes",
    ["group", "kind", "type", "status"],
    buckets=DEFAULT_BUCKETS,
    registry=REGISTRY,
)
TERMINATION_CURRENT_TIME = Gauge(
    "operator_termination_current_time_seconds",
    "The current amount of time in seconds that an object has been in terminating state.",
    ["namespace", "name", "group", "kind"],
    registry=REGISTRY,
)
TERMINATION_DURATION = Histogram(
    "operator_termination_duration_seconds",
    "The amount of time taken by an object to terminate completely.",
    ["group", "kind"],
    buckets=DEFAULT_BUCKETS,
    registry=REGISTRY,
)
# Karpenter's buckets for its per-kind status histograms: ExponentialBuckets(0.5, 2, 15).
STATUS_BUCKETS = tuple(0.5 * 2**i for i in range(15))


@dataclass(frozen=True)
class KindStatusMetrics:
    """operatorpkg's per-kind status metrics, operator_<kind>_status_condition_* and
    operator_<kind>_termination_*, with the kind's extra labels (object label keys,
    '/', '.' and '-' turned into '_') after operatorpkg's own."""

    extra_labels: tuple[str, ...]
    count: Gauge
    current_status_seconds: Gauge
    transitions: Counter
    transition_seconds: Histogram
    termination_current_time: Gauge
    termination_duration: Histogram


_KIND_STATUS: dict[str, KindStatusMetrics] = {}


def prometheus_label(key: str) -> str:
    """operatorpkg's toPrometheusLabel."""
    for char in "/.-":
        key = key.replace(char, "_")
    return key


def kind_status_metrics(kind: str, extra_labels: Iterable[str] = (),
                        buckets: Iterable[float] = DEFAULT_BUCKETS) -> KindStatusMetrics:
    """The metric families of one kind (lower-cased into their names), registered the first
    time they are asked for; asking again with other labels is a programming error."""
    extra = tuple(prometheus_label(key) for key in extra_labels)
    known = _KIND_STATUS.get(kind)
    if known is not None:
        if known.extra_labels != extra:
            raise ValueError(f"status metrics of {kind} already registered with labels "
                             f"{known.extra_labels}, not {extra}")
        return known
    prefix = f"operator_{kind.lower()}"
    keyed = ["namespace", "name", "type", "status", "reason", *extra]
    bucket_list = list(buckets)
    made = KindStatusMetrics(
        extra_labels=extra,
        count=Gauge(f"{prefix}_status_condition_count",
                    STATUS_CONDITION_COUNT._documentation, keyed, registry=REGISTRY),
        current_status_seconds=Gauge(
            f"{prefix}_status_condition_current_status_seconds",
            STATUS_CONDITION_CURRENT_STATUS_SECONDS._documentation, keyed, registry=REGISTRY),
        transitions=Counter(f"{prefix}_status_condition_transitions",
                            STATUS_CONDITION_TRANSITIONS._documentation,
                            ["type", "status", "reason", *extra], registry=REGISTRY),
        transition_seconds=Histogram(
            f"{prefix}_status_condition_transition_seconds",
            STATUS_CONDITION_TRANSITION_SECONDS._documentation, ["type", "status", *extra],
            buckets=bucket_list, registry=REGISTRY),
        termination_current_time=Gauge(
            f"{prefix}_termination_current_time_seconds",
            TERMINATION_CURRENT_TIME._documentation, ["namespace", "name", *extra],
            registry=REGISTRY),
        termination_duration=Histogram(
            f"{prefix}_termination_duration_seconds", TERMINATION_DURATION._documentation,
            list(extra), buckets=bucket_list, registry=REGISTRY),
    )
    _KIND_STATUS[kind] = made
    return made

# --- The operator's runtime (controller-runtime and client-go names) ----------------------

# controller-runtime's pkg/internal/controller/metrics (v0.23): its own duration buckets,
# which stop at 60 s (Karpenter's DURATION_BUCKETS go on to 600 s for its own histograms).
RECONCILE_TIME_BUCKETS = DURATION_BUCKETS[:DURATION_BUCKETS.index(60) + 1]
# The results a reconcile is counted under, each exported at 0 once the controller starts.
RECONCILE_RESULTS = ("error", "requeue_after", "requeue", "success")
RECONCILE_TOTAL = Counter(
    "controller_runtime_reconcile",
    "Total number of reconciliations per controller",
    [CONTROLLER, "result"],
    registry=REGISTRY,
)
RECONCILE_ERRORS = Counter(
    "controller_runtime_reconcile_errors",
    "Total number of reconciliation errors per controller",
    [CONTROLLER],
    registry=REGISTRY,
)
TERMINAL_RECONCILE_ERRORS = Counter(
    "controller_runtime_terminal_reconcile_errors",
    "Total number of terminal reconciliation errors per controller",
    [CONTROLLER],
    registry=REGISTRY,
)
RECONCILE_PANICS = Counter(
    "controller_runtime_reconcile_panics",
    "Total number of reconciliation panics per controller",
    [CONTROLLER],
    registry=REGISTRY,
)
RECONCILE_TIMEOUTS = Counter(
    "controller_runtime_reconcile_timeouts",
    "Total number of reconciliation timeouts per controller",
    [CONTROLLER],
    registry=REGISTRY,
)
RECONCILE_TIME = Histogram(
    "controller_runtime_reconcile_time_seconds",
    "Length of time per reconciliation per controller",
    [CONTROLLER],
    buckets=RECONCILE_TIME_BUCKETS,
    registry=REGISTRY,
)
# controller-runtime's pkg/internal/controller/metrics: each controller's workers and how
# many of them are reconciling now.
MAX_CONCURRENT_RECONCILES = Gauge(
    "controller_runtime_max_concurrent_reconciles",
    "Maximum number of concurrent reconciles per controller",
    [CONTROLLER],
    registry=REGISTRY,
)
ACTIVE_WORKERS = Gauge(
    "controller_runtime_active_workers",
    "Number of currently used workers per controller",
    [CONTROLLER],
    registry=REGISTRY,
)
# client-go's workqueue metrics as controller-runtime registers them (pkg/metrics/
# workqueue.go): `name` and `controller` both carry the controller's name; `priority` is
# empty (no priority queue).
WORKQUEUE_LABELS = ("name", CONTROLLER)
# prometheus.ExponentialBuckets(10e-9, 10, 12): 10 ns to 1000 s, as Go multiplies them out
# (9.999999999999999e-06, not 1e-05: the `le` labels are Go's).
WORKQUEUE_BUCKETS = exponential_buckets(10e-9, 10, 12)
WORKQUEUE_DEPTH = Gauge(
    "workqueue_depth",
    "Current depth of workqueue by workqueue and priority",
    [*WORKQUEUE_LABELS, "priority"],
    registry=REGISTRY,
)
WORKQUEUE_ADDS = Counter(
    "workqueue_adds",
    "Total number of adds handled by workqueue",
    WORKQUEUE_LABELS,
    registry=REGISTRY,
)
WORKQUEUE_QUEUE_DURATION = Histogram(
    "workqueue_queue_duration_seconds",
    "How long in seconds an item stays in workqueue before being requested",
    WORKQUEUE_LABELS,
    buckets=WORKQUEUE_BUCKETS,
    registry=REGISTRY,
)
WORKQUEUE_WORK_DURATION = Histogram(
    "workqueue_work_duration_seconds",
    "How long in seconds processing an item from workqueue takes.",
    WORKQUEUE_LABELS,
    buckets=WORKQUEUE_BUCKETS,
    registry=REGISTRY,
)
WORKQUEUE_UNFINISHED_WORK = Gauge(
    "workqueue_unfinished_work_seconds",
    "How many seconds of work has been done that is in progress and hasn't been observed by "
    "work_duration. Large values indicate stuck threads. One can deduce the number of stuck "
    "threads by observing the rate at which this increases.",
    WORKQUEUE_LABELS,
    registry=REGISTRY,
)
WORKQUEUE_LONGEST_RUNNING_PROCESSOR = Gauge(
    "workqueue_longest_running_processor_seconds",
    "How many seconds has the longest running processor for workqueue been running.",
    WORKQUEUE_LABELS,
    registry=REGISTRY,
)
WORKQUEUE_RETRIES = Counter(
    "workqueue_retries",
    "Total number of retries handled by workqueue",
    WORKQUEUE_LABELS,
    registry=REGISTRY,
)
BUFFER_DROPPED = Counter(
    "nodewright_buffer_dropped",
    "Entries dropped, oldest first, from a bounded buffer that was full (buffer: "
    "watch_events, transport_waits).",
    ["buffer"],
    registry=REGISTRY,
)
WRITES_FENCED = Counter(
    "nodewright_writes_fenced",
    "Writes refused because this replica was not sure it still led (its leader Lease not "
    "renewed within the renew deadline).",
    registry=REGISTRY,
)
LEADER_ELECTION_STATUS = Gauge(
    "leader_election_master_status",
    "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 "
    "indicates master. 'name' is the string used to identify the lease. Please make sure to "
    "group by name.",
    ["name"],
    registry=REGISTRY,
)


def controller_started(controller: str, workers: int) -> None:
    """controller-runtime's initMetrics when a controller starts: every reconcile result and
    error counter exported at 0 (so the first error is an increase that rate() sees, and a
    panel reads 0 rather than no data), its workers, none of them active yet."""
    for result in RECONCILE_RESULTS:
        RECONCILE_TOTAL.labels(controller=controller, result=result)
    for counter in (RECONCILE_ERRORS, TERMINAL_RECONCILE_ERRORS, RECONCILE_PANICS,
                    RECONCILE_TIMEOUTS):
        counter.labels(controller=controller)
    MAX_CONCURRENT_RECONCILES.labels(controller=controller).set(workers)
    ACTIVE_WORKERS.labels(controller=controller).set(0)


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


def termination_mode(nodeclaim: Mapping[str, Any]) -> str:
    """Karpenter's termination_mode label: graceful without a terminationGracePeriod,
    forceful when it is zero, eventual otherwise."""
    raw = (nodeclaim.get("spec") or {}).get("terminationGracePeriod")
    if raw in (None, ""):
        return "graceful"
    return "forceful" if str(raw).strip("0hms.") == "" else "eventual"


def disrupted_labels(nodeclaim: Mapping[str, Any], reason: str,
                     consolidation_policy: str = "") -> dict[str, str]:
    """The label set of karpenter_nodeclaims_disrupted_total and
    karpenter_pods_disruption_initiated_total for this NodeClaim."""
    labels = (nodeclaim.get("metadata") or {}).get("labels") or {}
    return {
        REASON: reason,
        NODEPOOL: str(labels.get("karpenter.sh/nodepool", "")),
        CAPACITY_TYPE: str(labels.get("karpenter.sh/capacity-type", "")),
        CONSOLIDATION_POLICY: consolidation_policy,
        TERMINATION_MODE: termination_mode(nodeclaim),
    }


Series = tuple[Gauge, tuple[str, ...]]
# One gauge value to publish: the gauge, its labels by name, the value.
Sample = tuple[Gauge, Mapping[str, str], float]


# A sample as `prepare` reads it: the gauge, its label values in the gauge's order, the value.
Sample3 = tuple[Gauge, tuple[str, ...], float]


@dataclass(frozen=True)
class Prepared:
    """Samples read once into the gauges' own label order, for a `Store` to publish over
    and over (a catalog's offering series, the same for every controller process of a
    test run or simulation) without reading any labels again."""

    entries: tuple[Sample3, ...]
    series: frozenset[Series]


def prepare(values: Iterable[Sample]) -> Prepared:
    entries = tuple((gauge, tuple(labels[name] for name in gauge._labelnames), value)
                    for gauge, labels, value in values)
    return Prepared(entries, frozenset((gauge, label_values)
                                       for gauge, label_values, _ in entries))


def remove_matching(metric: Gauge, **labels: str) -> None:
    """DeletePartialMatch: drop every series of the metric that carries these labels."""
    names = list(metric._labelnames)
    with metric._lock:
        keys = [key for key in metric._metrics
                if all(key[names.index(k)] == v for k, v in labels.items())]
    for key in keys:
        remove_series(metric, tuple(key))


class Store:
    """Gauge series owned by keys (an object, or one whole reconcile), as Karpenter's
    metrics.Store: `update` replaces one key's series and removes those it no longer has,
    `delete` removes them all.

    `keep_removed`: the series an `update` removes stay with their key, out of the
    gauge, and come back when the key has them again (a status condition flipping back
    and forth: the same label sets over and over), instead of each being built again by
    prometheus_client's `labels()`. A key's kept series go with `delete`."""

    def __init__(self, *, keep_removed: bool = False) -> None:
        self._series: dict[str, AbstractSet[Series]] = {}
        self._keep_removed = keep_removed
        self._removed: dict[str, dict[Series, Gauge]] = {}

    def update(self, key: str, values: Iterable[Sample]) -> None:
        self.update_series(key, [((gauge, tuple(labels[name] for name in gauge._labelnames)),
                                  value) for gauge, labels, value in values])

    def update_series(self, key: str, values: Iterable[tuple[Series, float]]
                      ) -> list[Gauge]:
        """`update` with each series' label values read already (in its gauge's order):
        the children that hold the key's series now, in the order of `values`."""
        fresh: set[Series] = set()
        children: list[Gauge] = []
        removed = self._removed.get(key)
        for series, value in values:
            child = self._child(series[0], series[1], removed)
            _write(child, value)
            fresh.add(series)
            children.append(child)
        self._drop(key, self._series.get(key, set()) - fresh)
        self._series[key] = fresh
        return children

    @staticmethod
    def _child(gauge: Gauge, label_values: tuple[str, ...],
               removed: dict[Series, Gauge] | None) -> Gauge:
        """The series' child the gauge holds, else the one this key kept when it was
        removed, else a new one."""
        if removed and label_values not in gauge._metrics:
            child = removed.pop((gauge, label_values), None)
            if child is not None:
                with gauge._lock:
                    metrics_ = cast("dict[tuple[str, ...], Gauge]", gauge._metrics)
                    return metrics_.setdefault(label_values, child)
        return held_child(gauge, label_values)

    def _drop(self, key: str, gone: Iterable[Series]) -> None:
        """Take the key's series it no longer has out of their gauges (kept with the key
        under `keep_removed`)."""
        for gauge, label_values in gone:
            if self._keep_removed:
                child = cast("Gauge | None", gauge._metrics.get(label_values))
                if child is not None:
                    self._removed.setdefault(key, {})[(gauge, label_values)] = child
            remove_series(gauge, label_values)

    def update_prepared(self, key: str, prepared: Prepared,
                        changed: Iterable[Sample3] | None = None) -> None:
        """`update` with samples read beforehand by `prepare`. `changed`: the only samples
        whose series the gauges may not hold with that value already (None: any)."""
        removed = self._removed.get(key)
        for gauge, label_values, value in prepared.entries if changed is None else changed:
            _write(self._child(gauge, label_values, removed), value)
        previous = self._series.get(key)
        if previous:
            self._drop(key, previous - prepared.series)
        self._series[key] = prepared.series

    def delete(self, key: str) -> None:
        self._removed.pop(key, None)
        for gauge, label_values in self._series.pop(key, set()):
            remove_series(gauge, label_values)

    def keys(self) -> set[str]:
        return set(self._series)


def remove_series(gauge: Gauge | Counter | Histogram, label_values: tuple[str, ...]) -> None:
    """`gauge.remove(*label_values)` for label values that are strings already, without
    its checks: it reads the environment (for multiprocess mode, which nothing here uses)
    on every call, and pod and status series are removed by the hundred thousand."""
    with gauge._lock:
        child = gauge._metrics.pop(label_values, None)
    holder = getattr(child, "_value", None)
    if type(holder) is _Age:
        holder.moment.lost = True


def set_series(gauge: Gauge, label_values: tuple[str, ...], value: float) -> None:
    """`gauge.labels(*label_values).set(value)` for label values that are strings already:
    the child it holds is looked up as `labels` would, without its checks."""
    _write(held_child(gauge, label_values), value)


def held_child(gauge: Gauge, label_values: tuple[str, ...]) -> Gauge:
    """The child the gauge holds for these label values, as `labels` would return it (the
    same lookup, without its argument checks: status reconciles set hundreds of thousands
    of series again); `labels` creates it when there is none."""
    child = cast("Gauge | None", gauge._metrics.get(label_values))
    return child if child is not None else gauge.labels(*label_values)


class Moment:
    """The time of a controller's last look at something whose ages it publishes: moved on
    by one assignment, however many age series count up to it. `lost` says a series
    counting up to it was taken out of its gauge or written over (another controller
    sharing the gauges, or the owner's own update): the owner then publishes its series
    again, as a fresh look would."""

    __slots__ = ("at", "lost")

    def __init__(self, at: datetime) -> None:
        self.at = at
        self.lost = False


class _Age:
    """A gauge child's value (in place of prometheus_client's MutexValue) that is the
    seconds from `since` to a `Moment`, read when scraped: what setting it to
    `(moment.at - since).total_seconds()` at each look would leave there (whole
    microseconds, as timedelta counts them, divided by a million: `total_seconds()` to
    the bit), without a write per series per look. A write (`set`, another writer of the
    same series) makes it a plain value from then on."""

    __slots__ = ("fixed", "moment", "since")

    def __init__(self, moment: Moment, since: datetime) -> None:
        self.moment = moment
        self.since = since
        self.fixed: float | None = None

    def get(self) -> float:
        fixed = self.fixed
        if fixed is not None:
            return fixed
        return (self.moment.at - self.since) // _MICROSECOND / 1_000_000

    def set(self, value: float, timestamp: float | None = None) -> None:
        self.fixed = value
        self.moment.lost = True

    def inc(self, amount: float) -> None:
        self.set(self.get() + amount)


def count_up(child: Gauge, moment: Moment, since: datetime) -> None:
    """Make the child's value the seconds from `since` to `moment` (as it moves on)."""
    child._value = _Age(moment, since)


def _write(child: Gauge, value: float) -> None:
    """`child.set(value)` for a child of a labelled gauge (observable, no multiprocess
    mode: the checks `set` makes hold). A MutexValue's float is assigned as its `set`
    would, without the lock: one attribute assignment is atomic under the GIL, and the
    lock only orders read-modify-writes (`inc`), which a set is not."""
    holder = child._value
    if type(holder) is MutexValue:
        holder._value = float(value)
    else:
        holder.set(float(value))


# --- the API server client --------------------------------------------------------------

REST_CLIENT_REQUESTS = Counter(
    "rest_client_requests",
    "Number of HTTP requests, partitioned by status code, method, and host.",
    ["code", "host", "method"],
    registry=REGISTRY,
)
# client-go's request metrics as operatorpkg's RegisterClientMetrics installs them in a
# Karpenter process (it replaces the adapter behind controller-runtime's
# rest_client_requests_total, which then has no samples there): every attempt by status code
# ("<error>" when no answer came) and HTTP method; each request's latency (throttling and
# retries included; watches not), by operatorpkg's verb and the resource addressed.
CLIENT_GO_REQUESTS = Counter(
    "client_go_request",
    "Number of HTTP requests, partitioned by status code and method.",
    ["code", "method"],
    registry=REGISTRY,
)


CLIENT_GO_REQUEST_DURATION = Histogram(
    "client_go_request_duration_seconds",
    "Request latency in seconds. Broken down by verb, group, version, kind, and subresource.",
    ["verb", "group", "version", "kind", "subresource"],
    buckets=exponential_buckets(0.001, 1.5, 20),
    registry=REGISTRY,
)
