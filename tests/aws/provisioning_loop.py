"""Karpenter's ExpectProvisioned over the AWS provider on moto, for stories that need the
provision -> CreateFleet -> provision loop (the instancetype suite's ICE retry Its).

`Provisioning.provision(pods)` plans the pods that are still pending against the provider's
own instance types (so offerings its ICE cache holds are unavailable), as the provisioner
does, writes each planned NodeClaim as the provisioner writes it (its requirements, its
instance types cheapest first, its NodePool label) and launches it with
`AwsCloudProvider.create`. A launch that fails with InsufficientCapacityError leaves its
pods pending (the lifecycle controller deletes the NodeClaim); a launched one binds them to
its node (the Instance: type, zone, capacity type). Each call is one reconciliation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import count
from typing import Any

import yaml

from nodewright.api.ec2nodeclass import EC2NodeClass
from nodewright.api.manifests import parse_documents
from nodewright.api.nodeclaim import NodeClaim
from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.provider import AwsCloudProvider
from nodewright.cloud.provider import Instance, InsufficientCapacityError
from nodewright.controllers.provisioning.nodeclaims import render_requirements
from nodewright.scheduling.catalog import InstanceType
from nodewright.scheduling.planning import plan
from nodewright.scheduling.requirements import (
    LABEL_HOSTNAME,
    LABEL_INSTANCE_TYPE,
    Requirements,
)
from tests.aws.world import K8S_VERSION, X86_IMAGE, seed_public_parameter

INSTANCE_TYPE = "node.kubernetes.io/instance-type"
ZONE = "topology.kubernetes.io/zone"
CAPACITY_TYPE = "karpenter.sh/capacity-type"


def publish_accelerated_images(clients: AwsClients) -> None:
    """The AL2023 NVIDIA and Neuron images (two more x86_64 images moto ships): GPU and
    accelerator types boot only those."""
    x86 = clients.ec2.describe_images(
        Owners=["amazon"], Filters=[{"Name": "architecture", "Values": ["x86_64"]}])["Images"]
    others = sorted(i["ImageId"] for i in x86 if i["ImageId"] != X86_IMAGE)
    for image, variant in zip(others, ("nvidia", "neuron"), strict=False):
        seed_public_parameter(
            clients.region, f"/aws/service/eks/optimized-ami/{K8S_VERSION}/amazon-linux-2023/"
            f"x86_64/{variant}/recommended/image_id", image)


@dataclass
class Provisioning:
    """One NodePool ("default", with `requirements`) on one EC2NodeClass, launched by
    `provider` (the moto world's node class)."""

    provider: AwsCloudProvider
    node_class: EC2NodeClass
    requirements: list[dict[str, Any]]
    bound: dict[str, Instance] = field(default_factory=dict)  # pod name -> its node
    failed_launches: int = 0
    _names: Any = field(default_factory=count)

    def provision(self, pods: Sequence[dict[str, Any]]) -> None:
        pending = [pod for pod in pods if pod["metadata"]["name"] not in self.bound]
        if not pending:
            return
        result, problems = plan(self._documents(pending), self._catalog, {})
        assert [p.format() for p in problems if p.severity == "error"] == []
        assert result is not None
        for planned in result.nodeclaims:
            number = next(self._names)
            requirements = Requirements(
                r for key, r in planned.requirements.items()
                if key not in (LABEL_HOSTNAME, LABEL_INSTANCE_TYPE))
            claim = NodeClaim.model_validate({
                "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
                "metadata": {"name": f"default-{number}", "uid": f"uid-default-{number}",
                             "labels": {"karpenter.sh/nodepool": "default"}},
                "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws",
                                          "kind": "EC2NodeClass", "name": "default"},
                         "requirements": [
                             *render_requirements(requirements),
                             {"key": INSTANCE_TYPE, "operator": "In",
                              "values": [name for name, _ in planned.instance_types]}]}})
            try:
                instance = self.provider.create(claim, self.node_class)
            except InsufficientCapacityError:
                self.failed_launches += 1
                continue
            for key in planned.pods:
                self.bound[key.split("/")[-1]] = instance

    def node_of(self, pod: dict[str, Any]) -> Instance | None:
        """ExpectScheduled (the node) or ExpectNotScheduled (None)."""
        return self.bound.get(pod["metadata"]["name"])

    def _catalog(self, _: EC2NodeClass | None) -> Sequence[InstanceType]:
        return self.provider.get_instance_types(self.node_class)

    def _documents(self, pods: Sequence[dict[str, Any]]) -> Any:
        nodepool = {"apiVersion": "karpenter.sh/v1", "kind": "NodePool",
                    "metadata": {"name": "default"},
                    "spec": {"template": {"spec": {
                        "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                         "name": "default"},
                        "requirements": self.requirements}}}}
        nodeclass = self.node_class.model_dump(by_alias=True, exclude_none=True)
        nodeclass.pop("status", None)
        text = "---\n".join(yaml.safe_dump(doc) for doc in [nodepool, nodeclass, *pods])
        documents, problems = parse_documents(text, "<story>")
        assert problems == []
        return documents
