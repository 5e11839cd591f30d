"""A fake EC2 layer over moto for request-shape tests, after Karpenter's `fake.EC2API`.

It rides on the provider's own boto3 client (botocore events), so moto still answers every
call it is not told to answer otherwise, and:

- records every EC2 request the provider sends, by operation ("CreateFleet",
  "CreateLaunchTemplate", ...), exactly as sent (before moto sees it);
- answers chosen calls with an error instead (`fail`: per operation, the next n calls), or
  with a given output (`respond`: queued per operation);
- refuses chosen offerings with InsufficientInstanceCapacity (`insufficient_capacity`):
  their CreateFleet overrides are taken out before moto launches from the rest, and come
  back in the response's Errors as EC2 reports them; when every override is refused the
  fleet launches nothing.

Use: `ec2 = FakeEC2.attach(clients.ec2)` in a fixture, `ec2.detach()` after.
"""

from __future__ import annotations

import base64
import copy
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from botocore.awsrequest import AWSResponse

ICE = "InsufficientInstanceCapacity"


@dataclass(frozen=True)
class Override:
    """One CreateFleet override as sent, with the launch template it belongs to."""

    template: str
    instance_type: str
    zone: str
    subnet_id: str
    image_id: str
    priority: float | None = None


@dataclass
class _Failure:
    code: str
    message: str
    times: int
    status: int


