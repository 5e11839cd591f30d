"""Karpenter test/suites/ami/suite_test.go (v1.14.1), on the moto account: a pod, the
default NodePool and an EC2NodeClass choosing its AMI one way or another; the controllers
launch the node and the story reads the instance EC2 (moto) launched, the EC2NodeClass's
status, or the user data the instance boots with.

moto stamps every image it ships with the same creation date and knows no deprecation:
`ImageFacts` makes DescribeImages answer a chosen image's CreationDate or DeprecationTime,
as EC2 would for an older or deprecated image; and SSM's GetParameter, which takes a
parameter's ARN for its name, is asked by name (`by_name`): moto knows names only."""

from __future__ import annotations

import base64
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from nodewright.cloud.aws.clients import AwsClients
from tests.aws.world import K8S_VERSION, X86_IMAGE, World, seed_public_parameter
from tests.aws_e2e.moto_world import MotoCluster, node_class, node_pool, pod

AL2023_PATH = (f"/aws/service/eks/optimized-ami/{K8S_VERSION}/amazon-linux-2023/x86_64/"
               "standard/recommended/image_id")
LONG_AGO = "2020-01-01T00:00:00.000Z"
TAINTS = [{"key": "example.com", "value": "value", "effect": "NoExecute"}]
STARTUP_TAINTS = [{"key": "example.com", "value": "value", "effect": "NoSchedule"}]
TOLERATE = [{"key": "example.com", "operator": "Exists"}]


class ImageFacts:
    """DescribeImages answers with the given fields replaced for the given images."""

    def __init__(self, ec2: Any) -> None:
        self.facts: dict[str, dict[str, str]] = {}
        ec2.meta.events.register("after-call.ec2.DescribeImages", self._answer)

    def _answer(self, parsed: Mapping[str, Any], **_: Any) -> None:
        for image in parsed.get("Images") or []:
            image.update(self.facts.get(image["ImageId"], {}))

    def deprecate(self, image_id: str) -> None:
        self.facts.setdefault(image_id, {})["DeprecationTime"] = LONG_AGO

    def created(self, image_id: str, when: str) -> None:
        self.facts.setdefault(image_id, {})["CreationDate"] = when


def by_name(params: dict[str, Any], **_: Any) -> None:
    """SSM's GetParameter takes a parameter's ARN for its name; moto knows names only."""
    name = str(params.get("Name", ""))
    if name.startswith("arn:aws:ssm:"):
        params["Name"] = name.split(":parameter", 1)[1]


@pytest.fixture
def env(clients: AwsClients, world: World) -> MotoCluster:
    clients.ssm.meta.events.register("provide-client-params.ssm.GetParameter", by_name)
    return MotoCluster(clients)


@pytest.fixture
def facts(clients: AwsClients) -> ImageFacts:
    return ImageFacts(clients.ec2)



def provision(env: MotoCluster, *, pool: dict[str, Any] | None = None, pod_spec: Any = None,
              **class_spec: Any) -> str:
    """The node class, the pool and one pod; the pod runs; the one node's instance image."""
    env.apply(node_class(**class_spec), pool or node_pool(), pod("p", **(pod_spec or {})))
    assert env.run_until(lambda: env.healthy("p")), env.errors
    assert len(env.nodes()) == 1
    return str(env.instance_of(env.node_of("p"))["ImageId"])


def ami_status(env: MotoCluster) -> list[dict[str, Any]]:
    found = (env.get("EC2NodeClass", "default").get("status") or {}).get("amis")
    return list(found or [])


def resolved(env: MotoCluster, **class_spec: Any) -> list[dict[str, Any]]:
    env.apply(node_class(**class_spec))
    assert env.run_until(lambda: bool(ami_status(env)), timeout=60)
    return ami_status(env)


def condition(env: MotoCluster, kind: str) -> tuple[str, str]:
    found = env.condition("EC2NodeClass", "default", kind)
    return str(found.get("status")), str(found.get("message", ""))


# --- selecting images ------------------------------------------------------------------------


@pytest.mark.parametrize("text", [
    'It("should use the AMI defined by the AMI Selector Terms")',
    'It("should support ami selector ids")',
])
def test_the_selected_image_id_boots(env: MotoCluster, text: str) -> None:
    """Karpenter test/suites/ami/suite_test.go It("should use the AMI defined by the AMI
    Selector Terms") and It("should support ami selector ids")."""
    image = provision(env, amiFamily="AL2023", amiSelectorTerms=[{"id": X86_IMAGE}])

    assert image == X86_IMAGE


