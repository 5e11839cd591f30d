"""The scenario format as the shared design specifies it (scenarios.md), key by key: the
top-level keys and their defaults, every setting, every step kind, every `expect` key and
the outputs (timeline lines, the summary, --json). Each test is a small scenario run
through the command; what other files already prove is named at the end of this file.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from nodewright.cli import main
from tests.sim.conftest import SCENARIOS, WORKSHOP_MANIFESTS, ScenarioWriter

WORKSHOP_FILES = ("ec2nodeclass.yaml", "daemonsets.yaml", "inflate.yaml")
TIMELINE_SOURCES = {"scenario", "provisioner", "lifecycle", "disruption", "termination", "ec2",
                    "karpenter", "expect"}


def simulate(
    path: Path, capsys: pytest.CaptureFixture[str], *extra: str
) -> tuple[int, str, dict[str, Any]]:
    """Run the command with --json; the exit code, what it printed and the JSON."""
    timeline = path.with_suffix(".json")
    code = main(["simulate", str(path), "--json", str(timeline), *extra])
    output = capsys.readouterr().out
    return code, output, json.loads(timeline.read_text()) if timeline.exists() else {}


def events(result: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [event for event in result["timeline"] if event["kind"] == kind]


# -- top-level keys -------------------------------------------------------------------------


def test_defaults_region_zones_seed_and_start(
    write_scenario: ScenarioWriter, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_scenario("""
        name: defaults
        manifests: [WORKSHOP]
        steps:
          - expect: {nodes: 0}
        """)

    code, _, result = simulate(path, capsys)

    assert code == 0
    assert result["scenario"] == {
        "name": "defaults", "description": "", "file": str(path), "seed": 0,
        "region": "us-east-1", "zones": ["us-east-1a", "us-east-1b", "us-east-1c"],
        "start": "2026-01-05T00:00:00Z",
    }


def test_another_region_has_its_own_zones_and_the_fleet_stays_in_them(
    write_scenario: ScenarioWriter, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_scenario("""
        name: oregon
        description: the workshop in us-west-2, two zones
        region: us-west-2
        zones: [us-west-2b, us-west-2c]
        start: 2026-03-02T08:00:00Z
        manifests: [WORKSHOP]
        steps:
          - scale: {name: inflate, replicas: 12}
          - settle: {}
          - expect: {pendingPods: 0, zones: {distinct: 2}}
        """)

    code, output, result = simulate(path, capsys)

    assert code == 0, output
    assert result["scenario"]["region"] == "us-west-2"
    assert result["scenario"]["zones"] == ["us-west-2b", "us-west-2c"]
    assert result["scenario"]["start"] == "2026-03-02T08:00:00Z"
    assert result["scenario"]["description"] == "the workshop in us-west-2, two zones"
    assert {node["zone"] for node in result["fleet"]} <= {"us-west-2b", "us-west-2c"}


def test_the_seed_changes_names_not_the_story(
    write_scenario: ScenarioWriter, capsys: pytest.CaptureFixture[str]
) -> None:
    def run_with(seed: int) -> dict[str, Any]:
        path = write_scenario(f"""
            name: seeded
            seed: {seed}
            manifests: [WORKSHOP]
            steps:
              - scale: {{name: inflate, replicas: 5}}
              - settle: {{}}
              - expect: {{nodes: 1, instanceTypes: {{m5.large: 1}}}}
            """)
        code, output, result = simulate(path, capsys)
        assert code == 0, output
        return result

    zero, seven = run_with(0), run_with(7)

    assert seven["scenario"]["seed"] == 7
    assert [node["instanceType"] for node in zero["fleet"]] == ["m5.large"]
    assert [node["instanceType"] for node in seven["fleet"]] == ["m5.large"]
    assert zero["fleet"][0]["nodeclaim"] != seven["fleet"][0]["nodeclaim"]


def test_capacity_limits_how_many_instances_of_an_offering_ec2_launches(
    write_scenario: ScenarioWriter, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_scenario("""
        name: scarce
        zones: [us-east-1a]
        capacity:
          - {instanceType: m5.large, zone: us-east-1a, capacityType: on-demand, available: 1}
        manifests: [WORKSHOP]
        steps:
          - scale: {name: inflate, replicas: 5}
          - settle: {}
          - expect: {instanceTypes: {m5.large: 1}}
          - scale: {name: inflate, replicas: 12}
          - settle: {}
          - expect: {nodes: 2, pendingPods: 0}
        """)

    code, output, result = simulate(path, capsys)

    assert code == 0, output
    types = sorted(node["instanceType"] for node in result["fleet"])
    assert types.count("m5.large") == 1 and len(types) == 2
    assert "InsufficientInstanceCapacity: m5.large on-demand in us-east-1a" in output


def test_every_kind_the_spec_lists_is_simulated(
    write_scenario: ScenarioWriter, capsys: pytest.CaptureFixture[str]
) -> None:
    workshop = "\n".join(f"  - WORKSHOP/{name}" for name in WORKSHOP_FILES)
    path = write_scenario(f"""
