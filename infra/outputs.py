"""The stack outputs application stacks read through a StackReference."""

from __future__ import annotations

from typing import Any

import pulumi

from infra.cluster import Cluster
from infra.iam import ControllerIdentity, NodeRole
from infra.interruption import InterruptionQueue
from infra.network import Network
from infra.teams import NodeResources


def stack_outputs(
    cluster: Cluster,
    network: Network,
    node_role: NodeRole,
    identity: ControllerIdentity,
    queue: InterruptionQueue | None,
    nodes: NodeResources,
) -> dict[str, Any]:
    """Output name -> value. The kubeconfig is a secret."""
    return {
        "clusterName": cluster.name,
        "clusterEndpoint": cluster.endpoint,
        "kubeconfig": pulumi.Output.secret(cluster.kubeconfig_json),
        "oidcProviderArn": cluster.oidc_provider_arn,
        "vpcId": network.vpc_id,
        "privateSubnetIds": network.private_subnet_ids,
        "nodeRoleName": node_role.name,
        "controllerRoleArn": identity.arn,
        "interruptionQueueName": queue.name if queue is not None else "",
        "interruptionQueueUrl": queue.url if queue is not None else "",
        "nodeClassNames": sorted(nodes.node_classes),
        "nodePoolNames": sorted(nodes.node_pools),
    }


def export_all(outputs: dict[str, Any]) -> None:
    for name, value in outputs.items():
        pulumi.export(name, value)
