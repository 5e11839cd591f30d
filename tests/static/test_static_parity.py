"""Static NodePools against Karpenter v1.14.1, decision by decision: what the static
provisioning and deprovisioning controllers wait for, how a refused write ends their
reconcile, what they log and which events looking at pods publishes."""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

import pytest

from nodewright.cluster import objects
from nodewright.cluster.api import ApiError
from nodewright.cluster.events import Event
from nodewright.controllers.static.deprovisioning import StaticDeprovisioning
from nodewright.controllers.static.provisioning import REQUEUE_SECONDS
from nodewright.runtime.clock import format_time
from tests.harness import NODE_CLASS, World, node_pool
from tests.static.helpers import (
    claims_of,
    deprovisioner,
    launched_pool,
    live_claims_of,
    provisioner,
    static_pool,
)


def set_replicas(world: World, replicas: int) -> None:
    world.cluster.patch("NodePool", "static", {"spec": {"replicas": replicas}})
    world.deliver()


def test_a_nodeclaim_still_launching_elsewhere_does_not_hold_a_static_pool_back(
    world: World,
) -> None:
    """static/provisioning/controller.go:86 waits only while `!c.cluster.HasSynced() &&
    !c.cluster.Synced(ctx)`: once the cache has synced, a NodeClaim without a providerID
    (which makes Synced() false, state/cluster.go:167-178) does not stop the pool from
    growing. Ours waited, a second at a time, until every NodeClaim of the cluster had
    launched."""
    launched_pool(world, 1)
    world.apply(node_pool("dynamic", types=["m5.large"]))
    template = claims_of(world, "static")[0]
    world.cluster.create({
        "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
        "metadata": {"name": "dynamic-launching", "labels": {"karpenter.sh/nodepool": "dynamic"}},
        "spec": template["spec"]})
    world.deliver()  # seen, not launched: no controller has run since
    assert not provisioner(world).state.synced(world.cluster)

    set_replicas(world, 3)
    assert provisioner(world).reconcile("static").requeue_after == REQUEUE_SECONDS
    assert len(live_claims_of(world, "static")) == 3


class RefusedWrites:
    """Makes the API server refuse every NodeClaim create or delete while on."""

    def __init__(self, world: World, verb: str) -> None:
        self.real = getattr(world.cluster, verb)
        self.on = True
        setattr(world.cluster, verb, self.refuse)

    def refuse(self, *args: Any, **kwargs: Any) -> Any:
        first = args[0] if args else None
        kind = first if isinstance(first, str) else (first or {}).get("kind")
        if self.on and kind == "NodeClaim":
            raise ApiError("etcdserver: request timed out")
        return self.real(*args, **kwargs)


def test_a_refused_create_is_a_reconcile_error_of_static_provisioning(world: World) -> None:
    """static/provisioning/controller.go:118-121 returns the CreateNodeClaims error:
    controller-runtime logs "Reconciler error", counts it in
    controller_runtime_reconcile_errors_total and retries with its backoff (the driver's
    error, as here). Ours logged the refusal itself and came back in a second as if
    nothing had failed."""
    refusing = RefusedWrites(world, "create")
    world.apply(NODE_CLASS, static_pool(replicas=2))
    world.advance(30)
    failed = [(name, key) for name, key, _ in world.errors if name == "static.provisioning"]
    assert failed and set(failed) == {("static.provisioning", "static")}
    assert claims_of(world, "static") == []

    refusing.on = False  # the backoff's next try creates them
    assert world.settle()
    assert len(claims_of(world, "static")) == 2


def test_a_refused_delete_is_a_reconcile_error_of_static_deprovisioning(world: World) -> None:
    """static/deprovisioning/controller.go:130-132 returns "failed to deprovision
    nodeclaims, ..." when a delete fails: a reconcile error, retried with
    controller-runtime's backoff. Ours logged it and came back in a second."""
    names = launched_pool(world, 3)
    refusing = RefusedWrites(world, "delete")
    set_replicas(world, 1)
    world.advance(30)
    failed = [error for name, key, error in world.errors
              if (name, key) == ("static.deprovisioning", "static")]
    assert failed and "failed to deprovision nodeclaims" in str(failed[0])
    assert {objects.name(c) for c in live_claims_of(world, "static")} == set(names)

    refusing.on = False
    assert world.settle()
    assert len(claims_of(world, "static")) == 1


def test_a_static_nodeclaims_creation_is_logged_as_the_provisioners(
    world: World, caplog: pytest.LogCaptureFixture,
) -> None:
    """provisioning/provisioner.go Create logs "created nodeclaim" with `requests` and
    `instance-types` for static NodeClaims too (their nil requests, an empty list: the
    template names no instance type). Ours left both fields out."""
    caplog.set_level(logging.INFO, logger="nodewright.controllers.static.provisioning")
    world.apply(NODE_CLASS, static_pool(replicas=1))
    assert world.settle()
    created = [r for r in caplog.records if r.getMessage() == "created nodeclaim"]
    assert len(created) == 1
    fields = created[0].__dict__
    assert fields["NodeClaim"] == objects.name(claims_of(world, "static")[0])
    assert fields["NodePool"] == "static"
    assert "requests" in fields and fields["requests"] is None
    assert fields["instance-types"] == ""


