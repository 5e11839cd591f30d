"""Every AWS call the provider makes during the AWS tests, and what IAM would authorize it on.

`record(client)` (from conftest's recorder) keeps, for the whole test session, the calls made
from Nodewright's own code (a call a test makes to set moto up is not the provider's). For
the calls that act on existing resources it also notes those resources' tags at call time
(read from moto's state, not through the API). `requests_of` turns a call into the
authorization requests IAM evaluates: action, resource ARN and condition context.
"""

from __future__ import annotations

import copy
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from botocore.client import BaseClient

from .world import ACCOUNT


@dataclass(frozen=True)
class Call:
    action: str
    params: Mapping[str, Any]
    region: str
    # resource id or name -> its tags when the call was made (mutating calls only)
    resource_tags: Mapping[str, Mapping[str, str]] = field(default_factory=dict)


SESSION: list[Call] = []
# launch template name -> the CreateLaunchTemplate request that made it (data and tags)
TEMPLATES: dict[str, Mapping[str, Any]] = {}


def _from_provider() -> bool:
    frame = sys._getframe(2)
    while frame is not None:
        if str(frame.f_globals.get("__name__", "")).startswith("nodewright."):
            return True
        frame = frame.f_back  # type: ignore[assignment]
    return False


def _tags(raw: Any) -> dict[str, str]:
    return {str(t["Key"]): str(t["Value"]) for t in raw or []}


def _snapshot(action: str, params: Mapping[str, Any], region: str) -> dict[str, dict[str, str]]:
    from moto.ec2.models import ec2_backends
    from moto.iam.models import iam_backends

    if action == "ec2:TerminateInstances":
        ec2 = ec2_backends[ACCOUNT][region]
        return {i: dict(ec2.tags.get(i, {})) for i in params.get("InstanceIds", [])}
    if action == "ec2:CreateTags":
        ec2 = ec2_backends[ACCOUNT][region]
        return {str(r): dict(ec2.tags.get(r, {})) for r in params.get("Resources", [])}
    if action == "ec2:DeleteLaunchTemplate":
        ec2 = ec2_backends[ACCOUNT][region]
        name = params.get("LaunchTemplateName")
        template_id = params.get("LaunchTemplateId") or ec2.launch_template_name_to_ids.get(
            str(name), "")
        return {str(name or template_id): dict(ec2.tags.get(template_id, {}))}
    if action.startswith("iam:") and "InstanceProfileName" in params:
        name = str(params["InstanceProfileName"])
        try:
            profile = iam_backends[ACCOUNT]["global"].get_instance_profile(name)
        except Exception:  # created by this very call: no tags yet
            return {name: {}}
        return {name: _tags(profile.tags)}
    return {}


def record(client: BaseClient) -> None:
    region = client.meta.region_name

    def capture(params: dict[str, Any], model: Any, **_: Any) -> None:
        if not _from_provider():
            return
        action = f"{model.service_model.signing_name}:{model.name}"
        kept = copy.deepcopy(params)
        SESSION.append(Call(action, kept, region, _snapshot(action, kept, region)))
        if action == "ec2:CreateLaunchTemplate":
            TEMPLATES[str(kept["LaunchTemplateName"])] = kept

    client.meta.events.register("provide-client-params.*.*", capture)


# --- authorization requests ----------------------------------------------------------------


@dataclass(frozen=True)
class Request:
    action: str
    resource: str
    request_tags: Mapping[str, str] = field(default_factory=dict)
    resource_tags: Mapping[str, str] = field(default_factory=dict)
    context: Mapping[str, str] = field(default_factory=dict)
    # what it came from, for messages
    call: str = ""


def _ec2(region: str, kind: str, name: str, account: str = ACCOUNT) -> str:
    return f"arn:aws:ec2:{region}:{account}:{kind}/{name}"


