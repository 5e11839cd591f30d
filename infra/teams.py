"""EC2NodeClasses, NodePools and team NodePools from stack config, as typed components.

A team gets a NodePool `team-<name>` whose nodes are labelled and tainted team=<name>, so
only that team's pods (which select and tolerate it) land there. It uses a shared
EC2NodeClass or its own `team-<name>` class. Invalid specs stop the program with the config
key and the field path.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any

import pulumi

from infra.components import (
    EC2NodeClass,
    EC2NodeClassArgs,
    InvalidResourceError,
    NodePool,
    NodePoolArgs,
)
from infra.components.ec2nodeclass import API_VERSION as NODE_CLASS_API_VERSION
from infra.components.ec2nodeclass import GROUP as NODE_CLASS_GROUP
from infra.components.ec2nodeclass import KIND as NODE_CLASS_KIND
from infra.components.errors import validated_manifest
from infra.components.nodepool import API_VERSION as NODE_POOL_API_VERSION
from infra.components.nodepool import KIND as NODE_POOL_KIND
from infra.config import StackConfigError, StackSettings, TeamSettings
from infra.naming import (
    DEFAULT_NODE_CLASS,
    DISCOVERY_TAG,
    TEAM_LABEL,
    team_node_class_name,
    team_node_pool_name,
)

DEFAULT_AMI_ALIAS = "al2023@latest"


@dataclass(frozen=True)
class PlannedNodeClass:
    key: str  # the config key it came from, for error messages
    name: str
    spec: dict[str, Any]


@dataclass(frozen=True)
class PlannedNodePool:
    key: str
    name: str
    spec: dict[str, Any]
    node_class: str


@dataclass(frozen=True)
class NodePlan:
    node_classes: tuple[PlannedNodeClass, ...]
    node_pools: tuple[PlannedNodePool, ...]


@dataclass(frozen=True)
class NodeResources:
    node_classes: dict[str, EC2NodeClass]
    node_pools: dict[str, NodePool]


def node_class_spec(raw: dict[str, Any], cluster_name: str, node_role: str) -> dict[str, Any]:
    """A node class spec with the stack's defaults: the node role, discovery, AL2023."""
    spec = copy.deepcopy(raw)
    discovery = [{"tags": {DISCOVERY_TAG: cluster_name}}]
    if "role" not in spec and "instanceProfile" not in spec:
        spec["role"] = node_role
    spec.setdefault("subnetSelectorTerms", discovery)
    spec.setdefault("securityGroupSelectorTerms", copy.deepcopy(discovery))
    spec.setdefault("amiSelectorTerms", [{"alias": DEFAULT_AMI_ALIAS}])
    return spec


