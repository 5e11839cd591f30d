"""The kube-dns Service's cluster IP, read once at start-up as Karpenter's operator reads it:
the AWS provider gives it to nodes as their cluster DNS (unless spec.kubelet.clusterDNS says
otherwise), and an IPv6 address there makes the cluster an IPv6 one."""

from __future__ import annotations

import ipaddress
import logging

from nodewright.cluster.api import ApiError, ClusterAPI
from nodewright.cluster.kube.access import KUBE_DNS_NAMESPACE, KUBE_DNS_SERVICE

log = logging.getLogger("nodewright.controller")


def kube_dns_ip(cluster: ClusterAPI) -> str | None:
    """None when the Service cannot be read or has no IP: as in Karpenter, a custom DNS set-up
    is no reason not to start; nodes then use their bootstrap's own default."""
    try:
        service = cluster.get("Service", KUBE_DNS_SERVICE, KUBE_DNS_NAMESPACE)
    except ApiError as error:
        log.info("unable to detect the IP of the kube-dns service: %s", error.message)
        return None
    address = str((service.get("spec") or {}).get("clusterIP") or "")
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        log.info("unable to detect the IP of the kube-dns service: cluster IP %r is not an "
                 "address", address)
        return None
    log.info("discovered kube dns", extra={"kube-dns-ip": str(parsed)})
    return str(parsed)
