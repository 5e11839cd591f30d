"""RBAC rules rendered from the adapter's access table (`nodewright.cluster.kube.access`).

Accesses with the same API group, verbs and resource names share one rule, as a person
would write them: `pods, nodes, namespaces: get, list, watch`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from nodewright.cluster.kube.access import Access, Cloud, Scope, permissions

Rule = dict[str, Any]


def cluster_rules(cloud: Cloud) -> list[Rule]:
    return _rules(permissions(cloud), "cluster")


def namespace_rules(cloud: Cloud) -> list[Rule]:
    """Rules for the Role in the controller's own namespace (leader election)."""
    return _rules(permissions(cloud), "own-namespace")


def node_lease_rules(cloud: Cloud) -> list[Rule]:
    """Rules for the Role in kube-node-lease (only `--cloud sim` has any)."""
    return _rules(permissions(cloud), "node-leases")


def kube_dns_rules(cloud: Cloud) -> list[Rule]:
    """Rules for the Role in kube-system (only `--cloud aws` has any)."""
    return _rules(permissions(cloud), "kube-dns")


def admin_rules() -> list[Rule]:
    """What the built-in `admin` ClusterRole gains (Karpenter's chart,
    aggregate-clusterrole.yaml, verbs as it lists them): people who administer the cluster
    manage NodePools and EC2NodeClasses and may look at or delete NodeClaims."""
    verbs = ["get", "list", "watch", "create", "delete", "patch"]
    return [
        {"apiGroups": ["karpenter.sh"],
         "resources": ["nodepools", "nodepools/status", "nodeclaims", "nodeclaims/status"],
         "verbs": list(verbs)},
        {"apiGroups": ["karpenter.k8s.aws"], "resources": ["ec2nodeclasses"],
         "verbs": list(verbs)},
    ]


def _rules(accesses: Iterable[Access], scope: Scope) -> list[Rule]:
    merged: dict[tuple[str, tuple[str, ...], tuple[str, ...]], list[str]] = {}
    for access in accesses:
        if access.scope != scope:
            continue
        resources = merged.setdefault((access.group, access.verbs, access.names), [])
        if access.resource not in resources:
            resources.append(access.resource)
    rules: list[Rule] = []
    for (group, verbs, names), resources in merged.items():
        rule: Rule = {"apiGroups": [group], "resources": resources, "verbs": list(verbs)}
        if names:
            rule["resourceNames"] = list(names)
        rules.append(rule)
    return rules
