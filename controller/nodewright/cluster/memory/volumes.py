"""The storage side of the simulated cluster: the PersistentVolume controller with a CSI
provisioner, and the attach-detach controller.

- A claim of a WaitForFirstConsumer StorageClass is provisioned when kube-scheduler has
  chosen a node for its first pod (`provision_for_node`, called before binding): the new
  PersistentVolume is zonal, in the node's zone (`topology.kubernetes.io/zone`), as the
  EBS CSI driver makes it.
- A claim of an Immediate StorageClass is provisioned as soon as it exists, in the first
  zone of the class's `allowedTopologies` (unconstrained when it has none).
- A provisioned claim is bound (spec.volumeName, phase Bound, the bind-completed
  annotation) to a volume named `pvc-<claim uid>`; a claim created naming a volume
  (spec.volumeName) is bound to it once that volume exists.
- Every volume a CSI driver attaches, mounted by a pod on a node that has not finished,
  has a VolumeAttachment (attached); one no such pod needs any more is deleted
  (detached) `detach_delay` seconds later. Deleting a claim deletes its volume when
  the reclaim policy is Delete.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from nodewright.cluster import objects
from nodewright.cluster.api import ApiError
from nodewright.cluster.memory.pod_status import is_terminal, node_name
from nodewright.cluster.memory.store import InMemoryCluster
from nodewright.runtime.reconciler import Result, Watch, WatchEvent, singleton_key
from nodewright.scheduling import volumes
from nodewright.scheduling.pods import VolumeClaim

log = logging.getLogger(__name__)

ZONE_LABEL = "topology.kubernetes.io/zone"
SELECTED_NODE = "volume.kubernetes.io/selected-node"
# Seconds from the last pod using a volume on a node being gone to its attachment being
# deleted (unmount, then the EBS detach).
DETACH_DELAY = 10.0
# Local volumes: made by hand (or a local-volume provisioner), never on demand.
NO_PROVISIONER = "kubernetes.io/no-provisioner"
Object = Mapping[str, Any]


class StoreLookup:
    """`scheduling.volumes.VolumeLookup` over the in-memory store."""

    def __init__(self, cluster: InMemoryCluster) -> None:
        self.cluster = cluster

    def claim(self, namespace: str, name: str) -> Object | None:
        return self.cluster.peek("PersistentVolumeClaim", name, namespace)

    def volume(self, name: str) -> Object | None:
        return self.cluster.peek("PersistentVolume", name)

    def storage_class(self, name: str) -> Object | None:
        return self.cluster.peek("StorageClass", name)


def pod_claims(pod: Object) -> list[str]:
    """The claim names of a pod object's PVC-backed volumes (ephemeral ones included)."""
    names = []
    for volume in (pod.get("spec") or {}).get("volumes") or []:
        if not isinstance(volume, Mapping):
            continue
        source = volume.get("persistentVolumeClaim")
        if isinstance(source, Mapping) and source.get("claimName"):
            names.append(str(source["claimName"]))
        elif "ephemeral" in volume:
            names.append(VolumeClaim(str(volume.get("name") or ""), None)
                         .claim_name(objects.name(pod)))
    return names


def provision_for_node(cluster: InMemoryCluster, pod: Object, node: Object) -> None:
    """Provision and bind the pod's unbound WaitForFirstConsumer claims for `node`."""
    lookup = StoreLookup(cluster)
    zone = objects.labels(node).get(ZONE_LABEL)
    for name in pod_claims(pod):
        claim = lookup.claim(objects.namespace(pod), name)
        if claim is None or (claim.get("spec") or {}).get("volumeName"):
            continue
        storage_class = lookup.storage_class(volumes.claim_class(claim))
        if storage_class is None or storage_class.get("volumeBindingMode") != (
            "WaitForFirstConsumer"
        ) or storage_class.get("provisioner") == NO_PROVISIONER:
            continue
        _provision(cluster, claim, storage_class, zone, objects.name(node))


