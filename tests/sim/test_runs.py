"""Small scenarios, run end to end: what a failing expectation, a settle that cannot end,
an interruption with no target, scarce capacity, price overrides, edits and deletions and
unmanaged nodes look like."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest

from nodewright.cli import main
from tests.sim.conftest import ScenarioWriter

WORKSHOP_HEAD = """
name: story
manifests:
  - WORKSHOP
steps:
  - scale: {name: inflate, replicas: 5}
"""


def story(more_steps: str, head: str = WORKSHOP_HEAD) -> str:
    """The workshop scaled to 5 replicas, then `more_steps` (a dedented list of steps)."""
    return head + textwrap.indent(textwrap.dedent(more_steps).lstrip("\n"), "  ")


def run(path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str]:
    code = main(["simulate", str(path), *extra])
    return code, capsys.readouterr().out


def test_a_failed_expectation_exits_1_and_says_what_differed(
    write_scenario: ScenarioWriter, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_scenario(story("""
          - settle: {}
          - expect:
              nodes: 2
              instanceTypes: {c5.large: 1}
              pendingPods: 0
        """))

    code, output = run(path, capsys)

    assert code == 1
    assert ("step 3 (line 7): FAILED: nodes: expected 2, found 1 (m5.large: 1); "
            "instanceTypes: expected {c5.large: 1}, found {m5.large: 1}") in output
    assert "Summary of story (seed 0): FAILED" in output


def test_a_settle_that_cannot_end_in_time_is_a_failed_expectation(
    write_scenario: ScenarioWriter, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_scenario(story("""
          - settle: {timeout: 2m}
        """, WORKSHOP_HEAD.replace("steps:", "settings: {launchDelay: 20m}\nsteps:")))

    code, output = run(path, capsys)

    assert code == 1
    assert re.search(r"step 2 \(line \d+\): FAILED: settle: not quiet after 2m: 1 NodeClaim\(s\) "
                     r"launching or terminating \(default-\w{5}\); 5 pod\(s\) pending", output)


def test_an_interruption_that_matches_no_node_fails_the_run(
    write_scenario: ScenarioWriter, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_scenario(story("""
          - settle: {}
          - interrupt: {select: {capacityType: spot}, kind: spot}
        """))

    code, output = run(path, capsys)

    assert code == 1
    assert ("error: step 3: interrupt: 0 managed node(s) match (capacityType=spot), 1 wanted"
            in output)


def test_no_capacity_for_the_cheapest_type_launches_the_next_one(
    write_scenario: ScenarioWriter, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_scenario(story("""
          - settle: {}
          - expect: {nodes: 1, instanceTypes: {c5.xlarge: 1}, pendingPods: 0}
        """, WORKSHOP_HEAD.replace("steps:", """capacity:
  - {instanceType: m5.large, available: 0}
steps:""")))

    code, output = run(path, capsys)

    assert code == 0, output
    assert "ec2: InsufficientInstanceCapacity: m5.large on-demand in us-east-1" in output


def test_a_price_override_changes_what_is_cheapest(
    write_scenario: ScenarioWriter, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    timeline = tmp_path / "timeline.json"
    path = write_scenario(story("""
          - settle: {}
          - expect: {pendingPods: 0, hourlyCost: {max: 1.0}}
        """, WORKSHOP_HEAD.replace("steps:", """prices:
  - {instanceType: m5.large, capacityType: on-demand, price: 5.0}
