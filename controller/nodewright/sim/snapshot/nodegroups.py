"""NodePools that would take over a cluster's node groups (`nodewright snapshot
--as-nodepools FILE`).

The unmanaged nodes are grouped by their node group (the EKS managed node group label,
eksctl's, Karpenter-less Auto Scaling groups' `node.kubernetes.io/nodegroup`-style labels
as present, else one group `unmanaged`). Each group gets a NodePool allowing the instance
families, architectures, zones and capacity types its nodes run, with the labels and
taints all of them carry (so the pods that select or tolerate them still land there),
consolidating when underutilized. The NodePool's `nodewright.io/takes-over` annotation
names the group: `nodewright simulate SNAPSHOT --compare FILE` turns that group's Nodes
into NodeClaims of the NodePool, with their pods, and so shows what the takeover saves.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from nodewright.cluster import objects
from nodewright.scheduling import labels as well_known

TAKES_OVER = "nodewright.io/takes-over"
GROUP_LABELS = ("eks.amazonaws.com/nodegroup", "alpha.eksctl.io/nodegroup-name",
                "karpenter.sh/nodegroup", "node-group")
UNGROUPED = "unmanaged"
_SYSTEM_DOMAINS = ("kubernetes.io", "k8s.io", "amazonaws.com", "eksctl.io", "karpenter.sh",
                   "k8s.aws")
_FAMILY = re.compile(r"^([a-z0-9-]+)\.")


def group_of(node: Mapping[str, Any]) -> str:
    labels = objects.labels(node)
    return next((labels[key] for key in GROUP_LABELS if labels.get(key)), UNGROUPED)


def propose(nodes: Sequence[Mapping[str, Any]], node_class: str) -> list[dict[str, Any]]:
    """One NodePool per node group of `nodes`, using the EC2NodeClass `node_class`."""
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for node in nodes:
        groups.setdefault(group_of(node), []).append(node)
    return [_nodepool(group, members, node_class) for group, members in sorted(groups.items())]


def _nodepool(group: str, nodes: Sequence[Mapping[str, Any]], node_class: str
              ) -> dict[str, Any]:
    labels = [objects.labels(n) for n in nodes]
    families = sorted({m[1] for lab in labels
                       if (m := _FAMILY.match(lab.get(well_known.INSTANCE_TYPE, "")))})
    zones = sorted({lab[well_known.ZONE] for lab in labels if lab.get(well_known.ZONE)})
    arches = sorted({lab.get(well_known.ARCH, "amd64") for lab in labels})
    capacity = sorted({"spot" if (lab.get("eks.amazonaws.com/capacityType", "")
                                  .lower() == "spot" or lab.get(well_known.CAPACITY_TYPE)
                                  == "spot") else "on-demand" for lab in labels})
    common = dict(labels[0])
    for other in labels[1:]:
        common = {k: v for k, v in common.items() if other.get(k) == v}
    kept_labels = {k: v for k, v in sorted(common.items()) if not _is_system(k)}
    taint_sets = [{(t.get("key"), t.get("value"), t.get("effect"))
                   for t in (n.get("spec") or {}).get("taints") or []
                   if not _is_system(str(t.get("key") or ""))} for n in nodes]
    taints = set.intersection(*taint_sets) if taint_sets else set()
    requirements: list[dict[str, Any]] = []
    if families:
        requirements.append({"key": "karpenter.k8s.aws/instance-family", "operator": "In",
                             "values": families})
    requirements += [
        {"key": well_known.ARCH, "operator": "In", "values": arches},
        {"key": well_known.CAPACITY_TYPE, "operator": "In", "values": capacity},
    ]
    if zones:
        requirements.append({"key": well_known.ZONE, "operator": "In", "values": zones})
    spec: dict[str, Any] = {
        "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                         "name": node_class},
        "requirements": requirements,
    }
    if taints:
        spec["taints"] = [{k: v for k, v in (("key", key), ("value", value),
                                              ("effect", effect)) if v}
                          for key, value, effect in sorted(taints, key=str)]
    template: dict[str, Any] = {"spec": spec}
    if kept_labels:
        template["metadata"] = {"labels": kept_labels}
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": _pool_name(group), "annotations": {TAKES_OVER: group}},
        "spec": {
            "template": template,
            "disruption": {"consolidationPolicy": "WhenEmptyOrUnderutilized",
                           "consolidateAfter": "1m"},
        },
    }


def _is_system(key: str) -> bool:
    """A label the kubelet, EKS or the autoscaler sets (a NodePool may not set most)."""
    domain = key.partition("/")[0] if "/" in key else ""
    return any(domain == d or domain.endswith("." + d) for d in _SYSTEM_DOMAINS)


def _pool_name(group: str) -> str:
    name = re.sub(r"[^a-z0-9-]+", "-", group.lower()).strip("-") or UNGROUPED
    return name[:63].rstrip("-")


def default_node_class(cluster_name: str = "my-cluster") -> dict[str, Any]:
    """An EC2NodeClass for the proposed NodePools when the cluster has none."""
    selector = [{"tags": {"karpenter.sh/discovery": cluster_name}}]
    return {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "default"},
        "spec": {
            "amiSelectorTerms": [{"alias": "al2023@latest"}],
            "role": f"KarpenterNodeRole-{cluster_name}",
            "subnetSelectorTerms": selector,
            "securityGroupSelectorTerms": selector,
        },
    }
