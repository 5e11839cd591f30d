"""Small helpers every actor uses: reconcile keys and status writes that change only
what changed."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from nodewright.cluster import objects
from nodewright.cluster.api import ApiError
from nodewright.cluster.memory.store import InMemoryCluster

log = logging.getLogger(__name__)


def split_key(key: str) -> tuple[str, str]:
    """`namespace/name` (or `name`) to (namespace, name)."""
    namespace, _, name = key.rpartition("/")
    return namespace, name


def write_status(cluster: InMemoryCluster, obj: Mapping[str, Any], status: Mapping[str, Any]
                 ) -> None:
    """Replace the status when it differs (re-read: `obj` may be stale by now)."""
    current = cluster.peek(str(obj.get("kind")), objects.name(obj), objects.namespace(obj) or None)
    if current is None or current.get("status") == status:
        return
    try:
        cluster.set_status(str(obj.get("kind")), objects.name(obj), objects.namespace(obj) or None,
                           dict(status))
    except ApiError as error:
        log.info("status of %s %s: %s", obj.get("kind"), objects.key(obj), error)
