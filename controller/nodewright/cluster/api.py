"""The ClusterAPI seam: what controllers ask of a Kubernetes API server.

Objects travel in their Kubernetes wire shape (plain dicts: apiVersion, kind, metadata,
spec, status), so the real adapter (`nodewright.cluster.kube`) is a thin layer over a
client library and the in-memory cluster (`nodewright.cluster.memory`) can be checked
against the same expectations. Reads return copies: mutating one changes nothing until
it is written back.

Errors mirror the API server's status codes so callers can react the way Karpenter's
controllers do (a 409 means re-read and retry; a 429 from eviction means a
PodDisruptionBudget forbids it right now).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from nodewright.runtime.reconciler import WatchEvent

Object = dict[str, Any]


@dataclass(frozen=True)
class Kind:
    """How a kind is addressed: group/version, resource plural, scope, subresources."""

    kind: str
    api_version: str
    plural: str
    namespaced: bool
    has_status: bool = True

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    @property
    def version(self) -> str:
        return self.api_version.rpartition("/")[2]


KINDS: Mapping[str, Kind] = {
    k.kind: k
    for k in (
        Kind("Pod", "v1", "pods", True),
        Kind("Node", "v1", "nodes", False),
        Kind("Namespace", "v1", "namespaces", False),
        Kind("NodeClaim", "karpenter.sh/v1", "nodeclaims", False),
        Kind("NodePool", "karpenter.sh/v1", "nodepools", False),
        Kind("EC2NodeClass", "karpenter.k8s.aws/v1", "ec2nodeclasses", False),
        Kind("NodeOverlay", "karpenter.sh/v1alpha1", "nodeoverlays", False),
        Kind("CapacityBuffer", "autoscaling.x-k8s.io/v1beta1", "capacitybuffers", True),
        Kind("PodTemplate", "v1", "podtemplates", True, has_status=False),
        Kind("PodDisruptionBudget", "policy/v1", "poddisruptionbudgets", True),
        Kind("DaemonSet", "apps/v1", "daemonsets", True),
        Kind("ReplicaSet", "apps/v1", "replicasets", True),
        Kind("Deployment", "apps/v1", "deployments", True),
        Kind("StatefulSet", "apps/v1", "statefulsets", True),
        Kind("Job", "batch/v1", "jobs", True),
        Kind("PersistentVolumeClaim", "v1", "persistentvolumeclaims", True),
        Kind("PersistentVolume", "v1", "persistentvolumes", False),
        Kind("StorageClass", "storage.k8s.io/v1", "storageclasses", False, has_status=False),
        Kind("CSINode", "storage.k8s.io/v1", "csinodes", False, has_status=False),
        Kind("VolumeAttachment", "storage.k8s.io/v1", "volumeattachments", False),
        Kind("RuntimeClass", "node.k8s.io/v1", "runtimeclasses", False, has_status=False),
        Kind("Lease", "coordination.k8s.io/v1", "leases", True, has_status=False),
        Kind("Event", "events.k8s.io/v1", "events", True, has_status=False),
        Kind("Service", "v1", "services", True),
    )
}


def kind_of(name: str) -> Kind:
    try:
        return KINDS[name]
    except KeyError:
        raise ValueError(f"unsupported kind {name!r} (supported: {', '.join(KINDS)})") from None


class ApiError(Exception):
    """An API server error: HTTP status code, Kubernetes reason and message."""

    status = 500
    reason = "InternalError"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class NotFoundError(ApiError):
    status = 404
    reason = "NotFound"


class AlreadyExistsError(ApiError):
    status = 409
    reason = "AlreadyExists"


class ConflictError(ApiError):
    """A write based on a stale resourceVersion (or a failed precondition)."""

    status = 409
    reason = "Conflict"


class InvalidError(ApiError):
    status = 422
    reason = "Invalid"


class TooManyRequestsError(ApiError):
    """Eviction refused because a PodDisruptionBudget allows no disruption now."""

    status = 429
    reason = "TooManyRequests"


class UnreachableError(ApiError):
    """Nothing answered: the connection failed or timed out. Controllers treat it as the
    503 of an unavailable server and retry; a command line says what it could not reach."""

    status = 503
    reason = "ServiceUnavailable"


@runtime_checkable
class WatchStream(Protocol):
    """Events of the watched kinds in the order the server produced them. The first
    events are ADDED for every object that existed when the watch began (an informer's
    initial list); `synced()` is True once those have been handed out."""

    def poll(self) -> list[WatchEvent]:
        """Every event not yet returned, without blocking."""
        ...

    def synced(self) -> bool: ...

    def close(self) -> None: ...


@runtime_checkable
class StoredObjects(Protocol):
    """A cluster that hands out its stored objects themselves, uncopied (the in-memory API
    server, as a cached client with Karpenter's UnsafeDisableDeepCopy): the reader never
    modifies them. A reader that finds a cluster without it lists copies instead."""

    def peek_all(
        self, kind: str, namespace: str | None = None, *, sort: bool = False
    ) -> list[Object]:
        """The stored objects of a kind (in one namespace when given). Read-only."""
        ...


@runtime_checkable
class ClusterAPI(Protocol):
    def get(self, kind: str, name: str, namespace: str | None = None) -> Object:
        """Raises NotFoundError."""
        ...

    def list(
        self,
        kind: str,
        namespace: str | None = None,
        *,
        labels: Mapping[str, str] | None = None,
    ) -> list[Object]:
        """Objects of a kind (all namespaces when None), optionally those whose labels
        include every given label."""
        ...

    def create(self, obj: Object) -> Object:
        """Store a new object; `metadata.generateName` makes a unique name. Returns the
        stored object (uid, resourceVersion, creationTimestamp set). Raises
        AlreadyExistsError, InvalidError."""
        ...

    def update(self, obj: Object, *, subresource: str | None = None) -> Object:
        """Replace an object. Raises ConflictError when `metadata.resourceVersion` is not
        the stored one. On kinds with a status subresource, a plain update ignores
        `status` and `subresource="status"` changes only `status`."""
        ...

    def patch(
        self,
        kind: str,
        name: str,
        patch: Mapping[str, Any],
        namespace: str | None = None,
        *,
        subresource: str | None = None,
    ) -> Object:
        """A JSON merge patch (RFC 7386: null removes a key, lists are replaced). When the
        patch carries `metadata.resourceVersion` it is a precondition (ConflictError)."""
        ...

    def delete(
        self,
        kind: str,
        name: str,
        namespace: str | None = None,
        *,
        grace_period_seconds: int | None = None,
        uid: str | None = None,
    ) -> None:
        """Delete (background propagation). With finalizers, or for a Pod bound to a node,
        the object stays with `metadata.deletionTimestamp` set until the finalizers are
        removed (the kubelet removes a pod after its grace period). `uid` is a
        precondition (ConflictError when the stored object has another uid). Raises
        NotFoundError."""
        ...

    def evict(self, name: str, namespace: str, *, grace_period_seconds: int | None = None,
              uid: str | None = None) -> None:
        """The Eviction API (policy/v1). Raises TooManyRequestsError when a
        PodDisruptionBudget of the pod allows no disruption, NotFoundError when the pod
        is gone. `uid` is the Eviction's deleteOptions.preconditions.uid: ConflictError when
        the pod of that name is another one (deleted and created again)."""
        ...

    def watch(self, kinds: Iterable[str]) -> WatchStream:
        """A stream of events for these kinds, starting with the current objects."""
        ...
