"""The whole stack, in dependency order. `build()` returns the outputs to export."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_aws as aws

from infra.cluster import build_cluster
from infra.config import load_settings
from infra.controller_release import build_controller_release, build_crds
from infra.iam import build_controller_identity, build_node_role
from infra.interruption import build_interruption_queue
from infra.naming import node_role_name
from infra.network import build_network
from infra.outputs import stack_outputs
from infra.teams import build_node_resources, plan_node_resources


def build() -> dict[str, Any]:
    settings = load_settings()
    # Every NodePool and EC2NodeClass is checked before the first resource is declared.
    node_plan = plan_node_resources(settings, node_role_name(settings.cluster_name))
    account_id = aws.get_caller_identity().account_id
    network = build_network(settings)
    cluster = build_cluster(settings, network)
    node_role = build_node_role(settings, cluster)
    queue = build_interruption_queue(settings)
    identity = build_controller_identity(
        settings, cluster, node_role, account_id, queue.arn if queue is not None else None
    )
    crds = build_crds(cluster.kubernetes)
    build_controller_release(settings, cluster, identity, queue, crds)
    nodes = build_node_resources(
        node_plan,
        pulumi.ResourceOptions(providers=[cluster.kubernetes], depends_on=list(crds)),
    )
    return stack_outputs(cluster, network, node_role, identity, queue, nodes)
