"""User data per AMI family, checked against golden files.

Regenerate the golden files with NODEWRIGHT_UPDATE_GOLDEN=1 (and review the diff)."""

from __future__ import annotations

import base64
import os
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from nodewright.api.ec2nodeclass import AMISelectorTerm, EC2NodeClass
from nodewright.api.nodepool import NodePool
from nodewright.cloud.aws.node_identity import bootstrap_for_nodepool, bottlerocket_release
from nodewright.cloud.aws.userdata import ClusterInfo, mime, render_user_data
from nodewright.cloud.aws.userdata.bottlerocket import UserDataError

GOLDEN = Path(__file__).parent / "golden"
CLUSTER = ClusterInfo(
    name="demo",
    endpoint="https://ABCDEF.gr7.us-west-2.eks.amazonaws.com",
    ca_bundle=base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMIIC\n").decode(),
    service_cidr="172.20.0.0/16",
)
USER_PARTS = {
    "AL2023": (
        "MIME-Version: 1.0\n"
        'Content-Type: multipart/mixed; boundary="BOUNDARY"\n\n'
        "--BOUNDARY\nContent-Type: text/x-shellscript\n\n#!/bin/bash\necho hello\n"
        "--BOUNDARY--\n"
    ),
    "AL2": "#!/bin/bash\necho custom-setup\n",
    "Bottlerocket": "[settings.host-containers.admin]\nenabled = true\n"
    '[settings.kubernetes.node-labels]\n"user/label" = "kept"\n',
    "Custom": "#!/bin/bash\n/opt/my-bootstrap.sh --cluster demo\n",
    "Windows2022": "Write-Host 'custom setup'",
}
ALIASES = {"AL2023": "al2023@latest", "AL2": "al2@latest", "Bottlerocket": "bottlerocket@latest",
           "Windows2022": "windows2022@latest"}


def node_class(family: str) -> EC2NodeClass:
    terms: list[dict[str, Any]] = (
        [{"alias": ALIASES[family]}] if family in ALIASES else [{"id": "ami-0123456789abcdef0"}]
    )
    spec: dict[str, Any] = {
        "role": "KarpenterNodeRole-demo",
        "amiSelectorTerms": terms,
        "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
        "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
        "userData": USER_PARTS[family],
        "kubelet": {
            "maxPods": 42,
            "clusterDNS": ["172.20.0.10"],
            "systemReserved": {"cpu": "100m", "memory": "100Mi"},
            "kubeReserved": {"cpu": "200m", "memory": "1Gi", "ephemeral-storage": "1Gi"},
            "evictionHard": {"memory.available": "5%", "nodefs.available": "10%"},
            "evictionSoft": {"memory.available": "10%"},
            "evictionSoftGracePeriod": {"memory.available": "1m0s"},
            "imageGCHighThresholdPercent": 85,
            "imageGCLowThresholdPercent": 80,
        },
    }
    if family == "Custom":
        spec["amiFamily"] = "Custom"
    return EC2NodeClass.model_validate(
        {
            "apiVersion": "karpenter.k8s.aws/v1",
            "kind": "EC2NodeClass",
            "metadata": {"name": "default"},
            "spec": spec,
        }
    )


NODEPOOL = NodePool.model_validate(
    {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "payments"},
        "spec": {
            "template": {
                "metadata": {"labels": {"team": "payments", "tier": "backend"}},
                "spec": {
                    "nodeClassRef": {
                        "group": "karpenter.k8s.aws",
                        "kind": "EC2NodeClass",
                        "name": "default",
                    },
                    "requirements": [
                        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]},
                        {
                            "key": "kubernetes.io/arch",
                            "operator": "In",
                            "values": ["amd64", "arm64"],
                        },
                    ],
                    "taints": [{"key": "dedicated", "value": "payments", "effect": "NoSchedule"}],
                    "startupTaints": [
                        {"key": "example.com/agent-not-ready", "effect": "NoExecute"}
                    ],
                },
            }
        },
    }
)


def rendered(family: str) -> str:
    node = node_class(family)
    bootstrap = bootstrap_for_nodepool(CLUSTER, node, NODEPOOL, max_pods=29)
    return render_user_data(node.resolved_ami_family(), bootstrap)


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("NODEWRIGHT_UPDATE_GOLDEN") == "1":
        path.write_text(text)
    assert path.exists(), f"{path} is missing; run with NODEWRIGHT_UPDATE_GOLDEN=1 to create it"
    assert text == path.read_text(), f"{name} differs from its golden file"


