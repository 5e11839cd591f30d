"""`nodewright simulate SNAPSHOT` and `simulate --from-cluster`: what the real controllers
would do to a cluster, told as the fleet and cost before and after, the disruptions, the
evicted pods and where they go, what stays pending and why, and what was held back."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest

from nodewright.cli import build_parser
from nodewright.cli.simulate import run as simulate_command
from nodewright.cli.snapshot import run as snapshot_command
from nodewright.sim.loading import load_scenario
from nodewright.sim.runner import _Run
from nodewright.sim.snapshot.outcome import run_what_if
from nodewright.sim.world import World, build_world
from tests.sim.conftest import WORKSHOP_MANIFESTS, ScenarioWriter
from tests.sim.test_snapshot import _scale_with_the_controller_stopped


def _live(path: Path, text: str) -> World:
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    scenario, problems = load_scenario(path)
    assert scenario is not None, problems
    world = build_world(scenario)
    _Run(world, None).execute("live")
    return world


def test_simulate_from_cluster_says_which_node_goes_and_what_it_saves(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    world = _live(tmp_path / "live.yaml", f"""
        name: live
        manifests: [{WORKSHOP_MANIFESTS}]
        steps:
          - scale: {{name: inflate, replicas: 12}}
          - settle: {{timeout: 10m}}
    """)
    _scale_with_the_controller_stopped(world, 5)
    report, timeline = tmp_path / "r.html", tmp_path / "t.json"
    args = build_parser("simulate").parse_args(
        ["simulate", "--from-cluster", "--quiet", "--report", str(report), "--json",
         str(timeline), "--save-snapshot", str(tmp_path / "snap.yaml")])
    assert simulate_command(args, lambda _: world.cluster, world.clock.now()) == 0
    out = capsys.readouterr().out
    assert "What it would do to this cluster:" in out
    assert "fleet now:    2 nodes (2 managed; m5.large: 2), $0.1920/hour" in out
    assert "fleet after:  1 node (1 managed; m5.large: 1), $0.0960/hour" in out
    assert "saving:       $0.0960/hour" in out
    assert re.search(r"\] (Empty|Underutilized): delete ip-[0-9-]+\.ec2\.internal, saving "
                     r"\$0\.0960/hour", out)
    outcome = json.loads(timeline.read_text(encoding="utf-8"))["whatItWouldDo"][0]
    assert outcome["before"]["hourlyCost"] == 0.192 and outcome["after"]["hourlyCost"] == 0.096
    moved = outcome["evictions"]
    assert moved and all(m["to"] for m in moved)  # every evicted pod runs again somewhere
    html = report.read_text(encoding="utf-8")
    assert "Fleet before and after" in html and "Pods evicted and where they go" in html
    assert (tmp_path / "snap.yaml").exists()
    # README shows this very output.
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    sample = readme[readme.index("```\nWhat it would do to this cluster:") + 4:]
    sample = sample[:sample.index("\n```")]
    printed = out[out.index("What it would do to this cluster:"):]
    assert printed.startswith(sample + "\n"), printed


def test_simulate_needs_a_scenario_or_from_cluster(capsys: pytest.CaptureFixture[str]
                                                   ) -> None:
    args = build_parser("simulate").parse_args(["simulate"])
    assert simulate_command(args) == 2
    assert "SCENARIO.yaml or --from-cluster" in capsys.readouterr().err


NODE = """
---
apiVersion: v1
kind: Node
metadata:
  name: ng-node-{i}
  labels:
    eks.amazonaws.com/nodegroup: workers
    eks.amazonaws.com/capacityType: ON_DEMAND
    node.kubernetes.io/instance-type: m5.2xlarge
    topology.kubernetes.io/zone: {zone}
    kubernetes.io/arch: amd64
    kubernetes.io/os: linux
    team: web
spec:
  providerID: aws:///{zone}/i-000000000000000{i}
status:
  capacity: {{cpu: "8", memory: 32Gi, pods: "58"}}
  allocatable: {{cpu: 7910m, memory: 31Gi, pods: "58"}}
  conditions: [{{type: Ready, status: "True"}}]
"""
WEB = """
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 6
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      nodeSelector: {team: web}
      terminationGracePeriodSeconds: 0
      containers:
        - {name: web, image: nginx, resources: {requests: {cpu: 500m, memory: 1Gi}}}
