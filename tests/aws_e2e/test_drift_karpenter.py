"""Karpenter test/suites/drift/suite_test.go (v1.14.1), on the moto account: one replica
of a deployment whose pod says `karpenter.sh/do-not-disrupt`, on a node launched from the
default NodePool; the EC2NodeClass (or what it selects) changes; the NodeClaim is marked
Drifted; the annotation is taken off the pod; the node is replaced and the pod runs again.
"""

from __future__ import annotations

from typing import Any

import pytest

from nodewright.cloud.aws.clients import AwsClients
from tests.aws.reservations import FakeCapacityReservations, FakeReservation
from tests.aws.world import CLUSTER, X86_IMAGE, World
from tests.aws_e2e.moto_world import (
    InstanceReservations,
    MotoCluster,
    deployment,
    node_class,
    node_pool,
    pod,
)

DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
APP = {"app": "my-app"}
LONG_AGO = "2020-01-01T00:00:00.000Z"


@pytest.fixture
def env(clients: AwsClients, world: World) -> MotoCluster:
    return MotoCluster(clients)


def app() -> dict[str, Any]:
    dep = deployment("my-app", 1, labels=APP, terminationGracePeriodSeconds=0)
    dep["spec"]["template"]["metadata"]["annotations"] = {DO_NOT_DISRUPT: "true"}
    return dep


def started(env: MotoCluster, *class_docs: dict[str, Any], pool: dict[str, Any] | None = None
            ) -> tuple[str, str, str]:
    """The app on its one node: (its pod, the NodeClaim, the Node)."""
    env.apply(*(class_docs or (node_class(),)), pool or node_pool(), app())
    assert env.run_until(lambda: len(env.running_pods(APP)) == 1), env.errors
    (claim,) = env.nodeclaims()
    (node,) = env.nodes()
    (running,) = env.running_pods(APP)
    return running["metadata"]["name"], claim["metadata"]["name"], node["metadata"]["name"]


def drifted(env: MotoCluster, claim: str) -> dict[str, Any]:
    def is_drifted() -> bool:
        return env.condition("NodeClaim", claim, "Drifted").get("status") == "True"
    assert env.run_until(is_drifted, timeout=600), env.condition("NodeClaim", claim, "Drifted")
    return env.condition("NodeClaim", claim, "Drifted")


def replaced(env: MotoCluster, pod: str, claim: str, node: str) -> None:
    """The pod may go now: the drifted node is replaced and the app runs elsewhere."""
    env.patch("Pod", pod, {"metadata": {"annotations": {DO_NOT_DISRUPT: None}}}, "default")

    def gone() -> bool:
        claims = {c["metadata"]["name"] for c in env.nodeclaims()}
        nodes = {n["metadata"]["name"] for n in env.nodes()}
        running = env.running_pods(APP)
        return (claim not in claims and node not in nodes and len(running) == 1
                and running[0]["spec"]["nodeName"] != node)

    assert env.run_until(gone, timeout=1800), (env.errors, env.nodeclaims())


