"""Both example stacks run clean under mocks and declare the whole installation."""

from __future__ import annotations

import json

import pytest
from infra_harness import ProgramRun

from nodewright.api.crds import generate_crds

EVERY_STACK_HAS = {
    "aws:ec2/vpc:Vpc": 1,
    "aws:ec2/internetGateway:InternetGateway": 1,
    "aws:ec2/subnet:Subnet": 6,
    "aws:kms/key:Key": 1,
    "eks:index:Cluster": 1,
    "aws:ec2/tag:Tag": 1,
    "aws:eks/nodeGroup:NodeGroup": 1,
    "aws:eks/accessEntry:AccessEntry": None,
    "aws:iam/role:Role": 3,
    # The controller's, split as Karpenter's (NodeLifecycle, IAMIntegration, ...).
    "aws:iam/policy:Policy": 6,
    "aws:sqs/queue:Queue": 1,
    "aws:sqs/queuePolicy:QueuePolicy": 1,
    "aws:cloudwatch/eventRule:EventRule": 5,
    "aws:cloudwatch/eventTarget:EventTarget": 5,
    "pulumi:providers:kubernetes": 1,
    "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition": 5,
    "kubernetes:core/v1:Namespace": 1,
    "kubernetes:core/v1:ServiceAccount": 1,
    # The controller's, and the one aggregated into `admin` (Karpenter's chart's -admin).
    "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole": 2,
    "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding": 1,
    # The controller's own, and the kube-dns Service's in kube-system.
    "kubernetes:rbac.authorization.k8s.io/v1:Role": 2,
    "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding": 2,
    "kubernetes:apps/v1:Deployment": 1,
    "kubernetes:policy/v1:PodDisruptionBudget": 1,
    "kubernetes:core/v1:Service": 1,
    "nodewright:index:EC2NodeClass": None,
    "nodewright:index:NodePool": None,
}


@pytest.fixture(params=["dev", "prod"])
def run(request: pytest.FixtureRequest) -> ProgramRun:
    result: ProgramRun = request.getfixturevalue(request.param)
    return result


def test_each_stack_declares_the_whole_installation(run: ProgramRun) -> None:
    for type_, count in EVERY_STACK_HAS.items():
        found = run.of_type(type_)
        if count is None:
            assert found, f"no {type_}"
        else:
            assert len(found) == count, f"{type_}: {[r.name for r in found]}"


def test_dev_uses_pod_identity_and_one_nat_gateway(dev: ProgramRun) -> None:
    assert len(dev.of_type("aws:ec2/natGateway:NatGateway")) == 1
    assert dev.one("aws:eks/addon:Addon").inputs["addonName"] == "eks-pod-identity-agent"
    association = dev.one("aws:eks/podIdentityAssociation:PodIdentityAssociation")
    assert association.inputs["namespace"] == "nodewright"
    assert association.inputs["serviceAccount"] == "nodewright"
    assert association.inputs["roleArn"].endswith(":role/NodewrightController-nodewright-dev")
    account = dev.one("kubernetes:core/v1:ServiceAccount")
    assert "annotations" not in account.inputs["metadata"]


def test_prod_uses_irsa_a_nat_per_zone_and_admin_access(prod: ProgramRun) -> None:
    assert len(prod.of_type("aws:ec2/natGateway:NatGateway")) == 3
    assert not prod.of_type("aws:eks/podIdentityAssociation:PodIdentityAssociation")
    annotations = prod.one("kubernetes:core/v1:ServiceAccount").inputs["metadata"]["annotations"]
    assert annotations == {
        "eks.amazonaws.com/role-arn":
            "arn:aws:iam::123456789012:role/NodewrightController-nodewright-prod"
    }
    admin = prod.one("aws:eks/accessEntry:AccessEntry", "admin-0")
    assert admin.inputs["principalArn"] == "arn:aws:iam::123456789012:role/platform-admins"
    association = prod.one("aws:eks/accessPolicyAssociation:AccessPolicyAssociation")
    assert association.inputs["policyArn"].endswith("/AmazonEKSClusterAdminPolicy")


