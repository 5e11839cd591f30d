"""`nodewright aws discover` against moto (in-process), and `nodewright aws userdata`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from nodewright.cli import main
from nodewright.cloud.aws.clients import AwsClients

from .world import CLUSTER, X86_IMAGE, World, build_world


@pytest.fixture
def world(clients: AwsClients) -> World:
    return build_world(clients)


def write_node_class(tmp_path: Path, **spec: object) -> Path:
    body = {
        "role": "KarpenterNodeRole-demo",
        "amiSelectorTerms": [{"alias": "al2023@latest"}],
        "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": CLUSTER}}],
        "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": CLUSTER}}],
        **spec,
    }
    path = tmp_path / "nodeclass.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "karpenter.k8s.aws/v1",
                "kind": "EC2NodeClass",
                "metadata": {"name": "default"},
                "spec": body,
            }
        )
    )
    return path


def test_discover_prints_exactly_the_matching_resources(
    world: World, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_node_class(tmp_path)
    code = main(
        [
            "aws",
            "discover",
            "--nodeclass",
            str(path),
            "--cluster",
            CLUSTER,
            "--region",
            "us-west-2",
            "--format",
            "json",
        ]
    )
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert {s["id"] for s in out["subnets"]} == set(world.subnets.values())
    assert all(s["freeIPs"] > 0 for s in out["subnets"])
    assert [g["id"] for g in out["securityGroups"]] == [world.security_group]
    assert {(a["id"], a["architecture"]) for a in out["amis"]} == {
        (X86_IMAGE, "amd64"),
        (world.arm_image, "arm64"),
    }
    assert out["unmatched"] == []


def test_discover_names_the_term_that_matched_nothing(
    world: World, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_node_class(
        tmp_path,
        securityGroupSelectorTerms=[{"tags": {"karpenter.sh/discovery": "typo"}}],
    )
    code = main(
        ["aws", "discover", "--nodeclass", str(path), "--cluster", CLUSTER, "--region", "us-west-2"]
    )
    out = capsys.readouterr().out
    assert code == 1
    assert "Security groups (0):" in out
    assert (
        "securityGroupSelectorTerms[0] {'tags': {'karpenter.sh/discovery': 'typo'}} matched nothing"
    ) in out
    assert f"{world.subnets['us-west-2a']}  us-west-2a" in out


def test_discover_reports_bad_manifests_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "nodeclass.yaml"
    path.write_text(
        "apiVersion: karpenter.k8s.aws/v1\nkind: EC2NodeClass\nmetadata:\n"
        "  name: broken\nspec:\n  role: r\n"
    )
    code = main(
        ["aws", "discover", "--nodeclass", str(path), "--cluster", CLUSTER, "--region", "us-west-2"]
    )
    err = capsys.readouterr().err
    assert code == 1
    assert err.startswith(f"error: {path}:")
    assert "subnetSelectorTerms" in err


def test_userdata_prints_what_a_node_boots_with(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    node_class = write_node_class(tmp_path, kubelet={"systemReserved": {"cpu": "100m"}})
    nodepool = tmp_path / "nodepool.yaml"
    nodepool.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "karpenter.sh/v1",
                "kind": "NodePool",
                "metadata": {"name": "general"},
                "spec": {
                    "template": {
                        "metadata": {"labels": {"team": "web"}},
                        "spec": {
                            "nodeClassRef": {
                                "group": "karpenter.k8s.aws",
                                "kind": "EC2NodeClass",
                                "name": "default",
                            },
                            "requirements": [],
                            "taints": [{"key": "web", "effect": "NoSchedule"}],
                        },
                    }
                },
            }
        )
    )
    code = main(
        [
            "aws",
            "userdata",
            "--nodeclass",
            str(node_class),
            "--nodepool",
            str(nodepool),
            "--cluster",
            CLUSTER,
            "--endpoint",
            "https://example.eks",
            "--ca-bundle",
            "Q0E=",
            "--instance-type",
            "m5.large",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "maxPods: 29" in out
    assert "--node-labels=karpenter.sh/nodepool=general,team=web" in out
    assert "key: karpenter.sh/unregistered" in out
    assert "cpu: 100m" in out
