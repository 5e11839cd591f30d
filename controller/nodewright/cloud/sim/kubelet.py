"""What happens in the cluster because instances come and go: the kubelet registering its
Node, node agents removing their startup taints, the node lifecycle controller marking a
silent node Unknown, and the cloud node lifecycle controller deleting the Node of an
instance that no longer exists."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Final

from nodewright.cloud.sim.machines import SimInstance
from nodewright.cloud.sim.node import node_object, not_ready_conditions, taint_manifest
from nodewright.cluster.api import AlreadyExistsError, ApiError, ClusterAPI, NotFoundError
from nodewright.runtime.clock import Clock, format_time

log = logging.getLogger(__name__)

RETRY_SECONDS: Final = 1.0


class NodeAgent:
    def __init__(self, cluster: ClusterAPI, clock: Clock, kubernetes_version: str) -> None:
        self.cluster = cluster
        self.clock = clock
        self.kubernetes_version = kubernetes_version

    def register(self, instance: SimInstance) -> bool:
        """Create the instance's Node. False when the API server refused (retry later)."""
        wanted = node_object(
            instance, instance.node_name, self.clock.now(), self.kubernetes_version
        )
        try:
            stored = self.cluster.create(wanted)
        except AlreadyExistsError:
            log.warning("node %s already exists; instance %s joins it", instance.node_name,
                        instance.instance_id)
            return True
        except ApiError as error:
            log.warning("registering node %s failed: %s", instance.node_name, error)
            return False
        if stored.get("status", {}).get("conditions") != wanted["status"]["conditions"]:
            # An API server that drops status on create gets it the way a kubelet sends it.
            self._patch(instance, {"status": wanted["status"]}, subresource="status")
        return True

    def remove_startup_taints(self, instance: SimInstance) -> bool:
        """Drop the startup taints from the Node. False on a write conflict (retry)."""
        node = self._node_of(instance)
        if node is None or not instance.node.startup_taints:
            return True
        startup = {
            (t["key"], t["effect"]) for t in map(taint_manifest, instance.node.startup_taints)
        }
        taints = list(node.get("spec", {}).get("taints") or [])
        kept = [t for t in taints if (t.get("key"), t.get("effect")) not in startup]
        if len(kept) == len(taints):
            return True
        version = node.get("metadata", {}).get("resourceVersion")
        return self._patch(
            instance, {"metadata": {"resourceVersion": version}, "spec": {"taints": kept}}
        )

    def mark_unknown(self, instance: SimInstance) -> bool:
        node = self._node_of(instance)
        if node is None:
            return True
        conditions = list(node.get("status", {}).get("conditions") or [])
        stamp = format_time(self.clock.now())
        version = node.get("metadata", {}).get("resourceVersion")
        return self._patch(
            instance,
            {
                "metadata": {"resourceVersion": version},
                "status": {"conditions": not_ready_conditions(conditions, stamp)},
            },
            subresource="status",
        )

    def remove_node(self, instance: SimInstance) -> None:
        """Delete the Node of a terminated instance if it is still there (Karpenter usually
        deleted it already)."""
        node = self._node_of(instance)
        if node is None:
            return
        try:
            self.cluster.delete("Node", instance.node_name)
        except NotFoundError:
            return
        except ApiError as error:
            log.warning("deleting node %s of a terminated instance failed: %s",
                        instance.node_name, error)

    def _node_of(self, instance: SimInstance) -> dict[str, Any] | None:
        """The instance's Node, if it exists and still belongs to this instance."""
        if not instance.node_name:
            return None
        try:
            node = self.cluster.get("Node", instance.node_name)
        except NotFoundError:
            return None
        if node.get("spec", {}).get("providerID") != instance.provider_id:
            return None
        return node

    def _patch(
        self, instance: SimInstance, patch: dict[str, Any], *, subresource: str | None = None
    ) -> bool:
        try:
            self.cluster.patch("Node", instance.node_name, patch, subresource=subresource)
        except NotFoundError:
            return True
        except ApiError as error:
            log.info("updating node %s: %s; will retry", instance.node_name, error)
            return False
        return True


def retrying(clock: Clock, action: Callable[[], bool], still_wanted: Callable[[], bool]) -> None:
    """Run `action` now and again every second until it succeeds or is no longer wanted."""

    def attempt() -> None:
        if still_wanted() and not action():
            clock.call_later(RETRY_SECONDS, attempt)

    attempt()
