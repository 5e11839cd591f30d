"""Karpenter test/suites/integration/extended_resources_test.go (v1.14.1) on the moto
account: a deployment asking for an accelerator gets a node of a type that has it, booting
the family's accelerated image (published here under its SSM parameter). The nodes here
are Ready with the NodeClaim's capacity: what a device plugin would advertise (no device
plugin runs)."""

from __future__ import annotations

from typing import Any

import pytest

from nodewright.cloud.aws.clients import AwsClients
from tests.aws.world import K8S_VERSION, X86_IMAGE, World, seed_public_parameter
from tests.aws_e2e.moto_world import deployment, node_class, node_pool

from .moto_env import Env, replace_requirements

ACCELERATED = (
    f"/aws/service/eks/optimized-ami/{K8S_VERSION}/amazon-linux-2023/x86_64/nvidia/"
    "recommended/image_id",
    f"/aws/service/eks/optimized-ami/{K8S_VERSION}/amazon-linux-2023/x86_64/neuron/"
    "recommended/image_id",
    f"/aws/service/bottlerocket/aws-k8s-{K8S_VERSION}-nvidia/x86_64/latest/image_id",
)
ANY_CATEGORY = {"key": "karpenter.k8s.aws/instance-category", "operator": "Exists"}
NOT_G6F = {"key": "karpenter.k8s.aws/instance-family", "operator": "NotIn", "values": ["g6f"]}
GENERATION_2 = {"key": "karpenter.k8s.aws/instance-generation", "operator": "In",
                "values": ["2"]}


@pytest.fixture
def accelerated(clients: AwsClients, world: World) -> None:
    for parameter in ACCELERATED:
        seed_public_parameter(clients.region, parameter, X86_IMAGE)


def asking(resource: str, **pod_spec: Any) -> dict[str, Any]:
    app = deployment("large-app", 1, **pod_spec)
    container = app["spec"]["template"]["spec"]["containers"][0]
    container["resources"] = {"requests": {resource: "1"}, "limits": {resource: "1"}}
    return app


def runs_on_one_node(env: Env, app: dict[str, Any]) -> dict[str, Any]:
    labels = app["spec"]["selector"]["matchLabels"]
    assert env.run_until(lambda: len(env.running_pods(labels)) == 1, timeout=900), env.errors
    assert len(env.nodes()) == 1
    (running,) = env.running_pods(labels)
    node: dict[str, Any] = env.get("Node", running["spec"]["nodeName"])
    return node


@pytest.mark.parametrize(("resource", "alias", "requirements"), [
    pytest.param("nvidia.com/gpu", "al2023@latest", [ANY_CATEGORY, NOT_G6F],
                 id="should provision nodes for a deployment that requests nvidia.com/gpu"),
    pytest.param("nvidia.com/gpu", "bottlerocket@latest", [ANY_CATEGORY, NOT_G6F],
                 id="should provision nodes for a deployment that requests nvidia.com/gpu "
                    "(Bottlerocket)"),
    pytest.param("aws.amazon.com/neuron", "al2023@latest", [ANY_CATEGORY, GENERATION_2],
                 id="should provision nodes for a deployment that requests "
                    "aws.amazon.com/neuron"),
    pytest.param("aws.amazon.com/neuroncore", "al2023@latest", [ANY_CATEGORY, GENERATION_2],
                 id="should provision nodes for a deployment that requests "
                    "aws.amazon.com/neuroncore"),
])
def test_an_accelerator_request_gets_a_node_with_that_accelerator(
        env: Env, accelerated: None, resource: str, alias: str,
        requirements: list[dict[str, Any]]) -> None:
    """Karpenter test/suites/integration/extended_resources_test.go: the It named by the case
    id."""
    app = asking(resource)
    env.apply(node_class(amiSelectorTerms=[{"alias": alias}]),
              replace_requirements(node_pool(), *requirements), app)

    node = runs_on_one_node(env, app)

    assert int(node["status"]["allocatable"][resource]) >= 1
    instance = env.instance_of(node["metadata"]["name"])
    assert instance["ImageId"] == X86_IMAGE  # the accelerated image, published as X86_IMAGE
    (claim,) = env.nodeclaims()
    assert claim["status"]["imageID"] == X86_IMAGE


def test_a_pod_of_a_security_group_policy_gets_a_node_with_branch_interfaces(env: Env) -> None:
    """Karpenter test/suites/integration/extended_resources_test.go It("should provision nodes
    for a deployment that requests vpc.amazonaws.com/pod-eni (security groups for pods)") —
    the pod as the VPC resource controller's webhook leaves a pod its SecurityGroupPolicy
    selects: asking for one vpc.amazonaws.com/pod-eni (the webhook and the policy's CRD are
    not in the in-memory cluster)."""
    env.apply(node_class())
    assert env.run_until(lambda: bool((env.get("EC2NodeClass", "default").get("status")
                                       or {}).get("securityGroups")), timeout=60)
    app = asking("vpc.amazonaws.com/pod-eni")
    env.apply(node_pool(), app)

    node = runs_on_one_node(env, app)

    assert int(node["status"]["allocatable"]["vpc.amazonaws.com/pod-eni"]) >= 1


EFA_TAINT = {"key": "aws.amazon.com/efa", "effect": "NoSchedule"}


@pytest.mark.parametrize("interfaces", [
    pytest.param(None, id="with no Node Class network interface configurations"),
    pytest.param([{"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"},
                  {"networkCardIndex": 0, "deviceIndex": 1, "interfaceType": "efa-only"}],
                 id="with Node Class network interface configurations"),
])
def test_an_efa_request_gets_a_node_with_efa_interfaces(
        env: Env, interfaces: list[dict[str, Any]] | None) -> None:
    """Karpenter test/suites/integration/extended_resources_test.go DescribeTable("should
    provision nodes for a deployment that requests vpc.amazonaws.com/efa"): the Entry named
    by the case id."""
    pool: Any = node_pool(taints=[EFA_TAINT])
    pool["spec"]["template"]["metadata"] = {"labels": {"aws.amazon.com/efa": "true"}}
    spec: dict[str, Any] = {} if interfaces is None else {"networkInterfaces": interfaces}
    app = asking("vpc.amazonaws.com/efa",
                 tolerations=[{"key": "aws.amazon.com/efa", "operator": "Exists"}])
    env.apply(node_class(**spec), pool, app)

    node = runs_on_one_node(env, app)

    assert int(node["status"]["allocatable"]["vpc.amazonaws.com/efa"]) >= 1
    assert node["metadata"]["labels"]["aws.amazon.com/efa"] == "true"
    launched = env.template_of_node(node["metadata"]["name"])["NetworkInterfaces"]
    kinds = [i.get("InterfaceType", "interface") for i in launched]
    if interfaces is None:
        assert "efa" in kinds
    else:
        assert [(i.get("NetworkCardIndex"), i.get("DeviceIndex"), kind)
                for i, kind in zip(launched, kinds, strict=True)] == [
            (0, 0, "interface"), (0, 1, "efa-only")]