def story(env: MotoCluster, before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    pod, claim, node = started(env, before)
    env.apply(after)
    condition = drifted(env, claim)
    replaced(env, pod, claim, node)
    return condition


# --- images ----------------------------------------------------------------------------------



def test_a_node_on_an_image_no_longer_selected_is_replaced(
        env: MotoCluster, other_image: str) -> None:
    """Karpenter test/suites/drift/suite_test.go It("should disrupt nodes that have drifted
    due to AMIs")."""
    condition = story(env, node_class(amiFamily="AL2023", amiSelectorTerms=[{"id": other_image}]),
                      node_class(amiFamily="AL2023", amiSelectorTerms=[{"id": X86_IMAGE}]))

    assert condition["reason"] == "AMIDrift"
    (node,) = env.nodes()
    assert env.instance_of(node["metadata"]["name"])["ImageId"] == X86_IMAGE


def test_a_node_on_a_deprecated_image_moves_to_a_current_one(
        env: MotoCluster, clients: AwsClients, other_image: str) -> None:
    """Karpenter test/suites/drift/suite_test.go It("should disrupt nodes for deprecated AMIs
    to non-deprecated AMIs"): EC2 reports `other_image` deprecated (moto knows no
    deprecation: DescribeImages's answer says so)."""
    def deprecated(parsed: dict[str, Any], **_: Any) -> None:
        for image in parsed.get("Images") or []:
            if image["ImageId"] == other_image:
                image["DeprecationTime"] = LONG_AGO
    clients.ec2.meta.events.register("after-call.ec2.DescribeImages", deprecated)
    pod, claim, node = started(
        env, node_class(amiFamily="AL2023", amiSelectorTerms=[{"id": other_image}]))
    (status,) = env.get("EC2NodeClass", "default")["status"]["amis"]
    assert status["deprecated"] is True
    assert env.condition("EC2NodeClass", "default", "AMIsReady")["status"] == "True"

    env.apply(node_class(amiFamily="AL2023",
                         amiSelectorTerms=[{"id": X86_IMAGE}, {"id": other_image}]))
    drifted(env, claim)
    replaced(env, pod, claim, node)

    (new_node,) = env.nodes()
    assert env.instance_of(new_node["metadata"]["name"])["ImageId"] == X86_IMAGE
    assert env.condition("EC2NodeClass", "default", "AMIsReady")["status"] == "True"


def test_a_node_whose_architecture_no_image_serves_any_more_is_replaced(
        env: MotoCluster, world: World) -> None:
    """Karpenter test/suites/drift/suite_test.go It("should return drifted if the AMI no
    longer matches the existing NodeClaims instance type"): an arm64 node, then only an
    x86_64 image selected."""
    arm_pool = node_pool(requirements=[
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
        {"key": "karpenter.k8s.aws/instance-category", "operator": "In",
         "values": ["c", "m", "r"]}])
    pod, claim, node = started(
        env, node_class(amiFamily="AL2023", amiSelectorTerms=[{"id": world.arm_image}]),
        pool=arm_pool)
    assert env.get("Node", node)["metadata"]["labels"]["kubernetes.io/arch"] == "arm64"

    env.apply(node_class(amiFamily="AL2023", amiSelectorTerms=[{"id": X86_IMAGE}]))
    assert drifted(env, claim)["reason"] == "AMIDrift"
    replaced(env, pod, claim, node)

    (new_node,) = env.nodes()
    assert new_node["metadata"]["labels"]["kubernetes.io/arch"] == "amd64"


# --- what the EC2NodeClass selects -----------------------------------------------------------


def test_a_node_in_a_security_group_no_longer_selected_is_replaced(
        env: MotoCluster, clients: AwsClients, world: World) -> None:
    """Karpenter test/suites/drift/suite_test.go It("should disrupt nodes that have drifted
    due to securitygroup")."""
    extra = clients.ec2.create_security_group(
        GroupName="security-group-drift", Description="drift", VpcId=world.vpc_id,
        TagSpecifications=[{"ResourceType": "security-group", "Tags": [
            {"Key": "karpenter.sh/discovery", "Value": CLUSTER}]}])["GroupId"]
    both = [{"id": extra}, {"id": world.security_group}]

    condition = story(env, node_class(securityGroupSelectorTerms=both),
                      node_class(securityGroupSelectorTerms=[{"id": world.security_group}]))

    assert condition["reason"] == "SecurityGroupDrift"
    (node,) = env.nodes()
    groups = env.instance_of(node["metadata"]["name"])["SecurityGroups"]
    assert [g["GroupId"] for g in groups] == [world.security_group]


def test_a_node_in_a_subnet_no_longer_selected_is_replaced(
        env: MotoCluster, world: World) -> None:
    """Karpenter test/suites/drift/suite_test.go It("should disrupt nodes that have drifted
    due to subnets")."""
    first, second = sorted(world.subnets.values())[:2]

    condition = story(env, node_class(subnetSelectorTerms=[{"id": first}]),
                      node_class(subnetSelectorTerms=[{"id": second}]))

    assert condition["reason"] == "SubnetDrift"
    (node,) = env.nodes()
    assert env.instance_of(node["metadata"]["name"])["SubnetId"] == second


# --- DescribeTable("EC2NodeClass"): a static field changes -----------------------------------


@pytest.mark.parametrize("change", [
    pytest.param({"userData": '#!/bin/bash\necho "Hello, AL2023"'}, id='Entry("UserData")'),
    pytest.param({"tags": {"testing/cluster": CLUSTER, "keyTag-test-3": "valueTag-test-3"}},
                 id='Entry("Tags")'),
    pytest.param({"metadataOptions": {"httpTokens": "required", "httpPutResponseHopLimit": 10}},
                 id='Entry("MetadataOptions")'),
    pytest.param({"blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": {
        "volumeSize": "20Gi", "volumeType": "gp3", "encrypted": True}}]},
        id='Entry("BlockDeviceMappings")'),
    pytest.param({"detailedMonitoring": True}, id='Entry("DetailedMonitoring")'),
    pytest.param({"amiSelectorTerms": [{"alias": "bottlerocket@latest"}]},
                 id='Entry("AMIFamily")'),
    pytest.param({"kubelet": {"evictionSoft": {"memory.available": "5%"},
                              "evictionSoftGracePeriod": {"memory.available": "1m"}}},
                 id='Entry("KubeletConfiguration")'),
    pytest.param({"networkInterfaces": [{"networkCardIndex": 0, "deviceIndex": 0,
                                         "interfaceType": "interface"}]},
                 id='Entry("NetworkInterfaces")'),
])
def test_a_changed_static_field_of_the_node_class_replaces_the_node(
        env: MotoCluster, change: dict[str, Any]) -> None:
    """Karpenter test/suites/drift/suite_test.go DescribeTable("EC2NodeClass", ...): each
    Entry changes one field the EC2NodeClass's hash covers."""
    condition = story(env, node_class(), node_class(**change))

    assert condition["reason"] == "NodeClassDrift"


