"""`nodewright explain` against a cluster (here the in-memory one): what blocks a node,
its budgets and timers, the decisions recorded; why a pod is pending, per NodePool."""

from __future__ import annotations

import argparse
import json
import socket
from typing import Any

import pytest

from nodewright.cli import build_parser
from nodewright.cli.explain import run
from nodewright.cluster import objects
from tests.controllers.conftest import WORKSHOP
from tests.disruption.test_blocker_and_interruption_stories import GUARD
from tests.harness import World

HUGE = """
apiVersion: v1
kind: Pod
metadata: {name: huge, namespace: default}
spec:
  nodeSelector: {type: karpenter}
  containers: [{name: app, resources: {requests: {memory: 4000Gi}}}]
"""


def explain(world: World, *argv: str) -> tuple[int, str]:
    args = build_parser().parse_args(["explain", *argv])
    return run(args, lambda _: world.cluster, world.clock.now()), ""


def test_a_blocked_node_is_explained_with_the_pod_budgets_and_timers(
    world: World, capsys: pytest.CaptureFixture[str],
) -> None:
    world.apply(WORKSHOP)
    world.scale("inflate", 5)
    assert world.settle()
    world.apply(GUARD)
    assert world.settle()
    [node] = world.nodes()

    code, _ = explain(world, "node", objects.name(node))
    text = capsys.readouterr().out

    assert code == 0
    assert 'cannot be disrupted now: pod default/guard has the karpenter.sh/do-not-disrupt' in text
    assert "budget Underutilized" in text and 'budget[0] nodes "10%"' in text
    assert "consolidateAfter 30s" in text and "expireAfter 720h" in text
    assert "condition Disruptable" in text and "DoNotDisrupt" in text
    assert "DisruptionBlocked" in text


def test_a_node_that_is_kept_shows_the_last_decision(
    world: World, capsys: pytest.CaptureFixture[str],
) -> None:
    world.apply(WORKSHOP)
    world.scale("inflate", 5)
    assert world.settle()
    [node] = world.nodes()
    args = build_parser().parse_args(["explain", "node", objects.name(node), "--format", "json"])
    assert run(args, lambda _: world.cluster, world.clock.now()) == 0
    shown: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert shown["summary"].startswith("may be disrupted; last decision: single-node")
    assert "cheaper" in shown["summary"]


def test_a_pending_pod_gets_the_solvers_reason_per_nodepool(
    world: World, capsys: pytest.CaptureFixture[str],
) -> None:
    world.apply(WORKSHOP, HUGE)
    world.advance(30)
    code, _ = explain(world, "pod", "default/huge")
    text = capsys.readouterr().out
    assert code == 0
    assert 'pending: NodePool "default": no instance type has 4000Gi memory' in text


def test_unknown_names_and_bad_arguments_are_refused_plainly(
    world: World, capsys: pytest.CaptureFixture[str],
) -> None:
    assert explain(world, "node", "nowhere")[0] == 1
    assert "no Node or launched NodeClaim is named 'nowhere'" in capsys.readouterr().err
    assert explain(world, "pod", "huge")[0] == 2
    assert "expected NAMESPACE/NAME" in capsys.readouterr().err


def test_without_a_kubeconfig_the_message_says_where_it_looked(
    capsys: pytest.CaptureFixture[str], tmp_path: Any,
) -> None:
    args = argparse.Namespace(kind="node", name="x", kubeconfig=str(tmp_path / "missing"),
                              region=None, format="text")
    assert run(args) == 2
    assert "cannot read the cluster's address from" in capsys.readouterr().err


def test_a_server_that_does_not_answer_is_named_not_reported_as_a_503(
    capsys: pytest.CaptureFixture[str], tmp_path: Any,
) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
    }))
    args = argparse.Namespace(kind="node", name="x", kubeconfig=str(kubeconfig),
                              region=None, format="text")
    assert run(args) == 2
    err = capsys.readouterr().err
    assert f"cannot reach the API server at http://127.0.0.1:{port}" in err
    assert "answered" not in err


def test_a_region_without_offline_data_is_refused_plainly(
    world: World, capsys: pytest.CaptureFixture[str],
) -> None:
    world.apply(WORKSHOP, HUGE)
    world.advance(30)
    assert explain(world, "pod", "default/huge", "--region", "nowhere-1")[0] == 1
    error = capsys.readouterr().err
    assert "region 'nowhere-1' is not in the offline instance-type data" in error
    assert "pass --region" in error and "us-west-2" in error


def test_a_node_nodewright_does_not_manage_is_said_to_be_so(
    world: World, capsys: pytest.CaptureFixture[str],
) -> None:
    world.apply(WORKSHOP)
    world.cluster.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "system-1"},
                          "status": {"allocatable": {"cpu": "2", "pods": "10"}}})
    world.advance(5)
    assert explain(world, "node", "system-1", "--format", "json")[0] == 0
    shown: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert shown["summary"] == "cannot be disrupted now: node isn't managed by karpenter"
    facts = {fact["label"]: fact["text"] for fact in shown["facts"]}
    assert facts["nodeclaim"] == "(none: not managed by Nodewright)"
    assert "instance" not in facts  # no "? ? in ?" for labels it never had


def test_a_pod_held_by_its_volumes_zone_is_explained(
    world: World, capsys: pytest.CaptureFixture[str],
) -> None:
    from tests.controllers.test_volumes_story import claim, pod, storage_class, volume

    world.apply(WORKSHOP, storage_class(), volume("pv-c", zone="us-east-1c"),
                claim("data", volume="pv-c"), pod("db", "data", zone="us-east-1a"))
    world.advance(30)
    code, _ = explain(world, "pod", "default/db")
    text = capsys.readouterr().out
    assert code == 0
    assert "its volumes can only be used in zone(s) us-east-1c" in text
    assert "pending: a volume's zone is why: its volumes can only be used in zone(s) " \
        "us-east-1c, and no node can take it there" in text


def test_a_pod_whose_claim_is_missing_is_explained(
    world: World, capsys: pytest.CaptureFixture[str],
) -> None:
    from tests.controllers.test_volumes_story import pod

    world.apply(WORKSHOP, pod("db", "nowhere"))
    world.advance(30)
    code, _ = explain(world, "pod", "default/db")
    text = capsys.readouterr().out
    assert code == 0
    assert "pending; Karpenter does not plan for it until its volumes can be used: " \
        'persistentvolumeclaim "nowhere" not found' in text
