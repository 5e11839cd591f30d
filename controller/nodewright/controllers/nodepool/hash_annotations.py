"""Keeps the drift hashes on NodePools and EC2NodeClasses (Karpenter's nodepool.hash and
nodeclass.hash controllers), and carries NodeClaims across a change of hash version.

A NodePool or EC2NodeClass whose hash-version annotation is not ours has its NodeClaims
re-stamped first: the new version, and (unless the NodeClaim is already Drifted, which a
new way of hashing cannot judge) the object's current hash. So a new hash algorithm, or a
cluster that Karpenter ran before, drifts nothing. Then the object gets its own hash and
version annotations.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from nodewright.api import hashes
from nodewright.api.managed import nodeclaim_uses_node_class, nodepool_is_managed
from nodewright.cluster import objects
from nodewright.cluster.api import ClusterAPI, ConflictError, NotFoundError
from nodewright.controllers.nodeclaim.disruption_conditions import DRIFTED
from nodewright.runtime.reconciler import Result, Watch
from nodewright.state.cluster import ClusterState
from nodewright.state.wellknown import NODEPOOL_LABEL

log = logging.getLogger(__name__)


class HashController:
    name = "disruption.hash"

    def __init__(self, cluster: ClusterAPI, state: ClusterState) -> None:
        self.cluster = cluster
        self.state = state
        self._watches = (
            Watch("NodePool", lambda e: (f"NodePool/{e.name}",)),
            Watch("EC2NodeClass", lambda e: (f"EC2NodeClass/{e.name}",)),
        )

    @property
    def watches(self) -> Sequence[Watch]:
        return self._watches

    def reconcile(self, key: str) -> Result:
        kind, _, name = key.partition("/")
        if kind == "NodePool":
            pool = self.state.nodepool(name)
            if pool is None or not nodepool_is_managed(pool):
                return Result()
            parsed = self.state.nodepool_model(name)
            if parsed is None or parsed.model is None:
                return Result()
            wanted = hashes.nodepool_hash_annotations(parsed.model)
            hash_key, version_key = hashes.NODEPOOL_HASH, hashes.NODEPOOL_HASH_VERSION
            claims = [c for c in self.state.nodeclaims()
                      if objects.labels(c).get(NODEPOOL_LABEL) == name]
        else:
            parsed_class = self.state.node_class_model(name)
            if parsed_class is None or parsed_class.model is None:
                return Result()
            wanted = hashes.node_class_hash_annotations(parsed_class.model,
                                                        self.state.ca_bundle)
            hash_key, version_key = hashes.NODECLASS_HASH, hashes.NODECLASS_HASH_VERSION
            claims = [c for c in self.state.nodeclaims() if nodeclaim_uses_node_class(c, name)]
        try:
            current = self.cluster.get(kind, name)
        except NotFoundError:
            return Result()
        if objects.is_deleting(current):
            return Result()
        annotations = objects.annotations(current)
        if annotations.get(version_key) != wanted[version_key]:
            for claim in claims:
                self._restamp(claim, hash_key, version_key, wanted)
        if all(annotations.get(k) == v for k, v in wanted.items()):
            return Result()
        try:
            self.cluster.patch(kind, name, {"metadata": {
                "annotations": wanted,
                "resourceVersion": objects.meta(current).get("resourceVersion")}})
        except ConflictError:
            return Result(requeue_after=0.0)
        except NotFoundError:
            pass
        return Result()

    def _restamp(self, claim: Mapping[str, Any], hash_key: str, version_key: str,
                 wanted: Mapping[str, str]) -> None:
        annotations = objects.annotations(claim)
        if annotations.get(version_key) == wanted[version_key]:
            return
        update = {version_key: wanted[version_key]}
        if objects.condition(claim, DRIFTED) is None:
            update[hash_key] = wanted[hash_key]
        try:
            self.cluster.patch("NodeClaim", objects.name(claim),
                               {"metadata": {"annotations": update}})
        except NotFoundError:
            return
        log.info("NodeClaim %s: drift hash re-stamped for version %s", objects.name(claim),
                 wanted[version_key])
