"""`nodewright aws discover` against moto (in-process), and `nodewright aws userdata`."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
import yaml

from nodewright.cli import main

from .world import CLUSTER, X86_IMAGE, World

CA_BUNDLE = base64.b64encode(
    b"-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUQ0E=\n-----END CERTIFICATE-----\n"
).decode()


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
            CA_BUNDLE,
            "--instance-type",
            "m5.large",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "maxPods: 29" in out
    assert (
        '--node-labels="karpenter.sh/do-not-sync-taints=true,karpenter.sh/nodepool=general,'
        'team=web"' in out
    )
    assert "key: karpenter.sh/unregistered" in out
    assert "cpu: 100m" in out


def userdata_args(node_class: Path, *extra: str, **options: str) -> list[str]:
    values = {
        "--cluster": CLUSTER,
        "--endpoint": "https://example.eks",
        "--ca-bundle": CA_BUNDLE,
        **{f"--{key.replace('_', '-')}": value for key, value in options.items()},
    }
    return [
        "aws",
        "userdata",
        "--nodeclass",
        str(node_class),
        *[item for pair in values.items() for item in pair],
        *extra,
    ]


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("endpoint", "", "argument --endpoint: must not be empty"),
        ("endpoint", "http://example.eks", "argument --endpoint: 'http://example.eks' is not an"),
        ("endpoint", "example.eks", "argument --endpoint: 'example.eks' is not an https URL"),
        ("endpoint", "https://", "argument --endpoint: 'https://' is not an https URL"),
        ("ca_bundle", "", "argument --ca-bundle: must not be empty"),
        ("ca_bundle", "not base64!", "argument --ca-bundle: not base64 of a PEM certificate"),
        ("ca_bundle", "Q0E=", "argument --ca-bundle: decodes to no PEM certificate"),
        (
            "ca_bundle",
            base64.b64encode(
                b"-----BEGIN CERTIFICATE-----\n%%%\n-----END CERTIFICATE-----\n"
            ).decode(),
            "argument --ca-bundle: certificate 1 of the decoded PEM is not base64 DER",
        ),
        (
            "ca_bundle",
            base64.b64encode(b"-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----").decode(),
            "argument --ca-bundle: certificate 1 of the decoded PEM is not base64 DER",
        ),
    ],
)
def test_userdata_refuses_a_bad_endpoint_or_ca_bundle_like_argparse(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str, value: str, message: str
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(userdata_args(write_node_class(tmp_path), **{option: value}))
    assert exited.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert message in captured.err
    assert captured.err.startswith("usage: ")


def test_userdata_al2_without_max_pods_leaves_them_to_bootstrap_sh(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_node_class(tmp_path, amiSelectorTerms=[{"alias": "al2@latest"}])
    code = main(userdata_args(path))
    out = capsys.readouterr().out
    assert code == 0
    assert "/etc/eks/bootstrap.sh" in out
    assert "--use-max-pods" not in out  # bootstrap.sh computes max pods, not the kubelet's 110
    assert "--max-pods" not in out


def test_userdata_names_the_file_whose_bottlerocket_toml_is_broken(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_node_class(
        tmp_path, amiSelectorTerms=[{"alias": "bottlerocket@latest"}], userData="not = [valid"
    )
    code = main(userdata_args(path))
    err = capsys.readouterr().err
    assert code == 1
    assert err.startswith(f"error: {path}: spec.userData: Bottlerocket user data must be TOML")


def test_userdata_sends_al2023_user_data_that_is_not_yaml_as_a_script(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """As Karpenter's nodeadm merge: user data that is neither MIME nor a YAML mapping is a
    shell-script part, sent before our NodeConfig (nodeadm is not asked to read it)."""
    path = write_node_class(tmp_path, userData="apiVersion: v1\nkind: [NodeConfig\n")
    code = main(userdata_args(path))
    out = capsys.readouterr().out
    assert code == 0
    assert ('--//\nContent-Type: text/x-shellscript; charset="us-ascii"\n\n'
            "apiVersion: v1\nkind: [NodeConfig\n\n--//\nContent-Type: application/node.eks.aws"
            in out)


def test_userdata_prints_the_windows_powershell_bootstrap(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_node_class(tmp_path, amiSelectorTerms=[{"alias": "windows2022@latest"}])
    code = main(userdata_args(path, instance_type="m5.large"))
    out = capsys.readouterr().out
    assert code == 0
    assert out.startswith("<powershell>\n") and out.endswith("</powershell>\n")
    assert "& $EKSBootstrapScriptFile -EKSClusterName" in out
    assert "--max-pods=110" in out  # the Windows catalog's count


def test_userdata_with_an_ipv6_kube_dns_boots_an_ipv6_node(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_node_class(tmp_path, amiSelectorTerms=[{"alias": "al2@latest"}])
    code = main(userdata_args(path, kube_dns_ip="fd30:1234:5678::a",
                              service_cidr="fd30:1234:5678::/108"))
    out = capsys.readouterr().out
    assert code == 0
    assert "--ip-family ipv6 \\\n--dns-cluster-ip 'fd30:1234:5678::a' \\\n" in out


def test_userdata_refuses_a_kube_dns_ip_that_is_no_address(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        main(userdata_args(write_node_class(tmp_path), kube_dns_ip="kube-dns"))
    assert "argument --kube-dns-ip: 'kube-dns' is not an IP address" in capsys.readouterr().err
