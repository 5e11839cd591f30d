"""What the Kubernetes adapter asks of the API server: the single source of the RBAC rules.

The operator watches `WATCHED_KINDS` (list + watch through informers; reads are served
from their caches) and writes through the verbs in `WRITES`. `nodewright manifests` and
infra/ render the ClusterRole and Roles from these tables (tests/support/rbac.py checks
every call the controllers make against them).

The shape follows Karpenter's chart (clusterrole-core.yaml, clusterrole.yaml, role.yaml):
read access to what the scheduler simulation needs, writes only where a controller writes,
the leader-election Lease writable by name only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from nodewright.cluster.api import kind_of

Cloud = Literal["aws", "sim"]
Scope = Literal["cluster", "own-namespace", "node-leases", "kube-dns"]

LEADER_ELECTION_LEASE = "nodewright-leader-election"
NODE_LEASE_NAMESPACE = "kube-node-lease"
# The cluster DNS Service, read once at start-up with `--cloud aws` (Karpenter's chart grants
# the same in kube-system): its cluster IP is the nodes' DNS and tells an IPv6 cluster.
KUBE_DNS_NAMESPACE = "kube-system"
KUBE_DNS_SERVICE = "kube-dns"

# Informers run for these kinds; `get` and `list` of them never reach the API server.
WATCHED_KINDS: tuple[str, ...] = (
    "Pod",
    "Node",
    "Namespace",
    "NodeClaim",
    "NodePool",
    "EC2NodeClass",
    "NodeOverlay",
    "CapacityBuffer",
    "PodTemplate",
    # What a CapacityBuffer's scalableRef may name.
    "Deployment",
    "StatefulSet",
    "ReplicaSet",
    "PodDisruptionBudget",
    "DaemonSet",
    # Volume topology, attach limits (CSINode) and termination's wait for detachment,
    # as Karpenter's chart reads them. RuntimeClass is not read: its admission plugin
    # has already written the overhead into each pod's spec.
    "PersistentVolumeClaim",
    "PersistentVolume",
    "StorageClass",
    "CSINode",
    "VolumeAttachment",
)

# Watched only with the CapacityBuffer feature gate on, as Karpenter registers the buffer
# controller (and so its informers) only then: a cluster's workloads are not cached for
# nothing.
CAPACITY_BUFFER_KINDS: tuple[str, ...] = ("CapacityBuffer", "Deployment", "StatefulSet",
                                          "ReplicaSet")


def watched_kinds(*, capacity_buffer: bool) -> tuple[str, ...]:
    """The kinds the operator's informers run for, given the CapacityBuffer gate."""
    if capacity_buffer:
        return WATCHED_KINDS
    return tuple(kind for kind in WATCHED_KINDS if kind not in CAPACITY_BUFFER_KINDS)


@dataclass(frozen=True)
class Access:
    """Verbs on one resource (or subresource, "nodeclaims/status") of one API group."""

    group: str
    resource: str
    verbs: tuple[str, ...]
    scope: Scope = "cluster"
    names: tuple[str, ...] = ()
    # Only the simulated cloud's node keeper (`--cloud sim`) needs it.
    sim_only: bool = False
    # Only the AWS provider (`--cloud aws`) needs it.
    aws_only: bool = False


def _reads() -> tuple[Access, ...]:
    return tuple(
        Access(kind_of(kind).group, kind_of(kind).plural, ("get", "list", "watch"))
        for kind in WATCHED_KINDS
    )


WRITES: tuple[Access, ...] = (
    Access("karpenter.sh", "nodeclaims", ("create", "update", "patch", "delete")),
    Access("karpenter.sh", "nodeclaims/status", ("update", "patch")),
    Access("karpenter.sh", "nodepools", ("update", "patch")),
    Access("karpenter.sh", "nodepools/status", ("update", "patch")),
    Access("karpenter.sh", "nodeoverlays/status", ("update", "patch")),
    Access("autoscaling.x-k8s.io", "capacitybuffers/status", ("update", "patch")),
    Access("karpenter.k8s.aws", "ec2nodeclasses", ("update", "patch")),
    Access("karpenter.k8s.aws", "ec2nodeclasses/status", ("update", "patch")),
    Access("", "nodes", ("update", "patch", "delete")),
    Access("", "pods", ("delete",)),
    Access("", "pods/eviction", ("create",)),
    Access("events.k8s.io", "events", ("create", "patch")),
    # Leader election: the Lease is read and renewed by name; create cannot be limited by
    # name (the RBAC authorizer does not know the name of an object being created).
    Access("coordination.k8s.io", "leases", ("get", "update"), "own-namespace",
           (LEADER_ELECTION_LEASE,)),
    Access("coordination.k8s.io", "leases", ("create",), "own-namespace"),
    # --cloud sim: the controller registers the nodes of simulated instances itself, keeps
    # their heartbeat Leases and reports the pods on them as running (what kwok does).
    Access("", "nodes", ("create",), sim_only=True),
    Access("", "nodes/status", ("update", "patch"), sim_only=True),
    Access("", "pods/status", ("update", "patch"), sim_only=True),
    Access("coordination.k8s.io", "leases", ("get", "create", "update"), "node-leases",
           sim_only=True),
    # Not a write: a single read by name, outside the informers.
    Access("", "services", ("get",), "kube-dns", (KUBE_DNS_SERVICE,), aws_only=True),
)


def permissions(cloud: Cloud) -> tuple[Access, ...]:
    """Everything the operator may do with this cloud, reads first."""
    return _reads() + tuple(a for a in WRITES if (cloud == "sim" or not a.sim_only)
                            and (cloud == "aws" or not a.aws_only))
