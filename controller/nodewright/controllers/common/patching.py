"""Writing back what a reconcile changed: JSON merge patches computed from a before and
an after copy, guarded by the resourceVersion the change was based on (a concurrent
write makes the patch fail with 409 Conflict instead of being silently overwritten)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodewright.cluster.api import ClusterAPI, Object
from nodewright.cluster.merge_patch import merge_patch_between


def _resource_version(obj: Mapping[str, Any]) -> str | None:
    value = (obj.get("metadata") or {}).get("resourceVersion")
    return str(value) if value is not None else None


def _namespace(obj: Mapping[str, Any]) -> str | None:
    return (obj.get("metadata") or {}).get("namespace") or None


def patch_object(cluster: ClusterAPI, before: Mapping[str, Any],
                 after: Mapping[str, Any]) -> Object | None:
    """Write metadata and spec changes (not status). None when nothing changed."""
    old = {key: value for key, value in before.items() if key != "status"}
    new = {key: value for key, value in after.items() if key != "status"}
    patch = merge_patch_between(old, new)
    if not patch:
        return None
    return _send(cluster, before, patch, None)


def patch_status(cluster: ClusterAPI, before: Mapping[str, Any],
                 after: Mapping[str, Any]) -> Object | None:
    """Write status changes through the status subresource. None when nothing changed."""
    diff = merge_patch_between(before.get("status") or {}, after.get("status") or {})
    if not diff:
        return None
    return _send(cluster, before, {"status": diff}, "status")


def _send(cluster: ClusterAPI, before: Mapping[str, Any], patch: dict[str, Any],
          subresource: str | None) -> Object:
    version = _resource_version(before)
    if version is not None:
        metadata = patch.setdefault("metadata", {})
        metadata["resourceVersion"] = version
    name = str((before.get("metadata") or {}).get("name") or "")
    return cluster.patch(str(before.get("kind")), name, patch, _namespace(before),
                         subresource=subresource)


def write(
    cluster: ClusterAPI, before: Mapping[str, Any], after: Mapping[str, Any]
) -> Mapping[str, Any]:
    """Write metadata/spec changes, then status changes (each based on the version the
    previous write produced). Returns the object as last written (or `before`)."""
    latest: Mapping[str, Any] = before
    written = patch_object(cluster, before, after)
    if written is not None:
        latest = written
        # Status diffs are computed against the original status, on the new version.
        before = {**before, "metadata": {**(before.get("metadata") or {}),
                                         "resourceVersion": _resource_version(written)}}
    status_written = patch_status(cluster, before, after)
    return status_written if status_written is not None else latest
