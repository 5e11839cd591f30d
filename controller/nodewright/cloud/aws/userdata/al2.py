"""AL2: /etc/eks/bootstrap.sh with the kubelet settings as --kubelet-extra-args, in a MIME
document after the user's own parts; written as Karpenter v1.14.1's eksbootstrap.go."""

from __future__ import annotations

from collections.abc import Mapping

from nodewright.api import golang
from nodewright.cloud.aws.userdata import mime
from nodewright.cloud.aws.userdata.bootstrap import NodeBootstrap, NodeTaint


def taint_string(taint: NodeTaint) -> str:
    """Kubernetes' Taint.ToString(): no `=` when the taint has no value."""
    if taint.value:
        return f"{taint.key}={taint.value}:{taint.effect}"
    return f"{taint.key}:{taint.effect}"


def _joined(flag: str, values: Mapping[str, str], separator: str) -> list[str]:
    """Karpenter's joinParameterArgs: `flag="k<sep>v,..."` (Go ranges over the map in
    random order; sorted here, one of the orders Karpenter writes)."""
    if not values:
        return []
    pairs = ",".join(f"{key}{separator}{value}" for key, value in sorted(values.items()))
    return [f"{flag}={golang.quote(pairs)}"]


def kubelet_args(bootstrap: NodeBootstrap) -> list[str]:
    """Karpenter's Options.kubeletExtraArgs, in its order: the labels and taints (each
    list Go-quoted), max pods, pods per core, the maps, then the single values."""
    kubelet = bootstrap.kubelet
    args: list[str] = []
    if bootstrap.labels:
        labels = ",".join(f"{key}={value}" for key, value in sorted(bootstrap.labels.items()))
        args.append(f"--node-labels={golang.quote(labels)}")
    taints = ",".join(taint_string(taint) for taint in bootstrap.taints)
    args.append(f"--register-with-taints={golang.quote(taints)}")
    if bootstrap.max_pods is not None:
        args.append(f"--max-pods={bootstrap.max_pods}")
    if kubelet.pods_per_core is not None:
        args.append(f"--pods-per-core={kubelet.pods_per_core}")
    for flag, values, separator in kubelet.map_flags():
        args += _joined(flag, values, separator)
    args += kubelet.scalar_flags()
    return args


def script(bootstrap: NodeBootstrap) -> str:
    """Karpenter's eksBootstrapScript: every value in single quotes as it is, each option
    after ` \\` and a line break, no line break at the end."""
    cluster = bootstrap.cluster
    ca_bundle = f"--b64-cluster-ca '{cluster.ca_bundle}'" if cluster.ca_bundle else ""
    out = [
        "#!/bin/bash -xe\n",
        "exec > >(tee /var/log/user-data.log|logger -t user-data -s 2>/dev/console) 2>&1\n",
        f"/etc/eks/bootstrap.sh '{cluster.name}' --apiserver-endpoint '{cluster.endpoint}'"
        f" {ca_bundle}",
    ]
    options: list[str] = []
    if bootstrap.cluster_dns:
        # As Karpenter: anything net.ParseIP does not read as IPv4 makes an IPv6 cluster.
        if not golang.is_ipv4(bootstrap.cluster_dns[0]):
            options.append("--ip-family ipv6")
        options.append(f"--dns-cluster-ip '{bootstrap.cluster_dns[0]}'")
    # As Karpenter v1.14.1 does: the max pods the catalog planned with (kubelet.maxPods, or the
    # ENI-limited count less RESERVED_ENIS and EFA-only interfaces, capped by podsPerCore)
    # replaces bootstrap.sh's own ENI table, which knows none of those.
    if bootstrap.max_pods is not None:
        options.append("--use-max-pods false")
    options.append(f"--kubelet-extra-args '{' '.join(kubelet_args(bootstrap))}'")
    if bootstrap.instance_store_policy == "RAID0":
        options.append("--local-disks raid0")
    out.extend(f" \\\n{option}" for option in options)
    return "".join(out)


def render(bootstrap: NodeBootstrap) -> str:
    """The user's parts (each header and body as written), then the bootstrap script."""
    parts = mime.split_parts(bootstrap.custom_user_data)
    ours = mime.Part(mime.SHELL_SCRIPT, script(bootstrap))
    return mime.render([*parts, ours])
