"""Security-group rules: no ingress from the whole internet."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from nodewright.policy.fields import items_of, strings_of
from nodewright.policy.rule import Enforcement, FieldPath, Rule, RuleContext, Violation

SECURITY_GROUP = "aws:ec2/securityGroup:SecurityGroup"
SECURITY_GROUP_RULE = "aws:ec2/securityGroupRule:SecurityGroupRule"
INGRESS_RULE = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
WORLD = frozenset({"0.0.0.0/0", "::/0"})


def _world_cidrs(entry: Mapping[str, Any], *keys: str) -> list[str]:
    return sorted({cidr for key in keys for cidr in strings_of(entry.get(key))} & WORLD)


def _ports(entry: Mapping[str, Any]) -> str:
    low, high = entry.get("fromPort"), entry.get("toPort")
    if entry.get("protocol") in {"-1", -1, "all"} or (low is None and high is None):
        return "all ports"
    return f"port {low:g}" if low == high else f"ports {low:g}-{high:g}"


def _violation(cidrs: list[str], entry: Mapping[str, Any], path: FieldPath) -> Violation:
    return Violation(f"ingress from {', '.join(cidrs)} is allowed on {_ports(entry)}.", path)


def check_public_ingress(props: Mapping[str, Any], context: RuleContext) -> Iterator[Violation]:
    for index, rule in items_of(props.get("ingress")):
        if isinstance(rule, Mapping):
            cidrs = _world_cidrs(rule, "cidrBlocks", "ipv6CidrBlocks")
            if cidrs:
                yield _violation(cidrs, rule, ("ingress", index))
    if props.get("type") == "ingress":
        cidrs = _world_cidrs(props, "cidrBlocks", "ipv6CidrBlocks")
        if cidrs:
            yield _violation(cidrs, props, ("cidrBlocks",))
    cidrs = _world_cidrs(props, "cidrIpv4", "cidrIpv6")
    if cidrs:
        yield _violation(cidrs, props, ("cidrIpv4",))


NO_PUBLIC_INGRESS = Rule(
    name="security-group-no-public-ingress",
    description=(
        "No security group in the stack (the nodes' groups among them) admits ingress from "
        "0.0.0.0/0 or ::/0."
    ),
    remediation=(
        "allow ingress only from the cluster security group, the VPC CIDR or a load "
        "balancer's security group (source_security_group_id / referenced_security_group_id); "
        "expose services through a load balancer instead of node ports."
    ),
    enforcement=Enforcement.MANDATORY,
    check=check_public_ingress,
    resource_types=(SECURITY_GROUP, SECURITY_GROUP_RULE, INGRESS_RULE),
)

NETWORK_RULES: tuple[Rule, ...] = (NO_PUBLIC_INGRESS,)
