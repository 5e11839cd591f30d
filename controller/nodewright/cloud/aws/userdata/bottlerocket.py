"""Bottlerocket: TOML settings. The user's settings are the base; the fields we must control
(cluster, labels, taints, kubelet limits) are merged over them."""

from __future__ import annotations

import tomllib
from typing import Any

from nodewright.cloud.aws.userdata import toml_writer
from nodewright.cloud.aws.userdata.bootstrap import NodeBootstrap, UserDataError

__all__ = ["MOUNT_INSTANCE_STORAGE", "UserDataError", "kubernetes_settings", "render"]


# Bottlerocket's own way to put containerd, kubelet and pod logs on the instance store.
MOUNT_INSTANCE_STORAGE = "000-mount-instance-storage"
_RAID0_COMMAND: dict[str, Any] = {
    "commands": [
        ["apiclient", "ephemeral-storage", "init"],
        ["apiclient", "ephemeral-storage", "bind", "--dirs",
         "/var/lib/containerd", "/var/lib/kubelet", "/var/log/pods"],
    ],
    "mode": "always",
    "essential": True,
}


def kubernetes_settings(bootstrap: NodeBootstrap) -> dict[str, Any]:
    cluster, kubelet = bootstrap.cluster, bootstrap.kubelet
    settings: dict[str, Any] = {
        "api-server": cluster.endpoint,
        "cluster-certificate": cluster.ca_bundle,
        "cluster-name": cluster.name,
    }
    if bootstrap.cluster_dns:
        settings["cluster-dns-ip"] = bootstrap.cluster_dns[0]
    if bootstrap.max_pods is not None:
        settings["max-pods"] = bootstrap.max_pods
    optional: dict[str, Any] = {
        "pods-per-core": kubelet.pods_per_core,
        "eviction-max-pod-grace-period": kubelet.eviction_max_pod_grace_period,
        "image-gc-high-threshold-percent": kubelet.image_gc_high_threshold_percent,
        "image-gc-low-threshold-percent": kubelet.image_gc_low_threshold_percent,
        "cpu-cfs-quota-enforced": kubelet.cpu_cfs_quota,
    }
    settings.update({key: value for key, value in optional.items() if value is not None})
    if bootstrap.labels:
        settings["node-labels"] = dict(bootstrap.labels)
    taints: dict[str, list[str]] = {}
    for taint in bootstrap.taints:
        taints.setdefault(taint.key, []).append(f"{taint.value}:{taint.effect}")
    settings["node-taints"] = taints
    for name, values in (
        ("system-reserved", kubelet.system_reserved),
        ("kube-reserved", kubelet.kube_reserved),
        ("eviction-hard", kubelet.eviction_hard),
        ("eviction-soft", kubelet.eviction_soft),
        ("eviction-soft-grace-period", kubelet.eviction_soft_grace_period),
    ):
        if values:
            settings[name] = dict(sorted(values.items()))
    return settings


def _merge(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def render(bootstrap: NodeBootstrap) -> str:
    user: dict[str, Any] = {}
    if bootstrap.custom_user_data and bootstrap.custom_user_data.strip():
        try:
            user = tomllib.loads(bootstrap.custom_user_data)
        except tomllib.TOMLDecodeError as error:
            raise UserDataError(
                f"spec.userData: Bottlerocket user data must be TOML: {error}"
            ) from error
    ours: dict[str, Any] = {"settings": {"kubernetes": kubernetes_settings(bootstrap)}}
    if bootstrap.instance_store_policy == "RAID0":
        ours["settings"]["bootstrap-commands"] = {MOUNT_INSTANCE_STORAGE: _RAID0_COMMAND}
    return toml_writer.dumps(_merge(user, ours))
