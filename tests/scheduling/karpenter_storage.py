"""Storage for the ported provisioning and scheduling suites (kubernetes-sigs/karpenter
v1.14.1): claims, volumes and classes are created in the in-memory API server (whose
DefaultStorageClass admission gives a claim without a class the newest default one, as
envtest's API server does for Karpenter), read back as the provisioner reads them
(`StoreLookup`), and a node's CSINode gives its attach limits as the cluster state reads
them (`StorageObjects.attach_limits`). A pod whose volumes Karpenter would not plan for
yet is left out of the round, as the provisioner leaves it out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from nodewright.cluster.memory import InMemoryCluster
from nodewright.cluster.memory.volumes import StoreLookup
from nodewright.runtime import VirtualClock
from nodewright.scheduling import volumes
from nodewright.scheduling.pods import Pod
from nodewright.state.objects import StorageObjects
from tests.scheduling.karpenter_fake import Cluster
from tests.scheduling.karpenter_scheduling import ZONE, fake_it, nodepool, pod

CSI_PROVIDER = "fake.csi.provider"
DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"
# The Describe's BeforeEach: one type with room for 1024 pods.
VOLUME_POOL = nodepool(catalog=[fake_it("instance-type", cpu=1024, pods=1024)])


class Storage:
    """The API server holding the storage objects, and the rounds of ExpectProvisioned."""

    def __init__(self, pool: Any = VOLUME_POOL) -> None:
        self.clock = VirtualClock(datetime(2026, 1, 5, tzinfo=UTC))
        self.api = InMemoryCluster(self.clock)
        self.cluster = Cluster()
        self.pool = pool
        self.left_out: list[tuple[str, str]] = []

    def apply(self, *bodies: Mapping[str, Any]) -> None:
        for body in bodies:
            self.api.create(dict(body))
            self.clock.advance(2)

    def provision(self, *pods: Pod) -> None:
        lookup = StoreLookup(self.api)
        kept = []
        for p in pods:
            why = volumes.problem(p, lookup) if p.volume_claims else None
            if why is None:
                kept.append(volumes.resolved(p, lookup))
            else:
                self.left_out.append((p.key, why))
        if kept:
            self.cluster.provision([self.pool], *kept)

    def csi_node(self, node_name: str, limits: Mapping[str, int]) -> None:
        """A CSINode for the node: its drivers' attach limits, as the state reads them."""
        storage = StorageObjects()
        storage.csi_nodes[node_name] = {"spec": {"drivers": [
            {"name": name, "nodeID": "fake-node-id",
             "allocatable": {"count": count}} for name, count in limits.items()]}}
        attach = storage.attach_limits(node_name)
        self.cluster.nodes = [replace(n, volume_limits=attach) if n.name == node_name else n
                              for n in self.cluster.nodes]


def storage_class(name: str, *, provisioner: str = CSI_PROVIDER, mode: str | None = None,
                  zones: Sequence[str] = (), default: bool = False,
                  topologies: Sequence[Sequence[tuple[str, Sequence[str]]]] = ()
                  ) -> dict[str, Any]:
    """test.StorageClass: Zones make one allowed-topology term."""
    metadata: dict[str, Any] = {"name": name}
    if default:
        metadata["annotations"] = {DEFAULT_CLASS: "true"}
    terms = [[(ZONE, list(zones))]] if zones else [list(t) for t in topologies]
    body: dict[str, Any] = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                            "metadata": metadata, "provisioner": provisioner}
    if mode is not None:
        body["volumeBindingMode"] = mode
    if terms:
        body["allowedTopologies"] = [
            {"matchLabelExpressions": [{"key": k, "values": list(v)} for k, v in term]}
            for term in terms]
    return body


def volume(name: str, *, zones: Sequence[str] = (), driver: str = "test.driver",
           source: str = "csi", terms: Sequence[Sequence[dict[str, Any]]] = (),
           class_name: str | None = None) -> dict[str, Any]:
    """test.PersistentVolume: a CSI volume unless `source` is local, hostPath, nfs or
    awsElasticBlockStore; Zones make one node-affinity term."""
    sources: dict[str, Any] = {
        "csi": {"csi": {"driver": driver, "volumeHandle": "test-handle"}},
        "local": {"local": {"path": "/mnt/local-disks"}},
        "hostPath": {"hostPath": {"path": "/mnt/local-disks"}},
        "nfs": {"nfs": {"server": "fake.server", "path": "/some/path"}},
        "awsElasticBlockStore": {"awsElasticBlockStore": {"fsType": "ext4",
                                                          "volumeID": "vol-1"}},
    }
    spec: dict[str, Any] = {**sources[source], "accessModes": ["ReadWriteOnce"],
                            "capacity": {"storage": "100Gi"}}
    selector_terms = ([[{"key": ZONE, "operator": "In", "values": list(zones)}]] if zones
                      else [list(t) for t in terms])
    if selector_terms:
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [
            {"matchExpressions": term} for term in selector_terms]}}
    if class_name is not None:
        spec["storageClassName"] = class_name
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
            "spec": spec}


def claim(name: str, *, class_name: str | None = None, volume_name: str = "",
          bind_completed: bool = True, **metadata: Any) -> dict[str, Any]:
    """test.PersistentVolumeClaim: bound ones carry pv.kubernetes.io/bind-completed."""
    spec: dict[str, Any] = {"accessModes": ["ReadWriteOnce"],
                            "resources": {"requests": {"storage": "1Gi"}}}
    if class_name is not None:
        spec["storageClassName"] = class_name
    meta: dict[str, Any] = {"name": name, "namespace": "default", **metadata}
    if volume_name:
        spec["volumeName"] = volume_name
        if bind_completed:
            meta["annotations"] = {"pv.kubernetes.io/bind-completed": "yes"}
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta,
            "spec": spec}


def with_claims(*names: str, **options: Any) -> Pod:
    return pod(volumes=[{"name": f"v{i}", "persistentVolumeClaim": {"claimName": name}}
                        for i, name in enumerate(names)], **options)


def with_ephemeral(name: str, class_name: str | None = None) -> Pod:
    """A pod with the generic ephemeral volume tmp-ephemeral (its claim: <pod>-tmp-ephemeral)."""
    spec: dict[str, Any] = {"accessModes": ["ReadWriteOnce"],
                            "resources": {"requests": {"storage": "1Gi"}}}
    if class_name is not None:
        spec["storageClassName"] = class_name
    return pod(name=name, volumes=[{"name": "tmp-ephemeral", "ephemeral": {
        "volumeClaimTemplate": {"spec": spec}}}])
