"""Every metric family a Karpenter v1.14.1 process exports, with its type, label names and
bucket boundaries, against the registry the operator serves: kubernetes-sigs/karpenter
(pkg/metrics, each controller's metrics.go, pkg/cloudprovider/metrics, the metrics
controllers, pkg/state/cost, pkg/operator), aws/karpenter-provider-aws (pkg/batcher,
pkg/controllers/interruption and metrics, pkg/providers/*/metrics.go), operatorpkg's status
controller as Karpenter wires it (pkg/controllers/controllers.go), controller-runtime
v0.23.1 and client-go as operatorpkg registers them. A dashboard or alert written for
Karpenter reads the same names, label names and `le` values here.

The AWS SDK families (jonathan-innis/aws-sdk-go-prometheus) are checked in tests/aws; Go's
runtime collector (go_*) has no Python counterpart."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import generate_latest

import nodewright.controllers.disruption.metrics
import nodewright.controllers.metrics.status
import nodewright.controllers.node.health  # noqa: F401  (registers its counter)
from nodewright import metrics

# Karpenter's DurationBuckets().
D = (0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8,
     0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25,
     30, 40, 50, 60, 120, 150, 300, 450, 600)
# controller-runtime's reconcile buckets: DurationBuckets up to 60.
R = D[:D.index(60) + 1]
# prometheus.DefBuckets.
P = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)


def exponential(start: float, factor: float, count: int) -> tuple[float, ...]:
    """prometheus.ExponentialBuckets as Go multiplies it out."""
    out = []
    for _ in range(count):
        out.append(start)
        start *= factor
    return tuple(out)


# pkg/batcher SizeBuckets().
SIZE = (1, 2, 4, 5, 10, 15, 20, 25, 30, 40, 50, 60, 70, 80, 90, 100, 125, 150, 175, 200, 225,
        250, 275, 300, 350, 400, 450, 500, 550, 600, 700, 800, 900, 1000)
LIFETIME = tuple(float(seconds) for seconds in (
    900, 1800, 2700, 3600, 7200, 14400, 21600, 28800, 36000, 43200, 57600, 72000, 86400,
    172800, 259200, 432000, 864000, 1296000, 1728000, 2160000, 2592000))
STATUS = exponential(0.5, 2, 15)

# v1.WellKnownLabels of the AWS build, as the node metrics controller names them.
WELL_KNOWN = (
    "nodepool", "zone", "region", "instance_type", "arch", "os", "capacity_type",
    "windows_build", "capacity_reservation_id", "capacity_reservation_type",
    "capacity_reservation_interruptible", "instance_hypervisor",
    "instance_encryption_in_transit_supported", "instance_category", "instance_capability_flex",
    "instance_family", "instance_generation", "instance_size", "instance_local_nvme",
    "instance_cpu", "instance_cpu_manufacturer", "instance_cpu_sustained_clock_speed_mhz",
    "instance_memory", "instance_ebs_bandwidth", "instance_network_bandwidth",
    "instance_gpu_name", "instance_gpu_manufacturer", "instance_gpu_count",
    "instance_gpu_memory", "instance_accelerator_name", "instance_accelerator_manufacturer",
    "instance_accelerator_count", "zone_id", "instance_tenancy", "placement_group_id",
    "placement_group_partition")
NODE = (*WELL_KNOWN, "node_name", "phase", "managed")
NODE_RESOURCE = (*NODE, "resource_type")
POD_KEY = ("name", "namespace")
POD_STATE = ("name", "namespace", "owner", "node", "scheduled", "nodepool", "zone", "arch",
             "capacity_type", "instance_type", "phase", "ready", "managed")
DISRUPTION = ("decision", "reason", "consolidation_type")
OFFERING = ("instance_type", "capacity_type", "zone")
CONDITION = ("namespace", "name", "type", "status", "reason")
NODECLAIM_K = ("karpenter_k8s_aws_ec2nodeclass", "karpenter_sh_nodepool")
NODE_K = (*NODECLAIM_K, "karpenter_sh_initialized")
WORKQUEUE = ("name", "controller")
WQ = exponential(10e-9, 10, 12)


def operator_kind(kind: str, extra: tuple[str, ...], buckets: tuple[float, ...],
                  ) -> dict[str, tuple[str, tuple[str, ...], tuple[float, ...] | None]]:
    prefix = f"operator_{kind}"
    return {
        f"{prefix}_status_condition_count": ("gauge", (*CONDITION, *extra), None),
        f"{prefix}_status_condition_current_status_seconds":
            ("gauge", (*CONDITION, *extra), None),
        f"{prefix}_status_condition_transitions_total":
            ("counter", ("type", "status", "reason", *extra), None),
        f"{prefix}_status_condition_transition_seconds":
            ("histogram", ("type", "status", *extra), buckets),
        f"{prefix}_termination_current_time_seconds":
            ("gauge", ("namespace", "name", *extra), None),
        f"{prefix}_termination_duration_seconds": ("histogram", extra, buckets),
    }


# name on the wire -> (type, label names, buckets)
KARPENTER: dict[str, tuple[str, tuple[str, ...], tuple[float, ...] | None]] = {
    # kubernetes-sigs/karpenter pkg/metrics
    "karpenter_nodeclaims_created_total":
        ("counter", ("reason", "nodepool", "min_values_relaxed"), None),
    "karpenter_nodeclaims_terminated_total":
        ("counter", ("nodepool", "capacity_type", "zone"), None),
    "karpenter_nodeclaims_disrupted_total": ("counter", ("reason", "nodepool", "capacity_type"),
                                             None),
    "karpenter_nodes_created_total": ("counter", ("nodepool", "zone"), None),
    "karpenter_nodes_terminated_total": ("counter", ("nodepool", "zone"), None),
    # pkg/cloudprovider/metrics
    "karpenter_cloudprovider_duration_seconds":
        ("histogram", ("controller", "method", "provider"), P),
    "karpenter_cloudprovider_errors_total":
        ("counter", ("controller", "method", "provider", "error"), None),
    # pkg/controllers/disruption/metrics.go
    "karpenter_voluntary_disruption_decision_evaluation_duration_seconds":
        ("histogram", ("reason", "consolidation_type"), D),
    "karpenter_voluntary_disruption_decisions_total": ("counter", DISRUPTION, None),
    "karpenter_voluntary_disruption_decisions_by_nodepool_total":
        ("counter", ("nodepool", *DISRUPTION), None),
    "karpenter_voluntary_disruption_eligible_nodes": ("gauge", ("reason",), None),
    "karpenter_voluntary_disruption_consolidation_timeouts_total":
        ("counter", ("consolidation_type",), None),
    "karpenter_voluntary_disruption_failed_validations_total":
        ("counter", ("consolidation_type",), None),
    "karpenter_nodepools_allowed_disruptions": ("gauge", ("nodepool", "reason"), None),
    "karpenter_nodepools_nodes_consuming_budgets": ("gauge", ("nodepool", "reason"), None),
    "karpenter_voluntary_disruption_queue_failures_total": ("counter", DISRUPTION, None),
    "karpenter_consolidation_score": ("histogram", ("decision", "nodepool", "policy"),
                                      (0.1, 0.25, 0.33, 0.5, 1.0, 2.0, 5.0, 10.0)),
    "karpenter_consolidation_moves_total": ("counter", ("decision", "nodepool", "policy"), None),
    # node/health, node/termination(/terminator), nodeclaim/lifecycle
    "karpenter_nodeclaims_unhealthy_disrupted_total":
        ("counter", ("condition", "nodepool", "capacity_type", "image_id"), None),
    "karpenter_nodes_termination_duration_seconds": ("summary", ("nodepool",), None),
    "karpenter_nodes_drained_total": ("counter", ("nodepool",), None),
    "karpenter_nodes_lifetime_duration_seconds": ("histogram", ("nodepool",), LIFETIME),
    "karpenter_pods_eviction_requests_total": ("counter", ("code",), None),
    "karpenter_pods_drained_total": ("counter", ("reason",), None),
    "karpenter_nodeclaims_instance_termination_duration_seconds":
        ("histogram", ("nodepool",), exponential(1, 2, 11)),
    "karpenter_nodeclaims_termination_duration_seconds":
        ("histogram", ("nodepool",), exponential(1, 2, 12)),
    # provisioning/scheduling/metrics.go, state/metrics.go
    "karpenter_scheduler_scheduling_duration_seconds": ("histogram", ("controller",), D),
    "karpenter_scheduler_queue_depth": ("gauge", ("controller", "scheduling_id"), None),
    "karpenter_scheduler_unfinished_work_seconds":
        ("gauge", ("controller", "scheduling_id"), None),
    "karpenter_scheduler_ignored_pods_count": ("gauge", (), None),
    "karpenter_scheduler_unschedulable_pods_count": ("gauge", ("controller",), None),
    "karpenter_scheduler_pending_pods_by_effective_zone_count":
        ("gauge", ("controller", "zone"), None),
    "karpenter_cluster_state_node_count": ("gauge", (), None),
    "karpenter_cluster_state_synced": ("gauge", (), None),
    "karpenter_cluster_state_unsynced_time_seconds": ("gauge", (), None),
    "karpenter_pods_scheduling_decision_duration_seconds": ("histogram", (), D),
    # controllers/metrics/{node,nodepool,pod}
    "karpenter_nodes_allocatable": ("gauge", NODE_RESOURCE, None),
    "karpenter_nodes_total_pod_requests": ("gauge", NODE_RESOURCE, None),
    "karpenter_nodes_total_pod_limits": ("gauge", NODE_RESOURCE, None),
    "karpenter_nodes_total_daemon_requests": ("gauge", NODE_RESOURCE, None),
    "karpenter_nodes_total_daemon_limits": ("gauge", NODE_RESOURCE, None),
    "karpenter_nodes_system_overhead": ("gauge", NODE_RESOURCE, None),
    "karpenter_nodes_current_lifetime_seconds": ("gauge", NODE, None),
    "karpenter_cluster_utilization_percent": ("gauge", ("resource_type",), None),
    "karpenter_nodepools_limit": ("gauge", ("resource_type", "nodepool"), None),
    "karpenter_nodepools_usage": ("gauge", ("resource_type", "nodepool"), None),
    "karpenter_nodepools_cost_total": ("gauge", ("nodepool",), None),
    "karpenter_pods_state": ("gauge", POD_STATE, None),
    "karpenter_pods_startup_duration_seconds": ("summary", (), None),
    "karpenter_pods_unstarted_time_seconds": ("gauge", POD_KEY, None),
    "karpenter_pods_bound_duration_seconds": ("histogram", (), D),
    "karpenter_pods_unbound_time_seconds": ("gauge", POD_KEY, None),
    "karpenter_pods_provisioning_bound_duration_seconds": ("histogram", (), D),
    "karpenter_pods_provisioning_unbound_time_seconds": ("gauge", POD_KEY, None),
    "karpenter_pods_provisioning_startup_duration_seconds": ("histogram", (), D),
    "karpenter_pods_provisioning_unstarted_time_seconds": ("gauge", POD_KEY, None),
    "karpenter_pods_provisioning_scheduling_undecided_time_seconds": ("gauge", POD_KEY, None),
    # pkg/state/cost, pkg/operator
    "karpenter_nodepools_cost_tracker_errors_total": ("counter", ("nodepool",), None),
    "karpenter_build_info": ("gauge", ("version", "goversion", "goarch", "commit"), None),
    # aws/karpenter-provider-aws
    "karpenter_cloudprovider_batcher_batch_time_seconds": ("histogram", ("batcher",), D),
    "karpenter_cloudprovider_batcher_batch_size": ("histogram", ("batcher",), SIZE),
    "karpenter_interruption_received_messages_total": ("counter", ("message_type",), None),
    "karpenter_interruption_deleted_messages_total": ("counter", (), None),
    "karpenter_interruption_message_queue_duration_seconds": ("histogram", (), D),
    "karpenter_interruption_instance_status_unhealthy_total": ("counter", ("category",), None),
    "karpenter_cloudprovider_instance_type_offering_available": ("gauge", OFFERING, None),
    "karpenter_cloudprovider_instance_type_offering_price_estimate": ("gauge", OFFERING, None),
    "karpenter_cloudprovider_instance_launch_failures_total":
        ("counter", ("zone", "zone_id", "capacity_type", "reason"), None),
    "karpenter_cloudprovider_instance_termination_failures_total":
        ("counter", ("zone", "zone_id"), None),
    "karpenter_cloudprovider_instance_type_cpu_cores": ("gauge", ("instance_type",), None),
    "karpenter_cloudprovider_instance_type_memory_bytes": ("gauge", ("instance_type",), None),
    "karpenter_ec2nodeclasses_userdata_bytes": ("gauge", ("nodeclass",), None),
    # operatorpkg's status controllers, as pkg/controllers/controllers.go configures them
    **operator_kind("nodeclaim", NODECLAIM_K, STATUS),
    **operator_kind("nodepool", (), STATUS),
    **operator_kind("node", NODE_K, STATUS),
    **operator_kind("ec2nodeclass", (), P),
    **operator_kind("capacitybuffer", (), STATUS),
    "operator_status_condition_count": ("gauge", ("group", "kind", *CONDITION), None),
    "operator_status_condition_current_status_seconds":
        ("gauge", ("group", "kind", *CONDITION), None),
    "operator_status_condition_transitions_total":
        ("counter", ("type", "status", "reason", "group", "kind"), None),
    "operator_status_condition_transition_seconds":
        ("histogram", ("type", "status", "group", "kind"), P),
    "operator_termination_current_time_seconds":
        ("gauge", ("namespace", "name", "group", "kind"), None),
    "operator_termination_duration_seconds": ("histogram", ("group", "kind"), P),
    # controller-runtime v0.23.1
    "controller_runtime_reconcile_total": ("counter", ("controller", "result"), None),
    "controller_runtime_reconcile_errors_total": ("counter", ("controller",), None),
    "controller_runtime_terminal_reconcile_errors_total": ("counter", ("controller",), None),
    "controller_runtime_reconcile_panics_total": ("counter", ("controller",), None),
    "controller_runtime_reconcile_timeouts_total": ("counter", ("controller",), None),
    "controller_runtime_reconcile_time_seconds": ("histogram", ("controller",), R),
    "controller_runtime_max_concurrent_reconciles": ("gauge", ("controller",), None),
    "controller_runtime_active_workers": ("gauge", ("controller",), None),
    "workqueue_depth": ("gauge", (*WORKQUEUE, "priority"), None),
    "workqueue_adds_total": ("counter", WORKQUEUE, None),
    "workqueue_queue_duration_seconds": ("histogram", WORKQUEUE, WQ),
    "workqueue_work_duration_seconds": ("histogram", WORKQUEUE, WQ),
    "workqueue_unfinished_work_seconds": ("gauge", WORKQUEUE, None),
    "workqueue_longest_running_processor_seconds": ("gauge", WORKQUEUE, None),
    "workqueue_retries_total": ("counter", WORKQUEUE, None),
    "leader_election_master_status": ("gauge", ("name",), None),
    # client-go, as operatorpkg's RegisterClientMetrics installs it
    "client_go_request_total": ("counter", ("code", "method"), None),
    "client_go_request_duration_seconds":
        ("histogram", ("verb", "group", "version", "kind", "subresource"),
         exponential(0.001, 1.5, 20)),
}

# Where Nodewright knowingly differs (docs/karpenter-differences.md): label names it adds
# or lacks.
DIFFERENT_LABELS = {
    # Karpenter main's labels (after v1.14.1), kept for the consolidation policy's reports.
    "karpenter_nodeclaims_disrupted_total": ("reason", "nodepool", "capacity_type",
                                             "consolidation_policy", "termination_mode"),
    # goversion, goarch and commit describe a Go build.
    "karpenter_build_info": ("version",),
}


def families() -> dict[str, Any]:
    """Our families by their name on the wire."""
    found: dict[str, Any] = {}
    for collector in list(metrics.REGISTRY._collector_to_names):
        name = getattr(collector, "_name", None) or getattr(collector, "name", None)
        kind = getattr(collector, "_type", None) or "summary"
        if name is None:
            continue
        found[f"{name}_total" if kind == "counter" else name] = collector
    return found


def kind_of(collector: Any) -> str:
    return getattr(collector, "_type", None) or "summary"


def labels_of(collector: Any) -> tuple[str, ...]:
    if isinstance(collector, metrics.QuantileSummary):
        return collector.labelnames
    return tuple(collector._labelnames)


@pytest.mark.parametrize("name", sorted(KARPENTER))
def test_each_karpenter_family_has_karpenters_type_labels_and_buckets(name: str) -> None:
    kind, labels, buckets = KARPENTER[name]
    ours = families().get(name)
    assert ours is not None, f"{name} is not exported"
    assert kind_of(ours) == kind
    assert sorted(labels_of(ours)) == sorted(DIFFERENT_LABELS.get(name, labels))
    if buckets is not None:
        assert list(ours._upper_bounds) == [*buckets, float("inf")]


def test_the_process_collector_is_served_as_controller_runtime_registers_it() -> None:
    text = generate_latest(metrics.REGISTRY).decode()
    for name in ("process_cpu_seconds_total", "process_resident_memory_bytes",
                 "process_virtual_memory_bytes", "process_start_time_seconds",
                 "process_open_fds", "process_max_fds"):
        assert f"\n{name} " in text, name


def test_no_created_series_are_exported() -> None:
    """client_golang's text format has no `<name>_created` series; prometheus_client would
    add one next to every counter, histogram and summary child."""
    metrics.NODES_CREATED.labels(nodepool="families-story", zone="test-zone-a").inc()
    metrics.NODES_TERMINATION_DURATION.labels(nodepool="families-story").observe(1.0)
    text = generate_latest(metrics.REGISTRY).decode()
    assert 'karpenter_nodes_created_total{nodepool="families-story",zone="test-zone-a"}' in text
    assert [line for line in text.splitlines() if "_created{" in line or "_created " in line
            ] == []


def test_the_workqueue_buckets_are_gos_floats() -> None:
    """ExponentialBuckets(10e-9, 10, 12) multiplied out as Go does: the `le` labels read
    9.999999999999999e-06, not 1e-05, in a Karpenter process."""
    metrics.WORKQUEUE_QUEUE_DURATION.labels(name="families-story",
                                            controller="families-story").observe(1.0)
    les = [sample.labels["le"] for family in
           metrics.REGISTRY.restricted_registry(
               ["workqueue_queue_duration_seconds_bucket"]).collect()
           for sample in family.samples if sample.name.endswith("_bucket")
           and sample.labels["name"] == "families-story"]
    assert les[3:5] == ["9.999999999999999e-06", "9.999999999999999e-05"]
