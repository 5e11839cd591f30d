"""Scenarios that start from a running fleet (`nodeClaims` and `boundPods`): the real
controllers adopt the NodeClaims as on a restart, then consolidate, drift or expire them."""

from __future__ import annotations

from nodewright.sim.loading import load_scenario
from nodewright.sim.runner import run_scenario
from tests.sim.conftest import ScenarioWriter

FLEET = """
    name: fleet
    manifests:
      - WORKSHOP
      - apiVersion: apps/v1
        kind: Deployment
        metadata: {name: web, namespace: default}
        spec:
          replicas: 3
          selector: {matchLabels: {app: web}}
          template:
            metadata: {labels: {app: web}}
            spec:
              nodeSelector: {type: karpenter}
              terminationGracePeriodSeconds: 0
              containers:
                - {name: web, image: nginx, resources: {requests: {cpu: 200m, memory: 256Mi}}}
    nodeClaims:
      - {name: default-aaaaa, nodePool: default, instanceType: m5.xlarge, zone: us-east-1a,
         age: AGE HASH}
      - {name: default-bbbbb, nodePool: default, instanceType: m5.xlarge, zone: us-east-1b,
         age: AGE HASH}
      - {name: default-ccccc, nodePool: default, instanceType: m5.xlarge, zone: us-east-1c,
         age: AGE HASH}
    boundPods:
      - {node: default-aaaaa, kind: Deployment, name: web}
      - {node: default-bbbbb, kind: Deployment, name: web}
      - {node: default-ccccc, kind: Deployment, name: web}
    steps:
      - expect: {nodes: 3, instanceTypes: {m5.xlarge: 3}, pendingPods: 0, launched: 0}
      - settle: {timeout: 30m}
      - expect: {pendingPods: 0, violations: 0}
"""


def _run(write_scenario: ScenarioWriter, age: str = "1h", extra: str = ""):  # type: ignore[no-untyped-def]
    path = write_scenario(FLEET.replace("AGE", age).replace("HASH", extra))
    scenario, problems = load_scenario(path)
    assert scenario is not None, problems
    return run_scenario(scenario)


def test_three_underutilized_nodes_consolidate_to_fewer(write_scenario: ScenarioWriter) -> None:
    result = _run(write_scenario)
    assert not result.errors
    assert all(outcome.held for outcome in result.expectations), result.expectations
    assert result.summary.nodes < 3
    assert result.summary.disruptions.get("Underutilized", 0) >= 1
    assert result.summary.hourly_cost < 3 * 0.192
    # Every pod still runs somewhere after the move.
    assert result.summary.pods_evicted >= 1


def test_nodeclaims_launched_with_an_old_nodepool_hash_drift(
        write_scenario: ScenarioWriter) -> None:
    result = _run(write_scenario, extra=', nodePoolHash: "12345"')
    assert not result.errors
    assert result.summary.disruptions.get("Drifted", 0) >= 1


def test_nodeclaims_launched_with_an_old_node_class_hash_drift(
        write_scenario: ScenarioWriter) -> None:
    """The adoption's launch keeps the hash the instance was launched with (docs/
    scenarios.md: a different value makes it drifted); the launch stamped the node class's
    hash of now over it, so a fleet never drifted by its EC2NodeClass."""
    result = _run(write_scenario, extra=', nodeClassHash: "12345"')
    assert not result.errors
    assert result.summary.disruptions.get("Drifted", 0) >= 1


def test_nodeclaims_older_than_expire_after_expire(write_scenario: ScenarioWriter) -> None:
    # The workshop NodePool's expireAfter is 720h.
    result = _run(write_scenario, age="721h")
    assert not result.errors
    assert result.summary.disruptions.get("Expired", 0) == 3


def test_a_fresh_fleet_neither_drifts_nor_expires(write_scenario: ScenarioWriter) -> None:
    result = _run(write_scenario)
    assert result.summary.disruptions.get("Drifted", 0) == 0
    assert result.summary.disruptions.get("Expired", 0) == 0


def test_a_bound_pod_on_a_node_that_is_not_there_is_a_clear_problem(
        write_scenario: ScenarioWriter) -> None:
    path = write_scenario(FLEET.replace("AGE", "1h").replace("HASH", "").replace(
        "{node: default-ccccc,", "{node: nowhere,"))
    scenario, problems = load_scenario(path)
    assert scenario is None
    assert any("boundPods[2].node" in p.path and "nowhere" in p.message for p in problems)


def test_more_bound_pods_than_replicas_is_refused(write_scenario: ScenarioWriter) -> None:
    path = write_scenario(FLEET.replace("AGE", "1h").replace("HASH", "").replace(
        "{node: default-ccccc, kind: Deployment, name: web}",
        "{node: default-ccccc, kind: Deployment, name: web, count: 2}"))
    scenario, problems = load_scenario(path)
    assert scenario is None
    assert any("4 pods of Deployment/default/web are bound, but it runs 3" in p.message
               for p in problems)
