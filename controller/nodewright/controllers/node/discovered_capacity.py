"""The discovered capacity controller (Karpenter's providers.instancetype.capacity): when one
of our Nodes registers, the memory its kubelet reports is handed to the cloud, which plans
that instance type with it instead of the VM-overhead estimate (`cloud.aws.
discovered_capacity`). Only Nodes labelled with their EC2NodeClass, with exactly one
NodeClaim, and only on registration: a Node seen registered when the controller starts
counts (so a restart learns again what the cluster already runs), later updates do not."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

from pydantic import ValidationError

from nodewright.api.ec2nodeclass import EC2NodeClass
from nodewright.api.quantity import MEMORY, parse_quantity
from nodewright.cloud.capabilities import CapacityLearner
from nodewright.cloud.provider import CloudProviderError
from nodewright.cluster import objects
from nodewright.cluster.api import ClusterAPI, NotFoundError
from nodewright.runtime.reconciler import Result, Watch, WatchEvent
from nodewright.state import ClusterState
from nodewright.state.wellknown import NODECLASS_LABEL, REGISTERED_LABEL

log = logging.getLogger(__name__)

RETRY_SECONDS = 30.0


class DiscoveredCapacity:
    name = "providers.instancetype.capacity"

    def __init__(self, cluster: ClusterAPI, state: ClusterState,
                 learner: CapacityLearner) -> None:
        self.cluster = cluster
        self.state = state
        self.learner = learner
        # Nodes (by uid) already reported registered: their later updates are not news.
        self._registered: set[str] = set()

    @property
    def watches(self) -> Sequence[Watch]:
        return (Watch("Node", keys=self._on_registration),)

    def _on_registration(self, event: WatchEvent) -> Iterable[str]:
        uid = objects.uid(event.object)
        if event.type == "DELETED":
            self._registered.discard(uid)
            return ()
        labels = objects.labels(event.object)
        if labels.get(REGISTERED_LABEL) != "true" or NODECLASS_LABEL not in labels:
            return ()
        if uid in self._registered:
            return ()
        self._registered.add(uid)
        return (event.key,)

    def reconcile(self, key: str) -> Result:
        machine = self.state.node_by_name(key)
        if machine is None or machine.node is None:
            return Result()
        node = machine.node
        labels = objects.labels(node)
        if NODECLASS_LABEL not in labels:
            return Result()
        provider_id = str((node.get("spec") or {}).get("providerID") or "")
        names = self.state.nodeclaim_names_for_provider_id(provider_id) if provider_id else []
        claim = self.state.nodeclaim(names[0]) if len(names) == 1 else None
        memory = ((node.get("status") or {}).get("capacity") or {}).get(MEMORY)
        if claim is None or memory is None:
            return Result()
        class_name = str(((claim.get("spec") or {}).get("nodeClassRef") or {}).get("name") or "")
        image_id = (claim.get("status") or {}).get("imageID")
        try:
            node_class = EC2NodeClass.model_validate(self.cluster.get("EC2NodeClass", class_name))
        except NotFoundError:
            log.info("discovered capacity of node %s: EC2NodeClass %s not found", key, class_name)
            return Result(requeue_after=RETRY_SECONDS)
        except ValidationError as error:
            log.warning("discovered capacity of node %s: EC2NodeClass %s is not valid: %s",
                        key, class_name, error.errors()[:1])
            return Result()
        try:
            self.learner.update_capacity_from_node(
                node_class, labels, parse_quantity(memory),
                str(image_id) if image_id else None)
        except CloudProviderError as error:
            log.warning("updating discovered capacity cache for node %s: %s", key, error)
            return Result(requeue_after=RETRY_SECONDS)
        return Result()