name: kinds
manifests:
{workshop}
  - WORKSHOP/nodepool.yaml
  - apiVersion: v1
    kind: Namespace
    metadata: {{name: jobs}}
  - apiVersion: v1
    kind: Pod
    metadata: {{name: lone, namespace: jobs}}
    spec:
      nodeSelector: {{type: karpenter}}
      containers: [{{name: c, image: pause, resources: {{requests: {{memory: 1Gi}}}}}}]
  - apiVersion: batch/v1
    kind: Job
    metadata: {{name: report, namespace: jobs}}
    spec:
      parallelism: 2
      completions: 2
      template:
        spec:
          restartPolicy: Never
          nodeSelector: {{type: karpenter}}
          containers: [{{name: c, image: pause, resources: {{requests: {{memory: 1Gi}}}}}}]
  - apiVersion: apps/v1
    kind: StatefulSet
    metadata: {{name: db}}
    spec:
      replicas: 1
      serviceName: db
      selector: {{matchLabels: {{app: db}}}}
      template:
        metadata: {{labels: {{app: db}}}}
        spec:
          nodeSelector: {{type: karpenter}}
          containers: [{{name: c, image: pause, resources: {{requests: {{memory: 1Gi}}}}}}]
  - apiVersion: apps/v1
    kind: ReplicaSet
    metadata: {{name: cache}}
    spec:
      replicas: 1
      selector: {{matchLabels: {{app: cache}}}}
      template:
        metadata: {{labels: {{app: cache}}}}
        spec:
          nodeSelector: {{type: karpenter}}
          containers: [{{name: c, image: pause, resources: {{requests: {{memory: 1Gi}}}}}}]
  - apiVersion: policy/v1
    kind: PodDisruptionBudget
    metadata: {{name: db}}
    spec:
      maxUnavailable: 1
      selector: {{matchLabels: {{app: db}}}}
steps:
  - settle: {{}}
  - expect: {{pendingPods: 0, nodes: 1}}
  - scale: {{kind: StatefulSet, name: db, replicas: 3}}
  - scale: {{kind: ReplicaSet, name: cache, namespace: default, replicas: 3}}
  - settle: {{}}
  - expect: {{pendingPods: 0}}
  - delete: {{kind: Pod, name: lone, namespace: jobs}}
  - delete: {{kind: PodDisruptionBudget, name: db}}
  - delete: {{kind: Namespace, name: jobs}}
  - settle: {{}}
  - expect: {{pendingPods: 0, violations: 0}}
