"""The ReservedCapacity feature gate turned off: a CloudProvider without reserved offerings.

With the gate off Karpenter resolves no capacity reservations (the AWS provider's
reserved-capacity resolver returns none, so no instance type has a `reserved` offering)
and the scheduler reserves nothing (`offeringsToReserve` returns nil). The same here: the
instance types this cloud returns keep their on-demand and spot offerings only, so
`karpenter.sh/capacity-type: reserved` is never offered and no NodeClaim launches into a
capacity reservation; a type offered only as reserved capacity is left out. The node class
resolution the EC2NodeClass status controller writes has no reservations and no
CapacityReservationsReady condition (Karpenter skips its capacity reservation reconciler).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING

from nodewright.api.core import NodeSelectorRequirementWithMinValues
from nodewright.api.nodeclaim import NodeClaim
from nodewright.cloud.capabilities import CloudCapabilities, NodeClassResolver
from nodewright.cloud.provider import CloudProvider, Instance, RepairPolicy

if TYPE_CHECKING:
    from nodewright.api.ec2nodeclass import EC2NodeClass
    from nodewright.cloud.aws.node_class_resolution import Resolution
    from nodewright.scheduling.catalog import InstanceType

CAPACITY_TYPE = "karpenter.sh/capacity-type"
RESERVED = "reserved"  # its value for capacity reservations
RESERVATIONS_READY = "CapacityReservationsReady"


def without_reserved(instance_types: Sequence[InstanceType]) -> list[InstanceType]:
    """The instance types with their reserved offerings removed (types left with no
    offering dropped)."""
    kept: list[InstanceType] = []
    for instance_type in instance_types:
        offerings = tuple(offering for offering in instance_type.offerings
                          if offering.capacity_type != RESERVED)
        if len(offerings) == len(instance_type.offerings):
            kept.append(instance_type)
        elif offerings:
            kept.append(dataclasses.replace(instance_type, offerings=offerings))
    return kept


def unreserved_nodeclaim(nodeclaim: NodeClaim) -> NodeClaim:
    """A copy of `nodeclaim` whose requirements also exclude reserved capacity."""
    spec = nodeclaim.spec.model_copy(update={"requirements": [
        *nodeclaim.spec.requirements,
        NodeSelectorRequirementWithMinValues(key=CAPACITY_TYPE, operator="NotIn",
                                             values=[RESERVED])]})
    return nodeclaim.model_copy(update={"spec": spec})


def unreserved_resolution(resolution: Resolution) -> Resolution:
    """The resolution as with the gate off: no reservations, no CapacityReservationsReady."""
    if not resolution.reserved_capacity:
        return resolution
    return dataclasses.replace(
        resolution, capacity_reservations=(), reserved_capacity=False,
        problems={k: v for k, v in resolution.problems.items() if k != RESERVATIONS_READY})


class UnreservedResolver:
    def __init__(self, inner: NodeClassResolver) -> None:
        self.inner = inner

    def resolve(self, node_class: EC2NodeClass) -> Resolution:
        return unreserved_resolution(self.inner.resolve(node_class))


class WithoutReservedCapacity:
    def __init__(self, cloud: CloudProvider) -> None:
        self.inner = cloud
        self.name = cloud.name

    def get_instance_types(self, node_class: EC2NodeClass) -> list[InstanceType]:
        return without_reserved(self.inner.get_instance_types(node_class))

    def create(self, nodeclaim: NodeClaim, node_class: EC2NodeClass) -> Instance:
        """The NodeClaim launched as if its requirements also said `capacity-type NotIn
        [reserved]` (as Karpenter's AWS provider, gate off, never launches into a
        reservation): a NodePool allowing `reserved` gets on-demand or spot."""
        return self.inner.create(unreserved_nodeclaim(nodeclaim), node_class)

    def get(self, provider_id: str) -> Instance:
        return self.inner.get(provider_id)

    def list(self) -> list[Instance]:
        return self.inner.list()

    def delete(self, provider_id: str) -> None:
        self.inner.delete(provider_id)

    def drift_reason(self, nodeclaim: NodeClaim, node_class: EC2NodeClass) -> str | None:
        return self.inner.drift_reason(nodeclaim, node_class)

    def repair_policies(self) -> Sequence[RepairPolicy]:
        return self.inner.repair_policies()

    def capabilities(self) -> CloudCapabilities:
        capabilities = self.inner.capabilities()
        if capabilities.node_classes is None:
            return capabilities
        return dataclasses.replace(capabilities,
                                   node_classes=UnreservedResolver(capabilities.node_classes))

    def __getattr__(self, name: str) -> object:
        # Anything beyond the protocol (a simulator's hooks, instance statuses) is the
        # inner cloud's.
        return getattr(self.inner, name)