def test_another_instance_profile_replaces_the_node(
        env: MotoCluster, clients: AwsClients) -> None:
    """Karpenter test/suites/drift/suite_test.go It("should drift the EC2NodeClass on
    InstanceProfile")."""
    for name in (f"KarpenterNodeInstanceProfile-{CLUSTER}",
                 f"KarpenterNodeInstanceProfile-Drift-{CLUSTER}"):
        clients.iam.create_instance_profile(InstanceProfileName=name)
        clients.iam.add_role_to_instance_profile(InstanceProfileName=name,
                                                 RoleName="KarpenterNodeRole-demo")

    def with_profile(name: str) -> dict[str, Any]:
        doc = node_class(instanceProfile=name)
        del doc["spec"]["role"]
        return doc

    story(env, with_profile(f"KarpenterNodeInstanceProfile-{CLUSTER}"),
          with_profile(f"KarpenterNodeInstanceProfile-Drift-{CLUSTER}"))

    (claim,) = env.nodeclaims()
    assert claim["metadata"]["annotations"]["karpenter.k8s.aws/instance-profile-name"] == (
        f"KarpenterNodeInstanceProfile-Drift-{CLUSTER}")


def profile_of(env: MotoCluster) -> str:
    return str((env.get("EC2NodeClass", "default").get("status") or {}).get(
        "instanceProfile") or "")