def test_the_surplus_deleted_is_logged_at_debug_with_only_the_nodeclaim(
    world: World, caplog: pytest.LogCaptureFixture,
) -> None:
    """static/deprovisioning/controller.go:124 logs "deleting nodeclaim" at V(1) (debug)
    with the NodeClaim; its TerminationReason "overprovisioned" is declared, never
    logged. Ours logged it at info with a `reason` field."""
    launched_pool(world, 2)
    set_replicas(world, 1)
    caplog.set_level(logging.DEBUG, logger="nodewright.controllers.static.deprovisioning")
    assert deprovisioner(world).reconcile("static").requeue_after == REQUEUE_SECONDS
    deleting = [r for r in caplog.records if r.getMessage() == "deleting nodeclaim"]
    assert len(deleting) == 1
    assert deleting[0].levelno == logging.DEBUG
    gone = [objects.name(c) for c in claims_of(world, "static") if objects.is_deleting(c)]
    assert deleting[0].__dict__["NodeClaim"] == gone[0]
    assert "reason" not in deleting[0].__dict__


class Published:
    """An event recorder that keeps what is published."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def publish(self, *events: Event) -> None:
        self.events.extend(events)


def pod_on(world: World, name: str, claim: str, annotations: dict[str, str]) -> None:
    node = world.cluster.get("NodeClaim", claim)["status"]["nodeName"]
    world.apply({"apiVersion": "v1", "kind": "Pod",
                 "metadata": {"name": name, "namespace": "default",
                              "annotations": annotations},
                 "spec": {"nodeName": node, "containers": [{"name": "app", "image": "app"}]},
                 "status": {"phase": "Running",
                            "startTime": format_time(world.clock.now())}})


def test_looking_at_do_not_disrupt_pods_on_scale_down_publishes_karpenters_events(
    world: World,
) -> None:
    """static/deprovisioning/controller.go:256 and :291 ask pod.IsDoNotDisruptActive(p,
    c.clock, c.recorder) (utils/pod/scheduling.go:210-250), which publishes
    DoNotDisruptUntil for a duration still protecting its pod and
    InvalidDoNotDisruptAnnotation for a value it cannot read. Ours published nothing. The
    protected node is kept; the other two go."""
    names = launched_pool(world, 3)
    pod_on(world, "protected", names[0], {"karpenter.sh/do-not-disrupt": "1h"})
    pod_on(world, "unreadable", names[1], {"karpenter.sh/do-not-disrupt": "soon"})
    pod_on(world, "plain", names[2], {})
    set_replicas(world, 1)
    real = deprovisioner(world)
    published = Published()
    looking = StaticDeprovisioning(world.cluster, real.clock, real.state,
                                   published)  # type: ignore[arg-type]
    assert looking.reconcile("static").requeue_after == REQUEUE_SECONDS
    assert {objects.name(c) for c in live_claims_of(world, "static")} == {names[0]}

    told = {(e.reason, objects.name(e.regarding), e.type, e.note) for e in published.events}
    until = format_time(world.clock.now() + timedelta(hours=1))
    assert told == {
        ("DoNotDisruptUntil", "protected", "Normal",
         f"The karpenter.sh/do-not-disrupt grace period will elapse at {until}"),
        ("InvalidDoNotDisruptAnnotation", "unreadable", "Warning",
         'Invalid karpenter.sh/do-not-disrupt annotation: failed to parse "soon" as a '
         'duration: time: invalid duration "soon", ignoring annotation'),
    }
    # The operator's deprovisioner publishes through the controllers' recorder.
    assert real.recorder is world.controllers.recorder


def test_no_pod_is_looked_at_when_unlaunched_nodeclaims_are_surplus_enough(
    world: World,
) -> None:
    """static/deprovisioning/controller.go:189-195: the unresolved NodeClaims come first and,
    when they cover the surplus, no node (nor its pods' annotations, nor their events) is
    looked at."""
    names = launched_pool(world, 1)
    pod_on(world, "protected", names[0], {"karpenter.sh/do-not-disrupt": "1h"})
    template = world.cluster.get("NodeClaim", names[0])
    world.cluster.create({
        "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
        "metadata": {"name": "static-unlaunched",
                     "labels": dict(objects.labels(template))},
        "spec": template["spec"]})
    world.deliver()
    real = deprovisioner(world)
    published = Published()
    looking = StaticDeprovisioning(world.cluster, real.clock, real.state,
                                   published)  # type: ignore[arg-type]
    assert looking.reconcile("static").requeue_after == REQUEUE_SECONDS
    assert {objects.name(c) for c in live_claims_of(world, "static")} == {names[0]}
    assert published.events == []


def test_a_fractional_node_limit_rounds_up_as_gos_quantity_value(world: World) -> None:
    """static/provisioning/controller.go:98-100 reads limits.nodes with Quantity.Value(),
    which rounds up: a limit of "1500m" allows two NodeClaims. Ours floored it to one."""
    world.apply(NODE_CLASS, static_pool(replicas=3, node_limit=None))
    world.cluster.patch("NodePool", "static", {"spec": {"limits": {"nodes": "1500m"}}})
    assert world.settle()
    assert len(claims_of(world, "static")) == 2
