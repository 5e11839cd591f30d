"""NodeClaim tagging (Karpenter's AWS nodeclaim.tagging controller): once a NodeClaim of
ours has registered (its status names a Node) and while it is not being deleted, its
instance gets the Node's name as `Name`, `karpenter.sh/nodeclaim` and
`eks:eks-cluster-name`, each unless the instance carries that key already; then the
NodeClaim is annotated `karpenter.k8s.aws/tagged` and
`compatibility.karpenter.k8s.aws/cluster-name-tagged`, and is not looked at again.

A providerID that is not an instance's is logged and left (nothing to retry until it
changes); an instance or NodeClaim that is gone ends the work. As Karpenter, at most one
CreateTags call a second: the call shares EC2's mutating-request budget with CreateFleet.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Final, Protocol

from nodewright.api.managed import nodeclaim_is_managed
from nodewright.cloud.aws.instances import instance_id_of
from nodewright.cloud.provider import CloudProviderError, NodeClaimNotFoundError
from nodewright.cluster import objects
from nodewright.cluster.api import ClusterAPI, NotFoundError
from nodewright.runtime.clock import Clock
from nodewright.runtime.reconciler import Result, Watch, WatchEvent

log = logging.getLogger(__name__)

TAGGED_ANNOTATION: Final = "karpenter.k8s.aws/tagged"
CLUSTER_NAME_TAGGED_ANNOTATION: Final = "compatibility.karpenter.k8s.aws/cluster-name-tagged"
CREATE_TAGS_INTERVAL_SECONDS: Final = 1.0


class RegisteredInstanceTagger(Protocol):
    def tag_registered(self, provider_id: str, nodeclaim: str, node_name: str
                       ) -> Mapping[str, str]: ...


def is_taggable(claim: Mapping[str, Any]) -> bool:
    """Karpenter's isTaggable, and only NodeClaims of this provider's node class."""
    annotations = objects.annotations(claim)
    if (annotations.get(TAGGED_ANNOTATION) == "true"
            and annotations.get(CLUSTER_NAME_TAGGED_ANNOTATION) == "true"):
        return False
    if not (claim.get("status") or {}).get("nodeName"):
        return False
    if objects.is_deleting(claim):
        return False
    return nodeclaim_is_managed(claim)


def _taggable_key(event: WatchEvent) -> Iterable[str]:
    return (event.key,) if event.type != "DELETED" and is_taggable(event.object) else ()


class NodeClaimTagging:
    name = "nodeclaim.tagging"

    def __init__(self, cluster: ClusterAPI, tagger: RegisteredInstanceTagger,
                 clock: Clock) -> None:
        self.cluster = cluster
        self.tagger = tagger
        self.clock = clock
        self._next_call: datetime | None = None

    @property
    def watches(self) -> Sequence[Watch]:
        return (Watch("NodeClaim", _taggable_key),)

    def reconcile(self, key: str) -> Result:
        try:
            claim = self.cluster.get("NodeClaim", key)
        except NotFoundError:
            return Result()
        if not is_taggable(claim):
            return Result()
        now = self.clock.now()
        if self._next_call is not None and now < self._next_call:
            return Result(requeue_after=(self._next_call - now).total_seconds())
        status = claim.get("status") or {}
        provider_id = str(status.get("providerID") or "")
        try:
            instance_id_of(provider_id)
        except CloudProviderError as error:
            # Not retried: nothing changes until the providerID does.
            log.error("failed parsing instance id of nodeclaim %s: %s", key, error)
            return Result()
        try:
            written = self.tagger.tag_registered(provider_id, key, str(status["nodeName"]))
        except NodeClaimNotFoundError:
            return Result()
        if written:
            self._next_call = self.clock.now() + timedelta(seconds=CREATE_TAGS_INTERVAL_SECONDS)
            log.info("tagged instance", extra={"NodeClaim": key, "provider-id": provider_id,
                                               "tags": sorted(written)})
        with contextlib.suppress(NotFoundError):  # deleted meanwhile: nothing to record
            self.cluster.patch("NodeClaim", key, {"metadata": {"annotations": {
                TAGGED_ANNOTATION: "true", CLUSTER_NAME_TAGGED_ANNOTATION: "true"}}})
        return Result()
