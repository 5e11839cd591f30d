"""What launches leave behind in the cloud, cleaned up (Karpenter's nodeclass finalizer, its
launch template cache evictions and its instance profile garbage collection):

- `NodeClassTermination`: every EC2NodeClass carries the finalizer
  `karpenter.k8s.aws/termination`. When one is deleted, it waits for the NodeClaims that
  use it to be gone, then deletes the instance profile created for its role and then its
  launch templates (Karpenter's order), and lets the EC2NodeClass go.
- `CloudGarbageCollection`: every minute, launch templates no launch used for a minute and
  those of node classes that are gone are deleted, and instance profiles created for a
  role that no node class's status names and no NodeClaim was launched with (its
  karpenter.k8s.aws/instance-profile-name annotation), unless the cloud still protects
  it or an instance runs with it: a role change leaves the old profile to the nodes
  launched with it.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable, Sequence
from typing import Any, Final

from nodewright.api.managed import nodeclaim_uses_node_class, supports_node_class
from nodewright.cloud.capabilities import CloudCleaner
from nodewright.cloud.provider import CloudProviderError
from nodewright.cluster import objects
from nodewright.cluster.api import ClusterAPI, ConflictError, NotFoundError
from nodewright.cluster.events import Event, EventRecorder
from nodewright.controllers.common.logfields import listed
from nodewright.runtime.reconciler import Result, Watch, WatchEvent, singleton_key

log = logging.getLogger(__name__)

FINALIZER: Final = "karpenter.k8s.aws/termination"
# The instance profile a NodeClaim was launched with (set from the cloud's Instance).
PROFILE_ANNOTATION: Final = "karpenter.k8s.aws/instance-profile-name"
WAIT_SECONDS: Final = 600.0  # NodeClaim deletions wake it sooner
GC_SECONDS: Final = 60.0


def _node_class_of(event: WatchEvent) -> Iterable[str]:
    ref = ((event.object or {}).get("spec") or {}).get("nodeClassRef") or {}
    managed = supports_node_class(ref.get("group"), ref.get("kind"))
    return (str(ref["name"]),) if managed and ref.get("name") else ()


class NodeClassTermination:
    name = "nodeclass.termination"

    def __init__(self, cluster: ClusterAPI, cleaner: CloudCleaner | None,
                 recorder: EventRecorder | None = None, *,
                 outside_state_lock: bool = False) -> None:
        """`outside_state_lock`: the cleaner's calls are safe from any thread (the cloud's
        `launches_outside_state_lock`)."""
        self.cluster = cluster
        self.cleaner = cleaner
        # No state cache read: outside the state lock, unless the cloud needs it.
        self.manages_state_lock = cleaner is None or outside_state_lock
        self.recorder = recorder

    @property
    def watches(self) -> Sequence[Watch]:
        return (Watch("EC2NodeClass"), Watch("NodeClaim", _node_class_of))

    def reconcile(self, key: str) -> Result:
        try:
            current = self.cluster.get("EC2NodeClass", key)
        except NotFoundError:
            return Result()
        meta = objects.meta(current)
        finalizers = list(meta.get("finalizers") or [])
        if not objects.is_deleting(current):
            if FINALIZER not in finalizers:
                self._set_finalizers(key, current, [*finalizers, FINALIZER])
            return Result()
        if FINALIZER not in finalizers:
            return Result()
        waiting = sorted(objects.name(c) for c in self.cluster.list("NodeClaim")
                         if nodeclaim_uses_node_class(c, key))
        if waiting:
            log.info("EC2NodeClass %s is being deleted: waiting on NodeClaims %s", key,
                     ", ".join(waiting[:10]), extra={"EC2NodeClass": key})
            if self.recorder is not None:
                # Karpenter's WaitingOnNodeClaimTermination, fired again each wait (10 min).
                self.recorder.publish(Event(
                    regarding=current, type="Normal", reason="WaitingOnNodeClaimTermination",
                    note=f"Waiting on NodeClaim termination for {listed(waiting, 5)}",
                    dedupe_values=(str(meta.get("uid") or key),)))
            return Result(requeue_after=WAIT_SECONDS)
        if self.cleaner is not None:
            try:
                self.cleaner.delete_node_class_resources(key)
            except CloudProviderError as error:
                log.warning("EC2NodeClass %s: cleaning up its instance profile and launch "
                            "templates failed: %s", key, error, extra={"EC2NodeClass": key})
                return Result(requeue_after=GC_SECONDS)
        self._set_finalizers(key, current, [f for f in finalizers if f != FINALIZER])
        return Result()

    def _set_finalizers(self, key: str, current: dict[str, Any], wanted: list[str]) -> None:
        # Gone, or changed under us (a conflict): the watch brings it back.
        with contextlib.suppress(NotFoundError, ConflictError):
            self.cluster.patch("EC2NodeClass", key, {"metadata": {
                "resourceVersion": objects.meta(current).get("resourceVersion"),
                "finalizers": wanted}})


class CloudGarbageCollection:
    name = "nodeclass.garbagecollection"

    def __init__(self, cluster: ClusterAPI, cleaner: CloudCleaner, *,
                 outside_state_lock: bool = False) -> None:
        self.cluster = cluster
        self.cleaner = cleaner
        self.manages_state_lock = outside_state_lock

    @property
    def watches(self) -> Sequence[Watch]:
        return (Watch("EC2NodeClass", lambda e: singleton_key(e) if e.type == "ADDED" else ()),)

    def reconcile(self, key: str) -> Result:
        classes = self.cluster.list("EC2NodeClass")
        names = {objects.name(body) for body in classes}
        current = {str(profile) for body in classes
                   if (profile := (body.get("status") or {}).get("instanceProfile"))}
        active = {str(profile) for claim in self.cluster.list("NodeClaim")
                  if (profile := (objects.meta(claim).get("annotations") or {}).get(
                      PROFILE_ANNOTATION))}
        try:
            self.cleaner.collect_cloud_garbage(names, current, active)
        except CloudProviderError as error:
            log.warning("collecting launch templates and instance profiles failed: %s", error)
        return Result(requeue_after=GC_SECONDS)
