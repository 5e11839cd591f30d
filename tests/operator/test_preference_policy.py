"""PREFERENCE_POLICY (Karpenter's --preference-policy) from the operator's environment to
what the provisioner launches: Respect honours a pod's preferred node affinity while it can,
Ignore drops preferences (and ScheduleAnyway spreads) before scheduling."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from nodewright.operator.config import add_arguments, load
from nodewright.operator.main import controller_options
from nodewright.scheduling.pods import SpreadConstraint, pods_from_manifest
from nodewright.scheduling.solver import ignore_preferences
from tests.harness import NODE_CLASS, World
from tests.static.helpers import DYNAMIC_POOL, workload

INSTANCE_TYPE = "node.kubernetes.io/instance-type"


def world_with(env: dict[str, str]) -> World:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    config = load(parser.parse_args([]), {"CLUSTER_NAME": "demo", "NODEWRIGHT_CLOUD": "sim",
                                          **env})
    return World(options=controller_options(config))


def preferring_a_large_type() -> dict[str, Any]:
    deployment = workload("web", 1, "500m")
    deployment["spec"]["template"]["spec"]["affinity"] = {"nodeAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "preference": {
            "matchExpressions": [{"key": INSTANCE_TYPE, "operator": "In",
                                  "values": ["m5.xlarge"]}]}}]}}
    return deployment


def launched_types(env: dict[str, str]) -> list[str]:
    world = world_with(env)
    world.apply(NODE_CLASS, DYNAMIC_POOL)
    world.apply(preferring_a_large_type())
    assert world.settle()
    (claim,) = world.nodeclaims()
    return next(r["values"] for r in claim["spec"]["requirements"] if r["key"] == INSTANCE_TYPE)


@pytest.mark.parametrize("env", [{}, {"PREFERENCE_POLICY": "Respect"}])
def test_respect_honours_a_preferred_instance_type(env: dict[str, str]) -> None:
    assert launched_types(env) == ["m5.xlarge"]


def test_ignore_launches_without_the_preference() -> None:
    # The pool's cheaper type is offered too: nothing narrowed the claim to m5.xlarge.
    assert "m5.large" in launched_types({"PREFERENCE_POLICY": "Ignore"})


def test_ignore_keeps_what_is_required() -> None:
    (pod,) = pods_from_manifest({
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default", "labels": {"app": "p"}},
        "spec": {
            "containers": [{"name": "c"}],
            "affinity": {"podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [{
                    "labelSelector": {"matchLabels": {"app": "p"}},
                    "topologyKey": "kubernetes.io/hostname"}],
                "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1,
                    "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "p"}},
                                        "topologyKey": "topology.kubernetes.io/zone"}}]}},
            "topologySpreadConstraints": [
                {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                 "whenUnsatisfiable": when, "labelSelector": {"matchLabels": {"app": "p"}}}
                for when in ("DoNotSchedule", "ScheduleAnyway")],
        },
    })
    kept = ignore_preferences(pod)
    assert kept.pod_anti_affinity == pod.pod_anti_affinity and kept.pod_anti_affinity
    assert kept.preferred_pod_anti_affinity == ()
    assert [c.when_unsatisfiable for c in kept.spread] == ["DoNotSchedule"]
    assert isinstance(kept.spread[0], SpreadConstraint)
