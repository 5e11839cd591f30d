"""Karpenter test/suites/nodeclaim/suite_test.go (v1.14.1), on the moto account."""

from __future__ import annotations

from nodewright.cloud.aws.clients import AwsClients
from tests.aws.world import World
from tests.aws_e2e.moto_world import MotoCluster, node_class, node_pool, pod


def test_an_instance_terminated_behind_the_cluster_s_back_is_garbage_collected(
        clients: AwsClients, world: World) -> None:
    """Karpenter test/suites/nodeclaim/suite_test.go It("should succeed to garbage collect
    an Instance that was deleted without the cluster's knowledge"): no interruption queue
    tells of it; the NodeClaim garbage collection finds the instance gone and its Node
    and NodeClaim are deleted."""
    env = MotoCluster(clients)
    env.apply(node_class(), node_pool(), pod("p"))
    assert env.run_until(lambda: env.healthy("p")), env.errors
    (node,) = env.nodes()
    (claim,) = env.nodeclaims()
    provider_id = str(node["spec"]["providerID"])

    clients.ec2.terminate_instances(InstanceIds=[provider_id.rsplit("/", 1)[-1]])

    def gone() -> bool:
        return (node["metadata"]["name"] not in {n["metadata"]["name"] for n in env.nodes()}
                and claim["metadata"]["name"] not in {
                    c["metadata"]["name"] for c in env.nodeclaims()})

    assert env.run_until(gone, timeout=15 * 60)
