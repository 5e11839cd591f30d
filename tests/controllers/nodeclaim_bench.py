"""The bench of the ports of Karpenter's NodeClaim controller suites
(pkg/controllers/nodeclaim/...): a World with the EC2NodeClass `default` and a NodePool
`default` that never consolidates (so an empty node stays), NodeClaims applied by hand as
Karpenter's `test.NodeClaim` makes them, and Nodes joined by hand as its
`test.NodeClaimLinkedNode` does. The simulated instances never join on their own unless a
story asks (`joins=True`), so a story decides when a Node appears.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from nodewright.cloud.provider import CloudProviderError
from nodewright.cloud.sim import SimSettings
from nodewright.cluster.api import NotFoundError
from nodewright.runtime.clock import format_time
from tests.harness import NODE_CLASS, World, node_pool

Object = dict[str, Any]
NEVER_JOINS = SimSettings(registration_delay=10 * 24 * 3600.0)
QUIET_POOL = node_pool(capacity_types=(), disruption={"consolidateAfter": "Never"})
UNMANAGED_CLASS = {"group": "karpenter.test.sh", "kind": "UnmanagedNodeClass",
                   "name": "default"}
_names = itertools.count(1)


def bench(*, joins: bool = False, pool: Mapping[str, Any] = QUIET_POOL, **options: Any
          ) -> World:
    world = World(sim=None if joins else NEVER_JOINS, **options)
    world.apply(NODE_CLASS, pool)
    return world


def nodeclaim(
    name: str | None = None,
    *,
    pool: str | None = "default",
    managed: bool = True,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    requests: Mapping[str, str] | None = None,
    owner: Mapping[str, Any] | None = None,
    **spec: Any,
) -> Object:
    """Karpenter's `test.NodeClaim`: a NodeClaim of the NodePool `pool` on the node class
    `default` (or another provider's class when not `managed`). `owner`: the NodePool
    object to own it (as the provisioner's NodeClaims are)."""
    all_labels = {"karpenter.k8s.aws/ec2nodeclass": "default"}
    if pool is not None:
        all_labels["karpenter.sh/nodepool"] = pool
    all_labels.update(labels or {})
    metadata: Object = {"name": name or f"claim-{next(_names)}", "labels": all_labels}
    if annotations:
        metadata["annotations"] = dict(annotations)
    if owner is not None:
        metadata["ownerReferences"] = [{
            "apiVersion": "karpenter.sh/v1", "kind": "NodePool",
            "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"],
            "blockOwnerDeletion": True}]
    body: Object = {
        "nodeClassRef": dict(UNMANAGED_CLASS) if not managed else {
            "group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
        "requirements": [],
        **spec,
    }
    if requests is not None:
        body["resources"] = {"requests": dict(requests)}
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "metadata": metadata,
            "spec": body}


def create(world: World, *claims: Object) -> list[Object]:
    created = [world.cluster.create(claim) for claim in claims]
    world.deliver()
    return created


def launched(world: World, **options: Any) -> str:
    """A NodeClaim of `nodeclaim(**options)` created and launched; its name."""
    (claim,) = create(world, nodeclaim(**options))
    world.advance(5)
    name = str(claim["metadata"]["name"])
    assert status_of(get(world, name), "Launched") == "True"
    return name


def get(world: World, name: str, kind: str = "NodeClaim") -> Object | None:
    try:
        return world.cluster.get(kind, name)
    except NotFoundError:
        return None


def exists(world: World, name: str, kind: str = "NodeClaim") -> bool:
    return get(world, name, kind) is not None


def condition_of(obj: Mapping[str, Any] | None, kind: str) -> tuple[str, str] | None:
    for found in ((obj or {}).get("status") or {}).get("conditions") or []:
        if found.get("type") == kind:
            return str(found.get("status")), str(found.get("reason"))
    return None


def status_of(obj: Mapping[str, Any] | None, kind: str) -> str | None:
    found = condition_of(obj, kind)
    return found[0] if found else None


def set_status(world: World, kind: str, name: str, status: Mapping[str, Any]) -> Object:
    """Write `status` fields as a test's `ExpectApplied` of a changed status does."""
    current = world.cluster.get(kind, name)
    written = world.cluster.update({**current, "status": {**(current.get("status") or {}),
                                                          **status}}, subresource="status")
    world.deliver()
    return written


def set_condition(world: World, kind: str, name: str, type_: str, status: str,
                  reason: str | None = None) -> Object:
    current = world.cluster.get(kind, name)
    now = format_time(world.clock.now())
    kept = [c for c in (current.get("status") or {}).get("conditions") or []
            if c.get("type") != type_]
    added = {"type": type_, "status": status, "reason": reason or type_, "message": "",
             "lastTransitionTime": now,
             "observedGeneration": current["metadata"].get("generation", 1)}
    return set_status(world, kind, name, {"conditions": [*kept, added]})


def linked_node(world: World, claim: Mapping[str, Any], *, ready: bool = True,
                taints: Sequence[Mapping[str, Any]] = (), labels: Mapping[str, str] | None = None,
                allocatable: Mapping[str, str] | None = None,
                provider_id: str | None = None, name: str | None = None) -> Object:
    """Karpenter's `test.NodeClaimLinkedNode`: a Node with the NodeClaim's provider ID,
    labels and capacity, joined by hand."""
    current = get(world, claim["metadata"]["name"]) or claim
    status = current.get("status") or {}
    pid = provider_id or str(status.get("providerID") or "")
    capacity = dict(status.get("capacity") or {"cpu": "2", "memory": "8Gi", "pods": "110"})
    node: Object = {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name or f"node-{current['metadata']['name']}",
                     "labels": {**dict((current.get("metadata") or {}).get("labels") or {}),
                                **dict(labels or {})}},
        "spec": {"providerID": pid, "taints": [dict(t) for t in taints]},
        "status": {
            "capacity": capacity,
            "allocatable": dict(allocatable or status.get("allocatable") or capacity),
            "conditions": [{"type": "Ready", "status": "True" if ready else "False",
                            "reason": "KubeletReady" if ready else "KubeletNotReady",
                            "lastHeartbeatTime": format_time(world.clock.now()),
                            "lastTransitionTime": format_time(world.clock.now())}],
        },
    }
    created = world.cluster.create(node)
    world.deliver()
    return created


def refuse_launches(world: World, code: str = "UnauthorizedOperation") -> None:
    """Karpenter's `cloudProvider.AllowedCreateCalls = 0`: every Create fails."""

    def refuses(nodeclaim: Any, node_class: Any) -> Any:
        raise CloudProviderError(f"ec2:CreateFleet: {code}: not allowed",
                                 call="ec2:CreateFleet", code=code)

    world.cloud.create = refuses  # type: ignore[method-assign]


def fail_next_launch(world: World, error: CloudProviderError | None, times: int = 1
                     ) -> list[str]:
    """Karpenter's `cloudProvider.NextCreateErr`: the next `times` Creates fail with
    `error` (None: none fails); the returned list records every Create asked (the
    NodeClaim's name), as its `CreateCalls`."""
    create_calls: list[str] = []
    launch = world.cloud.create
    pending = [error] * times if error is not None else []

    def create_once(nodeclaim: Any, node_class: Any) -> Any:
        create_calls.append(nodeclaim.metadata.name)
        if pending:
            raise pending.pop()
        return launch(nodeclaim, node_class)

    world.cloud.create = create_once  # type: ignore[method-assign]
    return create_calls


def counter(metric: str, **labels: str) -> float:
    """The sum of a counter's samples whose labels include `labels`."""
    from tests.controllers.metric_samples import total

    return total(metric, **labels)
