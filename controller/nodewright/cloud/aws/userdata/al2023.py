"""AL2023: a nodeadm NodeConfig, appended after the user's own MIME parts (nodeadm merges
NodeConfig documents in order, so ours, coming last, wins on the fields we set); written as
Karpenter v1.14.1's nodeadm.go writes it."""

from __future__ import annotations

import base64
import binascii
import math
from typing import Any

import yaml

from nodewright.api import golang
from nodewright.cloud.aws.userdata import goyaml, mime
from nodewright.cloud.aws.userdata.bootstrap import (
    NodeBootstrap,
    UnresolvedClusterError,
    UserDataError,
)

HEADER = "# Karpenter Generated NodeConfig\n"


def _taint(key: str, value: str, effect: str) -> dict[str, str]:
    """A corev1.Taint as JSON: no value when it has none."""
    if value:
        return {"key": key, "value": value, "effect": effect}
    return {"key": key, "effect": effect}


def kubelet_config(bootstrap: NodeBootstrap) -> dict[str, Any]:
    """Karpenter's inline kubelet configuration: its KubeletConfiguration as JSON (the
    fields set), and the taints to register with."""
    kubelet = bootstrap.kubelet
    fields: dict[str, Any] = {
        "clusterDNS": list(bootstrap.cluster_dns) or None,
        "maxPods": bootstrap.max_pods,
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
    config = {key: value for key, value in fields.items() if value is not None}
    config["registerWithTaints"] = [
        _taint(taint.key, taint.value, taint.effect) for taint in bootstrap.taints
    ]
    return config


def _certificate_authority(ca_bundle: str, cluster: str) -> str:
    """The CA bundle as nodeadm's []byte field writes it: decoded (Go's StdEncoding skips
    line breaks) and encoded again."""
    try:
        decoded = base64.b64decode(ca_bundle.replace("\r", "").replace("\n", ""),
                                   validate=True)
    except (binascii.Error, ValueError) as error:
        raise UserDataError(f"cluster {cluster}: decoding the CA bundle: {error}") from error
    return base64.b64encode(decoded).decode()


def node_config(bootstrap: NodeBootstrap) -> dict[str, Any]:
    """The NodeConfig as its JSON: empty sections present, as nodeadm's structs write them."""
    cluster = bootstrap.cluster
    details: dict[str, Any] = {}
    if cluster.name:
        details["name"] = cluster.name
    if cluster.endpoint:
        details["apiServerEndpoint"] = cluster.endpoint
    if cluster.ca_bundle:
        details["certificateAuthority"] = _certificate_authority(cluster.ca_bundle,
                                                                 cluster.name)
    if not cluster.service_cidr:
        # As Karpenter: nodeadm needs the service CIDR; a node guessing it could get the
        # wrong cluster DNS address and never run a pod.
        raise UnresolvedClusterError(
            f"cluster {cluster.name}: the service CIDR is unresolved (eks:DescribeCluster "
            "returned no kubernetesNetworkConfig.serviceIpv4Cidr or serviceIpv6Cidr)")
    details["cidr"] = cluster.service_cidr
    local_storage = ({"strategy": "RAID0"} if bootstrap.instance_store_policy == "RAID0"
                     else {})
    kubelet: dict[str, Any] = {"config": kubelet_config(bootstrap)}
    if bootstrap.labels:
        labels = ",".join(f"{key}={value}" for key, value in sorted(bootstrap.labels.items()))
        kubelet["flags"] = [f"--node-labels={golang.quote(labels)}"]
    return {
        "apiVersion": "node.eks.aws/v1alpha1",
        "kind": "NodeConfig",
        "metadata": {},
        "spec": {
            "cluster": details,
            "containerd": {},
            "instance": {"localStorage": local_storage},
            "kubelet": kubelet,
        },
    }


def node_config_yaml(bootstrap: NodeBootstrap) -> str:
    """Karpenter's getNodeConfigYAML: its comment, then sigs.k8s.io/yaml's rendering."""
    return HEADER + goyaml.dump(node_config(bootstrap))


class _Loader(yaml.SafeLoader):
    """YAML as go-yaml v2 reads it into interface{}: a timestamp stays a string."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, pattern) for tag, pattern in resolvers
            if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _json_shaped(value: Any) -> bool:
    """Whether sigs.k8s.io/yaml can turn a YAML value into JSON: mapping keys are strings,
    numbers or booleans, no float is NaN or infinite."""
    if isinstance(value, dict):
        return all(isinstance(key, str | int | float) and _json_shaped(item)
                   for key, item in value.items())
    if isinstance(value, list):
        return all(_json_shaped(item) for item in value)
    if isinstance(value, float):
        return math.isfinite(value)
    return True


def _is_node_config(text: str) -> bool:
    """Karpenter's test: the text unmarshals into a map[string]any (its first YAML document
    is a mapping, or empty)."""
    try:
        first = next(iter(yaml.load_all(text, Loader=_Loader)), None)
    except (yaml.YAMLError, ValueError, TypeError, RecursionError):
        return False
    return first is None or (isinstance(first, dict) and _json_shaped(first))


def user_parts(user_data: str | None) -> list[mime.Part]:
    """Karpenter's parseUserData: each part of a MIME archive (Content-Type and body);
    otherwise the whole text, a NodeConfig when it reads as a YAML mapping, else a shell
    script."""
    if not user_data:
        return []
    if mime.is_mime(user_data):
        return [part.content_type_only() for part in mime.read_archive(user_data)]
    if _is_node_config(user_data):
        return [mime.Part(mime.NODE_CONFIG, user_data)]
    return [mime.Part(mime.SHELL_SCRIPT, user_data)]


def render(bootstrap: NodeBootstrap) -> str:
    ours = node_config_yaml(bootstrap)
    parts = user_parts(bootstrap.custom_user_data)
    return mime.render([*parts, mime.Part(mime.NODE_CONFIG, ours)])