@dataclass
class FakeEC2:
    client: Any
    requests: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    # (instance type, zone, capacity type or None for any) -> the error CreateFleet reports.
    refused: dict[tuple[str, str, str | None], str] = field(default_factory=dict)
    _failures: dict[str, list[_Failure]] = field(default_factory=dict)
    _outputs: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    _withheld: list[dict[str, Any]] = field(default_factory=list)
    _launchable: bool = True

    @classmethod
    def attach(cls, client: Any) -> FakeEC2:
        fake = cls(client)
        events = client.meta.events
        events.register("provide-client-params.ec2.*", fake._record)
        events.register("before-call.ec2.*", fake._answer)
        events.register("after-call.ec2.CreateFleet", fake._report_refused)
        return fake

    def detach(self) -> None:
        events = self.client.meta.events
        events.unregister("provide-client-params.ec2.*", self._record)
        events.unregister("before-call.ec2.*", self._answer)
        events.unregister("after-call.ec2.CreateFleet", self._report_refused)

    # --- telling it what to do --------------------------------------------------------

    def fail(self, operation: str, code: str, message: str = "injected", times: int = 1,
             status: int = 400) -> None:
        """The next `times` calls of `operation` answer with this error."""
        self._failures.setdefault(operation, []).append(_Failure(code, message, times, status))

    def respond(self, operation: str, output: dict[str, Any]) -> None:
        """The next call of `operation` answers with this output instead of moto's (queued,
        as Karpenter's fake Output queues)."""
        self._outputs.setdefault(operation, []).append(output)

    def insufficient_capacity(self, instance_type: str, zone: str,
                              capacity_type: str | None = None, code: str = ICE) -> None:
        """CreateFleet finds no capacity for this offering (any capacity type if None): the
        override comes back in the response's Errors with `code`."""
        self.refused[(instance_type, zone, capacity_type)] = code

    # --- what was sent ----------------------------------------------------------------

    def calls(self, operation: str) -> list[dict[str, Any]]:
        return self.requests.get(operation, [])

    def last(self, operation: str) -> dict[str, Any]:
        sent = self.calls(operation)
        assert sent, f"the provider sent no {operation}"
        return sent[-1]

    def overrides(self, request: dict[str, Any] | None = None) -> list[Override]:
        """The overrides of a CreateFleet request (the last one by default)."""
        request = request or self.last("CreateFleet")
        return [
            Override(
                template=str(config["LaunchTemplateSpecification"].get("LaunchTemplateName", "")),
                instance_type=override["InstanceType"],
                zone=override.get("AvailabilityZone", ""),
                subnet_id=override.get("SubnetId", ""),
                image_id=override.get("ImageId", ""),
                priority=override.get("Priority"),
            )
            for config in request["LaunchTemplateConfigs"]
            for override in config["Overrides"]
        ]

    def instance_types(self, request: dict[str, Any] | None = None) -> set[str]:
        return {override.instance_type for override in self.overrides(request)}

    def launch_templates(self) -> dict[str, dict[str, Any]]:
        """LaunchTemplateData of every CreateLaunchTemplate sent, by template name."""
        return {call["LaunchTemplateName"]: call["LaunchTemplateData"]
                for call in self.calls("CreateLaunchTemplate")}

    def template_data(self) -> Iterator[dict[str, Any]]:
        yield from self.launch_templates().values()

    def user_data(self, name: str | None = None) -> str:
        """The decoded user data of one launch template (the only one when not named)."""
        templates = self.launch_templates()
        if name is None:
            assert len(templates) == 1, f"{len(templates)} launch templates: name one"
            name = next(iter(templates))
        return base64.b64decode(templates[name]["UserData"]).decode()

    def template_tags(self, name: str) -> dict[str, str]:
        call = next(c for c in self.calls("CreateLaunchTemplate")
                    if c["LaunchTemplateName"] == name)
        return {tag["Key"]: tag["Value"]
                for spec in call.get("TagSpecifications", []) for tag in spec["Tags"]}

    def fleet_tags(self, resource_type: str = "instance") -> dict[str, str]:
        specs = self.last("CreateFleet")["TagSpecifications"]
        return {tag["Key"]: tag["Value"] for spec in specs
                if spec["ResourceType"] == resource_type for tag in spec["Tags"]}

    # --- botocore hooks ---------------------------------------------------------------

    def _record(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        self.requests.setdefault(model.name, []).append(copy.deepcopy(params))
        if model.name == "CreateFleet" and self.refused:
            self._withhold_refused(params)

    def _withhold_refused(self, params: dict[str, Any]) -> None:
        capacity_type = params.get("TargetCapacitySpecification", {}).get(
            "DefaultTargetCapacityType")
        self._withheld = []
        configs = []
        for config in params.get("LaunchTemplateConfigs", []):
            kept = []
            for override in config.get("Overrides", []):
                offering = (override.get("InstanceType", ""), override.get("AvailabilityZone", ""))
                code = self.refused.get((*offering, capacity_type)) or self.refused.get(
                    (*offering, None))
                if code is not None:
                    self._withheld.append({
                        "LaunchTemplateAndOverrides": {
                            "LaunchTemplateSpecification": config["LaunchTemplateSpecification"],
                            "Overrides": override,
                        },
                        "Lifecycle": "spot" if capacity_type == "spot" else "on-demand",
                        "ErrorCode": code,
                        "ErrorMessage": "We currently do not have sufficient capacity.",
                    })
                else:
                    kept.append(override)
            if kept:
                configs.append({**config, "Overrides": kept})
        params["LaunchTemplateConfigs"] = configs
        self._launchable = bool(configs)

    def _answer(self, model: Any, **_: Any) -> tuple[AWSResponse, dict[str, Any]] | None:
        queued = self._failures.get(model.name)
        if queued:
            failure = queued[0]
            failure.times -= 1
            if failure.times <= 0:
                queued.pop(0)
            response = AWSResponse("https://ec2.amazonaws.com", failure.status, {}, None)
            return response, {"Error": {"Code": failure.code, "Message": failure.message},
                              "ResponseMetadata": {"HTTPStatusCode": failure.status}}
        outputs = self._outputs.get(model.name)
        if outputs:
            return AWSResponse("https://ec2.amazonaws.com", 200, {}, None), outputs.pop(0)
        if model.name == "CreateFleet" and self._withheld and not self._launchable:
            withheld, self._withheld = self._withheld, []
            response = AWSResponse("https://ec2.amazonaws.com", 200, {}, None)
            return response, {"FleetId": "fleet-refused", "Errors": withheld, "Instances": []}
        return None

    def _report_refused(self, parsed: dict[str, Any], **_: Any) -> None:
        if self._withheld:
            parsed.setdefault("Errors", []).extend(self._withheld)
            self._withheld = []