def test_the_most_recent_of_the_selected_images_boots(
        env: MotoCluster, facts: ImageFacts, other_image: str) -> None:
    """Karpenter test/suites/ami/suite_test.go It("should use the most recent AMI when
    discovering multiple")."""
    facts.created(other_image, LONG_AGO)

    image = provision(env, amiFamily="AL2023",
                      amiSelectorTerms=[{"id": X86_IMAGE}, {"id": other_image}])

    assert image == X86_IMAGE


def image_name(clients: AwsClients) -> str:
    (image,) = clients.ec2.describe_images(ImageIds=[X86_IMAGE])["Images"]
    return str(image["Name"])


def test_a_name_with_an_owner_that_has_no_such_image_launches_nothing(
        env: MotoCluster, clients: AwsClients) -> None:
    """Karpenter test/suites/ami/suite_test.go It("should support AMI Selector Terms for
    Name but fail with incorrect owners")."""
    env.apply(node_class(amiFamily="AL2023", amiSelectorTerms=[
        {"name": image_name(clients), "owner": "fakeOwnerValue"}]), node_pool(), pod("p"))

    env.run_until(lambda: False, timeout=120)

    assert env.nodeclaims() == [] and env.nodes() == []
    assert env.node_of("p") == ""


def test_a_name_alone_finds_the_image_among_amazon_s_and_our_own(
        env: MotoCluster, clients: AwsClients) -> None:
    """Karpenter test/suites/ami/suite_test.go It("should support ami selector Name with
    default owners")."""
    image = provision(env, amiFamily="AL2023",
                      amiSelectorTerms=[{"name": image_name(clients)}])

    assert image == X86_IMAGE


def test_an_ssm_parameter_arn_selects_its_image(env: MotoCluster) -> None:
    """Karpenter test/suites/ami/suite_test.go It("should support ssm parameters by ARN")."""
    arn = f"arn:aws:ssm:{env.clients.region}::parameter{AL2023_PATH}"

    image = provision(env, amiFamily="AL2023", amiSelectorTerms=[{"ssmParameter": arn}])

    assert image == X86_IMAGE


def test_a_deprecated_image_still_launches_and_is_reported_deprecated(
        env: MotoCluster, facts: ImageFacts, other_image: str) -> None:
    """Karpenter test/suites/ami/suite_test.go It("should support launching nodes with a
    deprecated ami")."""
    facts.deprecate(other_image)

    image = provision(env, amiFamily="AL2023", amiSelectorTerms=[{"id": other_image}])

    assert image == other_image
    (status,) = ami_status(env)
    assert status["id"] == other_image and status.get("deprecated") is True
    assert condition(env, "AMIsReady")[0] == "True"


def test_a_current_image_is_preferred_to_a_deprecated_one(
        env: MotoCluster, facts: ImageFacts, other_image: str) -> None:
    """Karpenter test/suites/ami/suite_test.go It("should prioritize launch with
    non-deprecated AMIs")."""
    facts.deprecate(other_image)
    facts.created(X86_IMAGE, LONG_AGO)  # older, yet not deprecated: it still wins

    image = provision(env, amiFamily="AL2023",
                      amiSelectorTerms=[{"id": other_image}, {"id": X86_IMAGE}])

    assert image == X86_IMAGE


# --- Context("AMIFamily") ----------------------------------------------------------------------


@pytest.mark.parametrize("alias", [
    pytest.param("al2023@latest", id='Entry("AL2023 (latest)")'),
    pytest.param("al2@latest", id='Entry("AL2 (latest)")'),
    pytest.param("bottlerocket@latest", id='Entry("Bottlerocket (latest)")'),
])
def test_a_latest_alias_provisions_a_node(env: MotoCluster, world: World, alias: str) -> None:
    """Karpenter test/suites/ami/suite_test.go DescribeTable("should provision a node using
    the latest alias"): the node boots the image the alias's parameter names for its
    architecture (the account publishes an arm64 image for AL2023 only)."""
    image = provision(env, amiSelectorTerms=[{"alias": alias}])

    arch = env.get("Node", env.node_of("p"))["metadata"]["labels"]["kubernetes.io/arch"]
    assert image == (world.arm_image if arch == "arm64" else X86_IMAGE)


PINNED = {
    "al2023": f"/aws/service/eks/optimized-ami/{K8S_VERSION}/amazon-linux-2023/x86_64/standard/"
              f"amazon-eks-node-al2023-x86_64-standard-{K8S_VERSION}-v20240807/image_id",
    "al2": f"/aws/service/eks/optimized-ami/{K8S_VERSION}/amazon-linux-2/"
           f"amazon-eks-node-{K8S_VERSION}-v20240807/image_id",
    "bottlerocket": f"/aws/service/bottlerocket/aws-k8s-{K8S_VERSION}/x86_64/1.20.5/image_id",
}


