"""What the API server lets the manifests' ServiceAccount do is exactly what the adapter's
access table declares: `kubectl auth can-i --list` as that account, in every namespace it
has a Role in and in one it has none, minus what every ServiceAccount of its namespace may
do anyway (discovery, self reviews)."""

from __future__ import annotations

import re

from nodewright.cluster.kube.access import NODE_LEASE_NAMESPACE, permissions
from tests.e2e.harness import CONTROLLER_NAMESPACE, SERVICE_ACCOUNT, ControlPlane, Installation

Grant = tuple[str, str, tuple[str, ...], str]  # group, resource, names, verb
ROW = re.compile(r"^(\S*)\s+\[(.*?)\]\s+\[(.*?)\]\s+\[(.*?)\]\s*$")


def can_i(plane: ControlPlane, account: str, namespace: str) -> set[Grant]:
    listed = plane.kubectl("auth", "can-i", "--list", "-n", namespace,
                           f"--as=system:serviceaccount:{CONTROLLER_NAMESPACE}:{account}")
    grants: set[Grant] = set()
    for line in listed.stdout.splitlines()[1:]:
        row = ROW.match(line)
        assert row, f"unexpected line of kubectl auth can-i --list: {line!r}"
        resource, urls, names, verbs = row.groups()
        if not resource:  # a non-resource URL (/api, /healthz, ...)
            grants |= {("", urls, (), verb) for verb in verbs.split()}
            continue
        head, slash, sub = resource.partition("/")
        plural, _, group = head.partition(".")
        for verb in verbs.split():
            grants.add((group, plural + slash + sub, tuple(names.split()), verb))
    return grants


def declared(namespace: str) -> set[Grant]:
    scopes = {"cluster"}
    if namespace == CONTROLLER_NAMESPACE:
        scopes.add("own-namespace")
    if namespace == NODE_LEASE_NAMESPACE:
        scopes.add("node-leases")
    return {(access.group, access.resource, access.names, verb)
            for access in permissions("sim") if access.scope in scopes
            for verb in access.verbs}


def test_the_service_account_may_do_exactly_what_the_access_table_declares(
        control_plane: ControlPlane, installation: Installation) -> None:
    for namespace in (CONTROLLER_NAMESPACE, NODE_LEASE_NAMESPACE, "default"):
        everyone = can_i(control_plane, "someone-else", namespace)
        effective = can_i(control_plane, SERVICE_ACCOUNT, namespace) - everyone
        wanted = declared(namespace)
        assert effective - wanted == set(), f"{namespace}: granted beyond the access table"
        assert wanted - effective == set(), f"{namespace}: declared but not granted"
