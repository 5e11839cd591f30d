"""AL2: /etc/eks/bootstrap.sh with the kubelet settings as --kubelet-extra-args, in a MIME
document after the user's own parts."""

from __future__ import annotations

import shlex

from nodewright.cloud.aws.userdata import mime
from nodewright.cloud.aws.userdata.bootstrap import NodeBootstrap, is_ipv6


def _pairs(values: dict[str, str], separator: str = "=") -> str:
    return ",".join(f"{key}{separator}{value}" for key, value in sorted(values.items()))


def kubelet_args(bootstrap: NodeBootstrap) -> list[str]:
    kubelet = bootstrap.kubelet
    args: list[str] = []
    if bootstrap.labels:
        args.append(f"--node-labels={_pairs(dict(bootstrap.labels))}")
    args.append(
        "--register-with-taints=" + ",".join(t.kubelet_flag_form() for t in bootstrap.taints)
    )
    if bootstrap.max_pods is not None:
        args.append(f"--max-pods={bootstrap.max_pods}")
    if kubelet.pods_per_core is not None:
        args.append(f"--pods-per-core={kubelet.pods_per_core}")
    for flag, values, separator in kubelet.map_flags():
        if values:
            args.append(f"{flag}={_pairs(dict(values), separator)}")
    args += kubelet.scalar_flags()
    return args


def script(bootstrap: NodeBootstrap) -> str:
    cluster = bootstrap.cluster
    lines = [
        "#!/bin/bash -xe",
        "exec > >(tee /var/log/user-data.log|logger -t user-data -s 2>/dev/console) 2>&1",
        f"/etc/eks/bootstrap.sh {shlex.quote(cluster.name)}"
        f" --apiserver-endpoint {shlex.quote(cluster.endpoint)}"
        f" --b64-cluster-ca {shlex.quote(cluster.ca_bundle)} \\",
    ]
    if bootstrap.cluster_dns and is_ipv6(bootstrap.cluster_dns[0]):
        # Karpenter's test of an IPv6 cluster: its cluster DNS address is an IPv6 one.
        lines.append("--ip-family ipv6 \\")
    if bootstrap.cluster_dns:
        lines.append(f"--dns-cluster-ip {shlex.quote(bootstrap.cluster_dns[0])} \\")
    # As Karpenter v1.14.1 does: the max pods the catalog planned with (kubelet.maxPods, or the
    # ENI-limited count less RESERVED_ENIS and EFA-only interfaces, capped by podsPerCore)
    # replaces bootstrap.sh's own ENI table, which knows none of those.
    if bootstrap.max_pods is not None:
        lines.append("--use-max-pods false \\")
    if bootstrap.instance_store_policy == "RAID0":
        lines.append("--local-disks raid0 \\")
    lines.append(f"--kubelet-extra-args {shlex.quote(' '.join(kubelet_args(bootstrap)))}")
    return "\n".join(lines) + "\n"


def render(bootstrap: NodeBootstrap) -> str:
    parts = mime.split_parts(bootstrap.custom_user_data)
    # As Karpenter's bootstrap part: no line break after its last line.
    return mime.render([*parts, mime.Part(mime.SHELL_SCRIPT, script(bootstrap).rstrip("\n"))])