@pytest.mark.parametrize(
    ("family", "golden"),
    [
        ("AL2023", "al2023.mime"),
        ("AL2", "al2.mime"),
        ("Bottlerocket", "bottlerocket.toml"),
        ("Custom", "custom.sh"),
        ("Windows2022", "windows.ps1"),
    ],
)
def test_user_data_matches_golden(family: str, golden: str) -> None:
    check_golden(golden, rendered(family))


def test_al2023_node_config_carries_pods_labels_taints_and_reservations() -> None:
    text = rendered("AL2023")
    assert "#!/bin/bash\necho hello" in text  # the user's part survives, before ours
    node_config = yaml.safe_load(
        text.split("Content-Type: application/node.eks.aws\n\n")[1].split("\n--//--")[0]
    )
    config = node_config["spec"]["kubelet"]["config"]
    assert config["maxPods"] == 42  # kubelet.maxPods wins over the instance type's 29
    assert config["systemReserved"] == {"cpu": "100m", "memory": "100Mi"}
    assert config["kubeReserved"]["memory"] == "1Gi"
    assert config["evictionHard"] == {"memory.available": "5%", "nodefs.available": "10%"}
    assert {"key": "karpenter.sh/unregistered", "effect": "NoExecute"} in config[
        "registerWithTaints"
    ]
    assert {"key": "dedicated", "value": "payments", "effect": "NoSchedule"} in config[
        "registerWithTaints"
    ]
    flags = node_config["spec"]["kubelet"]["flags"]
    assert flags == [  # Go-quoted, as Karpenter's nodeLabelArg
        '--node-labels="karpenter.sh/capacity-type=spot,karpenter.sh/do-not-sync-taints=true,'
        'karpenter.sh/nodepool=payments,team=payments,tier=backend"'
    ]


def test_al2023_writes_the_kubelet_settings_into_nodeadms_config() -> None:
    node = node_class("AL2023")
    assert node.spec.kubelet is not None
    node.spec.kubelet.pods_per_core = 4
    text = render_user_data("AL2023", bootstrap_for_nodepool(CLUSTER, node, NODEPOOL, max_pods=29))
    node_config = yaml.safe_load(
        text.split("Content-Type: application/node.eks.aws\n\n")[1].split("\n--//--")[0]
    )
    config = node_config["spec"]["kubelet"]["config"]
    assert config["podsPerCore"] == 4
    assert config["maxPods"] == 42
    assert config["evictionSoftGracePeriod"] == {"memory.available": "1m0s"}


@pytest.mark.parametrize(("family", "expected"), [
    ("AL2023", "memory.available: 5m0s"),
    ("AL2", '--eviction-soft-grace-period="memory.available=5m0s"'),
    ("Bottlerocket", "'memory.available' = '5m0s'"),
])
def test_a_grace_period_is_written_as_karpenter_writes_the_duration_it_decoded(
    family: str, expected: str
) -> None:
    """Karpenter decodes evictionSoftGracePeriod into a metav1.Duration and writes it back
    with Go's Duration.String: a user's "5m" reaches the node as "5m0s"."""
    node = node_class(family)
    assert node.spec.kubelet is not None
    node.spec.kubelet.eviction_soft = {"memory.available": "5%"}
    node.spec.kubelet.eviction_soft_grace_period = {"memory.available": "5m"}
    text = render_user_data(family, bootstrap_for_nodepool(CLUSTER, node, None, max_pods=29))
    assert expected in text


def test_bottlerocket_leaves_pods_per_core_out() -> None:
    """As Karpenter v1.14.1: Bottlerocket has no pods-per-core setting (an unknown setting
    would stop the node from booting), so a node class's podsPerCore is not written."""
    node = node_class("Bottlerocket")
    assert node.spec.kubelet is not None
    node.spec.kubelet.pods_per_core = 4
    bootstrap = bootstrap_for_nodepool(CLUSTER, node, None, max_pods=29)
    text = render_user_data("Bottlerocket", bootstrap)
    assert "pods-per-core" not in text
    assert "max-pods = 42" in text


def test_al2_bootstrap_flags() -> None:
    text = rendered("AL2")
    assert "echo custom-setup" in text
    assert "--use-max-pods false" in text
    for flag in (  # Karpenter's kubeletExtraArgs: each list Go-quoted, taints as ToString
        "--max-pods=42",
        '--register-with-taints="dedicated=payments:NoSchedule,'
        'example.com/agent-not-ready:NoExecute,karpenter.sh/unregistered:NoExecute"',
        '--system-reserved="cpu=100m,memory=100Mi"',
        '--eviction-hard="memory.available<5%,nodefs.available<10%"',
        '--node-labels="karpenter.sh/capacity-type=spot',
    ):
        assert flag in text


