"""NodeClaim hydration (Karpenter's nodeclaim.hydration): a NodeClaim of this provider
that lacks the label naming its node class (karpenter.k8s.aws/ec2nodeclass, which
NodeClaims made before the label existed do not carry) gets it, so everything that
selects NodeClaims by node class finds it."""

from __future__ import annotations

from collections.abc import Sequence

from nodewright.api.managed import nodeclaim_is_managed
from nodewright.cluster import objects
from nodewright.cluster.api import ClusterAPI, ConflictError, NotFoundError
from nodewright.runtime.reconciler import Result, Watch
from nodewright.state import ClusterState
from nodewright.state.wellknown import NODECLASS_LABEL

CONFLICT_RETRY_SECONDS = 0.1


class NodeClaimHydration:
    name = "nodeclaim.hydration"

    def __init__(self, cluster: ClusterAPI, state: ClusterState) -> None:
        self.cluster = cluster
        self.state = state
        self._watches = (Watch("NodeClaim"),)

    @property
    def watches(self) -> Sequence[Watch]:
        return self._watches

    def reconcile(self, key: str) -> Result:
        claim = self.state.nodeclaim(key)
        if claim is None or not nodeclaim_is_managed(claim):
            return Result()
        reference = (claim.get("spec") or {}).get("nodeClassRef") or {}
        wanted = str(reference.get("name") or "")
        if not wanted or objects.labels(claim).get(NODECLASS_LABEL) == wanted:
            return Result()
        try:
            self.cluster.patch("NodeClaim", key, {"metadata": {
                "labels": {NODECLASS_LABEL: wanted},
                "resourceVersion": objects.meta(claim).get("resourceVersion")}})
        except ConflictError:
            return Result(requeue_after=CONFLICT_RETRY_SECONDS)
        except NotFoundError:
            return Result()
        return Result()
