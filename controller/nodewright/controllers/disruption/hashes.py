"""The static drift hashes; they live in `nodewright.api.hashes` (pure, below both the
controllers and the cloud providers, which compare them too). Re-exported here."""

from __future__ import annotations

from nodewright.api.hashes import (
    NODECLASS_HASH,
    NODECLASS_HASH_VERSION,
    NODECLASS_HASH_VERSION_VALUE,
    NODEPOOL_HASH,
    NODEPOOL_HASH_VERSION,
    NODEPOOL_HASH_VERSION_VALUE,
    node_class_hash,
    node_class_hash_annotations,
    nodeclaim_hash_annotations,
    nodepool_hash,
    nodepool_hash_annotations,
    stable_hash,
)

__all__ = [
    "NODECLASS_HASH",
    "NODECLASS_HASH_VERSION",
    "NODECLASS_HASH_VERSION_VALUE",
    "NODEPOOL_HASH",
    "NODEPOOL_HASH_VERSION",
    "NODEPOOL_HASH_VERSION_VALUE",
    "node_class_hash",
    "node_class_hash_annotations",
    "nodeclaim_hash_annotations",
    "nodepool_hash",
    "nodepool_hash_annotations",
    "stable_hash",
]
