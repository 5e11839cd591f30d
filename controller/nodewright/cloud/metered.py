"""A CloudProvider that times and counts every call (Karpenter's cloudprovider/metrics
decorator): karpenter_cloudprovider_duration_seconds and karpenter_cloudprovider_errors_total,
labeled by the calling controller, the method (Karpenter's Go names) and the provider.

Each controller gets its own wrapper, since we have no request context to carry the
controller's name as Karpenter does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

from nodewright import metrics
from nodewright.cloud.capabilities import CloudCapabilities
from nodewright.cloud.provider import (
    CloudProvider,
    Instance,
    InsufficientCapacityError,
    NodeClaimNotFoundError,
    NodeClassNotReadyError,
    RepairPolicy,
)

if TYPE_CHECKING:
    from nodewright.api.ec2nodeclass import EC2NodeClass
    from nodewright.api.nodeclaim import NodeClaim
    from nodewright.scheduling.catalog import InstanceType

T = TypeVar("T")


def error_label(error: BaseException) -> str:
    """Karpenter's well-known error label values; "" for any other error."""
    for kind in (NodeClaimNotFoundError, NodeClassNotReadyError, InsufficientCapacityError):
        if isinstance(error, kind):
            return kind.__name__
    return ""


class MeteredCloud:
    def __init__(self, cloud: CloudProvider, controller: str) -> None:
        self.inner = cloud
        self.controller = controller
        self.name = cloud.name

    def _call(self, method: str, call: Callable[[], T]) -> T:
        labels = {"controller": self.controller, "method": method, "provider": self.name}
        try:
            with metrics.measure(metrics.CLOUDPROVIDER_DURATION, **labels):
                return call()
        except Exception as error:
            metrics.CLOUDPROVIDER_ERRORS.labels(**labels, error=error_label(error)).inc()
            raise

    def get_instance_types(self, node_class: EC2NodeClass) -> list[InstanceType]:
        return self._call("GetInstanceTypes", lambda: self.inner.get_instance_types(node_class))

    def create(self, nodeclaim: NodeClaim, node_class: EC2NodeClass) -> Instance:
        return self._call("Create", lambda: self.inner.create(nodeclaim, node_class))

    def get(self, provider_id: str) -> Instance:
        return self._call("Get", lambda: self.inner.get(provider_id))

    def list(self) -> list[Instance]:
        return self._call("List", self.inner.list)

    def delete(self, provider_id: str) -> None:
        self._call("Delete", lambda: self.inner.delete(provider_id))

    def drift_reason(self, nodeclaim: NodeClaim, node_class: EC2NodeClass) -> str | None:
        return self._call("IsDrifted", lambda: self.inner.drift_reason(nodeclaim, node_class))

    def repair_policies(self) -> Sequence[RepairPolicy]:
        return self.inner.repair_policies()

    def capabilities(self) -> CloudCapabilities:
        return self.inner.capabilities()

    def __getattr__(self, name: str) -> object:
        # Anything beyond the protocol (a simulator's hooks, a catalog) is the inner cloud's.
        return getattr(self.inner, name)
