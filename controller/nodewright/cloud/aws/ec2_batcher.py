"""EC2 calls batched as Karpenter batches them (pkg/batcher): CreateFleet, DescribeInstances
and TerminateInstances for one instance each, sent together when made close together.

- CreateFleet: requests that ask for the same thing go out as one fleet for as many
  instances. "The same thing" leaves out what only names the NodeClaim (the client token,
  the Name and karpenter.sh/nodeclaim tags); a merged fleet is tagged with what the requests
  share, and each instance is then tagged with its own NodeClaim's Name and nodeclaim tags
  (Karpenter tags them after the launch too). A lone request is sent exactly as made. An
  instance beyond the number asked for is terminated at once, so no batch leaves one
  nobody owns.
- DescribeInstances: the instance ids of calls with the same filters, in one call; an id the
  batched call did not answer for (or all of them, when it failed) is asked about alone.
- TerminateInstances: every id in one call; one that did not come back shutting-down or
  terminated is terminated alone.

Windows (idle / max / items): CreateFleet 35 ms / 1 s / 1,000; the other two
100 ms / 1 s / 500, as Karpenter's.
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, cast

from botocore.exceptions import BotoCoreError, ClientError

from nodewright.cloud.aws import tags as tag_keys
from nodewright.cloud.aws.batcher import Batcher, Result, Window

if TYPE_CHECKING:
    from mypy_boto3_ec2 import EC2Client

log = logging.getLogger(__name__)

CREATE_FLEET_WINDOW: Final = Window(idle_seconds=0.035, max_seconds=1.0, max_items=1_000)
DESCRIBE_INSTANCES_WINDOW: Final = Window(idle_seconds=0.1, max_seconds=1.0, max_items=500)
TERMINATE_INSTANCES_WINDOW: Final = Window(idle_seconds=0.1, max_seconds=1.0, max_items=500)
# Tags that name one NodeClaim: they keep otherwise equal fleet requests apart.
OWN_TAGS: Final = (tag_keys.NAME, tag_keys.NODECLAIM)
TOO_FEW: Final = "TooFewInstancesReturned"
TERMINATING_STATES: Final = ("shutting-down", "terminated")
# Ids asked about (or terminated) alone after a batched call, at most this many at a time.
RETRY_WORKERS: Final = 10
CLIENT_TOKEN_MAX: Final = 64

Output = dict[str, Any]


@dataclass(frozen=True)
class BatchWindows:
    create_fleet: Window = CREATE_FLEET_WINDOW
    describe_instances: Window = DESCRIBE_INSTANCES_WINDOW
    terminate_instances: Window = TERMINATE_INSTANCES_WINDOW


@dataclass(frozen=True)
class Describe:
    instance_id: str
    filters: tuple[tuple[str, tuple[str, ...]], ...] = ()


class EC2Batcher:
    """The three batchers of one EC2 client; safe to call from any thread."""

    def __init__(self, ec2: EC2Client, windows: BatchWindows | None = None) -> None:
        self.ec2 = ec2
        windows = windows or BatchWindows()
        self.fleets: Batcher[Mapping[str, Any], Output] = Batcher(
            "create_fleet", windows.create_fleet, self._create_fleets, key=_fleet_key)
        self.describes: Batcher[Describe, list[Output]] = Batcher(
            "describe_instances", windows.describe_instances, self._describe,
            key=lambda call: call.filters)
        self.terminations: Batcher[str, Output] = Batcher(
            "terminate_instances", windows.terminate_instances, self._terminate)

    # --- the calls ----------------------------------------------------------------------

    def create_fleet(self, request: Mapping[str, Any]) -> Output:
        """A CreateFleet for one instance; its response as if sent alone (an instance, or
        none and the fleet's errors). botocore's errors are raised."""
        capacity = request.get("TargetCapacitySpecification", {}).get("TotalTargetCapacity")
        if capacity != 1:
            raise ValueError(f"a batched CreateFleet asks for one instance, not {capacity}")
        return self.fleets.add(request)

    def describe_instance(self, instance_id: str,
                          filters: Sequence[Mapping[str, Any]] = ()) -> list[Output]:
        """The instance as DescribeInstances returns it ([] when the filters leave it out)."""
        key = tuple((str(f["Name"]), tuple(str(v) for v in f["Values"])) for f in filters)
        return self.describes.add(Describe(instance_id, key))

    def terminate_instance(self, instance_id: str) -> Output:
        """The instance's state change (TerminatingInstances' entry)."""
        return self.terminations.add(instance_id)

    # --- CreateFleet --------------------------------------------------------------------

    def _create_fleets(self, requests: list[Mapping[str, Any]]) -> list[Result[Output]]:
        if len(requests) == 1:
            return [Result(output=dict(self.ec2.create_fleet(**requests[0])))]
        merged = _shared_request(requests[0])
        merged["TargetCapacitySpecification"]["TotalTargetCapacity"] = len(requests)
        tokens = sorted(str(r.get("ClientToken", "")) for r in requests)
        merged["ClientToken"] = hashlib.sha256(
            json.dumps(tokens).encode()).hexdigest()[:CLIENT_TOKEN_MAX]
        response: dict[str, Any] = dict(self.ec2.create_fleet(**merged))
        launched = [(instance, str(instance_id))
                    for instance in response.get("Instances", []) or []
                    for instance_id in instance.get("InstanceIds", []) or []]
        errors = list(response.get("Errors", []) or [])
        results: list[Result[Output]] = []
        for request, (instance, instance_id) in zip(requests, launched, strict=False):
            self._tag(instance_id, _own_tags(request))
            results.append(Result(output={
                "FleetId": response.get("FleetId"), "Errors": errors,
                "Instances": [{**instance, "InstanceIds": [instance_id]}]}))
        extra = [instance_id for _, instance_id in launched[len(requests):]]
        if extra:
            log.error("CreateFleet launched %d instance(s) more than the %d asked for: "
                      "terminating %s", len(extra), len(requests), ", ".join(extra))
            self._terminate_extra(extra)
        if len(launched) < len(requests) and not errors:
            errors = [{"ErrorCode": TOO_FEW, "ErrorMessage": "too few instances returned"}]
        for _ in requests[len(launched):]:
            results.append(Result(output={"FleetId": response.get("FleetId"),
                                          "Errors": errors, "Instances": []}))
        return results

    def _tag(self, instance_id: str, tags: Mapping[str, str]) -> None:
        """The NodeClaim's own tags on its instance. A failure leaves the instance with the
        fleet's tags (owner, NodePool, EC2NodeClass), which is all garbage collection and
        the IAM conditions need: the launch stands."""
        if not tags:
            return
        try:
            self.ec2.create_tags(Resources=[instance_id],
                                 Tags=cast(Any, tag_keys.as_aws(tags)))
        except (ClientError, BotoCoreError) as error:
            log.warning("tagging instance %s with %s: %s", instance_id,
                        ", ".join(sorted(tags)), error)

    def _terminate_extra(self, instance_ids: list[str]) -> None:
        try:
            self.ec2.terminate_instances(InstanceIds=instance_ids)
        except (ClientError, BotoCoreError) as error:
            log.error("terminating the surplus instances %s: %s (garbage collection will)",
                      ", ".join(instance_ids), error)

    # --- DescribeInstances --------------------------------------------------------------

    def _describe(self, calls: list[Describe]) -> list[Result[list[Output]]]:
        ids = list(dict.fromkeys(call.instance_id for call in calls))
        filters = [{"Name": name, "Values": list(values)} for name, values in calls[0].filters]
        found: dict[str, Output] = {}
        try:
            for raw in self._paginate(ids, filters):
                found[str(raw["InstanceId"])] = raw
        except (ClientError, BotoCoreError) as error:
            if len(ids) == 1:  # asking again alone would be the same call
                return [Result(error=error)] * len(calls)
        answers: dict[str, Result[list[Output]]] = {
            instance_id: Result(output=[raw]) for instance_id, raw in found.items()}
        missing = [instance_id for instance_id in ids if instance_id not in found]
        if len(ids) == 1:
            answers.update({instance_id: Result(output=[]) for instance_id in missing})
        else:
            answers.update(_each(missing, lambda instance_id: list(
                self._paginate([instance_id], filters))))
        return [answers[call.instance_id] for call in calls]

    def _paginate(self, ids: list[str], filters: list[dict[str, Any]]) -> list[Output]:
        request: dict[str, Any] = {"InstanceIds": ids}
        if filters:
            request["Filters"] = filters
        return [dict(raw) for page in self.ec2.get_paginator("describe_instances").paginate(
                    **request)
                for reservation in page.get("Reservations", [])
                for raw in reservation.get("Instances", [])]

    # --- TerminateInstances -------------------------------------------------------------

    def _terminate(self, calls: list[str]) -> list[Result[Output]]:
        ids = list(dict.fromkeys(calls))
        answers: dict[str, Result[Output]] = {}
        try:
            response = self.ec2.terminate_instances(InstanceIds=ids)
        except (ClientError, BotoCoreError) as error:
            if len(ids) == 1:
                return [Result(error=error)] * len(calls)
            log.warning("terminating %d instances in one call: %s; one by one", len(ids), error)
        else:
            for change in response.get("TerminatingInstances", []) or []:
                state = str(change.get("CurrentState", {}).get("Name", ""))
                if state in TERMINATING_STATES:
                    answers[str(change.get("InstanceId"))] = Result(output=dict(change))
        missing = [instance_id for instance_id in ids if instance_id not in answers]
        answers.update(_each(missing, self._terminate_one))
        return [answers[instance_id] for instance_id in calls]

    def _terminate_one(self, instance_id: str) -> Output:
        response = self.ec2.terminate_instances(InstanceIds=[instance_id])
        changes = response.get("TerminatingInstances", []) or []
        return dict(changes[0]) if changes else {"InstanceId": instance_id}


def _each(ids: list[str], call: Callable[[str], Any]) -> dict[str, Result[Any]]:
    """`call(id)` for each id, a few at a time: each id's output or error."""
    def one(instance_id: str) -> Result[Any]:
        try:
            return Result(output=call(instance_id))
        except (ClientError, BotoCoreError) as error:
            return Result(error=error)

    if len(ids) <= 1:
        return {instance_id: one(instance_id) for instance_id in ids}
    with ThreadPoolExecutor(max_workers=min(len(ids), RETRY_WORKERS)) as pool:
        return dict(zip(ids, pool.map(one, ids), strict=True))


def _own_tags(request: Mapping[str, Any]) -> dict[str, str]:
    own: dict[str, str] = {}
    for spec in request.get("TagSpecifications", []) or []:
        if spec.get("ResourceType") == "instance":
            own.update({str(t["Key"]): str(t["Value"]) for t in spec.get("Tags", [])
                        if t["Key"] in OWN_TAGS})
    return own


def _shared_request(request: Mapping[str, Any]) -> dict[str, Any]:
    """The request without what names its NodeClaim."""
    shared = copy.deepcopy(dict(request))
    shared.pop("ClientToken", None)
    for spec in shared.get("TagSpecifications", []) or []:
        spec["Tags"] = [t for t in spec.get("Tags", []) if t["Key"] not in OWN_TAGS]
    return shared


def _fleet_key(request: Mapping[str, Any]) -> str:
    return json.dumps(_shared_request(request), sort_keys=True, default=str)