@pytest.mark.parametrize(("family", "version"), [
    pytest.param("al2023", "v20240807", id='Entry("AL2023 (pinned)")'),
    pytest.param("al2", "v20240807", id='Entry("AL2 (pinned)")'),
    pytest.param("bottlerocket", "v1.20.5", id='Entry("Bottlerocket (pinned with v prefix)")'),
    pytest.param("bottlerocket", "1.20.5",
                 id='Entry("Bottlerocket (pinned without v prefix)")'),
])
def test_a_pinned_alias_provisions_its_release(
        env: MotoCluster, other_image: str, family: str, version: str) -> None:
    """Karpenter test/suites/ami/suite_test.go DescribeTable("should provision a node using
    a pinned alias"): the release's own parameter, not the latest one."""
    seed_public_parameter(env.clients.region, PINNED[family], other_image)

    image = provision(env, amiSelectorTerms=[{"alias": f"{family}@{version}"}])

    assert image == other_image


def test_a_custom_family_boots_the_selected_image(env: MotoCluster) -> None:
    """Karpenter test/suites/ami/suite_test.go It("should support Custom AMIFamily with AMI
    Selectors")."""
    user_data = ("apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  cluster:\n"
                 "    name: demo\n    apiServerEndpoint: https://demo.example.com\n"
                 "    certificateAuthority: Y2E=\n    cidr: 10.100.0.0/16\n")

    image = provision(env, amiFamily="Custom", amiSelectorTerms=[{"id": X86_IMAGE}],
                      userData=user_data)

    assert image == X86_IMAGE


def test_a_wildcard_name_resolves_a_few_images_not_every_match(env: MotoCluster) -> None:
    """Karpenter test/suites/ami/suite_test.go It("should have the EC2NodeClass status for
    AMIs using wildcard"): moto ships some 1,300 images that match."""
    amis = resolved(env, amiFamily="AL2023", amiSelectorTerms=[{"name": "*"}])

    assert 0 < len(amis) < 10


@pytest.mark.parametrize("term", [
    pytest.param({"id": X86_IMAGE}, id='It("should have the EC2NodeClass status for AMIs '
                 'using tags")'),
    pytest.param({"ssmParameter": f"arn:aws:ssm:us-west-2::parameter{AL2023_PATH}"},
                 id='It("should have the EC2NodeClass status for AMIs using public ssm '
                 'parameter ARN")'),
])
def test_the_status_lists_the_selected_image_and_the_class_is_ready(
        env: MotoCluster, term: dict[str, str]) -> None:
    """Karpenter test/suites/ami/suite_test.go It("should have the EC2NodeClass status for
    AMIs using tags") (whose term is an id) and It("... using public ssm parameter ARN")."""
    amis = resolved(env, amiFamily="AL2023", amiSelectorTerms=[term])

    assert [a["id"] for a in amis] == [X86_IMAGE]
    assert condition(env, "AMIsReady")[0] == "True"
    env.run_until(lambda: condition(env, "Ready")[0] == "True", timeout=60)
    assert condition(env, "Ready")[0] == "True"


def test_an_image_that_does_not_exist_leaves_the_class_not_ready(env: MotoCluster) -> None:
    """Karpenter test/suites/ami/suite_test.go It("should have ec2nodeClass status as not
    ready since AMI was not resolved")."""
    env.apply(node_class(amiFamily="AL2023", amiSelectorTerms=[{"id": "ami-123"}]))

    env.run_until(lambda: condition(env, "AMIsReady")[0] == "False", timeout=60)

    # The message names the term (docs/karpenter-differences.md: "Condition and event
    # messages say more"); Karpenter's is "AMISelector did not match any AMIs".
    assert condition(env, "AMIsReady") == (
        "False", "amiSelectorTerms[0] {'id': 'ami-123'} matched nothing")
    status, message = condition(env, "Ready")
    assert status == "False"
    assert set(message.split(", ")) == {"ValidationSucceeded=False", "AMIsReady=False"}


# --- Context("UserData") -----------------------------------------------------------------------


def booted_user_data(env: MotoCluster) -> str:
    instance_id = env.instance_of(env.node_of("p"))["InstanceId"]
    answer = env.clients.ec2.describe_instance_attribute(InstanceId=instance_id,
                                                         Attribute="userData")
    return base64.b64decode(answer["UserData"]["Value"]).decode()


