"""Least privilege, proven by the calls: the controller policy infra/ renders allows every AWS
call the provider makes (resource ARNs, tags and conditions included), and every statement,
action and resource type it grants is needed by some call.

Moto enforces no IAM: the calls are recorded (tests/aws/provider_calls.py) and evaluated
against the policy document here. The first test drives every provider path itself, so it
stands alone; the last one checks every call the whole AWS suite made (it runs after the
other AWS tests, see conftest's ordering hook).
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from infra.controller_policy import PolicyTarget, controller_policy_document
from nodewright.cloud.aws.batcher import Window
from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.ec2_batcher import BatchWindows
from nodewright.cloud.aws.instance_statuses import InstanceStatusProvider
from nodewright.cloud.aws.interruption_queue import InterruptionQueue
from nodewright.cloud.aws.pricing import LivePriceSource
from nodewright.cloud.aws.provider import AwsCloudProvider
from nodewright.cloud.aws.zonal_shift import ZonalShifts
from nodewright.scheduling.pricing import OfflinePriceSource

from . import provider_calls
from .failing_calls import answer, failing
from .provider_calls import Call, Request, requests_of
from .reservations import FakeCapacityReservations, FakeReservation
from .test_placement_groups import PlacementGroups
from .world import ACCOUNT, CLUSTER, FakeClock, World, node_class, nodeclaim

REGION = "us-west-2"
NODE_ROLE = f"arn:aws:iam::{ACCOUNT}:role/KarpenterNodeRole-{CLUSTER}"
QUEUE = "nodewright-demo"
# Granted so a user's own setup works, not for a call of the provider's: a user's own
# ssmParameter outside /aws/service/ needs the user's own grant, as with Karpenter.
USER_GRANTED_SSM = "user's own ssmParameter outside /aws/service/"


def policy(queue: str = QUEUE) -> dict[str, Any]:
    return controller_policy_document(PolicyTarget(
        cluster_name=CLUSTER, region=REGION, partition="aws", account_id=ACCOUNT,
        node_role_arn=NODE_ROLE, queue_arn=f"arn:aws:sqs:{REGION}:{ACCOUNT}:{queue}"))


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _value(key: str, request: Request) -> Any:
    if key.startswith("aws:RequestTag/"):
        return request.request_tags.get(key.removeprefix("aws:RequestTag/"))
    if key.startswith("aws:ResourceTag/"):
        return request.resource_tags.get(key.removeprefix("aws:ResourceTag/"))
    if key == "aws:TagKeys":
        return list(request.request_tags)
    return request.context.get(key)


def _holds(condition: Mapping[str, Mapping[str, Any]], request: Request) -> bool:
    for operator, clauses in condition.items():
        for key, wanted in clauses.items():
            actual, allowed = _value(key, request), [str(v) for v in _as_list(wanted)]
            if operator == "StringEquals":
                ok = actual is not None and str(actual) in allowed
            elif operator == "StringLike":
                ok = actual is not None and any(
                    fnmatch.fnmatchcase(str(actual), pattern) for pattern in allowed)
            elif operator == "StringEqualsIfExists":
                ok = actual is None or str(actual) in allowed
            elif operator == "ForAllValues:StringEquals":
                ok = all(str(value) in allowed for value in actual or [])
            else:
                raise AssertionError(f"the evaluator does not know {operator}")
            if not ok:
                return False
    return True


Grant = tuple[str, str, str]  # (statement Sid, action, resource pattern)


def grants_used(request: Request, document: Mapping[str, Any]) -> list[Grant]:
    """The (statement, action, resource pattern) triples that allow the request."""
    used: list[Grant] = []
    for statement in document["Statement"]:
        assert statement["Effect"] == "Allow"
        actions = [a for a in _as_list(statement["Action"])
                   if fnmatch.fnmatchcase(request.action, a)]
        patterns = [r for r in _as_list(statement["Resource"])
                    if fnmatch.fnmatchcase(request.resource, r)]
        if actions and patterns and _holds(statement.get("Condition", {}), request):
            used += [(statement["Sid"], a, r) for a in actions for r in patterns]
    return used


def every_grant(document: Mapping[str, Any]) -> set[Grant]:
    return {(s["Sid"], a, r) for s in document["Statement"]
            for a in _as_list(s["Action"]) for r in _as_list(s["Resource"])}


def evaluate(calls: Sequence[Call]) -> tuple[list[str], set[Grant]]:
    """(what the policy denies, the grants some call used)."""
    denied: list[str] = []
    used: set[Grant] = set()
    for call in calls:
        if call.action == "ssm:GetParameter" and not str(
                call.params["Name"]).startswith("/aws/service/"):
            continue  # USER_GRANTED_SSM
        queue = str(call.params.get("QueueName") or str(
            call.params.get("QueueUrl", QUEUE)).rsplit("/")[-1])
        document = policy(queue)
        for request in requests_of(call, NODE_ROLE):
            allowing = grants_used(request, document)
            if not allowing:
                denied.append(f"{request.action} on {request.resource} (from {call.action}; "
                              f"request tags {json.dumps(dict(request.request_tags))}, "
                              f"resource tags {json.dumps(dict(request.resource_tags))}, "
                              f"context {json.dumps(dict(request.context))})")
            used.update(allowing)
    return denied, used


def drive_every_path(clients: AwsClients, world: World, clock: FakeClock) -> None:
    """Each thing the provider does against AWS, once."""
    reservations = FakeCapacityReservations(clients)
    reservations.add(FakeReservation("cr-1", "m5.large", f"{REGION}a", available=1,
                                     tags={"team": "ml"}))
    groups = PlacementGroups()
    groups.add("training", "pg-0a1b2c3d", "cluster")
    clients.ec2.meta.events.register("provide-client-params.ec2.DescribePlacementGroups",
                                     groups.remember)
    clients.ec2.meta.events.register("before-call.ec2.DescribePlacementGroups", groups)
    provider = AwsCloudProvider(clients, CLUSTER, clock=clock, prices=OfflinePriceSource(),
                                dry_run=True, wall_clock=lambda: datetime.now(UTC))
    types = {"key": "node.kubernetes.io/instance-type", "operator": "In",
             "values": ["m5.large", "c5.large"]}

    def capacity(*kinds: str) -> list[dict[str, Any]]:
        return [types, {"key": "karpenter.sh/capacity-type", "operator": "In",
                        "values": list(kinds)}]

    # Resolution with the dry-run checks (and the instance profile), then launches.
    assert provider.resolve(node_class()).ready
    on_demand = provider.create(nodeclaim("od-1", uid="uid-od"), node_class())
    spot = provider.create(nodeclaim("spot-1", uid="uid-spot",
                                     requirements=capacity("spot")), node_class())
    reserved = provider.create(
        nodeclaim("cr-1", uid="uid-cr", requirements=capacity("reserved")),
        node_class("reserving", capacityReservationSelectorTerms=[{"tags": {"team": "ml"}}]))
    grouped = provider.create(nodeclaim("pg-1", uid="uid-pg"),
                              node_class("grouped", placementGroupSelector={"name": "training"}))
    # Two NodeClaims asking the same, launched together: one fleet, then each instance is
    # tagged with its own NodeClaim (the fleet window closes on the second launch).
    together = AwsCloudProvider(clients, CLUSTER, clock=clock, prices=OfflinePriceSource(),
                                batch_windows=BatchWindows(create_fleet=Window(30, 30, 2)))
    with ThreadPoolExecutor(max_workers=2) as pool:
        shared = list(pool.map(lambda name: together.create(
            nodeclaim(name, uid=f"uid-{name}"), node_class()), ("shared-1", "shared-2")))
    provider.get(on_demand.provider_id)
    InstanceStatusProvider(clients.ec2).list()
    # Deletion, drift and garbage collection of instances, templates and profiles.
    for instance in (on_demand, spot, reserved, grouped, *shared):
        provider.delete(instance.provider_id)
    clock.advance(3601)  # past the profiles' protection
    provider.collect_cloud_garbage({"default"}, current_profiles=set())
    provider.delete_node_class_resources("default")
    # Prices: the Pricing API (answered here: moto has none) and spot prices.
    with failing(clients.pricing) as pricing:
        pricing.queue("GetProducts", answer({"PriceList": [], "FormatVersion": "aws_v1"}))
        prices = LivePriceSource(clients.pricing, clients.ec2, REGION, clock=clock)
        prices.on_demand("m5.large", REGION)
        prices.spot("m5.large", f"{REGION}a")
    # ENABLE_ZONAL_SHIFT: the cluster's zonal shifts (moto has no ARC: botocore's Stubber).
    arc = boto3.session.Session().client("arc-zonal-shift", region_name=REGION)
    provider_calls.record(arc)
    cluster_arn = f"arn:aws:eks:{REGION}:{ACCOUNT}:cluster/{CLUSTER}"
    with Stubber(arc) as stubbed:
        stubbed.add_response("get_managed_resource", {"zonalShifts": [], "appliedWeights": {},
                                                    "autoshifts": []},
                             {"resourceIdentifier": cluster_arn})
        ZonalShifts(arc, cluster_arn).update()
    # The interruption queue.
    clients.sqs.create_queue(QueueName=QUEUE)
    queue = InterruptionQueue.by_name(clients.sqs, QUEUE)
    queue.wait_seconds = 0
    clients.sqs.send_message(QueueUrl=queue.queue_url, MessageBody="{not an event")
    queue.poll_once(lambda event: None)


def test_the_policy_allows_each_call_and_grants_nothing_no_call_needs(
    clients: AwsClients, world: World, clock: FakeClock,
) -> None:
    start = len(provider_calls.SESSION)
    drive_every_path(clients, world, clock)
    calls = provider_calls.SESSION[start:]
    denied, used = evaluate(calls)
    assert denied == [], "\n".join(denied)

    # IAM statements are action x resource products: each statement, each of its actions
    # and each of its resources must be needed by some call.
    granted = every_grant(policy())
    unused = sorted(
        {("statement", sid) for sid, _, _ in granted} - {("statement", s) for s, _, _ in used}
        | {("action", f"{sid} {a}") for sid, a, _ in granted}
        - {("action", f"{s} {a}") for s, a, _ in used}
        | {("resource", f"{sid} {r}") for sid, _, r in granted}
        - {("resource", f"{s} {r}") for s, _, r in used})
    assert unused == [], "the policy grants what no call needs: " + json.dumps(unused)


# The statements of Karpenter's getting-started CloudFormation (v1.14.1) each of ours
# stands for; ours may grant less, never more.
KARPENTER_STATEMENTS: Mapping[str, tuple[str, ...]] = {
    "AllowRegionalReadActions": ("AllowRegionalReadActions",),
    "AllowLaunchWithExistingResources": ("AllowScopedEC2InstanceAccessActions",
                                         "AllowScopedEC2InstanceActionsWithTags"),
    "AllowLaunchWithOwnedLaunchTemplates": ("AllowScopedEC2LaunchTemplateAccessActions",),
    "AllowScopedCreationWithTags": ("AllowScopedEC2InstanceActionsWithTags",),
    "AllowTaggingOnCreation": ("AllowScopedResourceCreationTagging",),
    "AllowScopedResourceTagging": ("AllowScopedResourceTagging",),
    "AllowScopedDeletion": ("AllowScopedDeletion",),
    "AllowPassingNodeRole": ("AllowPassingInstanceRole",),
    "AllowScopedInstanceProfileCreation": ("AllowScopedInstanceProfileCreationActions",),
    "AllowScopedInstanceProfileTagging": ("AllowScopedInstanceProfileTagActions",),
    "AllowScopedInstanceProfileActions": ("AllowScopedInstanceProfileActions",),
    "AllowInstanceProfileReads": ("AllowInstanceProfileReadActions",),
    "AllowListingOwnInstanceProfiles": ("AllowUnscopedInstanceProfileListAction",),
    "AllowClusterDiscovery": ("AllowAPIServerEndpointDiscovery",),
    "AllowInterruptionQueueActions": ("AllowInterruptionQueueActions",),
    "AllowPublicParameterReads": ("AllowSSMReadActions",),
    "AllowPricingReads": ("AllowPricingReadActions",),
    "AllowZonalShiftStatusReadOnly": ("AllowZonalShiftStatusReadOnly",),
}


def karpenter_statements() -> dict[str, dict[str, Any]]:
    """Karpenter's statements by Sid, from the CloudFormation at the v1.14.1 tag."""
    import subprocess

    text = subprocess.run(
        ["git", "--git-dir=/work/.mirror/aws+karpenter-provider-aws/repo", "show",
         "v1.14.1:website/content/en/preview/getting-started/getting-started-with-karpenter/"
         "cloudformation.yaml"], capture_output=True, text=True, check=False).stdout
    if not text:
        pytest.skip("Karpenter's repository mirror is not on this machine")
    for ref, value in (("${AWS::Partition}", "aws"), ("${AWS::Region}", REGION),
                       ("${AWS::AccountId}", ACCOUNT), ("${ClusterName}", CLUSTER),
                       ("${KarpenterNodeRole.Arn}", NODE_ROLE),
                       ("${KarpenterInterruptionQueue.Arn}",
                        f"arn:aws:sqs:{REGION}:{ACCOUNT}:{QUEUE}")):
        text = text.replace(ref, value)
    found: dict[str, dict[str, Any]] = {}
    decoder = json.JSONDecoder()
    for start in [i for i in range(len(text)) if text.startswith("{\n", i)]:
        try:
            document, _ = decoder.raw_decode(text[start:])
        except json.JSONDecodeError:
            continue
        for statement in document.get("Statement", []) if isinstance(document, dict) else []:
            found[statement["Sid"]] = statement
    return found


