"""Karpenter test/suites/integration/hash_test.go (v1.14.1) on the moto account."""

from __future__ import annotations

from nodewright.api.ec2nodeclass import EC2NodeClass
from nodewright.api.hashes import NODECLASS_HASH, node_class_hash
from nodewright.cloud.aws.clients import AwsClients
from nodewright.controllers.options import ControllerOptions
from tests.aws.world import CLUSTER, World
from tests.aws_e2e.moto_world import node_class

from .moto_env import Env


def test_the_node_class_carries_its_hash_with_the_cluster_s_ca_bundle(
        clients: AwsClients, world: World) -> None:
    """Karpenter test/suites/integration/hash_test.go It("should have EC2NodeClass
    hash") — with the CA bundle the controller trusts the API server with (the operator's
    CLUSTER_CA_BUNDLE or its kubeconfig's, here the EKS cluster's)."""
    ca_bundle = clients.eks.describe_cluster(name=CLUSTER)["cluster"][
        "certificateAuthority"]["data"]
    env = Env(clients, ControllerOptions(cluster_ca_bundle=ca_bundle))
    env.apply(node_class())
    assert env.run_until(
        lambda: NODECLASS_HASH in (env.get("EC2NodeClass", "default")["metadata"].get(
            "annotations") or {}), timeout=60)

    stored = env.get("EC2NodeClass", "default")
    expected = node_class_hash(EC2NodeClass.model_validate(stored), ca_bundle)
    assert stored["metadata"]["annotations"][NODECLASS_HASH] == expected
    assert expected != node_class_hash(EC2NodeClass.model_validate(stored))  # the bundle counts
    assert env.errors == []
