"""Karpenter test/suites/integration/instance_profile_test.go (v1.14.1) on the moto
account: the instance profile a node class's role gets, the one an instance launches with
(its launch template's), and the node class's conditions."""

from __future__ import annotations

from botocore.exceptions import ClientError

from nodewright.cloud.aws.clients import AwsClients

from .moto_env import Env


def status_profile(env: Env) -> str:
    return str((env.get("EC2NodeClass", "default").get("status") or {}).get(
        "instanceProfile") or "")


def test_the_role_gets_a_generated_instance_profile_the_instance_launches_with(
        env: Env, clients: AwsClients) -> None:
    """Karpenter test/suites/integration/instance_profile_test.go It("should generate the
    InstanceProfile when setting the role")."""
    node = env.provision()

    profile = status_profile(env)
    assert profile
    launched_with = env.template_of_node(node)["IamInstanceProfile"]
    assert profile in launched_with.get("Name", launched_with.get("Arn", ""))
    found = clients.iam.get_instance_profile(InstanceProfileName=profile)["InstanceProfile"]
    assert [role["RoleName"] for role in found["Roles"]] == ["KarpenterNodeRole-demo"]


def test_deleting_the_node_class_deletes_its_generated_instance_profile(
        env: Env, clients: AwsClients) -> None:
    """Karpenter test/suites/integration/instance_profile_test.go It("should remove the
    generated InstanceProfile when deleting the NodeClass")."""
    env.provision()
    profile = status_profile(env)
    assert profile

    env.delete("NodePool", "default")
    env.delete("EC2NodeClass", "default")

    def gone() -> bool:
        try:
            clients.iam.get_instance_profile(InstanceProfileName=profile)
        except ClientError as error:
            return error.response["Error"]["Code"] == "NoSuchEntity"
        return False

    assert env.run_until(gone, timeout=900)


def test_an_unmanaged_instance_profile_is_used_as_given(env: Env, clients: AwsClients) -> None:
    """Karpenter test/suites/integration/instance_profile_test.go It("should use the
    unmanaged instance profile")."""
    clients.iam.create_instance_profile(InstanceProfileName="KarpenterNodeInstanceProfile-demo")
    clients.iam.add_role_to_instance_profile(
        InstanceProfileName="KarpenterNodeInstanceProfile-demo",
        RoleName="KarpenterNodeRole-demo")

    node = env.provision(role=None, instanceProfile="KarpenterNodeInstanceProfile-demo")

    assert status_profile(env) == "KarpenterNodeInstanceProfile-demo"
    launched_with = env.template_of_node(node)["IamInstanceProfile"]
    assert "KarpenterNodeInstanceProfile-demo" in launched_with.get(
        "Name", launched_with.get("Arn", ""))
    conditions = env.conditions()
    assert conditions["InstanceProfileReady"][0] == "True"
    assert conditions["Ready"][0] == "True"
