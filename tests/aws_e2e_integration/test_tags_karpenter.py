"""Karpenter test/suites/integration/tags_test.go (v1.14.1) on the moto account. moto
tags the instance with CreateFleet's tags but keeps no volume or interface of a launch
template; the tags those get are the ones CreateFleet (volumes) and the launch template
(network interfaces, the spot request) ask EC2 for."""

from __future__ import annotations

from typing import Any

from nodewright.cloud.aws.clients import AwsClients
from tests.aws.world import CLUSTER
from tests.aws_e2e.moto_world import node_class, node_pool

from .moto_env import Env, replace_requirements

TAGGED = "karpenter.k8s.aws/tagged"
CLUSTER_NAME_TAGGED = "compatibility.karpenter.k8s.aws/cluster-name-tagged"


def tags_of(specifications: list[dict[str, Any]], kind: str) -> dict[str, str]:
    (spec,) = [s for s in specifications if s["ResourceType"] == kind]
    return {tag["Key"]: tag["Value"] for tag in spec["Tags"]}


def instance_tags(env: Env, node: str) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in env.instance_of(node).get("Tags") or []}


def test_the_node_class_tags_go_on_the_instance_its_volumes_and_interfaces(env: Env) -> None:
    """Karpenter test/suites/integration/tags_test.go Context("Static Tags") It("should tag
    all associated resources")."""
    node = env.provision(tags={"testing/cluster": CLUSTER, "TestTag": "TestVal"})

    assert instance_tags(env, node)["TestTag"] == "TestVal"
    (fleet,) = env.launches.fleets
    assert tags_of(fleet["TagSpecifications"], "volume")["TestTag"] == "TestVal"
    template = env.template_of_node(node)
    assert tags_of(template["TagSpecifications"], "network-interface")["TestTag"] == "TestVal"


def test_a_spot_launch_tags_its_spot_instance_request(env: Env) -> None:
    """Karpenter test/suites/integration/tags_test.go Context("Static Tags") It("should tag
    spot instance requests when creating resources")."""
    pool = replace_requirements(node_pool(), {"key": "karpenter.sh/capacity-type",
                                              "operator": "In", "values": ["spot"]})

    node = env.provision(pool=pool, tags={"TestTag": "TestVal"})

    assert env.get("Node", node)["metadata"]["labels"]["karpenter.sh/capacity-type"] == "spot"
    template = env.template_of_node(node)
    assert tags_of(template["TagSpecifications"], "spot-instances-request")["TestTag"] == (
        "TestVal")


def test_a_managed_instance_profile_is_tagged(env: Env, clients: AwsClients) -> None:
    """Karpenter test/suites/integration/tags_test.go Context("Static Tags") It("should tag
    managed instance profiles") — read with GetInstanceProfile (moto has no
    ListInstanceProfileTags)."""
    env.apply(node_class(tags={"testing/cluster": CLUSTER, "TestTag": "TestVal"}))
    assert env.run_until(lambda: bool((env.get("EC2NodeClass", "default").get("status")
                                       or {}).get("instanceProfile")), timeout=60)

    profile = env.get("EC2NodeClass", "default")["status"]["instanceProfile"]
    found = clients.iam.get_instance_profile(InstanceProfileName=profile)["InstanceProfile"]
    tags = {t["Key"]: t["Value"] for t in found["Tags"]}
    assert tags[f"kubernetes.io/cluster/{CLUSTER}"] == "owned"
    assert tags["karpenter.k8s.aws/ec2nodeclass"] == "default"
    assert tags["eks:eks-cluster-name"] == CLUSTER


def tagged(env: Env) -> bool:
    (claim,) = env.nodeclaims()
    annotations = claim["metadata"].get("annotations") or {}
    return annotations.get(TAGGED) == "true" and annotations.get(CLUSTER_NAME_TAGGED) == "true"


def test_the_tagging_controller_names_the_instance_after_its_node(env: Env) -> None:
    """Karpenter test/suites/integration/tags_test.go Context("Tagging Controller") It("should
    tag with karpenter.sh/nodeclaim and Name tag")."""
    node = env.provision()
    assert env.run_until(lambda: tagged(env), timeout=60)

    (claim,) = env.nodeclaims()
    tags = instance_tags(env, node)
    assert tags["Name"] == node
    assert tags["karpenter.sh/nodeclaim"] == claim["metadata"]["name"]
    assert tags["eks:eks-cluster-name"] == CLUSTER


def test_the_tagging_controller_keeps_a_custom_name_tag(env: Env) -> None:
    """Karpenter test/suites/integration/tags_test.go Context("Tagging Controller")
    It("shouldn't overwrite custom Name tags")."""
    node = env.provision(tags={"Name": "custom-name", "testing/cluster": CLUSTER})
    assert env.run_until(lambda: tagged(env), timeout=60)

    (claim,) = env.nodeclaims()
    tags = instance_tags(env, node)
    assert tags["Name"] == "custom-name"
    assert tags["karpenter.sh/nodeclaim"] == claim["metadata"]["name"]
    assert tags["eks:eks-cluster-name"] == CLUSTER


def test_a_removed_cluster_name_tag_is_written_again(env: Env, clients: AwsClients) -> None:
    """Karpenter test/suites/integration/tags_test.go Context("Tagging Controller")
    It("should tag instance with eks:eks-cluster-name tag when the tag doesn't exist")."""
    node = env.provision()
    assert env.run_until(lambda: tagged(env), timeout=60)
    instance_id = str(env.instance_of(node)["InstanceId"])
    clients.ec2.delete_tags(Resources=[instance_id], Tags=[{"Key": "eks:eks-cluster-name"}])
    assert "eks:eks-cluster-name" not in instance_tags(env, node)

    (claim,) = env.nodeclaims()
    env.patch("NodeClaim", claim["metadata"]["name"],
              {"metadata": {"annotations": {CLUSTER_NAME_TAGGED: None}}})

    assert env.run_until(
        lambda: instance_tags(env, node).get("eks:eks-cluster-name") == CLUSTER, timeout=120)
