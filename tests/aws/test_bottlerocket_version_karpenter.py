"""Which Bottlerocket release a node class boots, and what it changes in the user data:
Karpenter's aws/karpenter-provider-aws v1.14.1 pkg/providers/amifamily/bottlerocket_test.go
(Describe "resolveAMIVersion") and pkg/providers/amifamily/bootstrap/bottlerocket_test.go
(Describe "EnableDefaultMountPaths"), ported. Each story names its It.

Karpenter's Bottlerocket.resolveAMIVersion is our `bottlerocket_release`
(controller/nodewright/cloud/aws/node_identity.py): the node class's selector terms and its
resolved images (Karpenter's Options.AMIs, the node class's status.amis; ours the
resolution's images, newest first), by name and by id. Its bootstrapper flag
EnableDefaultMountPaths (SupportsDefaultBind of that release) is what our Bottlerocket user
data reads from the release: the RAID0 bootstrap command binds the instance store with or
without naming the directories."""

from __future__ import annotations

import tomllib
from typing import Any

import pytest

from nodewright.api.ec2nodeclass import EC2NodeClass
from nodewright.cloud.aws.node_identity import bottlerocket_release
from nodewright.cloud.aws.userdata import ClusterInfo, NodeBootstrap, bottlerocket


def bottlerocket_class(*terms: dict[str, Any]) -> EC2NodeClass:
    spec: dict[str, Any] = {
        "role": "KarpenterNodeRole-demo",
        "amiSelectorTerms": list(terms),
        "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
        "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
    }
    if not any("alias" in term for term in terms):
        spec["amiFamily"] = "Bottlerocket"
    return EC2NodeClass.model_validate({"apiVersion": "karpenter.k8s.aws/v1",
                                        "kind": "EC2NodeClass",
                                        "metadata": {"name": "default"}, "spec": spec})


def release(node_class: EC2NodeClass, images: dict[str, str] | None = None) -> str | None:
    """The release as the launch reads it: the resolved images' names, in order, by id."""
    images = images or {}
    return bottlerocket_release(node_class, list(images.values()), image_ids=images)


def test_the_version_comes_from_the_alias() -> None:
    """bottlerocket_test.go It("should resolve version from alias")."""
    assert release(bottlerocket_class({"alias": "bottlerocket@v1.46.0"})) == "v1.46.0"


def test_latest_comes_from_the_alias() -> None:
    """bottlerocket_test.go It("should resolve latest from alias")."""
    assert release(bottlerocket_class({"alias": "bottlerocket@latest"})) == "latest"


def test_the_version_comes_from_a_name_term() -> None:
    """bottlerocket_test.go It("should resolve version from name")."""
    by_name = bottlerocket_class({"name": "bottlerocket-aws-k8s-1.33-x86_64-v1.46.0-431fe75a"})
    assert release(by_name) == "v1.46.0"


def test_the_version_comes_from_the_image_an_id_term_selects() -> None:
    """bottlerocket_test.go It("should resolve version from ID with resolved AMI")."""
    by_id = bottlerocket_class({"id": "ami-12345"})
    assert release(by_id, {"ami-12345": "bottlerocket-aws-k8s-1.33-x86_64-v1.47.0-abc123"}) \
        == "v1.47.0"


def test_the_id_terms_image_wins_over_other_resolved_images() -> None:
    """bottlerocket_test.go It("should resolve version from ID with resolved AMI"), with a
    second term: a tag term's newer image comes first among the resolved images, and the
    version is still the one of the image the id term selects (Karpenter looks the id up
    before falling back to any resolved image)."""
    node_class = bottlerocket_class({"tags": {"team": "nodes"}}, {"id": "ami-12345"})
    images = {"ami-67890": "bottlerocket-aws-k8s-1.33-x86_64-v1.45.0-fff000",
              "ami-12345": "bottlerocket-aws-k8s-1.33-x86_64-v1.47.0-abc123"}

    assert release(node_class, images) == "v1.47.0"


def test_the_version_falls_back_to_a_resolved_images_name() -> None:
    """bottlerocket_test.go It("should resolve version from resolved AMI fallback")."""
    by_tags = bottlerocket_class({"tags": {"Environment": "prod"}})
    assert release(by_tags, {"ami-67890": "bottlerocket-aws-k8s-1.30-arm64-v2.0.1-def456"}) \
        == "v2.0.1"


def test_no_version_when_nothing_names_one() -> None:
    """bottlerocket_test.go It("should return empty when no version found") (ours None)."""
    assert release(bottlerocket_class({"name": "some-other-ami"})) is None


CLUSTER = ClusterInfo("demo", "https://demo.eks", "Y2EtYnVuZGxlCg==", "10.100.0.0/16")
BIND = ["apiclient", "ephemeral-storage", "bind"]


def raid0_bind_command(version: str | None) -> list[str]:
    bootstrap = NodeBootstrap.build(CLUSTER, labels={}, instance_store_policy="RAID0",
                                    bottlerocket_version=version)
    settings = tomllib.loads(bottlerocket.render(bootstrap))["settings"]
    command = settings["bootstrap-commands"][bottlerocket.MOUNT_INSTANCE_STORAGE]
    assert command["commands"][0] == ["apiclient", "ephemeral-storage", "init"]
    return list(command["commands"][1])


@pytest.mark.parametrize(("version", "default_mount_paths"), [
    pytest.param("v1.46.0", True, id="true"),
    pytest.param("v1.45.0", False, id="false"),
])
def test_the_bootstrap_uses_the_default_mount_paths_flag(version: str,
                                                         default_mount_paths: bool) -> None:
    """bootstrap/bottlerocket_test.go It("should use the configured flag value"): with the
    flag set (a release that binds the default paths itself) the RAID0 command names no
    directory; without it, it names containerd's, kubelet's and the pod logs'."""
    expected = BIND if default_mount_paths else [
        *BIND, "--dirs", "/var/lib/containerd", "/var/lib/kubelet", "/var/log/pods"]
    assert raid0_bind_command(version) == expected
