"""What `nodewright snapshot` reads, and the read-only ClusterRole that allows exactly that.

The reader lists these kinds and nothing else (a test checks every request it makes
against this role). Secrets and ConfigMaps are not among them, and no verb but get and
list is granted.
"""

from __future__ import annotations

from typing import Any

import yaml

from nodewright.cluster.api import kind_of

READ_KINDS: tuple[str, ...] = (
    "Namespace", "Node", "Pod",
    "NodeClaim", "NodePool", "EC2NodeClass", "NodeOverlay", "CapacityBuffer",
    "Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job",
    "PodDisruptionBudget", "PersistentVolumeClaim", "PersistentVolume", "StorageClass",
)
VERBS = ("get", "list")
ROLE_NAME = "nodewright-snapshot"


def cluster_role() -> dict[str, Any]:
    """A ClusterRole granting get and list on every kind read, grouped by API group."""
    by_group: dict[str, list[str]] = {}
    for kind in READ_KINDS:
        info = kind_of(kind)
        by_group.setdefault(info.group, []).append(info.plural)
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": ROLE_NAME},
        "rules": [{"apiGroups": [group], "resources": sorted(resources),
                   "verbs": list(VERBS)}
                  for group, resources in sorted(by_group.items())],
    }


def allows(role: dict[str, Any], kind: str, verb: str) -> bool:
    info = kind_of(kind)
    return any(info.group in rule["apiGroups"] and info.plural in rule["resources"]
               and verb in rule["verbs"] for rule in role["rules"])


def role_yaml() -> str:
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": ROLE_NAME},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": ROLE_NAME},
        "subjects": [{"kind": "User", "name": "REPLACE-WITH-YOUR-USER",
                      "apiGroup": "rbac.authorization.k8s.io"}],
    }
    return yaml.safe_dump_all([cluster_role(), binding], sort_keys=False)