def test_a_new_role_replaces_the_nodes_and_its_profiles_go_with_the_class(
        env: MotoCluster, clients: AwsClients) -> None:
    """Karpenter test/suites/drift/suite_test.go It("should drift nodeclaims when spec.role
    changes"): to a second role and back, each time a new instance profile, NodeClassDrift,
    a replacement launched with the new profile; deleting the NodePool and the class
    removes every profile made."""
    clients.iam.create_role(RoleName="KarpenterNodeRole-demo-second",
                            AssumeRolePolicyDocument="{}")
    pod, claim, node = started(env, node_class())
    first_profile = profile_of(env)
    assert first_profile
    annotations = env.get("NodeClaim", claim)["metadata"]["annotations"]
    assert annotations["karpenter.k8s.aws/instance-profile-name"] == first_profile
    profiles = [first_profile]

    for role in ("KarpenterNodeRole-demo-second", "KarpenterNodeRole-demo"):
        env.apply(node_class(role=role))
        assert env.run_until(lambda: profile_of(env) not in ("", *profiles[-1:]), timeout=120)
        profiles.append(profile_of(env))
        clients.iam.get_instance_profile(InstanceProfileName=profiles[-1])
        assert drifted(env, claim)["reason"] == "NodeClassDrift"
        replaced(env, pod, claim, node)
        (new_claim,) = env.nodeclaims()
        assert new_claim["metadata"]["annotations"][
            "karpenter.k8s.aws/instance-profile-name"] == profiles[-1]
        claim, node = new_claim["metadata"]["name"], new_claim["status"]["nodeName"]
        (running,) = env.running_pods(APP)
        pod = running["metadata"]["name"]
        env.patch("Pod", pod, {"metadata": {"annotations": {DO_NOT_DISRUPT: "true"}}},
                  "default")

    assert profiles[0] != profiles[1] != profiles[2]
    env.patch("Pod", pod, {"metadata": {"annotations": {DO_NOT_DISRUPT: None}}}, "default")
    env.delete("NodePool", "default")
    assert env.run_until(lambda: not env.nodeclaims() and not env.nodes(), timeout=900)
    env.delete("EC2NodeClass", "default")
    left = {p["InstanceProfileName"]
            for p in clients.iam.list_instance_profiles()["InstanceProfiles"]}
    assert env.run_until(lambda: not set(profiles) & {
        p["InstanceProfileName"]
        for p in clients.iam.list_instance_profiles()["InstanceProfiles"]}, timeout=300), left


def test_a_larger_root_volume_replaces_the_node(env: MotoCluster) -> None:
    """Karpenter test/suites/drift/suite_test.go It("should drift the EC2NodeClass on
    BlockDeviceMappings volume size update")."""
    def volume(size: str) -> dict[str, Any]:
        return node_class(blockDeviceMappings=[{"deviceName": "/dev/xvda", "ebs": {
            "volumeSize": size, "volumeType": "gp3", "encrypted": True}}])

    story(env, volume("20Gi"), volume("100Gi"))


def test_a_hash_version_change_rehashes_instead_of_drifting(env: MotoCluster) -> None:
    """Karpenter test/suites/drift/suite_test.go It("should update the ec2nodeclass-hash
    annotation on the ec2nodeclass and nodeclaim when the ec2nodeclass's
    ec2nodeclass-hash-version annotation does not match the controller hash version")."""
    hash_key, version_key = ("karpenter.k8s.aws/ec2nodeclass-hash",
                             "karpenter.k8s.aws/ec2nodeclass-hash-version")
    _, claim, _ = started(env, node_class())

    def annotations(kind: str, name: str) -> dict[str, str]:
        return dict(env.get(kind, name)["metadata"].get("annotations") or {})

    assert env.run_until(lambda: hash_key in annotations("EC2NodeClass", "default"), timeout=30)
    first = annotations("EC2NodeClass", "default")
    version = first[version_key]
    assert annotations("NodeClaim", claim)[hash_key] == first[hash_key]
    assert annotations("NodeClaim", claim)[version_key] == version

    env.patch("NodeClaim", claim, {"metadata": {"annotations": {
        hash_key: "test-hash-2", version_key: "test-hash-version-2"}}})
    changed = node_class(tags={"testing/cluster": CLUSTER, "test-key": "test-value"})
    changed["metadata"]["annotations"] = {hash_key: "test-hash-1",
                                          version_key: "test-hash-version-1"}
    env.apply(changed)

    def rehashed() -> bool:
        nc, cl = annotations("EC2NodeClass", "default"), annotations("NodeClaim", claim)
        return (nc.get(version_key) == version and nc.get(hash_key) not in (
            None, "test-hash-1", first[hash_key]) and cl.get(hash_key) == nc.get(hash_key)
            and cl.get(version_key) == version)

    assert env.run_until(rehashed, timeout=30)
    for _ in range(12):
        env.advance(5)
        assert env.condition("NodeClaim", claim, "Drifted").get("status") != "True"


