"""One simulated instance: what was launched, for which NodeClaim, and its state."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Final

from nodewright.api.core import Taint
from nodewright.cloud.provider import Instance
from nodewright.scheduling.catalog import InstanceType

# The NodeClaim annotation naming the instance's profile (as the AWS provider writes it).
PROFILE_ANNOTATION: Final = "karpenter.k8s.aws/instance-profile-name"

PENDING: Final = "pending"
RUNNING: Final = "running"
STOPPING: Final = "stopping"
STOPPED: Final = "stopped"
SHUTTING_DOWN: Final = "shutting-down"
TERMINATED: Final = "terminated"
# States in which the machine is up and billed.
UP_STATES: Final = frozenset({PENDING, RUNNING})


@dataclass(frozen=True)
class NodeTemplate:
    """What the kubelet learns from the user data: the NodeClaim's labels, taints and
    startup taints, captured when the instance is launched."""

    labels: dict[str, str]
    taints: tuple[Taint, ...] = ()
    startup_taints: tuple[Taint, ...] = ()
    os_image: str = "Amazon Linux 2023"


@dataclass
class SimInstance:
    instance_id: str
    instance_type: InstanceType
    zone: str
    zone_id: str
    capacity_type: str
    price: float
    image_id: str
    private_ip: str
    subnet_id: str
    nodeclaim: str
    nodepool: str
    node_class: str
    tags: dict[str, str]
    labels: dict[str, str]
    node: NodeTemplate
    launched_at: datetime
    state: str = PENDING
    running_at: datetime | None = None
    registered_at: datetime | None = None
    stopping_at: datetime | None = None
    shutting_down_at: datetime | None = None
    terminated_at: datetime | None = None
    node_name: str = ""
    interruptions: list[str] = field(default_factory=list)
    instance_profile: str = ""
    # What the NodeClaim learns from this launch besides the profile: a fleet a scenario
    # starts from records the node class hash its instances were launched with, so that
    # adopting them does not take the node class's hash of now (which hides drift).
    launch_annotations: dict[str, str] = field(default_factory=dict)

    @property
    def provider_id(self) -> str:
        return f"aws:///{self.zone}/{self.instance_id}"

    @property
    def architecture(self) -> str:
        return self.instance_type.labels.get("kubernetes.io/arch", "amd64")

    def view(self) -> Instance:
        """The cloud-neutral view the controllers get."""
        return Instance(
            provider_id=self.provider_id,
            instance_id=self.instance_id,
            instance_type=self.instance_type.name,
            zone=self.zone,
            capacity_type=self.capacity_type,
            image_id=self.image_id,
            state=self.state,
            launch_time=self.launched_at,
            subnet_id=self.subnet_id,
            nodeclaim_name=self.nodeclaim,
            nodepool_name=self.nodepool,
            node_class_name=self.node_class,
            tags=dict(self.tags),
            labels=dict(self.labels),
            instance_profile=self.instance_profile,
            # As on AWS: the NodeClaim names the profile its instance was launched with.
            annotations={**({PROFILE_ANNOTATION: self.instance_profile}
                            if self.instance_profile else {}),
                         **self.launch_annotations},
        )
