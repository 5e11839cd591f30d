"""Kubernetes RBAC as the authorizer applies it, over the operator's permission tables:
which request each ClusterAPI call of the adapter becomes (`request_for`) and whether the
tables grant it (`allows`), so tests can check every call the controllers make."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from nodewright.cluster.api import kind_of
from nodewright.cluster.kube.access import (
    KUBE_DNS_NAMESPACE,
    NODE_LEASE_NAMESPACE,
    WATCHED_KINDS,
    Access,
)


@dataclass(frozen=True)
class Request:
    """One API request as the RBAC authorizer sees it."""

    verb: str
    group: str
    resource: str
    namespace: str | None
    name: str | None


def request_for(
    method: str,
    kind: str,
    *,
    name: str | None = None,
    namespace: str | None = None,
    subresource: str | None = None,
) -> Request:
    """The request the adapter sends for a ClusterAPI call (`get`, `list`, `create`,
    `update`, `patch`, `delete`, `evict`). Reads of watched kinds come from the informer
    caches, which needed `list` and `watch` of the whole kind when they started."""
    spec = kind_of(kind)
    resource = spec.plural + (f"/{subresource}" if subresource else "")
    if method in ("get", "list") and kind in WATCHED_KINDS:
        return Request("watch", spec.group, resource, None, None)
    if method == "evict":
        return Request("create", "", "pods/eviction", namespace, name)
    verbs = {"get": "get", "list": "list", "create": "create", "update": "update",
             "patch": "patch", "delete": "delete"}
    if method not in verbs:
        raise ValueError(f"unknown ClusterAPI method {method!r}")
    return Request(verbs[method], spec.group, resource, namespace, name)


def allows(rules: Iterable[Access], request: Request, own_namespace: str) -> bool:
    """Whether these permissions grant the request (as Kubernetes RBAC evaluates rules)."""
    for rule in rules:
        if rule.group != request.group or rule.resource != request.resource:
            continue
        if request.verb not in rule.verbs:
            continue
        if rule.scope == "own-namespace" and request.namespace != own_namespace:
            continue
        if rule.scope == "node-leases" and request.namespace != NODE_LEASE_NAMESPACE:
            continue
        if rule.scope == "kube-dns" and request.namespace != KUBE_DNS_NAMESPACE:
            continue
        if rule.names and request.name not in rule.names:
            continue
        return True
    return False
