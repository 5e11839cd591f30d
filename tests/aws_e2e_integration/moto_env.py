"""Fixtures of the ported integration and storage end-to-end suites (Karpenter
test/suites/integration and test/suites/storage, v1.14.1).

The AWS stories run on `tests.aws_e2e.moto_world.MotoCluster`: the moto account of
`tests.aws.world`, Nodewright's controllers with the AWS provider on it and the in-memory
cluster's actors on a virtual clock, the kubelets of the launched instances joining as
nodes. moto's CreateFleet launches from a launch template's image, type and subnet but
keeps none of its other fields (metadata options, block device mappings, tags of volumes
and interfaces, instance profile, interface settings): what Karpenter's e2e reads back from
the instance EC2 launched, a story reads from the launch template the instance was launched
from (`Launches.template_of`), which is what EC2 would have launched it with."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodewright.cloud.aws.clients import AwsClients
from nodewright.controllers.options import ControllerOptions
from tests.aws.world import CLUSTER
from tests.aws_e2e.moto_world import MotoCluster, node_class, node_pool, pod


class Launches:
    """The launch template each instance CreateFleet launched came from."""

    def __init__(self, ec2: Any) -> None:
        self.ec2 = ec2
        self.templates: dict[str, str] = {}  # instance id -> launch template name
        self.fleets: list[Mapping[str, Any]] = []  # CreateFleet requests
        ec2.meta.events.register("after-call.ec2.CreateFleet", self._launched)
        ec2.meta.events.register("provide-client-params.ec2.CreateFleet", self._asked)

    def _asked(self, params: Mapping[str, Any], **_: Any) -> None:
        self.fleets.append(params)

    def _launched(self, parsed: Mapping[str, Any], **_: Any) -> None:
        for created in parsed.get("Instances") or []:
            spec = (created.get("LaunchTemplateAndOverrides") or {}).get(
                "LaunchTemplateSpecification") or {}
            for instance_id in created.get("InstanceIds") or []:
                self.templates[instance_id] = str(spec.get("LaunchTemplateName", ""))

    def template_of(self, instance_id: str) -> dict[str, Any]:
        """The LaunchTemplateData the instance was launched with."""
        versions = self.ec2.describe_launch_template_versions(
            LaunchTemplateName=self.templates[instance_id], Versions=["$Latest"])
        data: dict[str, Any] = versions["LaunchTemplateVersions"][0]["LaunchTemplateData"]
        return data


class Env(MotoCluster):
    """`MotoCluster` with the launch templates of its instances."""

    def __init__(self, clients: AwsClients, options: ControllerOptions | None = None) -> None:
        self.launches = Launches(clients.ec2)
        super().__init__(clients, options=options)

    def provision(self, *extra: Any, pool: Mapping[str, Any] | None = None,
                  **class_spec: Any) -> str:
        """The node class (with `class_spec`), the pool, pod `p` and `extra` objects; the
        pod runs on the one node launched for it; that node's name."""
        self.apply(node_class(**class_spec), dict(pool or node_pool()), pod("p"), *extra)
        assert self.run_until(lambda: self.healthy("p")), self.errors
        assert len(self.nodes()) == 1
        return self.node_of("p")

    def template_of_node(self, node_name: str) -> dict[str, Any]:
        return self.launches.template_of(str(self.instance_of(node_name)["InstanceId"]))

    def running_instances(self) -> list[dict[str, Any]]:
        """The cluster's instances EC2 has pending or running."""
        reservations = self.clients.ec2.describe_instances(Filters=[
            {"Name": f"tag:kubernetes.io/cluster/{CLUSTER}", "Values": ["owned"]},
            {"Name": "instance-state-name", "Values": ["pending", "running"]}])["Reservations"]
        return [i for r in reservations for i in r["Instances"]]

    def conditions(self, name: str = "default") -> dict[str, tuple[str, str]]:
        found = (self.get("EC2NodeClass", name).get("status") or {}).get("conditions") or []
        return {str(c["type"]): (str(c["status"]), str(c.get("message", ""))) for c in found}

    def settle_node_class(self, name: str = "default") -> dict[str, tuple[str, str]]:
        """Run until the node class has its Ready condition; its conditions."""
        assert self.run_until(lambda: "Ready" in self.conditions(name), timeout=120)
        self.advance(30)
        return self.conditions(name)


def replace_requirements(pool: dict[str, Any], *requirements: Mapping[str, Any]
                         ) -> dict[str, Any]:
    """Karpenter's `test.ReplaceRequirements`: each requirement replaces the pool's of the
    same key (or is added)."""
    spec = pool["spec"]["template"]["spec"]
    keys = {r["key"] for r in requirements}
    spec["requirements"] = [r for r in spec["requirements"] if r["key"] not in keys] + [
        dict(r) for r in requirements]
    return pool
