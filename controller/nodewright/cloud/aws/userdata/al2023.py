"""AL2023: a nodeadm NodeConfig, appended after the user's own MIME parts (nodeadm merges
NodeConfig documents in order, so ours, coming last, wins on the fields we set)."""

from __future__ import annotations

from typing import Any

import yaml

from nodewright.cloud.aws.userdata import mime
from nodewright.cloud.aws.userdata.bootstrap import (
    NodeBootstrap,
    UnresolvedClusterError,
    UserDataError,
)


def _taint(key: str, value: str, effect: str) -> dict[str, str]:
    if value:
        return {"key": key, "value": value, "effect": effect}
    return {"key": key, "effect": effect}


def node_config(bootstrap: NodeBootstrap) -> dict[str, Any]:
    kubelet = bootstrap.kubelet
    config: dict[str, Any] = {}
    if bootstrap.max_pods is not None:
        config["maxPods"] = bootstrap.max_pods
    if bootstrap.cluster_dns:
        config["clusterDNS"] = list(bootstrap.cluster_dns)
    optional: dict[str, Any] = {
        "podsPerCore": kubelet.pods_per_core,
        "systemReserved": dict(kubelet.system_reserved) or None,
        "kubeReserved": dict(kubelet.kube_reserved) or None,
        "evictionHard": dict(kubelet.eviction_hard) or None,
        "evictionSoft": dict(kubelet.eviction_soft) or None,
        "evictionSoftGracePeriod": dict(kubelet.eviction_soft_grace_period) or None,
        "evictionMaxPodGracePeriod": kubelet.eviction_max_pod_grace_period,
        "imageGCHighThresholdPercent": kubelet.image_gc_high_threshold_percent,
        "imageGCLowThresholdPercent": kubelet.image_gc_low_threshold_percent,
        "cpuCFSQuota": kubelet.cpu_cfs_quota,
    }
    config.update({key: value for key, value in optional.items() if value is not None})
    config["registerWithTaints"] = [
        _taint(taint.key, taint.value, taint.effect) for taint in bootstrap.taints
    ]
    kubelet_section: dict[str, Any] = {"config": config}
    if bootstrap.labels:
        labels = ",".join(f"{key}={value}" for key, value in bootstrap.labels.items())
        kubelet_section["flags"] = [f"--node-labels={labels}"]
    cluster = bootstrap.cluster
    if not cluster.service_cidr:
        # As Karpenter: nodeadm needs the service CIDR; a node guessing it could get the
        # wrong cluster DNS address and never run a pod.
        raise UnresolvedClusterError(
            f"cluster {cluster.name}: the service CIDR is unresolved (eks:DescribeCluster "
            "returned no kubernetesNetworkConfig.serviceIpv4Cidr or serviceIpv6Cidr)")
    spec: dict[str, Any] = {
        "cluster": {
            "name": cluster.name,
            "apiServerEndpoint": cluster.endpoint,
            "certificateAuthority": cluster.ca_bundle,
            "cidr": cluster.service_cidr,
        },
        "kubelet": kubelet_section,
    }
    if bootstrap.instance_store_policy == "RAID0":
        spec["instance"] = {"localStorage": {"strategy": "RAID0"}}
    return {"apiVersion": "node.eks.aws/v1alpha1", "kind": "NodeConfig", "spec": spec}


def check_node_config_parts(parts: list[mime.Part]) -> None:
    """Refuse a NodeConfig part nodeadm could not read: each must be YAML whose documents are
    objects. (A bad part would otherwise only fail on the node, which then never joins.)"""
    for number, part in enumerate(parts, start=1):
        if part.media_type != mime.NODE_CONFIG:
            continue
        where = f"spec.userData: part {number} ({mime.NODE_CONFIG})"
        try:
            documents = list(yaml.safe_load_all(part.body))
        except yaml.YAMLError as error:
            raise UserDataError(f"{where} is not valid YAML: {error}") from error
        for document in documents:
            if document is not None and not isinstance(document, dict):
                raise UserDataError(
                    f"{where}: expected a NodeConfig object, got {type(document).__name__}"
                )


def render(bootstrap: NodeBootstrap) -> str:
    ours = yaml.safe_dump(node_config(bootstrap), sort_keys=False, default_flow_style=False)
    parts = mime.split_parts(bootstrap.custom_user_data)
    check_node_config_parts(parts)
    return mime.render([*parts, mime.Part(mime.NODE_CONFIG, ours)])