def test_bottlerocket_merges_the_users_settings() -> None:
    settings = tomllib.loads(rendered("Bottlerocket"))["settings"]
    assert settings["host-containers"]["admin"]["enabled"] is True
    kubernetes = settings["kubernetes"]
    assert kubernetes["max-pods"] == 42
    assert kubernetes["node-labels"]["user/label"] == "kept"
    assert kubernetes["node-labels"]["karpenter.sh/nodepool"] == "payments"
    assert kubernetes["node-taints"]["karpenter.sh/unregistered"] == [":NoExecute"]
    assert kubernetes["kube-reserved"]["ephemeral-storage"] == "1Gi"
    assert kubernetes["cluster-dns-ip"] == "172.20.0.10"


@pytest.mark.parametrize(
    ("family", "expected"),
    [("AL2023", "maxPods: 29"), ("Bottlerocket", "max-pods = 29")],
)
def test_without_kubelet_max_pods_the_instance_types_count_is_used(
    family: str, expected: str
) -> None:
    node = node_class(family)
    assert node.spec.kubelet is not None
    node.spec.kubelet.max_pods = None
    text = render_user_data(family, bootstrap_for_nodepool(CLUSTER, node, None, max_pods=29))
    assert expected in text


@pytest.mark.parametrize("instance_type_pods", [29, None])
def test_al2_without_kubelet_max_pods_passes_the_instance_types_count(
    instance_type_pods: int | None,
) -> None:
    """Karpenter v1.14.1's resolver fills kubelet.maxPods from the instance type's pod
    capacity, so eksbootstrap.go always writes `--use-max-pods false` and `--max-pods`:
    RESERVED_ENIS, EFA-only interfaces and podsPerCore reach the kubelet. Without a count
    (no instance type known) bootstrap.sh keeps its own."""
    node = node_class("AL2")
    assert node.spec.kubelet is not None
    node.spec.kubelet.max_pods = None
    bootstrap = bootstrap_for_nodepool(CLUSTER, node, None, max_pods=instance_type_pods)
    text = render_user_data("AL2", bootstrap)
    if instance_type_pods is None:
        assert "--use-max-pods" not in text and "--max-pods" not in text
    else:
        assert "--use-max-pods false \\\n" in text
        assert f"--max-pods={instance_type_pods}" in text


def test_al2_with_kubelet_max_pods_fixes_them() -> None:
    node = node_class("AL2")  # kubelet.maxPods: 42
    text = render_user_data("AL2", bootstrap_for_nodepool(CLUSTER, node, None, max_pods=None))
    assert "--use-max-pods false \\\n" in text
    assert "--max-pods=42" in text


@pytest.mark.parametrize(
    ("user_data", "parts"),
    [
        pytest.param("apiVersion: node.eks.aws/v1alpha1\nkind: [NodeConfig\n",
                     [mime.SHELL_SCRIPT, mime.NODE_CONFIG], id="not YAML: a script"),
        pytest.param("just some words", [mime.SHELL_SCRIPT, mime.NODE_CONFIG],
                     id="a YAML string: a script"),
        pytest.param("echo hi", [mime.SHELL_SCRIPT, mime.NODE_CONFIG],
                     id="a script without #!"),
        pytest.param(
            "MIME-Version: 1.0\n"
            'Content-Type: multipart/mixed; boundary="B"\n\n'
            "--B\nContent-Type: text/x-shellscript\n\n#!/bin/bash\necho ok\n"
            "--B\nContent-Type: application/node.eks.aws\n\nspec:\n  kubelet: {config: [\n"
            "--B--\n",
            ["text/x-shellscript", mime.NODE_CONFIG, mime.NODE_CONFIG],
            id="a MIME NodeConfig part that is not YAML: sent as written"),
    ],
)
def test_al2023_user_data_is_sorted_into_parts_as_karpenter_does(
    user_data: str, parts: list[str]
) -> None:
    """Karpenter's nodeadm parseUserData: MIME parts as written; other text a NodeConfig
    when it reads as a YAML mapping, a shell script otherwise. Nothing is refused for its
    YAML (nodeadm reads the parts on the node)."""
    node = node_class("AL2023")
    node.spec.user_data = user_data
    text = render_user_data("AL2023", bootstrap_for_nodepool(CLUSTER, node, NODEPOOL))
    written = mime.read_archive(text)
    assert [part.content_type for part in written] == parts
    assert written[0].body.removesuffix("\n") == (
        user_data.removesuffix("\n") if len(parts) == 2 else "#!/bin/bash\necho ok")