def merged(env: MotoCluster, alias: str, user_data: str) -> Iterator[str]:
    """Provision a tainted node booting `alias` with the user's `user_data`; the node's
    taints hold both, and the instance boots the merged user data."""
    provision(env, pool=node_pool(taints=TAINTS, startupTaints=STARTUP_TAINTS),
              pod_spec={"tolerations": TOLERATE},
              amiSelectorTerms=[{"alias": alias}], userData=user_data)
    taints = env.get("Node", env.node_of("p"))["spec"]["taints"]
    assert all(t in taints for t in (*TAINTS, *STARTUP_TAINTS))
    yield booted_user_data(env)


@pytest.mark.parametrize("user_data", [
    pytest.param('MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="BOUNDARY"\n\n'
                 '--BOUNDARY\nContent-Type: text/x-shellscript; charset="us-ascii"\n\n'
                 '#!/bin/bash\necho "Running custom user data script"\n\n--BOUNDARY--\n',
                 id='It("should merge UserData contents for AL2 AMIFamily")'),
    pytest.param('#!/bin/bash\necho "Running custom user data script"\n',
                 id='It("should merge non-MIME UserData contents for AL2 AMIFamily")'),
])
def test_al2_user_data_is_merged_with_the_bootstrap(env: MotoCluster, user_data: str) -> None:
    """Karpenter test/suites/ami/suite_test.go It("should merge UserData contents for AL2
    AMIFamily") and It("should merge non-MIME UserData contents for AL2 AMIFamily")."""
    for booted in merged(env, "al2@latest", user_data):
        assert "Running custom user data script" in booted
        assert "karpenter.sh/do-not-sync-taints=true" in booted


def test_bottlerocket_settings_are_merged_with_the_bootstrap(env: MotoCluster) -> None:
    """Karpenter test/suites/ami/suite_test.go It("should merge UserData contents for
    Bottlerocket AMIFamily")."""
    user_data = ('[settings.kubernetes]\nkube-api-qps = 30\neviction-max-pod-grace-period = 40\n'
                 '[settings.kubernetes.node-taints]\n'
                 '"node.cilium.io/agent-not-ready" = ["true:NoExecute"]\n'
                 '[settings.kubernetes.eviction-soft]\n"memory.available" = "100Mi"\n'
                 '[settings.kubernetes.eviction-soft-grace-period]\n'
                 '"memory.available" = "30s"')
    for booted in merged(env, "bottlerocket@latest", user_data):
        assert "kube-api-qps = 30" in booted
        assert "'karpenter.sh/do-not-sync-taints' = 'true'" in booted
        assert "eviction-max-pod-grace-period = 40" in booted
        assert "[settings.kubernetes.eviction-soft]\n'memory.available' = '100Mi'" in booted
        assert ("[settings.kubernetes.eviction-soft-grace-period]\n"
                "'memory.available' = '30s'") in booted


def test_windows_user_data_is_merged_with_the_bootstrap(env: MotoCluster, clients: AwsClients
                                                         ) -> None:
    """Karpenter test/suites/ami/suite_test.go It("should merge UserData contents for
    Windows AMIFamily") (the Windows IPAM of the VPC resource controller it turns on is the
    cluster's, not Karpenter's)."""
    windows = clients.ec2.describe_images(Owners=["amazon"], Filters=[
        {"Name": "name", "Values": ["Windows_Server-2016-English-Full-Base-*"]}])["Images"]
    seed_public_parameter(clients.region, "/aws/service/ami-windows-latest/Windows_Server-2022-"
                          f"English-Core-EKS_Optimized-{K8S_VERSION}/image_id",
                          windows[0]["ImageId"])
    pool = node_pool(taints=TAINTS, startupTaints=STARTUP_TAINTS, requirements=[
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
        {"key": "kubernetes.io/os", "operator": "In", "values": ["windows"]},
        {"key": "karpenter.k8s.aws/instance-category", "operator": "In",
         "values": ["c", "m", "r"]}])
    provision(env, pool=pool, pod_spec={
        "tolerations": TOLERATE, "nodeSelector": {
            "kubernetes.io/os": "windows", "node.kubernetes.io/windows-build": "10.0.20348"}},
        amiSelectorTerms=[{"alias": "windows2022@latest"}],
        userData='Write-Host "Running custom user data script"')
    taints = env.get("Node", env.node_of("p"))["spec"]["taints"]
    assert all(t in taints for t in (*TAINTS, *STARTUP_TAINTS))

    booted = booted_user_data(env)

    assert 'Write-Host "Running custom user data script"' in booted
    assert ('[string]$EKSBootstrapScriptFile = "$env:ProgramFiles\\Amazon\\EKS\\'
            'Start-EKSBootstrap.ps1"') in booted
    assert "karpenter.sh/do-not-sync-taints=true" in booted
