"""Bottlerocket: TOML settings. The user's settings are the base; the fields we must control
(cluster, labels, taints, kubelet limits) are merged over them: labels key by key, while the
taints and each kubelet map the EC2NodeClass sets replace the user's whole (as Karpenter)."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable, Mapping
from typing import Any

from nodewright.cloud.aws.userdata import toml_writer
from nodewright.cloud.aws.userdata.bootstrap import NodeBootstrap, UserDataError

__all__ = ["MOUNT_INSTANCE_STORAGE", "UserDataError", "kubernetes_settings", "render"]


# settings.kubernetes tables ours replace whole when we write them (node-taints always).
_REPLACED_TABLES = ("node-taints", "system-reserved", "kube-reserved", "eviction-hard",
                    "eviction-soft", "eviction-soft-grace-period")
# Bottlerocket's own way to put containerd, kubelet and pod logs on the instance store.
MOUNT_INSTANCE_STORAGE = "000-mount-instance-storage"
_BIND_DIRS = ["--dirs", "/var/lib/containerd", "/var/lib/kubelet", "/var/log/pods"]
_VERSION_IN_NAME = re.compile(r"^v[0-9][^-]*\.[^-]*$")


def _raid0_command(version: str | None) -> dict[str, Any]:
    bind = ["apiclient", "ephemeral-storage", "bind"]
    return {
        "commands": [["apiclient", "ephemeral-storage", "init"],
                     bind if supports_default_bind(version) else [*bind, *_BIND_DIRS]],
        "mode": "always",
        "essential": True,
    }


def supports_default_bind(version: str | None) -> bool:
    """Bottlerocket 1.46.0 and later bind the right directories without --dirs; `latest`
    counts as new, an unknown version as old (Karpenter's SupportsDefaultBind)."""
    if not version:
        return False
    if version == "latest":
        return True
    parts = version.lstrip("v").split(".")
    if len(parts) < 3 or not parts[0].isdigit() or not parts[1].isdigit():
        return False
    major, minor = int(parts[0]), int(parts[1])
    return major > 1 or (major == 1 and minor >= 46)


def version_from_name(name: str) -> str | None:
    """"v1.46.0" from an image name like bottlerocket-aws-k8s-1.33-x86_64-v1.46.0-431fe75a."""
    return next((part for part in name.split("-") if _VERSION_IN_NAME.match(part)), None)


def ami_version(alias_version: str | None, term_names: Iterable[str],
                image_names: Iterable[str], term_ids: Iterable[str] = (),
                image_ids: Mapping[str, str] | None = None) -> str | None:
    """The release the node class's images are, as Karpenter reads it (its
    resolveAMIVersion): the alias's version, else one in a name term, else one in the name
    of the resolved Bottlerocket image an id term selects (`image_ids`: the resolved
    images' names by id), else one in the name of any resolved Bottlerocket image."""
    if alias_version:
        return alias_version
    for name in term_names:
        if found := version_from_name(name):
            return found
    for term_id in term_ids:
        name = (image_ids or {}).get(term_id, "")
        if "bottlerocket" in name and (found := version_from_name(name)):
            return found
    for name in image_names:
        if "bottlerocket" in name and (found := version_from_name(name)):
            return found
    return None


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
    # No pods-per-core: Bottlerocket has no such setting, and Karpenter v1.14.1 leaves
    # podsPerCore out for this family (its pod count ignores it too).
    optional: dict[str, Any] = {
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
    kubernetes = kubernetes_settings(bootstrap)
    ours: dict[str, Any] = {"settings": {"kubernetes": kubernetes}}
    if bootstrap.instance_store_policy == "RAID0":
        ours["settings"]["bootstrap-commands"] = {
            MOUNT_INSTANCE_STORAGE: _raid0_command(bootstrap.bottlerocket_version)}
    merged = _merge(user, ours)
    for table in _REPLACED_TABLES:
        if table in kubernetes:
            merged["settings"]["kubernetes"][table] = kubernetes[table]
    return toml_writer.dumps(merged)