def kinds(resources: Any) -> set[str]:
    """service:resource-type of each ARN ("*" stays "*")."""
    found = set()
    for arn in _as_list(resources):
        if arn == "*":
            found.add("*")
            continue
        parts = arn.split(":", 5)
        found.add(f"{parts[2]}:{parts[5].split('/')[0] if '/' in parts[5] else ''}")
    return found


def test_each_statement_grants_no_more_than_karpenters() -> None:
    """Statement by statement against Karpenter's getting-started CloudFormation: our
    actions are among its actions, our resource types among its resource types, and a
    condition of its is a condition of ours."""
    theirs = karpenter_statements()
    for statement in policy()["Statement"]:
        sid = statement["Sid"]
        matches = [theirs[name] for name in KARPENTER_STATEMENTS[sid]]
        their_actions = {a for m in matches for a in _as_list(m["Action"])}
        assert set(_as_list(statement["Action"])) <= their_actions, sid
        their_kinds = {k for m in matches for k in kinds(m["Resource"])}
        # A narrower resource is fine ("*" in theirs: any of ours is narrower or equal).
        assert "*" in their_kinds or kinds(statement["Resource"]) <= their_kinds, sid
        if len(matches) == 1 and statement["Resource"] != "*":
            ours = statement.get("Condition", {})
            for operator, clauses in matches[0].get("Condition", {}).items():
                for key, value in clauses.items():
                    if operator == "StringEqualsIfExists":
                        continue
                    # The same condition, or a narrower one (one partition's EC2 principal).
                    mine = _as_list(ours.get(operator, {}).get(key) or [])
                    assert mine and set(mine) <= set(_as_list(value)), (sid, key)


def test_every_call_of_the_aws_suite_is_allowed() -> None:
    """Every AWS call the provider made in this session's AWS tests (the conftest runs this
    test last). Calls a test made to set moto up are not the provider's and are not here."""
    denied, _ = evaluate(provider_calls.SESSION)
    assert denied == [], "\n".join(denied[:20])
