"""Karpenter's metrics scraped from the controller's /metrics while it runs the workshop
on a real control plane: what it created, where the pods run, what the NodePool holds,
which conditions hold."""

from __future__ import annotations

from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import EXAMPLES
from tests.e2e.conftest import StartController
from tests.e2e.fleet import scale
from tests.e2e.harness import Controller, ControlPlane, Installation, eventually
from tests.e2e.test_workshop import inflate_pods, settled

WORKSHOP = sorted((EXAMPLES / "workshop").glob("*.yaml"))


def samples(controller: Controller, metric: str, /,
            **labels: str) -> list[tuple[dict[str, str], float]]:
    """The scraped samples of one metric that carry these labels."""
    return [(dict(sample.labels), sample.value)
            for family in text_string_to_metric_families(controller.metrics())
            for sample in family.samples
            if sample.name == metric and all(sample.labels.get(k) == v for k, v in labels.items())]


def one(controller: Controller, metric: str, /, **labels: str) -> float:
    found = samples(controller, metric, **labels)
    assert len(found) == 1, f"{metric}{labels}: {found}"
    return found[0][1]


def cores(quantity: str) -> float:
    return float(quantity[:-1]) / 1000 if quantity.endswith("m") else float(quantity)


def test_the_workshop_at_five_replicas_is_in_the_controllers_metrics(
        control_plane: ControlPlane, installation: Installation,
        start: StartController) -> None:
    plane = control_plane
    plane.apply(WORKSHOP)
    controller = start()
    scale(plane, 5)
    eventually(lambda: settled(plane, 5, {"m5.large": 1}), timeout=90,
               what="5 pods running on one m5.large")
    (claim,) = plane.items("nodeclaims.karpenter.sh")
    (node,) = [n for n in plane.items("nodes")
               if n["metadata"]["labels"].get("karpenter.sh/nodepool") == "default"]
    pods = {pod["metadata"]["name"] for pod in inflate_pods(plane)}

    def counted() -> bool:
        assert one(controller, "karpenter_nodeclaims_created_total", reason="provisioned",
                   nodepool="default") == 1
        states: dict[str, Any] = {
            labels["name"]: labels
            for labels, _ in samples(controller, "karpenter_pods_state", namespace="default")}
        assert set(states) >= pods, f"pod states {sorted(states)}"
        for name in pods:
            state = states[name]
            assert (state["phase"], state["ready"], state["node"], state["nodepool"],
                    state["instance_type"]) == (
                "Running", "true", node["metadata"]["name"], "default", "m5.large"), state
        assert one(controller, "karpenter_nodepools_usage", nodepool="default",
                   resource_type="nodes") == 1
        assert one(controller, "karpenter_nodepools_usage", nodepool="default",
                   resource_type="cpu") == cores(node["status"]["capacity"]["cpu"])
        assert one(controller, "karpenter_nodepools_limit", nodepool="default",
                   resource_type="cpu") == 1000
        assert one(controller, "karpenter_cluster_state_synced") == 1
        assert one(controller, "operator_status_condition_count", kind="NodeClaim",
                   name=claim["metadata"]["name"], type="Ready", status="True") == 1
        assert one(controller, "operator_status_condition_count", kind="NodePool",
                   name="default", type="Ready", status="True") == 1
        # Create is idempotent per NodeClaim; a retried launch counts its calls too.
        assert one(controller, "karpenter_cloudprovider_duration_seconds_count",
                   controller="nodeclaim.lifecycle", method="Create") >= 1
        return True

    eventually(counted, timeout=60, what="the workshop's metrics")