# --- Context("Capacity Reservations") --------------------------------------------------------


@pytest.fixture
def reservations(clients: AwsClients, world: World) -> FakeCapacityReservations:
    fake = FakeCapacityReservations(clients)
    zone = sorted(world.subnets)[0]
    fake.add(FakeReservation("cr-large", "m5.large", zone),
             FakeReservation("cr-xlarge", "m5.xlarge", zone))
    return fake


RESERVED_POOL = node_pool(requirements=[
    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["reserved"]}])


def reserved_pod() -> dict[str, Any]:
    found = pod("p")
    found["metadata"]["annotations"] = {DO_NOT_DISRUPT: "true"}
    return found


def test_a_reserved_node_drifts_when_its_reservation_is_no_longer_selected(
        env: MotoCluster, clients: AwsClients, reservations: FakeCapacityReservations) -> None:
    """Karpenter test/suites/drift/suite_test.go It("should drift nodeclaim when the
    reservation is no longer selected by the nodeclass")."""
    InstanceReservations(clients)
    env.apply(node_class(capacityReservationSelectorTerms=[{"id": "cr-large"}]),
              RESERVED_POOL, reserved_pod())
    assert env.run_until(lambda: env.healthy("p")), env.errors
    (claim,) = env.nodeclaims()
    labels = env.get("Node", env.node_of("p"))["metadata"]["labels"]
    assert labels["node.kubernetes.io/instance-type"] == "m5.large"
    assert labels["karpenter.sh/capacity-type"] == "reserved"
    assert labels["karpenter.k8s.aws/capacity-reservation-id"] == "cr-large"

    env.apply(node_class(capacityReservationSelectorTerms=[{"id": "cr-xlarge"}]))

    assert drifted(env, claim["metadata"]["name"])["reason"] == "CapacityReservationDrift"


def test_a_reserved_node_drifts_once_demoted_to_on_demand(
        env: MotoCluster, clients: AwsClients, reservations: FakeCapacityReservations) -> None:
    """Karpenter test/suites/drift/suite_test.go It("should drift nodeclaim when the
    nodeclaim is demoted to on-demand"): the reservation is cancelled; within a minute and
    a bit the NodeClaim and its Node are on-demand with no reservation label; then it is
    Drifted (its NodePool takes reserved capacity only)."""
    launched = InstanceReservations(clients)
    env.apply(node_class(capacityReservationSelectorTerms=[{"id": "cr-large"}]),
              RESERVED_POOL, reserved_pod())
    assert env.run_until(lambda: env.healthy("p")), env.errors
    (claim,) = env.nodeclaims()
    name = claim["metadata"]["name"]
    (requirement,) = [r for r in claim["spec"]["requirements"]
                      if r["key"] == "karpenter.k8s.aws/capacity-reservation-id"]
    assert requirement["values"] == ["cr-large"]

    launched.cancelled.add("cr-large")
    (cancelled,) = [r for r in reservations.reservations if r.id == "cr-large"]
    cancelled.state = "cancelled"

    def demoted(kind: str, object_name: str) -> bool:
        labels = env.get(kind, object_name)["metadata"]["labels"]
        return (labels.get("karpenter.sh/capacity-type") == "on-demand"
                and "karpenter.k8s.aws/capacity-reservation-id" not in labels)

    assert env.run_until(lambda: demoted("NodeClaim", name), timeout=75)
    assert env.run_until(lambda: demoted("Node", claim["status"]["nodeName"]), timeout=30)
    drifted(env, name)