def _provision(cluster: InMemoryCluster, claim: Object, storage_class: Object,
               zone: str | None, selected_node: str | None = None) -> None:
    driver = volumes.IN_TREE_DRIVERS.get(str(storage_class.get("provisioner") or ""),
                                         str(storage_class.get("provisioner") or ""))
    volume_name = f"pvc-{objects.uid(claim)}"
    spec = claim.get("spec") or {}
    storage = ((spec.get("resources") or {}).get("requests") or {}).get("storage", "1Gi")
    volume: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": volume_name,
                     "annotations": {"pv.kubernetes.io/provisioned-by": driver}},
        "spec": {
            "capacity": {"storage": storage},
            "accessModes": list(spec.get("accessModes") or ["ReadWriteOnce"]),
            "persistentVolumeReclaimPolicy": storage_class.get("reclaimPolicy", "Delete"),
            "storageClassName": objects.name(storage_class),
            "csi": {"driver": driver, "volumeHandle": f"vol-{objects.uid(claim)[:17]}"},
            "claimRef": {"kind": "PersistentVolumeClaim", "namespace": objects.namespace(claim),
                         "name": objects.name(claim), "uid": objects.uid(claim)},
        },
        "status": {"phase": "Bound"},
    }
    if zone:
        volume["spec"]["nodeAffinity"] = {"required": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": ZONE_LABEL, "operator": "In", "values": [zone]}]}]}}
    try:
        if cluster.peek("PersistentVolume", volume_name) is None:
            cluster.insert(volume)
        bound = dict(claim)
        annotations = {**objects.annotations(claim), volumes.BIND_COMPLETED: "yes",
                       "pv.kubernetes.io/bound-by-controller": "yes"}
        if selected_node:
            annotations[SELECTED_NODE] = selected_node
        bound["metadata"] = {**claim["metadata"], "annotations": annotations}
        bound["spec"] = {**spec, "volumeName": volume_name}
        cluster.update(bound)
        cluster.set_status("PersistentVolumeClaim", objects.name(claim),
                           objects.namespace(claim), {
                               "phase": "Bound",
                               "accessModes": volume["spec"]["accessModes"],
                               "capacity": {"storage": storage},
                           })
    except ApiError as error:
        log.info("provisioning %s: %s", objects.key(claim), error)


def attachment_name(driver: str, volume: str, node: str) -> str:
    """The attach-detach controller's name: csi-<sha256(volume, driver, node)>."""
    digest = hashlib.sha256(f"{volume}{driver}{node}".encode()).hexdigest()
    return f"csi-{digest}"


class VolumeController:
    """Provisioning of Immediate claims, and attachments following the pods."""

    name = "volume-controller"

    def __init__(self, cluster: InMemoryCluster, *, detach_delay: float = DETACH_DELAY
                 ) -> None:
        self.cluster = cluster
        self.detach_delay = detach_delay
        # Attachments no pod needs any more, and since when (they go after the delay).
        self._unneeded: dict[str, datetime] = {}
        self._watches = (
            Watch("PersistentVolumeClaim", singleton_key),
            Watch("PersistentVolume", singleton_key),
            Watch("VolumeAttachment", singleton_key),
            Watch("Pod", self._pod_keys),
        )

    @property
    def watches(self) -> Sequence[Watch]:
        return self._watches

    @staticmethod
    def _pod_keys(event: WatchEvent) -> Iterable[str]:
        spec = event.object.get("spec") or {}
        if not spec.get("volumes") or not spec.get("nodeName"):
            return ()
        return ("",)

    def reconcile(self, key: str) -> Result:
        if self.cluster.count("PersistentVolumeClaim") == 0 and self.cluster.count(
            "VolumeAttachment"
        ) == 0:
            return Result()
        lookup = StoreLookup(self.cluster)
        self._provision_immediate(lookup)
        self._release_deleted()
        wait = self._attach(lookup)
        return Result(requeue_after=wait) if wait is not None else Result()

    def _provision_immediate(self, lookup: StoreLookup) -> None:
        for claim in self.cluster.peek_all("PersistentVolumeClaim"):
            if objects.is_deleting(claim):
                continue
            if (claim.get("spec") or {}).get("volumeName"):
                self._complete_binding(claim, lookup)
                continue
            storage_class = lookup.storage_class(volumes.claim_class(claim))
            if storage_class is None or storage_class.get("volumeBindingMode", "Immediate") != (
                "Immediate"
            ) or storage_class.get("provisioner") in (None, "", NO_PROVISIONER):
                continue
            _provision(self.cluster, claim, storage_class, _first_zone(storage_class))

    def _complete_binding(self, claim: Object, lookup: StoreLookup) -> None:
        """A claim created with spec.volumeName (a pre-provisioned volume) is bound to it
        once the volume exists and is not someone else's."""
        if volumes.BIND_COMPLETED in objects.annotations(claim):
            return
        volume_name = str((claim.get("spec") or {}).get("volumeName"))
        volume = lookup.volume(volume_name)
        if volume is None:
            return
        ref = (volume.get("spec") or {}).get("claimRef") or {}
        if ref and (ref.get("name"), ref.get("namespace")) != (
            objects.name(claim), objects.namespace(claim)
        ):
            return
        try:
            if not ref.get("uid"):
                updated = dict(volume)
                updated["spec"] = {**(volume.get("spec") or {}), "claimRef": {
                    "kind": "PersistentVolumeClaim", "namespace": objects.namespace(claim),
                    "name": objects.name(claim), "uid": objects.uid(claim)}}
                self.cluster.update(updated)
                self.cluster.set_status("PersistentVolume", volume_name, None,
                                        {"phase": "Bound"})
            bound = dict(claim)
            bound["metadata"] = {**claim["metadata"], "annotations": {
                **objects.annotations(claim), volumes.BIND_COMPLETED: "yes"}}
            self.cluster.update(bound)
            self.cluster.set_status("PersistentVolumeClaim", objects.name(claim),
                                    objects.namespace(claim), {"phase": "Bound"})
        except ApiError as error:
            log.info("binding %s to %s: %s", objects.key(claim), volume_name, error)

    def _release_deleted(self) -> None:
        """A volume whose claim is gone is deleted (reclaim policy Delete)."""
        for volume in self.cluster.peek_all("PersistentVolume"):
            spec = volume.get("spec") or {}
            ref = spec.get("claimRef") or {}
            if not ref.get("uid") or spec.get("persistentVolumeReclaimPolicy",
                                                "Delete") != "Delete":
                continue
            claim = self.cluster.peek("PersistentVolumeClaim", str(ref.get("name")),
                                      str(ref.get("namespace")))
            if claim is None or objects.uid(claim) != ref.get("uid"):
                try:
                    self.cluster.delete("PersistentVolume", objects.name(volume))
                except ApiError as error:
                    log.info("deleting %s: %s", objects.name(volume), error)

    def _attach(self, lookup: StoreLookup) -> float | None:
        """Create the attachments pods need; delete those no pod has needed for the
        detach delay. Returns the seconds until the next detach is due."""
        wanted: dict[str, tuple[str, str, str]] = {}
        for pod in self.cluster.peek_all("Pod"):
            node = node_name(pod)
            if not node or is_terminal(pod):
                continue
            for claim_name in pod_claims(pod):
                claim = lookup.claim(objects.namespace(pod), claim_name)
                volume_name = str(((claim or {}).get("spec") or {}).get("volumeName") or "")
                if claim is None or not volume_name:
                    continue
                driver = volumes.driver(claim, lookup)
                if driver:
                    wanted[attachment_name(driver, volume_name, node)] = (
                        driver, volume_name, node)
        existing = {objects.name(a) for a in self.cluster.peek_all("VolumeAttachment")}
        now = self.cluster.clock.now()
        unneeded = existing - set(wanted)
        self._unneeded = {name: self._unneeded.get(name, now) for name in unneeded}
        wait: float | None = None
        for name in sorted(unneeded):
            left = self.detach_delay - (now - self._unneeded[name]).total_seconds()
            if left > 0:
                wait = left if wait is None else min(wait, left)
                continue
            try:
                self.cluster.delete("VolumeAttachment", name)
            except ApiError as error:
                log.info("detaching %s: %s", name, error)
        for name in sorted(set(wanted) - existing):
            driver, volume_name, node = wanted[name]
            try:
                self.cluster.insert({
                    "apiVersion": "storage.k8s.io/v1",
                    "kind": "VolumeAttachment",
                    "metadata": {"name": name},
                    "spec": {"attacher": driver, "nodeName": node,
                             "source": {"persistentVolumeName": volume_name}},
                    "status": {"attached": True},
                })
            except ApiError as error:
                log.info("attaching %s to %s: %s", volume_name, node, error)
        return wait


def _first_zone(storage_class: Object) -> str | None:
    for term in storage_class.get("allowedTopologies") or []:
        for expression in (term or {}).get("matchLabelExpressions") or []:
            if expression.get("key") in (ZONE_LABEL, "topology.ebs.csi.aws.com/zone") and (
                expression.get("values")
            ):
                return str(expression["values"][0])
    return None
