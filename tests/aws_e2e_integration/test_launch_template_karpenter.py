"""Karpenter test/suites/integration/launch_template_test.go (v1.14.1) on the moto
account."""

from __future__ import annotations

from nodewright.cloud.aws.clients import AwsClients

from .moto_env import Env


def node_class_templates(clients: AwsClients) -> list[str]:
    found = clients.ec2.describe_launch_templates(Filters=[
        {"Name": "tag:karpenter.k8s.aws/ec2nodeclass", "Values": ["default"]}])
    return [t["LaunchTemplateName"] for t in found["LaunchTemplates"]]


def test_deleting_the_node_class_deletes_its_launch_templates(
        env: Env, clients: AwsClients) -> None:
    """Karpenter test/suites/integration/launch_template_test.go It("should remove the
    generated Launch Templates when deleting the NodeClass")."""
    env.provision()
    assert node_class_templates(clients)

    env.delete("NodePool", "default")
    env.delete("EC2NodeClass", "default")

    assert env.run_until(lambda: not node_class_templates(clients), timeout=900)
    assert env.run_until(lambda: env.nodes() == [] and env.running_instances() == [])