def test_private_subnets_and_one_security_group_carry_the_discovery_tag(run: ProgramRun) -> None:
    cluster = run.outputs["clusterName"]
    subnets = run.of_type("aws:ec2/subnet:Subnet")
    private = [s for s in subnets if s.name.startswith("private-")]
    public = [s for s in subnets if s.name.startswith("public-")]
    assert len(private) == len(public) == 3
    assert len({s.inputs["availabilityZone"] for s in private}) == 3
    for subnet in private:
        assert subnet.inputs["tags"]["karpenter.sh/discovery"] == cluster
        assert subnet.inputs["tags"]["kubernetes.io/role/internal-elb"] == "1"
    for subnet in public:
        assert "karpenter.sh/discovery" not in subnet.inputs["tags"]
        assert subnet.inputs["tags"]["kubernetes.io/role/elb"] == "1"
    tag = run.one("aws:ec2/tag:Tag")
    assert (tag.inputs["key"], tag.inputs["value"]) == ("karpenter.sh/discovery", cluster)
    assert tag.inputs["resourceId"] == "sg-0eksclustersg"
    assert not run.of_type("aws:ec2/securityGroup:SecurityGroup")


def test_the_cluster_is_private_by_default_encrypted_logged_and_uses_access_entries(
    prod: ProgramRun,
) -> None:
    cluster = prod.one("eks:index:Cluster").inputs
    assert cluster["authenticationMode"] == "API"
    assert cluster["createOidcProvider"] is True
    assert set(cluster["enabledClusterLogTypes"]) == {
        "api", "audit", "authenticator", "controllerManager", "scheduler"
    }
    assert cluster["encryptionConfigKeyArn"].startswith("arn:aws:kms:eu-west-1:")
    assert prod.one("aws:kms/key:Key").inputs["enableKeyRotation"] is True
    assert cluster["endpointPrivateAccess"] is True
    assert cluster["publicAccessCidrs"] == ["203.0.113.0/24"]
    assert cluster["skipDefaultNodeGroup"] is True
    assert cluster["nodeAssociatePublicIpAddress"] is False


def test_the_system_node_group_keeps_managed_workloads_off(run: ProgramRun) -> None:
    group = run.one("aws:eks/nodeGroup:NodeGroup").inputs
    assert group["labels"] == {"nodewright.io/system-node": "true"}
    assert group["taints"] == [
        {"key": "CriticalAddonsOnly", "value": "true", "effect": "NO_SCHEDULE"}
    ]
    assert group["nodeRoleArn"].endswith(":role/NodewrightSystemNode-" + run.outputs["clusterName"])


def test_the_node_role_has_the_worker_policies_and_an_ec2_linux_access_entry(
    run: ProgramRun,
) -> None:
    role = run.one("aws:iam/role:Role", "node-role")
    trust = json.loads(role.inputs["assumeRolePolicy"])
    assert trust["Statement"] == [{
        "Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"},
        "Action": "sts:AssumeRole",
    }]
    attached = {
        a.inputs["policyArn"].rsplit("/", 1)[1]
        for a in run.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
        if a.name.startswith("node-")
    }
    assert attached == {
        "AmazonEKSWorkerNodePolicy", "AmazonEKS_CNI_Policy",
        "AmazonEC2ContainerRegistryPullOnly", "AmazonSSMManagedInstanceCore",
    }
    entry = run.one("aws:eks/accessEntry:AccessEntry", "node-role")
    assert entry.inputs["type"] == "EC2_LINUX"
    assert entry.inputs["principalArn"] == role.inputs["name"].join(
        ["arn:aws:iam::123456789012:role/", ""]
    )


def test_the_crds_are_the_ones_nodewright_crds_prints(run: ProgramRun) -> None:
    declared = {
        r.name: r.inputs["spec"]
        for r in run.of_type("kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition")
    }
    expected = {crd["metadata"]["name"]: crd["spec"] for crd in generate_crds()}
    assert declared.keys() == expected.keys()
    for name, spec in expected.items():
        assert declared[name]["group"] == spec["group"]
        assert declared[name]["names"] == spec["names"]
        assert [v["name"] for v in declared[name]["versions"]] == [
            v["name"] for v in spec["versions"]]


def test_outputs_serve_application_stacks(run: ProgramRun) -> None:
    outputs = run.outputs
    cluster = outputs["clusterName"]
    assert outputs["clusterEndpoint"].startswith("https://")
    assert "kubeconfig" in run.secret_outputs
    assert json.loads(outputs["kubeconfig"])["clusters"]
    assert outputs["oidcProviderArn"].startswith("arn:aws:iam::123456789012:oidc-provider/")
    assert outputs["nodeRoleName"] == f"NodewrightNode-{cluster}"
    assert outputs["interruptionQueueName"] == f"{cluster}-interruption"
    assert outputs["interruptionQueueUrl"].endswith(f"/123456789012/{cluster}-interruption")
    assert outputs["controllerRoleArn"].endswith(f":role/NodewrightController-{cluster}")
    assert outputs["nodePoolNames"] == sorted(
        r.name for r in run.of_type("nodewright:index:NodePool")
    )
