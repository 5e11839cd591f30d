"""Reading a cluster into one scenario document (`nodewright snapshot`).

Only get and list on the kinds of `rbac.READ_KINDS`, through any ClusterAPI (the real
API server's or the in-memory cluster's). Managed capacity is what has a NodeClaim
(Karpenter's or ours): it becomes `nodeClaims` entries with their age and launch hashes.
Nodes without one (EKS managed node groups, Auto Scaling groups, Cluster Autoscaler) are
kept as unmanaged Node manifests. Running pods become `boundPods` of their top owner
(a Deployment through its ReplicaSet, a StatefulSet, a Job, a bare ReplicaSet, or the
Pod itself); a workload's pods not running anywhere are created pending by its
controller in the simulation, and bare pending Pods are written as they are.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from nodewright.api.ec2nodeclass import EC2NodeClass
from nodewright.api.hashes import nodeclaim_hash_annotations
from nodewright.api.nodepool import NodePool
from nodewright.cluster import objects
from nodewright.cluster.api import ClusterAPI, NotFoundError, kind_of
from nodewright.runtime.clock import format_time
from nodewright.scheduling import labels as well_known
from nodewright.scheduling import offline_data
from nodewright.scheduling.catalog import offline_catalog
from nodewright.sim.durations import format_duration
from nodewright.sim.snapshot import sanitize
from nodewright.sim.snapshot.rbac import READ_KINDS

DEFAULT_REGION = "us-east-1"
NODEGROUP_LABEL = "eks.amazonaws.com/nodegroup"
EKS_CAPACITY_LABEL = "eks.amazonaws.com/capacityType"
HASH_ANNOTATIONS = ("karpenter.sh/nodepool-hash", "karpenter.k8s.aws/ec2nodeclass-hash")
HASH_VERSION_ANNOTATIONS = ("karpenter.sh/nodepool-hash-version",
                            "karpenter.k8s.aws/ec2nodeclass-hash-version")
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
SETTLE_TIMEOUT = "4h"
_ORDINAL = re.compile(r"-(\d+)$")
_PROVIDER_ID = re.compile(r"^aws:///([a-z0-9-]+)/(i-[0-9a-z]+)$")
_LABEL_DOMAINS_KEPT_OFF = ("kubernetes.io/", "k8s.io/", "karpenter.sh/", "karpenter.k8s.aws/",
                           "topology.kubernetes.io/", "node.kubernetes.io/")


@dataclass
class Snapshot:
    """The scenario document, what was left out and why, and the unmanaged nodes (for
    `--as-nodepools`)."""

    document: dict[str, Any]
    warnings: list[str] = field(default_factory=list)
    unmanaged_nodes: list[dict[str, Any]] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)


@dataclass
class _Owner:
    kind: str
    namespace: str
    name: str


def take_snapshot(cluster: ClusterAPI, now: datetime, *, name: str = "snapshot",
                  source: str = "") -> Snapshot:
    return _Reader(cluster, now, name, source).read()


class _Reader:
    def __init__(self, cluster: ClusterAPI, now: datetime, name: str, source: str) -> None:
        self.cluster = cluster
        self.now = now
        self.name = name
        self.source = source
        self.warnings: list[str] = []
        self.found: dict[str, list[dict[str, Any]]] = {}

    def _list(self, kind: str) -> list[dict[str, Any]]:
        assert kind in READ_KINDS, kind
        try:
            items = self.cluster.list(kind)
        except NotFoundError:
            self.warnings.append(f"{kind}: not served by this cluster (no such API); none read")
            return []
        return [obj for obj in items if not objects.is_deleting(obj)]

    def read(self) -> Snapshot:
        for kind in READ_KINDS:
            self.found[kind] = self._list(kind)
        region, zones = self._region()
        catalog = {it.name for it in offline_catalog(region, zones)} if zones else set()
        pools = {objects.name(p) for p in self.found["NodePool"]}
        claims, managed_nodes = self._claims(pools, catalog, zones)
        managed_names = set(managed_nodes.values())
        skipped_nodes = {objects.name(n) for n in self.found["Node"]
                         if self._claim_node_skipped(n, managed_names)}
        unmanaged = [n for n in self.found["Node"]
                     if objects.name(n) not in managed_names
                     and objects.name(n) not in skipped_nodes]
        owners = _OwnerIndex(self.found["ReplicaSet"])
        workloads = self._workloads()
        bound, bare = self._pods(owners, workloads, managed_names |
                                 {objects.name(n) for n in unmanaged}, managed_nodes)
        manifests = self._manifests(unmanaged, workloads, bare)
        document: dict[str, Any] = {
            "name": self.name,
            "description": (f"A snapshot of {self.source or 'a cluster'} taken "
                            f"{format_time(self.now)}: {len(claims)} NodeClaims, "
                            f"{len(unmanaged)} unmanaged nodes, "
                            f"{sum(b['count'] for b in bound)} running pods."),
            "region": region,
            "start": format_time(self.now.replace(microsecond=0)),
            "manifests": manifests,
            "nodeClaims": claims,
            "boundPods": bound,
            "steps": [{"settle": {"timeout": SETTLE_TIMEOUT}}],
        }
        if zones:
            document["zones"] = list(zones)
        counts = {"nodeClaims": len(claims), "unmanagedNodes": len(unmanaged),
                  "boundPods": sum(b["count"] for b in bound),
                  "manifests": len(manifests)}
        return Snapshot(document, self.warnings, [_node_manifest(n) for n in unmanaged],
                        counts)

    # -- where ---------------------------------------------------------------------------

    def _region(self) -> tuple[str, tuple[str, ...]]:
        seen = Counter(zone for node in self.found["Node"] if (zone := _zone(node)))
        regions = Counter(zone[:-1] for zone in seen.elements())
        region = regions.most_common(1)[0][0] if regions else DEFAULT_REGION
        if region not in offline_data.regions():
            self.warnings.append(f"region {region!r} is not in the offline catalog; the "
                                 f"snapshot uses {DEFAULT_REGION}")
            region = DEFAULT_REGION
        known = set(offline_data.region_zones(region))
        zones = tuple(sorted(z for z in seen if z in known))
        return region, zones

    # -- managed capacity ----------------------------------------------------------------

    def _claims(self, pools: set[str], catalog: set[str], zones: tuple[str, ...]
                ) -> tuple[list[dict[str, Any]], dict[str, str]]:
        """The nodeClaims entries, and claim name -> node name for those kept."""
        entries: list[dict[str, Any]] = []
        kept: dict[str, str] = {}
        nodes = {objects.name(n): n for n in self.found["Node"]}
        for claim in sorted(self.found["NodeClaim"], key=objects.name):
            name = objects.name(claim)
            labels = objects.labels(claim)
            status = claim.get("status") or {}
            node_name = str(status.get("nodeName") or "")
            node = nodes.get(node_name)
            node_labels = objects.labels(node) if node else {}
            pool = labels.get(well_known.NODEPOOL, "")
            instance_type = labels.get(well_known.INSTANCE_TYPE) or node_labels.get(
                well_known.INSTANCE_TYPE, "")
            zone = labels.get(well_known.ZONE) or (_zone(node) if node else "") or ""
            capacity_type = _capacity_type({**node_labels, **labels})
            problem = None
            if not node_name or node is None:
                problem = "has no registered node yet"
            elif pool not in pools:
                problem = f"belongs to NodePool {pool!r}, which does not exist"
            elif instance_type not in catalog:
                problem = f"runs {instance_type!r}, not in the offline catalog"
            elif zone not in zones:
                problem = f"is in zone {zone!r}, not in the region's catalog"
            if problem is not None:
                self.warnings.append(f"NodeClaim {name} {problem}: left out (its pods are "
                                     "written as pending)")
                continue
            created = objects.creation_time(claim)
            age = max(0.0, (self.now - created).total_seconds()) if created else 0.0
            entry: dict[str, Any] = {
                "name": name, "nodePool": pool, "instanceType": instance_type, "zone": zone,
                "capacityType": "spot" if capacity_type == "spot" else "on-demand",
                "age": format_duration(round(age)), "nodeName": node_name,
            }
            entry.update(self._launch_hashes(claim, pool))
            custom = {k: v for k, v in labels.items()
                      if not _is_system_label(k)}
            if custom:
                entry["labels"] = custom
            entries.append(entry)
            kept[name] = node_name
        return entries, kept

    def _launch_hashes(self, claim: Mapping[str, Any], pool: str) -> dict[str, Any]:
        """The hashes the NodeClaim was launched with, written only where they differ from
        its NodePool's and EC2NodeClass's now (so a snapshot, redacted or not, drifts what
        the cluster would drift); another hash version (Karpenter's) is kept as it is."""
        annotations = objects.annotations(claim)
        current = self._current_hashes(pool)
        entry: dict[str, Any] = {}
        kept: dict[str, str] = {}
        for key, version, field_name in zip(HASH_ANNOTATIONS, HASH_VERSION_ANNOTATIONS,
                                            ("nodePoolHash", "nodeClassHash"), strict=True):
            value, stamped = annotations.get(key), annotations.get(version)
            if value is None:
                continue
            if stamped != current.get(version) or value != current.get(key):
                entry[field_name] = value
                if stamped is not None:
                    kept[version] = stamped
        if kept:
            entry["annotations"] = kept
        return entry

    def _current_hashes(self, pool_name: str) -> dict[str, str]:
        cache: dict[str, dict[str, str]] = self.__dict__.setdefault("_hashes", {})
        if pool_name not in cache:
            cache[pool_name] = self._hashes_now(pool_name)
        return cache[pool_name]

    def _hashes_now(self, pool_name: str) -> dict[str, str]:
        pool = next((p for p in self.found["NodePool"] if objects.name(p) == pool_name), None)
        if pool is None:
            return {}
        try:
            model = NodePool.model_validate(pool)
            ref = model.spec.template.spec.node_class_ref.name
            body = next((c for c in self.found["EC2NodeClass"] if objects.name(c) == ref),
                        None)
            node_class = EC2NodeClass.model_validate(body) if body is not None else None
        except ValidationError:
            return {}
        hashes = nodeclaim_hash_annotations(model, node_class)
        # A running controller's EC2NodeClass hash covers the cluster CA it runs with, which
        # a snapshot cannot know: the hash that controller stamped on the EC2NodeClass is
        # the one its NodeClaims are compared with (as Karpenter compares the annotations);
        # the computed one is the fallback. (The NodePool's is computed: Nodewright compares
        # a NodeClaim with the NodePool's spec, even before its annotation is updated.)
        stamped = objects.annotations(body) if body is not None else {}
        key, version = HASH_ANNOTATIONS[1], HASH_VERSION_ANNOTATIONS[1]
        if stamped.get(key) and stamped.get(version):
            hashes[key], hashes[version] = stamped[key], stamped[version]
        return hashes

    def _claim_node_skipped(self, node: Mapping[str, Any], kept: set[str]) -> bool:
        """A node of a NodeClaim that was left out (it is not unmanaged capacity)."""
        name = objects.name(node)
        if "_claimed" not in self.__dict__:
            self.__dict__["_claimed"] = {str((c.get("status") or {}).get("nodeName") or "")
                                         for c in self.found["NodeClaim"]}
        return name not in kept and name in self.__dict__["_claimed"]

    # -- workloads and pods --------------------------------------------------------------

    def _workloads(self) -> dict[tuple[str, str, str], dict[str, Any]]:
        found: dict[tuple[str, str, str], dict[str, Any]] = {}
        for kind in ("Deployment", "StatefulSet", "Job", "DaemonSet"):
            for obj in self.found[kind]:
                if kind == "Job" and _finished(obj):
                    continue
                found[(kind, objects.namespace(obj), objects.name(obj))] = obj
        for replica_set in self.found["ReplicaSet"]:
            if objects.controller_owner(replica_set) is None:
                found[("ReplicaSet", objects.namespace(replica_set),
                       objects.name(replica_set))] = replica_set
        return found

    def _pods(
        self, owners: _OwnerIndex, workloads: dict[tuple[str, str, str], dict[str, Any]],
        nodes: set[str], managed: dict[str, str],
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The boundPods entries, and the bare Pods to write (bound ones keep no nodeName:
        an entry binds them)."""
        claim_of = {node: claim for claim, node in managed.items()}
        counts: Counter[tuple[str, str, str, str]] = Counter()
        ordinals: list[tuple[str, int, str, str]] = []  # set key, ordinal, node, set name
        bare: list[dict[str, Any]] = []
        self.priorities: dict[tuple[str, str, str], int] = {}
        for pod in self.found["Pod"]:
            phase = (pod.get("status") or {}).get("phase")
            if phase in ("Succeeded", "Failed"):
                continue
            node = str((pod.get("spec") or {}).get("nodeName") or "")
            owner = owners.top_owner(pod)
            if owner is not None and (owner.kind, owner.namespace, owner.name) not in workloads:
                owner = None  # a finished Job's, or a kind the simulator does not run
            if owner is not None and owner.kind == "DaemonSet":
                continue  # its controller puts one on every node it fits
            key = (owner.kind, owner.namespace, owner.name) if owner else None
            priority = (pod.get("spec") or {}).get("priority")
            if key is not None and isinstance(priority, int) and priority:
                self.priorities.setdefault(key, priority)
            if objects.annotations(pod).get(MIRROR_ANNOTATION):
                owner = None
            where = claim_of.get(node, node) if node in nodes else ""
            if owner is None:
                bare.append(pod)
                if where:
                    counts[(where, "Pod", objects.namespace(pod), objects.name(pod))] += 1
                continue
            if not where:
                continue  # pending: the workload's controller creates it again
            if owner.kind == "StatefulSet":
                match = _ORDINAL.search(objects.name(pod))
                ordinals.append((f"{owner.namespace}/{owner.name}",
                                 int(match[1]) if match else 0, where, owner.name))
                continue
            counts[(where, owner.kind, owner.namespace, owner.name)] += 1
        entries: list[dict[str, Any]] = []
        placed: Counter[tuple[str, str, str]] = Counter()
        for (node, kind, namespace, name), count in sorted(counts.items()):
            most = _pods_of(workloads.get((kind, namespace, name)), kind)
            count = min(count, most - placed[(kind, namespace, name)])
            if count <= 0:
                self.warnings.append(f"{kind} {namespace}/{name}: more pods running than it "
                                     f"asks for (a rollout?): the extra on {node} left out")
                continue
            placed[(kind, namespace, name)] += count
            entries.append({"node": node, "kind": kind, "namespace": namespace, "name": name,
                            "count": count})
        for set_key, _, node, name in sorted(ordinals):
            namespace = set_key.partition("/")[0]
            key = ("StatefulSet", namespace, name)
            if placed[key] >= _pods_of(workloads.get(key), "StatefulSet"):
                continue
            placed[key] += 1
            entries.append({"node": node, "kind": "StatefulSet", "namespace": namespace,
                            "name": name, "count": 1})
        return entries, bare

    # -- manifests -----------------------------------------------------------------------

    def _manifests(self, unmanaged: list[dict[str, Any]],
                   workloads: dict[tuple[str, str, str], dict[str, Any]],
                   bare: list[dict[str, Any]]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        used: set[str] = {ns for (_, ns, _) in workloads} | {objects.namespace(p) for p in bare}
        used |= {objects.namespace(o) for kind in ("PodDisruptionBudget",
                                                    "PersistentVolumeClaim", "CapacityBuffer")
                 for o in self.found[kind]}
        for namespace in self.found["Namespace"]:
            if objects.name(namespace) in used:
                out.append(_plain(namespace, {}))
        for sc in self.found["StorageClass"]:
            out.append(_plain(sc, {k: sc[k] for k in ("provisioner", "volumeBindingMode",
                                                       "allowedTopologies", "reclaimPolicy")
                                   if k in sc}))
        for pv in self.found["PersistentVolume"]:
            out.append(_plain(pv, {"spec": _pv_spec(pv.get("spec") or {})}))
        for pvc in self.found["PersistentVolumeClaim"]:
            spec = pvc.get("spec") or {}
            out.append(_plain(pvc, {"spec": {k: spec[k] for k in (
                "accessModes", "resources", "storageClassName", "volumeName", "volumeMode")
                if k in spec}}))
        for kind in ("EC2NodeClass", "NodePool", "NodeOverlay"):
            for obj in self.found[kind]:
                out.append(_plain(obj, {"spec": obj.get("spec") or {}}))
        out.extend(_node_manifest(node) for node in unmanaged)
        for (kind, _, _), obj in sorted(workloads.items()):
            out.append(self._workload(kind, obj))
        for pdb in self.found["PodDisruptionBudget"]:
            spec = pdb.get("spec") or {}
            out.append(_plain(pdb, {"spec": {k: spec[k] for k in (
                "selector", "minAvailable", "maxUnavailable", "unhealthyPodEvictionPolicy")
                if k in spec}}))
        for pod in bare:
            out.append(_plain(pod, {"spec": sanitize.pod_spec(pod.get("spec"))}))
        for buffer in self.found["CapacityBuffer"]:
            out.append(_plain(buffer, {"spec": buffer.get("spec") or {}}))
        return out

    def _workload(self, kind: str, obj: dict[str, Any]) -> dict[str, Any]:
        spec = dict(obj.get("spec") or {})
        key = (kind, objects.namespace(obj), objects.name(obj))
        spec["template"] = sanitize.pod_template(spec.get("template"),
                                                 self.priorities.get(key))
        kept = {k: spec[k] for k in (
            "replicas", "selector", "template", "minReadySeconds", "paused", "serviceName",
            "volumeClaimTemplates", "podManagementPolicy", "parallelism", "completions",
            "backoffLimit", "updateStrategy", "persistentVolumeClaimRetentionPolicy",
            "ordinals") if k in spec}
        if kind == "Job" and "selector" in kept and not spec.get("manualSelector"):
            del kept["selector"]  # the API server generates it from the Job's uid
            labels = kept["template"]["metadata"].get("labels") or {}
            kept["template"]["metadata"]["labels"] = {
                k: v for k, v in labels.items()
                if k not in ("controller-uid", "batch.kubernetes.io/controller-uid",
                             "job-name", "batch.kubernetes.io/job-name")}
        return _plain(obj, {"spec": kept})


class _OwnerIndex:
    """A pod's top owner: through its ReplicaSet to the Deployment, else its controller."""

    def __init__(self, replica_sets: Iterable[dict[str, Any]]) -> None:
        self.replica_sets = {(objects.namespace(rs), objects.name(rs)): rs
                             for rs in replica_sets}

    def top_owner(self, pod: Mapping[str, Any]) -> _Owner | None:
        owner = objects.controller_owner(pod)
        if owner is None:
            return None
        namespace = objects.namespace(pod)
        kind, name = str(owner.get("kind")), str(owner.get("name"))
        if kind == "ReplicaSet":
            replica_set = self.replica_sets.get((namespace, name))
            parent = objects.controller_owner(replica_set) if replica_set else None
            if parent is not None and parent.get("kind") == "Deployment":
                return _Owner("Deployment", namespace, str(parent.get("name")))
            if parent is not None:
                return None
        if kind in ("ReplicaSet", "StatefulSet", "Job", "DaemonSet"):
            return _Owner(kind, namespace, name)
        return None


def _plain(obj: Mapping[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    kind = str(obj.get("kind"))
    info = kind_of(kind)
    return {"apiVersion": info.api_version, "kind": kind,
            "metadata": sanitize.metadata(obj, namespaced=info.namespaced), **body}


def _node_manifest(node: Mapping[str, Any]) -> dict[str, Any]:
    spec = node.get("spec") or {}
    status = node.get("status") or {}
    kept_spec = {k: spec[k] for k in ("providerID", "taints", "unschedulable") if k in spec}
    ready = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"),
                 {"type": "Ready", "status": "True"})
    return _plain(node, {"spec": kept_spec, "status": {
        "capacity": status.get("capacity") or {},
        "allocatable": status.get("allocatable") or {},
        "conditions": [{"type": "Ready", "status": ready.get("status", "True")}],
    }})


def _pv_spec(spec: Mapping[str, Any]) -> dict[str, Any]:
    kept = {k: spec[k] for k in ("capacity", "accessModes", "storageClassName", "nodeAffinity",
                                 "persistentVolumeReclaimPolicy", "volumeMode") if k in spec}
    csi = spec.get("csi") or {}
    if csi:
        kept["csi"] = {k: csi[k] for k in ("driver", "volumeHandle") if k in csi}
    claim = spec.get("claimRef") or {}
    if claim:
        kept["claimRef"] = {k: claim[k] for k in ("name", "namespace") if k in claim}
    return kept


def _zone(node: Mapping[str, Any] | None) -> str | None:
    if node is None:
        return None
    zone = objects.labels(node).get(well_known.ZONE)
    if zone:
        return zone
    match = _PROVIDER_ID.match(str((node.get("spec") or {}).get("providerID") or ""))
    return match[1] if match else None


def _capacity_type(labels: Mapping[str, str]) -> str:
    value = labels.get(well_known.CAPACITY_TYPE) or labels.get(EKS_CAPACITY_LABEL, "")
    return "spot" if value.lower() == "spot" else "on-demand"


def _is_system_label(key: str) -> bool:
    domain = key.partition("/")[0] + "/" if "/" in key else ""
    return any(domain.endswith(d) or key.startswith(d) for d in _LABEL_DOMAINS_KEPT_OFF)


def _finished(job: Mapping[str, Any]) -> bool:
    return any(c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
               for c in (job.get("status") or {}).get("conditions") or [])


def _pods_of(workload: Mapping[str, Any] | None, kind: str) -> int:
    if kind == "Pod":
        return 1
    if workload is None:
        return 0
    value = (workload.get("spec") or {}).get("parallelism" if kind == "Job" else "replicas", 1)
    return value if isinstance(value, int) and not isinstance(value, bool) else 1

