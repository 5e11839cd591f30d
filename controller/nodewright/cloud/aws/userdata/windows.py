"""Windows (2019, 2022, 2025): a PowerShell script that runs EKS's Start-EKSBootstrap.ps1,
as Karpenter writes it. The user's user data is PowerShell too: it runs first, inside the
same `<powershell>` block (Karpenter puts it there verbatim)."""

from __future__ import annotations

from collections.abc import Mapping

from nodewright.api import golang
from nodewright.cloud.aws.userdata.bootstrap import NodeBootstrap, NodeTaint

BOOTSTRAP_SCRIPT = (
    '[string]$EKSBootstrapScriptFile = "$env:ProgramFiles\\Amazon\\EKS\\Start-EKSBootstrap.ps1"'
)


def _quoted(value: str) -> str:
    """Go's %q of a plain string (Karpenter quotes every list-valued kubelet flag so)."""
    return golang.quote(value)


def _single_quoted(value: str) -> str:
    """A PowerShell single-quoted string: only the quote itself needs doubling."""
    return "'" + value.replace("'", "''") + "'"


def _taint(taint: NodeTaint) -> str:
    # Kubernetes' Taint.ToString(): no `=` when the taint has no value.
    return f"{taint.key}={taint.value}:{taint.effect}" if taint.value else (
        f"{taint.key}:{taint.effect}")


def _pairs(flag: str, values: Mapping[str, str], separator: str) -> list[str]:
    if not values:
        return []
    joined = ",".join(f"{key}{separator}{value}" for key, value in sorted(values.items()))
    return [f"{flag}={_quoted(joined)}"]


def kubelet_extra_args(bootstrap: NodeBootstrap) -> list[str]:
    """Karpenter's kubelet flags, in its order: labels, taints, max pods, then the
    kubelet settings it maps (other spec.kubelet fields are refused for Windows)."""
    kubelet = bootstrap.kubelet
    args: list[str] = []
    if bootstrap.labels:
        labels = ",".join(f"{key}={value}" for key, value in sorted(bootstrap.labels.items()))
        args.append(f"--node-labels={_quoted(labels)}")
    args.append(f"--register-with-taints={_quoted(','.join(map(_taint, bootstrap.taints)))}")
    if bootstrap.max_pods is not None:
        args.append(f"--max-pods={bootstrap.max_pods}")
    if kubelet.pods_per_core is not None:
        args.append(f"--pods-per-core={kubelet.pods_per_core}")
    for flag, values, separator in kubelet.map_flags():
        args += _pairs(flag, values, separator)
    args += kubelet.scalar_flags()
    return args


def render(bootstrap: NodeBootstrap) -> str:
    cluster = bootstrap.cluster
    lines = ["<powershell>"]
    if bootstrap.custom_user_data:
        lines.append(bootstrap.custom_user_data)
    lines.append(BOOTSTRAP_SCRIPT)
    command = (f"& $EKSBootstrapScriptFile -EKSClusterName {_single_quoted(cluster.name)}"
               f" -APIServerEndpoint {_single_quoted(cluster.endpoint)}")
    if cluster.ca_bundle:
        command += f" -Base64ClusterCA {_single_quoted(cluster.ca_bundle)}"
    command += f" -KubeletExtraArgs {_single_quoted(' '.join(kubelet_extra_args(bootstrap)))}"
    if bootstrap.cluster_dns:
        command += f" -DNSClusterIP {_single_quoted(bootstrap.cluster_dns[0])}"
    lines.append(command)
    lines.append("</powershell>")
    return "\n".join(lines)