def team_node_pool_spec(team: TeamSettings) -> dict[str, Any]:
    requirements: list[dict[str, Any]] = [
        {"key": "karpenter.sh/capacity-type", "operator": "In",
         "values": list(team.capacity_types)},
        {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
    ]
    if team.instance_families:
        requirements.append({"key": "karpenter.k8s.aws/instance-family", "operator": "In",
                             "values": list(team.instance_families)})
    spec: dict[str, Any] = {
        "template": {
            "metadata": {"labels": {TEAM_LABEL: team.name}},
            "spec": {
                "taints": [{"key": TEAM_LABEL, "value": team.name, "effect": "NoSchedule"}],
                "requirements": requirements,
                # Karpenter's default, written out: the policy pack wants every NodePool to
                # say how long its nodes may live.
                "expireAfter": "720h",
            },
        },
    }
    if team.limits:
        spec["limits"] = dict(team.limits)
    if team.weight is not None:
        spec["weight"] = team.weight
    return spec


def plan_node_resources(settings: StackSettings, node_role: str) -> NodePlan:
    """Every EC2NodeClass and NodePool of the stack, validated before anything is created."""
    cluster = settings.cluster_name
    classes: list[PlannedNodeClass] = []
    for name, raw in {DEFAULT_NODE_CLASS: {}, **settings.node_classes}.items():
        classes.append(
            PlannedNodeClass(f"nodeClasses.{name}", name, node_class_spec(raw, cluster, node_role))
        )
    pools: list[PlannedNodePool] = []
    for name, raw in settings.node_pools.items():
        key = f"nodePools.{name}"
        node_class = _referenced_class(raw, key, {planned.name for planned in classes})
        pools.append(PlannedNodePool(key, name, _with_node_class(raw, node_class), node_class))

    for team in settings.teams:
        key = f"teams.{team.name}"
        class_name = team.shared_node_class or DEFAULT_NODE_CLASS
        if team.own_node_class is not None:
            class_name = team_node_class_name(team.name)
            own = node_class_spec(team.own_node_class, cluster, node_role)
            own.setdefault("tags", {}).setdefault(TEAM_LABEL, team.name)
            classes.append(PlannedNodeClass(f"{key}.nodeClass", class_name, own))
        pool_name = team_node_pool_name(team.name)
        if any(pool.name == pool_name for pool in pools):
            raise StackConfigError(key, f"its NodePool {pool_name!r} is also in nodePools")
        spec = _with_node_class(team_node_pool_spec(team), class_name)
        pools.append(PlannedNodePool(key, pool_name, spec, class_name))

    for planned_class in classes:
        _check(planned_class.key, NODE_CLASS_API_VERSION, NODE_CLASS_KIND, planned_class.name,
               planned_class.spec)
        _check_role(planned_class, node_role)
    for pool in pools:
        _check(pool.key, NODE_POOL_API_VERSION, NODE_POOL_KIND, pool.name, pool.spec)
    return NodePlan(tuple(classes), tuple(pools))


def build_node_resources(plan: NodePlan, opts: pulumi.ResourceOptions) -> NodeResources:
    """The components of a plan. `opts` carries the Kubernetes provider and the CRDs."""
    classes = {
        planned.name: EC2NodeClass(planned.name, EC2NodeClassArgs(spec=planned.spec), opts)
        for planned in plan.node_classes
    }
    pools = {
        pool.name: NodePool(
            pool.name, NodePoolArgs(spec=pool.spec, node_class=classes[pool.node_class]), opts
        )
        for pool in plan.node_pools
    }
    return NodeResources(node_classes=classes, node_pools=pools)


def _with_node_class(raw: dict[str, Any], node_class: str) -> dict[str, Any]:
    spec = copy.deepcopy(raw)
    template = spec.setdefault("template", {})
    template_spec = template.setdefault("spec", {}) if isinstance(template, dict) else None
    if isinstance(template_spec, dict):
        template_spec["nodeClassRef"] = {
            "group": NODE_CLASS_GROUP, "kind": NODE_CLASS_KIND, "name": node_class
        }
    return spec


def _check(key: str, api_version: str, kind: str, name: str, spec: dict[str, Any]) -> None:
    try:
        validated_manifest(api_version, kind, name, spec, labels={})
    except InvalidResourceError as error:
        raise StackConfigError(key, str(error)) from None


def _check_role(planned: PlannedNodeClass, node_role: str) -> None:
    """The controller may pass the stack's node role alone (its AllowPassingNodeRole, as
    Karpenter's AllowPassingInstanceRole), and only that role has the EC2_LINUX access entry
    nodes join with: a class naming another role could get no instance profile (IAM's
    AddRoleToInstanceProfile needs iam:PassRole) and launch nothing. `instanceProfile`
    cannot be checked here (the profile's role is IAM's to tell)."""
    role = planned.spec.get("role")
    if role is None:
        return
    arn = re.compile(rf"^arn:[a-z-]+:iam::\d{{12}}:role/{re.escape(node_role)}$")
    if role == node_role or arn.match(str(role)):
        return
    raise StackConfigError(
        f"{planned.key}.role",
        f"{role!r} is not the stack's node role {node_role!r}: the controller may pass only "
        "that role to EC2 and only it can join the cluster (leave role out to use it)",
    )


def _referenced_class(raw: dict[str, Any], key: str, classes: set[str]) -> str:
    template = raw.get("template")
    template_spec = template.get("spec") if isinstance(template, dict) else None
    ref = template_spec.get("nodeClassRef") if isinstance(template_spec, dict) else None
    if ref is None:
        return DEFAULT_NODE_CLASS
    name = ref.get("name") if isinstance(ref, dict) else None
    if name not in classes:
        raise StackConfigError(
            f"{key}.template.spec.nodeClassRef.name",
            f"names no EC2NodeClass of this stack ({', '.join(sorted(classes))}), got {name!r}",
        )
    return str(name)