steps:""")))

    code, output = run(path, capsys, "--json", str(timeline))

    assert code == 0, output
    fleet = json.loads(timeline.read_text())["fleet"]
    assert fleet and all(node["instanceType"] != "m5.large" for node in fleet)
    assert sum(node["price"] for node in fleet) < 1.0


def test_deleting_the_workload_empties_the_fleet(
    write_scenario: ScenarioWriter, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_scenario(story("""
          - settle: {}
          - delete: {kind: Deployment, name: inflate}
          - settle: {}
          - expect: {nodes: 0, pendingPods: 0, disruptions: {Empty: 1}, launched: 1}
        """))

    code, output = run(path, capsys)

    assert code == 0, output
    assert re.search(r"disruption: Empty: delete node \S+ \(NodeClaim default-\w{5}, m5\.large\)",
                     output)


def test_an_applied_nodepool_edit_takes_effect(
    write_scenario: ScenarioWriter, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_scenario("""
        name: story
        manifests:
          - WORKSHOP
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
                    requirements:
                      - {key: karpenter.k8s.aws/instance-family, operator: In, values: [r5]}
                      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
          - scale: {name: inflate, replicas: 5}
          - settle: {}
          - expect: {nodes: 1, instanceTypes: {r5.large: 1}}
        """)

    code, output = run(path, capsys)

    assert code == 0, output
    assert "step 1: apply: NodePool/default updated" in output


def test_an_unmanaged_node_takes_pods_first_and_is_not_counted(
    write_scenario: ScenarioWriter, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_scenario("""
        name: story
        manifests:
          - WORKSHOP
          - apiVersion: v1
            kind: Node
            metadata:
              name: system-1
              labels: {type: karpenter, node.kubernetes.io/instance-type: m5.2xlarge,
                       topology.kubernetes.io/zone: us-east-1a, kubernetes.io/os: linux,
                       kubernetes.io/arch: amd64}
            status:
              allocatable: {cpu: "7", memory: 28Gi, pods: "58"}
              capacity: {cpu: "8", memory: 32Gi, pods: "58"}
              conditions: [{type: Ready, status: "True"}]
        steps:
          - scale: {name: inflate, replicas: 5}
          - settle: {}
          - expect: {nodes: 0, launched: 0, pendingPods: 0}
        """)

    code, output = run(path, capsys)

    assert code == 0, output


def test_quiet_prints_only_expectations_and_the_summary(
    write_scenario: ScenarioWriter, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_scenario(story("""
          - settle: {}
          - expect: {nodes: 1}
        """))

    code, output = run(path, capsys, "--quiet")

    assert code == 0
    timeline = [line for line in output.splitlines() if line.startswith("[")]
    assert timeline == [next(line for line in timeline if "expect:" in line)]
    assert "Summary of story (seed 0): every expectation held" in output


def test_an_output_path_that_is_a_folder_is_refused_before_running(
    write_scenario: ScenarioWriter, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_scenario(story("""
          - expect: {nodes: 0}
        """))

    code, output = run(path, capsys, "--report", str(tmp_path))

    assert code == 2
    assert f"{tmp_path}:0: --report: is a directory, not a file" in output
    assert "[00:00:00]" not in output


def test_a_node_whose_instance_is_gone_is_let_go_though_a_pod_will_not_stop(
    write_scenario: ScenarioWriter, capsys: pytest.CaptureFixture[str]
) -> None:
    # A pod asks for more grace than the calendar holds (any int64 is valid). When EC2
    # terminates the instance, the drain cannot finish; the kubelet is gone, the node goes
    # Unknown a node-monitor grace period later, and the termination controller lets the
    # Node and its NodeClaim go (Karpenter's finalize: not Ready and the instance not found).
    path = write_scenario(story("""
          - apply:
              apiVersion: apps/v1
              kind: Deployment
              metadata: {name: stubborn, namespace: default}
              spec:
                replicas: 1
                selector: {matchLabels: {app: stubborn}}
                template:
                  metadata: {labels: {app: stubborn}}
                  spec:
                    terminationGracePeriodSeconds: 1000000000000
                    containers:
                      - name: c
                        image: pause
                        resources: {requests: {cpu: 100m, memory: 64Mi}}
          - settle: {}
          - expect: {nodes: 1, pendingPods: 0}
          - interrupt: {select: {nodePool: default}, kind: terminate}
          - settle: {timeout: 10m}
          - expect: {nodes: 1, pendingPods: 0, launched: 2, violations: 0}
        """))

    code, out = run(path, capsys, "--quiet")

    assert code == 0, out
    assert "controller errors" not in out.lower(), out


def test_a_pod_that_tolerates_every_taint_is_not_consolidated_onto_a_node_not_yet_up(
    write_scenario: ScenarioWriter, capsys: pytest.CaptureFixture[str]
) -> None:
    # A StatefulSet one pod per node (required anti-affinity), whose pods tolerate every
    # taint and are created one after the other: each new pod has a NodeClaim in flight.
    # Moving a running pod there is no consolidation (Karpenter: the machine has not
    # initialized), however wide the pod's tolerations; before, the solver's own marks were
    # tolerated too, and each node was deleted only for its pod to need a new one.
    path = write_scenario("""
        name: story
        manifests:
          - WORKSHOP
          - apiVersion: apps/v1
            kind: StatefulSet
            metadata: {name: db, namespace: default}
            spec:
              replicas: 0
              serviceName: db
              selector: {matchLabels: {app: db}}
              template:
                metadata: {labels: {app: db}}
                spec:
                  tolerations: [{operator: Exists}]
                  affinity:
                    podAntiAffinity:
                      requiredDuringSchedulingIgnoredDuringExecution:
                        - labelSelector: {matchLabels: {app: db}}
                          topologyKey: kubernetes.io/hostname
                  containers:
                    - name: c
                      image: pause
                      resources: {requests: {cpu: 250m, memory: 256Mi}}
        steps:
          - scale: {kind: StatefulSet, name: db, replicas: 6}
          - settle: {}
          - expect: {nodes: 6, pendingPods: 0, launched: 6, disruptions: {Underutilized: 0}}
        """)

    code, out = run(path, capsys, "--quiet")

    assert code == 0, out


def test_a_node_interrupted_while_its_drift_replacement_comes_up(
    write_scenario: ScenarioWriter, capsys: pytest.CaptureFixture[str]
) -> None:
    # The drift command launched a replacement and waits for it; meanwhile EC2 terminates
    # the drifted node, and the interruption deletes its NodeClaim at once (as Karpenter).
    # When the replacement is up, the command has nothing left to delete: it once failed
    # there on every pass, and the simulator counted the interruption's drain as the
    # command's, before its replacement was ready.
    path = write_scenario("""
        name: story
        manifests:
          - WORKSHOP
        steps:
          - scale: {name: inflate, replicas: 2}
          - settle: {}
          - expect: {nodes: 1}
          - apply:
              apiVersion: karpenter.sh/v1
              kind: NodePool
              metadata: {name: default}
              spec:
                template:
                  metadata: {labels: {type: karpenter, rollout: "2"}}
                  spec:
                    nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
                    requirements:
                      - {key: karpenter.k8s.aws/instance-family, operator: In, values: [m5]}
                      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
          - wait: 20s
          - interrupt: {kind: terminate}
          - settle: {}
          - expect: {nodes: 1, pendingPods: 0, violations: 0,
                     disruptions: {Drifted: 1, Interrupted: 1}}
        """)

    code, out = run(path, capsys)

    assert code == 0, out
    assert "Controller errors" not in out and "AssertionError" not in out, out