def test_al2023_user_node_config_that_is_yaml_is_kept() -> None:
    node = node_class("AL2023")
    node.spec.user_data = "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec: {}\n"
    text = render_user_data("AL2023", bootstrap_for_nodepool(CLUSTER, node, NODEPOOL))
    assert text.count("Content-Type: application/node.eks.aws") == 2


def test_bad_bottlerocket_user_data_is_reported_with_its_field() -> None:
    node = node_class("Bottlerocket")
    node.spec.user_data = "not = [valid"
    with pytest.raises(UserDataError, match=r"spec\.userData: Bottlerocket user data must be TOML"):
        render_user_data("Bottlerocket", bootstrap_for_nodepool(CLUSTER, node, NODEPOOL))


@pytest.mark.parametrize(
    ("family", "expected"),
    [
        ("AL2023", "localStorage:\n      strategy: RAID0"),
        ("AL2", "--local-disks raid0"),
        ("Bottlerocket", "['apiclient', 'ephemeral-storage', 'init']"),
    ],
)
def test_instance_store_raid0_reaches_every_family(family: str, expected: str) -> None:
    node = node_class(family)
    node.spec.instance_store_policy = "RAID0"
    bootstrap = bootstrap_for_nodepool(CLUSTER, node, NODEPOOL, max_pods=29)
    with_raid = render_user_data(node.resolved_ami_family(), bootstrap)
    assert expected in with_raid
    assert expected not in rendered(family)


@pytest.mark.parametrize(
    ("terms", "plain_bind"),
    [
        ([{"alias": "bottlerocket@latest"}], True),
        ([{"alias": "bottlerocket@v1.46.0"}], True),
        ([{"alias": "bottlerocket@1.45.2"}], False),
        ([{"name": "bottlerocket-aws-k8s-1.33-x86_64-v1.47.1-431fe75a"}], True),
        ([{"name": "bottlerocket-aws-k8s-1.33-x86_64-v1.20.4-abc"}], False),
        ([{"id": "ami-0123456789abcdef0"}], False),  # version unknown: the old command
    ],
)
def test_bottlerocket_binds_instance_storage_as_its_release_expects(
    terms: list[dict[str, Any]], plain_bind: bool,
) -> None:
    # From Bottlerocket 1.46.0, `apiclient ephemeral-storage bind` picks the directories
    # itself (Karpenter's SupportsDefaultBind); older releases need them named.
    node = node_class("Bottlerocket")
    node.spec.ami_selector_terms = [AMISelectorTerm.model_validate(t) for t in terms]
    if "alias" not in terms[0]:
        node.spec.ami_family = "Bottlerocket"
    node.spec.instance_store_policy = "RAID0"
    text = render_user_data("Bottlerocket", bootstrap_for_nodepool(CLUSTER, node, NODEPOOL))
    settings = tomllib.loads(text)["settings"]["bootstrap-commands"]["000-mount-instance-storage"]
    assert settings["commands"][0] == ["apiclient", "ephemeral-storage", "init"]
    assert settings["commands"][1] == (
        ["apiclient", "ephemeral-storage", "bind"] if plain_bind else
        ["apiclient", "ephemeral-storage", "bind", "--dirs", "/var/lib/containerd",
         "/var/lib/kubelet", "/var/log/pods"])
    assert settings["essential"] is True and settings["mode"] == "always"


def test_a_bottlerocket_release_is_read_from_the_resolved_images_last() -> None:
    by_id = node_class("Bottlerocket")
    by_id.spec.ami_selector_terms = [AMISelectorTerm(id="ami-0123456789abcdef0")]
    by_id.spec.ami_family = "Bottlerocket"
    names = ["my-golden-image", "bottlerocket-aws-k8s-1.33-x86_64-v1.46.0-431fe75a"]

    assert bottlerocket_release(by_id, names) == "v1.46.0"
    assert bottlerocket_release(by_id, ["my-golden-image-v2.0-x"]) is None  # not Bottlerocket
    assert bottlerocket_release(node_class("Bottlerocket"), names) == "latest"  # the alias wins
    assert bottlerocket_release(node_class("AL2023"), names) is None
