"""SOLVE_DEADLINE: an operator may cap the wall time a provisioning solve spends improving
its plan. Even a deadline that has passed before the packer starts gives every pod that
fits some instance type a NodeClaim; a pod no type holds stays pending, as without one."""

from __future__ import annotations

from typing import Any

import pytest

from nodewright.controllers.options import ControllerOptions
from nodewright.controllers.provisioning import provisioner
from tests.harness import NODE_CLASS, World, node_pool

POOL = node_pool(requirements=[
    {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["c", "m", "r"]},
    {"key": "karpenter.k8s.aws/instance-cpu", "operator": "Lt", "values": ["17"]},
])


def _deployment(name: str, replicas: int, cpu: str, memory: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [
                     {"name": "app", "resources": {"requests": {
                         "cpu": cpu, "memory": memory}}}]}}},
    }


def test_a_passed_deadline_still_places_every_placeable_pod(
        monkeypatch: pytest.MonkeyPatch) -> None:
    deadlines: list[float | None] = []
    solve = provisioner.solve

    def recording(*args: Any, **kwargs: Any) -> Any:
        deadlines.append(kwargs.get("deadline"))
        return solve(*args, **kwargs)

    monkeypatch.setattr(provisioner, "solve", recording)
    world = World(options=ControllerOptions(solve_deadline=1e-9))
    world.apply(NODE_CLASS, POOL)
    world.apply(_deployment("small", 30, "250m", "512Mi"),
                _deployment("medium", 20, "1500m", "2Gi"),
                _deployment("memory", 10, "500m", "6Gi"),
                # 40 vCPU: more than any type of the NodePool (at most 16)
                _deployment("huge", 1, "40", "1Gi"))
    assert world.settle()

    assert deadlines and set(deadlines) == {1e-9}
    pending = world.pending_pods()
    assert [pod["metadata"]["labels"]["app"] for pod in pending] == ["huge"]
    assert len(world.running_pods()) == 60
    failed = [event for event in world.events(reason="FailedScheduling")
              if event["reportingController"] == "karpenter"]
    assert failed and all(event["regarding"]["name"].startswith("huge-") for event in failed)


def test_without_a_deadline_the_provisioner_sets_none(monkeypatch: pytest.MonkeyPatch) -> None:
    deadlines: list[float | None] = []
    solve = provisioner.solve

    def recording(*args: Any, **kwargs: Any) -> Any:
        deadlines.append(kwargs.get("deadline"))
        return solve(*args, **kwargs)

    monkeypatch.setattr(provisioner, "solve", recording)
    world = World()
    world.apply(NODE_CLASS, POOL)
    world.apply(_deployment("small", 5, "250m", "512Mi"))
    assert world.settle()
    assert deadlines and set(deadlines) == {None}
    assert len(world.running_pods()) == 5