""")

    code, output, result = simulate(path, capsys)

    assert code == 0, output
    assert result["summary"]["launched"] >= 1
    assert "warning" not in output


# -- settings -------------------------------------------------------------------------------


def test_the_delays_of_the_settings_set_the_pace(
    write_scenario: ScenarioWriter, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_scenario("""
        name: slow
        settings:
          batchIdleDuration: 4s
          batchMaxDuration: 30s
          launchDelay: 1m
          registrationDelay: 2m
          terminationDelay: 5m
        manifests: [WORKSHOP]
        steps:
          - scale: {name: inflate, replicas: 5}
          - settle: {}
          - delete: {kind: Deployment, name: inflate}
          - settle: {}
          - expect: {nodes: 0, disruptions: {Empty: 1}}
        """)

    code, output, result = simulate(path, capsys)

    assert code == 0, output
    (created,) = events(result, "nodeclaim.launched")
    (initialized,) = events(result, "nodeclaim.initialized")
    (disrupted,) = events(result, "disruption.disrupted")
    (terminated,) = events(result, "nodeclaim.terminated")
    assert created["at"] == 4  # the batch closes 4 s after the pods appeared
    assert initialized["at"] == created["at"] + 60 + 120  # launch, then registration
    assert terminated["at"] - disrupted["at"] >= 300  # EC2 takes 5 minutes to terminate


def test_the_batch_window_closes_at_batch_max_duration(
    write_scenario: ScenarioWriter, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_scenario("""
        name: batch
        settings: {batchIdleDuration: 5s, batchMaxDuration: 8s}
        manifests: [WORKSHOP]
        steps:
          - scale: {name: inflate, replicas: 2}
          - wait: 3s
          - scale: {name: inflate, replicas: 3}
          - wait: 3s
          - scale: {name: inflate, replicas: 4}
          - settle: {}
          - expect: {pendingPods: 0}
        """)

    code, output, result = simulate(path, capsys)

    assert code == 0, output
    first = events(result, "nodeclaim.launched")[0]
    assert first["at"] == 8  # new pods kept it open; the maximum closed it
    assert first["data"]["pods"] == 4


def test_an_idle_window_longer_than_the_maximum_is_taken_and_the_maximum_closes_the_batch(
    write_scenario: ScenarioWriter, capsys: pytest.CaptureFixture[str]
) -> None:
    """As the controller option: Karpenter's batcher runs both timers and the first to fire
    ends the batch, so BATCH_IDLE_DURATION above BATCH_MAX_DURATION is no error."""
    path = write_scenario("""
        name: batch
        settings: {batchIdleDuration: 20s, batchMaxDuration: 6s}
        manifests: [WORKSHOP]
        steps:
          - scale: {name: inflate, replicas: 2}
          - settle: {}
          - expect: {pendingPods: 0}
        """)

    code, output, result = simulate(path, capsys)

    assert code == 0, output
    assert events(result, "nodeclaim.launched")[0]["at"] == 6


def test_pods_start_running_pod_start_delay_after_they_are_bound(tmp_path: Path) -> None:
    from nodewright.sim.loading import load_scenario
    from nodewright.sim.world import build_world

    def running_pods(delay: str, after: float) -> int:
        path = tmp_path / f"pods-{delay}.yaml"
        path.write_text(f"name: pods\nsettings: {{podStartDelay: {delay}}}\n"
                        f"manifests: [{WORKSHOP_MANIFESTS}]\nsteps: []\n")
        scenario, problems = load_scenario(path)
        assert scenario is not None, problems
        world = build_world(scenario)
        for document in sorted(scenario.manifests, key=lambda d: d.kind != "Namespace"):
            world.apply(document)
        world.driver.start()
        world.controllers.kick(world.driver)
        world.cluster.patch("Deployment", "inflate", {"spec": {"replicas": 5}}, "default")
        world.clock.advance(after)
        pods = [pod for pod in world.cluster.peek_all("Pod")
                if (pod.get("metadata") or {}).get("namespace") == "default"]
        assert len(pods) == 5 and all((pod.get("spec") or {}).get("nodeName") for pod in pods)
        return sum(1 for pod in pods if (pod.get("status") or {}).get("phase") == "Running")

    # Bound about 51 s in (batch, launch, registration); running 2 s or 5 min later.
    assert running_pods("2s", 120) == 5
    assert running_pods("5m", 120) == 0
    assert running_pods("5m", 420) == 5


def test_spot_to_spot_consolidation_follows_its_feature_gate(
    write_scenario: ScenarioWriter, capsys: pytest.CaptureFixture[str]
) -> None:
    def underutilized(gate: str) -> int:
        path = write_scenario(f"""
            name: spot-to-spot
            settings: {{featureGates: {{SpotToSpotConsolidation: {gate}}}}}
            manifests:
              - WORKSHOP/ec2nodeclass.yaml
              - WORKSHOP/inflate.yaml
              - apiVersion: karpenter.sh/v1
                kind: NodePool
                metadata: {{name: spot}}
                spec:
                  template:
                    metadata: {{labels: {{type: karpenter}}}}
                    spec:
                      nodeClassRef: {{group: karpenter.k8s.aws, kind: EC2NodeClass,
                                     name: default}}
                      requirements:
                        - {{key: karpenter.sh/capacity-type, operator: In, values: [spot]}}
                        - {{key: karpenter.k8s.aws/instance-category, operator: In,
                           values: [c, m, r]}}
                  disruption: {{consolidationPolicy: WhenEmptyOrUnderutilized,
                               consolidateAfter: 30s}}
            steps:
              - scale: {{name: inflate, replicas: 14}}
              - settle: {{}}
              - scale: {{name: inflate, replicas: 1}}
              - settle: {{timeout: 1h}}
              - expect: {{pendingPods: 0, capacityTypes: {{spot: 1}}}}
            """)
        code, output, result = simulate(path, capsys)
        assert code == 0, output
        return sum(1 for decision in result["decisions"] if decision["outcome"] == "disrupted"
                   and decision["method"] == "single-node consolidation")

    assert underutilized("false") == 0
    assert underutilized("true") == 1


# -- steps ----------------------------------------------------------------------------------


def test_apply_takes_a_list_of_paths_and_objects(
    write_scenario: ScenarioWriter, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "web.yaml").write_text((SCENARIOS / "topology-spread" / "web.yaml").read_text())
    path = write_scenario("""
        name: apply
        manifests: [WORKSHOP]
        steps:
          - apply:
              - web.yaml
              - {apiVersion: v1, kind: Namespace, metadata: {name: extra}}
          - scale: {name: web, replicas: 3}
          - settle: {}
          - expect: {nodes: 3, zones: {distinct: 3}, pendingPods: 0}
        """)

    code, output, _ = simulate(path, capsys)

    assert code == 0, output
    assert "step 1: apply: Deployment/web created" in output
    assert "step 1: apply: Namespace/extra created" in output


def test_deleting_a_nodepool_removes_its_nodes(
    write_scenario: ScenarioWriter, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_scenario("""
        name: delete-pool
        manifests: [WORKSHOP]
        steps:
          - scale: {name: inflate, replicas: 5}
          - settle: {}
          - delete: {kind: NodePool, name: default}
          - settle: {}
          - expect: {nodes: 0, nodePools: {default: 0}, pendingPods: 5}
        """)

    code, output, _ = simulate(path, capsys)

    assert code == 0, output


@pytest.mark.parametrize(("kind", "replaced"), [
    ("scheduled", True), ("stop", True), ("terminate", True), ("rebalance", False),
])
def test_each_interruption_kind_does_what_aws_does(
    kind: str, replaced: bool, write_scenario: ScenarioWriter,
    capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_scenario(f"""
        name: interrupted
        manifests: [WORKSHOP]
        steps:
          - scale: {{name: inflate, replicas: 5}}
          - settle: {{}}
          - interrupt: {{select: {{nodePool: default, instanceType: m5.large}}, kind: {kind}}}
          - settle: {{}}
          - expect:
              nodes: 1
              pendingPods: 0
              launched: {2 if replaced else 1}
              disruptions: {{Interrupted: {1 if replaced else 0}}}
        """)

    code, output, result = simulate(path, capsys)

    assert code == 0, output
    assert f"step 3: {kind} interruption of node" in output
    assert events(result, f"ec2.interrupt-{kind}")


def test_interrupt_by_node_name_and_by_count(
    write_scenario: ScenarioWriter, capsys: pytest.CaptureFixture[str]
) -> None:
    head = """
        name: by-name
        manifests: [WORKSHOP]
        steps:
          - scale: {name: inflate, replicas: 12}
          - settle: {}
        """
    _, _, before = simulate(write_scenario(head), capsys)
    first, second = (node["name"] for node in before["fleet"])

    path = write_scenario(head + f"""
          - interrupt: {{select: {{name: {second}}}, kind: terminate}}
          - settle: {{}}
          - interrupt: {{kind: terminate, count: 2}}
          - settle: {{}}
          - expect: {{nodes: 2, pendingPods: 0, disruptions: {{Interrupted: 3}}}}
        """)

    code, output, _ = simulate(path, capsys)

    assert code == 0, output
    assert f"step 3: terminate interruption of node {second}" in output
    assert output.count("step 5: terminate interruption of node") == 2
    assert first != second


# -- expect ---------------------------------------------------------------------------------


def test_zones_distinct_and_pods_evicted(
    write_scenario: ScenarioWriter, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_scenario("""
        name: expect
        manifests: [WORKSHOP]
        steps:
          - scale: {name: inflate, replicas: 12}
          - settle: {}
          - scale: {name: inflate, replicas: 5}
          - settle: {}
          - expect: {zones: {distinct: 1}, podsEvicted: {max: 100}}
          - expect: {zones: {distinct: 2}, podsEvicted: {max: 0}}
        """)

    code, output, result = simulate(path, capsys)

    assert code == 1
    evicted = result["summary"]["podsEvicted"]
    assert evicted > 0
    assert (f"step 6 (line 9): FAILED: zones: expected 2 distinct, found 1 "
            f"({result['fleet'][0]['zone']}); podsEvicted: {evicted} evictions, more than 0"
            ) in output
    assert "step 5 (line 8): ok" in output


def test_an_expired_node_is_counted_as_expired(
    write_scenario: ScenarioWriter, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_scenario("""
        name: expiry
        manifests: [WORKSHOP]
        steps:
          - apply:
              apiVersion: karpenter.sh/v1
              kind: NodePool
              metadata: {name: default}
              spec:
                template:
                  metadata: {labels: {type: karpenter}}
                  spec:
                    nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
                    expireAfter: 10m
                    requirements:
                      - {key: karpenter.k8s.aws/instance-family, operator: In, values: [c5, m5]}
                      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
          - scale: {name: inflate, replicas: 5}
          - settle: {}
          - wait: 10m
          - settle: {}
          - expect: {nodes: 1, pendingPods: 0, launched: 2, disruptions: {Expired: 1}}
        """)

    code, output, _ = simulate(path, capsys)

    assert code == 0, output
    assert re.search(r"^\[00:10:0\d\] disruption: Expired: delete node ", output, re.MULTILINE)


def test_every_failed_key_is_named_with_what_was_found(
    write_scenario: ScenarioWriter, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_scenario("""
        name: expect
        manifests: [WORKSHOP]
        steps:
          - scale: {name: inflate, replicas: 5}
          - settle: {}
          - expect:
              nodes: 3
              instanceTypes: {m5.large: 1, c5.large: 1}
              capacityTypes: {spot: 1}
              zones: {us-east-1a: 5}
              nodePools: {default: 2}
              pendingPods: 1
              hourlyCost: {min: 1}
              disruptions: {Drifted: 1}
              launched: 4
              violations: 1
        """)

    code, output, result = simulate(path, capsys)

    assert code == 1
    (failed,) = result["expectations"]
    keys = [difference.split(":")[0].split(".")[0] for difference in failed["differences"]]
    assert keys == ["nodes", "instanceTypes", "capacityTypes", "zones", "nodePools",
                    "pendingPods", "hourlyCost", "disruptions", "launched", "violations"]
    assert "hourlyCost: $0.0960 is outside [1.0, ]" in output
    assert "capacityTypes: expected {spot: 1}, found {on-demand: 1}" in output


# -- outputs --------------------------------------------------------------------------------


def test_the_timeline_summary_and_json_carry_what_the_spec_lists(
    write_scenario: ScenarioWriter, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_scenario("""
        name: outputs
        manifests: [WORKSHOP]
        steps:
          - scale: {name: inflate, replicas: 5}
          - settle: {}
          - scale: {name: inflate, replicas: 0}
          - settle: {}
          - expect: {nodes: 0}
        """)

    code, output, result = simulate(path, capsys)

    assert code == 0, output
    timeline = [line for line in output.splitlines() if line.startswith("[")]
    assert all(re.match(r"^\[\d\d:\d\d:\d\d\] [a-z0-9]+: ", line) for line in timeline)
    assert {event["source"] for event in result["timeline"]} <= TIMELINE_SOURCES
    assert "[00:00:00] scenario: step 1: scale Deployment/default/inflate to 5 replicas" \
        in output
    summary = output.split("Summary of outputs (seed 0): every expectation held", 1)[1]
    for label in ("nodes:", "cost:", "node-hours:", "dollars spent:", "disruptions:",
                  "violations:"):
        assert f"  {label}" in summary
    assert "disruptions:    Empty 1" in summary
    assert list(result) == sorted(result)
    assert {"scenario", "timeline", "expectations", "series", "decisions", "fleet",
            "violations", "summary", "errors"} <= set(result)
    assert set(result["timeline"][0]) == {"at", "time", "source", "kind", "message", "data"}
    assert set(result["expectations"][0]) == {"step", "line", "at", "held", "differences"}
    assert {"method", "outcome", "reason", "message"} <= set(result["decisions"][0])
    assert {"dollarsSpent", "nodeHours", "peakNodes", "pendingPodSeconds", "disruptions",
            "violations", "nodes", "hourlyCost"} <= set(result["summary"])
    assert result["summary"]["peakNodes"] == 1 and result["summary"]["dollarsSpent"] > 0


# Proved elsewhere: exit 1 and exit 2 with FILE:LINE: path: message and nothing run
# (test_runs.py, test_invalid_scenarios.py); inline objects, paths and directories in
# `manifests`, `prices`, `capacity` with `available: 0`, `wait`, `settle` and its timeout,
# `scale` and `delete` of a Deployment, `apply` of an edit, unmanaged Nodes, `--quiet`
# (test_runs.py); `start` against budget schedules, `spot` interruptions, `apply` of a path,
# `nodePools`, zone maps, `capacityTypes` (the examples, test_examples.py); byte-identical
# --json (test_examples.py); --report (test_report.py); --compare (test_compare.py);
# violations (test_violations.py); progress on a terminal (test_progress.py).
