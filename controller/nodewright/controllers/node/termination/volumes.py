"""Which VolumeAttachments a terminating node still waits for (Karpenter's
awaitVolumeDetachment): every attachment to the node, but those of volumes that pods
which will not be drained still use (a pod tolerating the disrupted taint, one stuck
terminating past its grace period, a mirror pod). Waiting for those would never end,
and Kubernetes detaches them after the instance is gone."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from nodewright.state import ClusterState, podutil

Object = Mapping[str, Any]


def pending_attachments(state: ClusterState, node_name: str, now: datetime) -> list[Object]:
    attachments = state.volume_attachments(node_name)
    if not attachments:
        return []
    kept_volumes: set[str] = set()
    for pod in state.pods_on(node_name):
        if podutil.is_drainable(pod, now):
            continue
        metadata = pod.get("metadata") or {}
        namespace = str(metadata.get("namespace") or "default")
        for claim_name in _claim_names(pod):
            claim = state.config.storage.claim(namespace, claim_name)
            if claim is not None:
                kept_volumes.add(str((claim.get("spec") or {}).get("volumeName") or ""))
    pending = []
    for attachment in attachments:
        source = ((attachment.get("spec") or {}).get("source") or {})
        volume = source.get("persistentVolumeName")
        if volume and volume not in kept_volumes:
            pending.append(attachment)
    return pending


def _claim_names(pod: Object) -> list[str]:
    names = []
    pod_name = str((pod.get("metadata") or {}).get("name") or "")
    for volume in (pod.get("spec") or {}).get("volumes") or []:
        source = volume.get("persistentVolumeClaim") or {}
        if source.get("claimName"):
            names.append(str(source["claimName"]))
        elif "ephemeral" in volume:
            names.append(f"{pod_name}-{volume.get('name')}")
    return names