"""


def test_a_node_group_cluster_gets_nodepools_proposed_and_a_savings_estimate(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifests = tmp_path / "cluster.yaml"
    manifests.write_text("".join(NODE.format(i=i, zone=zone) for i, zone in enumerate(
        ("us-east-1a", "us-east-1b", "us-east-1c"))) + WEB, encoding="utf-8")
    world = _live(tmp_path / "live.yaml", f"""
        name: node-groups
        manifests: [{manifests}]
        steps: [{{settle: {{timeout: 10m}}}}]
    """)
    snapshot, pools = tmp_path / "snap.yaml", tmp_path / "pools.yaml"
    args = build_parser("snapshot").parse_args(
        ["snapshot", "-o", str(snapshot), "--as-nodepools", str(pools)])
    assert snapshot_command(args, lambda _: world.cluster, world.clock.now()) == 0
    assert "0 NodeClaims, 3 unmanaged nodes, 6 running pods" in capsys.readouterr().err
    proposed = pools.read_text(encoding="utf-8")
    assert "nodewright.io/takes-over: workers" in proposed and "team: web" in proposed

    args = build_parser("simulate").parse_args(
        ["simulate", str(snapshot), "--quiet", "--compare", str(pools)])
    assert simulate_command(args) == 0
    out = capsys.readouterr().out
    as_is, _, with_pools = out.partition(f"With {pools} instead:")
    assert "saving:       $0.0000/hour" in as_is  # nothing manages node groups
    assert "fleet now:    3 nodes (3 managed; m5.2xlarge: 3), $1.1520/hour" in with_pools
    assert "fleet after:  1 node (1 managed" in with_pools
    assert "saving:       $0.7680/hour" in with_pools


HELD = """
    name: held
    manifests:
      - WORKSHOP
      - apiVersion: apps/v1
        kind: Deployment
        metadata: {name: web, namespace: default}
        spec:
          replicas: 2
          selector: {matchLabels: {app: web}}
          template:
            metadata: {labels: {app: web}}
            spec:
              nodeSelector: {type: karpenter}
              containers:
                - {name: web, image: nginx, resources: {requests: {cpu: 200m}}}
      - apiVersion: policy/v1
        kind: PodDisruptionBudget
        metadata: {name: web, namespace: default}
        spec: {maxUnavailable: 0, selector: {matchLabels: {app: web}}}
      - apiVersion: apps/v1
        kind: Deployment
        metadata: {name: huge, namespace: default}
        spec:
          replicas: 1
          selector: {matchLabels: {app: huge}}
          template:
            metadata: {labels: {app: huge}}
            spec:
              nodeSelector: {type: karpenter}
              containers:
                - {name: huge, image: nginx, resources: {requests: {cpu: "900"}}}
    nodeClaims:
      - {name: default-aaaaa, nodePool: default, instanceType: m5.xlarge, zone: us-east-1a}
      - {name: default-bbbbb, nodePool: default, instanceType: m5.xlarge, zone: us-east-1b}
    boundPods:
      - {node: default-aaaaa, kind: Deployment, name: web}
      - {node: default-bbbbb, kind: Deployment, name: web}
    steps:
      - settle: {timeout: 20m}
"""


def test_what_stays_pending_is_explained_and_pdbs_that_hold_nodes_are_named(
        write_scenario: ScenarioWriter) -> None:
    scenario, problems = load_scenario(write_scenario(HELD))
    assert scenario is not None, problems
    _, outcome = run_what_if(scenario)
    assert outcome.pending_total == 1
    pod, why = outcome.pending[0]
    assert pod.startswith("default/huge-") and why.startswith("pending")
    causes: dict[str, Any] = {h.cause: h for h in outcome.held_back}
    assert "PodDisruptionBudget" in causes
    assert not outcome.disruptions
    text = "\n".join(outcome.lines())
    assert "PodDisruptionBudget" in text and "pending at the end: 1" in text


KUBECONFIG = """
apiVersion: v1
kind: Config
clusters:
  - {name: a, cluster: {server: "https://127.0.0.1:1"}}
users:
  - {name: a, user: {token: x}}
contexts:
  - {name: staging, context: {cluster: a, user: a}}
current-context: staging
"""


def test_a_context_the_kubeconfig_lacks_is_a_clear_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(KUBECONFIG, encoding="utf-8")
    args = build_parser("snapshot").parse_args(
        ["snapshot", "--kubeconfig", str(kubeconfig), "--context", "prod"])
    assert snapshot_command(args) == 2
    err = capsys.readouterr().err
    assert f"cannot read the cluster's address from {kubeconfig} (context prod)" in err


def test_an_unreachable_cluster_is_exit_2_without_a_traceback(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(KUBECONFIG, encoding="utf-8")
    args = build_parser("snapshot").parse_args(
        ["snapshot", "--kubeconfig", str(kubeconfig), "--context", "staging"])
    assert snapshot_command(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("nodewright snapshot: ") and "Traceback" not in err
