"""Resolving an EC2NodeClass's selector terms into concrete subnets and security groups.

Terms are OR'd; the fields within one term are AND'd. A tag value of "*" matches any value
of that key. Every term that matched nothing is reported, so users can see which one is
wrong instead of guessing."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from nodewright.cloud.aws.errors import aws_call

if TYPE_CHECKING:
    from mypy_boto3_ec2 import EC2Client

    from nodewright.api.ec2nodeclass import SecurityGroupSelectorTerm, SubnetSelectorTerm


@dataclass(frozen=True)
class Subnet:
    id: str
    zone: str
    zone_id: str
    free_ips: int
    tags: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class SecurityGroup:
    id: str
    name: str
    tags: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class UnmatchedTerm:
    """A selector term that matched nothing: `field` like "subnetSelectorTerms[1]"."""

    field: str
    term: Mapping[str, Any]

    def describe(self) -> str:
        return f"{self.field} {dict(self.term)} matched nothing"


def tag_filters(tags: Mapping[str, str]) -> list[dict[str, Any]]:
    """EC2 filters for a tag selector: "*" means the key exists with any value."""
    filters: list[dict[str, Any]] = []
    for key, value in sorted(tags.items()):
        if value == "*":
            filters.append({"Name": "tag-key", "Values": [key]})
        else:
            filters.append({"Name": f"tag:{key}", "Values": [value]})
    return filters


def tags_of(resource: Mapping[str, Any]) -> dict[str, str]:
    return {str(tag["Key"]): str(tag["Value"]) for tag in resource.get("Tags", []) or []}


def _term_dict(term: SubnetSelectorTerm | SecurityGroupSelectorTerm) -> dict[str, Any]:
    return term.model_dump(by_alias=True, exclude_none=True)


def discover_subnets(
    ec2: EC2Client, terms: Sequence[SubnetSelectorTerm]
) -> tuple[list[Subnet], list[UnmatchedTerm]]:
    """Available subnets matching any term, sorted by zone then most free IPs first."""
    found: dict[str, Subnet] = {}
    unmatched: list[UnmatchedTerm] = []
    for index, term in enumerate(terms):
        filters: list[dict[str, Any]] = [{"Name": "state", "Values": ["available"]}]
        # As Karpenter's getFilterSets: a term's id wins, its tags are not applied.
        if term.id:
            filters.append({"Name": "subnet-id", "Values": [term.id]})
        else:
            filters.extend(tag_filters(term.tags or {}))
        matched = 0
        with aws_call("ec2:DescribeSubnets", f"subnetSelectorTerms[{index}]"):
            for page in ec2.get_paginator("describe_subnets").paginate(Filters=cast(Any, filters)):
                for raw in page.get("Subnets", []):
                    matched += 1
                    subnet = Subnet(
                        id=raw["SubnetId"],
                        zone=raw["AvailabilityZone"],
                        zone_id=raw.get("AvailabilityZoneId", ""),
                        free_ips=int(raw.get("AvailableIpAddressCount", 0)),
                        tags=tags_of(raw),
                    )
                    found[subnet.id] = subnet
        if matched == 0:
            unmatched.append(UnmatchedTerm(f"subnetSelectorTerms[{index}]", _term_dict(term)))
    subnets = sorted(found.values(), key=lambda s: (s.zone, -s.free_ips, s.id))
    return subnets, unmatched


def discover_security_groups(
    ec2: EC2Client, terms: Sequence[SecurityGroupSelectorTerm]
) -> tuple[list[SecurityGroup], list[UnmatchedTerm]]:
    found: dict[str, SecurityGroup] = {}
    unmatched: list[UnmatchedTerm] = []
    for index, term in enumerate(terms):
        filters: list[dict[str, Any]] = []
        # As Karpenter's getFilterSets: id, else name, else tags; the others are not applied.
        if term.id:
            filters.append({"Name": "group-id", "Values": [term.id]})
        elif term.name:
            filters.append({"Name": "group-name", "Values": [term.name]})
        else:
            filters.extend(tag_filters(term.tags or {}))
        matched = 0
        with aws_call("ec2:DescribeSecurityGroups", f"securityGroupSelectorTerms[{index}]"):
            paginator = ec2.get_paginator("describe_security_groups")
            for page in paginator.paginate(Filters=cast(Any, filters)):
                for raw in page.get("SecurityGroups", []):
                    matched += 1
                    group = SecurityGroup(
                        id=raw["GroupId"],
                        name=raw.get("GroupName", ""),
                        tags=tags_of(raw),
                    )
                    found[group.id] = group
        if matched == 0:
            unmatched.append(
                UnmatchedTerm(f"securityGroupSelectorTerms[{index}]", _term_dict(term))
            )
    return sorted(found.values(), key=lambda g: g.id), unmatched