def _launch(call: Call, template: Mapping[str, Any], node_role: str) -> Iterator[Request]:
    """RunInstances or CreateFleet: what the launch creates (tagged in the request), the
    existing resources it uses, the launch template and the role it passes."""
    region, action = call.region, call.action
    data = template.get("LaunchTemplateData", {})
    name = str(template.get("LaunchTemplateName", ""))
    created = ["instance", "volume", "network-interface"]
    if action == "ec2:CreateFleet":
        created.append("fleet")
    asked = call.params
    spot = (asked.get("TargetCapacitySpecification", {}).get("DefaultTargetCapacityType")
            == "spot") or bool(asked.get("InstanceMarketOptions"))
    if spot:
        created.append("spot-instances-request")
    request_tags: dict[str, str] = {}
    tagged: set[str] = set()
    # The launch template's own tag specifications are part of the launch's request.
    for spec in [*asked.get("TagSpecifications", []), *data.get("TagSpecifications", [])]:
        request_tags.update(_tags(spec.get("Tags")))
        tagged.add(str(spec.get("ResourceType")))
    for kind in created:
        # Creating a resource is authorized against every tag of the request; tagging it,
        # for the resource types the request tags.
        yield Request(action, _ec2(region, kind, "new"), request_tags=request_tags,
                      call=action)
        if kind in tagged:
            yield Request("ec2:CreateTags", _ec2(region, kind, "new"),
                          request_tags=request_tags,
                          context={"ec2:CreateAction": action.split(":")[1]}, call=action)
    yield Request(action, _ec2(region, "launch-template", name),
                  resource_tags=_tags(template.get("TagSpecifications", [{}])[0].get("Tags")),
                  call=action)
    overrides = [o for c in asked.get("LaunchTemplateConfigs", [])
                 for o in c.get("Overrides", [])]
    images = {o.get("ImageId") for o in overrides} | {data.get("ImageId")}
    subnets = {o.get("SubnetId") for o in overrides} | {
        i.get("SubnetId") for i in asked.get("NetworkInterfaces", [])}
    groups = set(data.get("SecurityGroupIds", [])) | {
        g for i in data.get("NetworkInterfaces", []) for g in i.get("Groups", [])}
    for image in sorted(i for i in images if i):
        yield Request(action, f"arn:aws:ec2:{region}::image/{image}", call=action)
    # An EBS-backed image's snapshots are used by the launch too.
    yield Request(action, f"arn:aws:ec2:{region}::snapshot/snap-image", call=action)
    for subnet in sorted(s for s in subnets if s):
        yield Request(action, _ec2(region, "subnet", subnet), call=action)
    for group in sorted(groups):
        yield Request(action, _ec2(region, "security-group", group), call=action)
    reservation = data.get("CapacityReservationSpecification", {}).get(
        "CapacityReservationTarget", {}).get("CapacityReservationId")
    if reservation:
        yield Request(action, _ec2(region, "capacity-reservation", reservation), call=action)
    placement = data.get("Placement", {})
    if placement.get("GroupId") or placement.get("GroupName"):
        group = placement.get("GroupId") or placement.get("GroupName")
        yield Request(action, _ec2(region, "placement-group", group), call=action)
    if data.get("IamInstanceProfile"):
        yield Request("iam:PassRole", node_role,
                      context={"iam:PassedToService": "ec2.amazonaws.com"}, call=action)


def requests_of(call: Call, node_role: str) -> list[Request]:
    """The authorization requests IAM evaluates for one call."""
    action, params, region = call.action, call.params, call.region
    service, operation = action.split(":", 1)
    if service == "ec2" and operation.startswith("Describe"):
        return [Request(action, "*", context={"aws:RequestedRegion": region})]
    if action == "ssm:GetParameter":
        return [Request(action, f"arn:aws:ssm:{region}::parameter{params['Name']}")]
    if action == "arc-zonal-shift:GetManagedResource":
        return [Request(action, "*", context={
            "arc-zonal-shift:ResourceIdentifier": str(params["resourceIdentifier"])})]
    if action in ("pricing:GetProducts",):
        return [Request(action, "*")]
    if action == "eks:DescribeCluster":
        return [Request(action, f"arn:aws:eks:{region}:{ACCOUNT}:cluster/{params['name']}")]
    if service == "sqs":
        queue = str(params.get("QueueName") or str(params.get("QueueUrl", "")).rsplit("/")[-1])
        return [Request(action, f"arn:aws:sqs:{region}:{ACCOUNT}:{queue}")]
    if action == "ec2:CreateLaunchTemplate":
        tags = _tags(params.get("TagSpecifications", [{}])[0].get("Tags"))
        arn = _ec2(region, "launch-template", str(params["LaunchTemplateName"]))
        return [Request(action, arn, request_tags=tags),
                Request("ec2:CreateTags", arn, request_tags=tags,
                        context={"ec2:CreateAction": "CreateLaunchTemplate"})]
    if action in ("ec2:CreateFleet", "ec2:RunInstances"):
        names = {str(c.get("LaunchTemplateSpecification", {}).get("LaunchTemplateName"))
                 for c in params.get("LaunchTemplateConfigs", [])}
        if params.get("LaunchTemplate"):
            names.add(str(params["LaunchTemplate"].get("LaunchTemplateName")))
        found: list[Request] = []
        for name in sorted(names):
            template = TEMPLATES.get(name, {"LaunchTemplateName": name})
            found.extend(_launch(call, template, node_role))
        return found
    if action == "ec2:CreateTags":
        # Tagging an existing instance (a NodeClaim's own tags after a shared fleet).
        return [Request(action, _ec2(region, "instance", name),
                        request_tags=_tags(params.get("Tags")), resource_tags=tags)
                for name, tags in call.resource_tags.items()]
    if action in ("ec2:TerminateInstances", "ec2:DeleteLaunchTemplate"):
        kind = "instance" if action == "ec2:TerminateInstances" else "launch-template"
        return [Request(action, _ec2(region, kind, name), resource_tags=tags)
                for name, tags in call.resource_tags.items()]
    if service == "iam" and action == "iam:ListInstanceProfiles":
        return [Request(action, f"arn:aws:iam::{ACCOUNT}:instance-profile"
                                f"{params.get('PathPrefix', '/')}")]
    if service == "iam":
        name = str(params["InstanceProfileName"])
        path = str(params.get("Path", "/"))
        arn = f"arn:aws:iam::{ACCOUNT}:instance-profile{path}{name}"
        tags = _tags(params.get("Tags"))
        found = [Request(action, arn, request_tags=tags,
                         resource_tags=call.resource_tags.get(name, {}))]
        if action == "iam:CreateInstanceProfile" and tags:
            # Creating with tags needs iam:TagInstanceProfile too.
            found.append(Request("iam:TagInstanceProfile", arn, request_tags=tags,
                                 resource_tags=tags))
        return found
    raise AssertionError(f"no authorization model for {action}: add one in {__name__}")
