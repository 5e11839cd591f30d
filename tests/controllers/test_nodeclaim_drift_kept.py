"""The drift rules before the cloud's are worked out again only when what they read
changes; the cloud provider is still asked on every reconcile, as Karpenter's Drift
reconciler asks `IsDrifted` each time.

Most reconciles of `nodeclaim.disruption` come from writes that touch nothing drift reads
(the NodeClaim's conditions, `lastPodEventTime`, the NodePool's status). The verdict of the
NodePool hash, requirement, EC2NodeClass hash and offering rules is kept per NodeClaim with
their inputs; these stories count how often it is worked out.
"""

from __future__ import annotations

import copy
from typing import Any

from nodewright.api import hashes
from nodewright.api.ec2nodeclass import EC2NodeClass
from nodewright.controllers.nodeclaim.disruption_conditions import NodeClaimConditions
from nodewright.controllers.nodeclaim.drift import NODECLASS_DRIFTED, REQUIREMENTS_DRIFTED
from nodewright.runtime.reconciler import WatchEvent
from tests.controllers.nodeclaim_bench import (
    QUIET_POOL,
    bench,
    condition_of,
    create,
    get,
    launched,
    nodeclaim,
    set_condition,
    status_of,
)
from tests.harness import World

TEAM = "example.com/team"


class CountingCloud:
    """The bench's cloud, counting the drift questions it is asked."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.asked = 0
        self.reason: str | None = None

    def drift_reason(self, *args: Any) -> str | None:
        self.asked += 1
        return self.reason

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def controller_of(world: World) -> tuple[NodeClaimConditions, CountingCloud]:
    controller = world.controllers.get("nodeclaim.disruption", NodeClaimConditions)
    assert controller is not None
    cloud = CountingCloud(controller.provider)
    controller.provider = cloud  # type: ignore[assignment]
    return controller, cloud


def pool_requiring(*teams: str) -> dict[str, Any]:
    body: dict[str, Any] = {**QUIET_POOL, "spec": dict(QUIET_POOL["spec"])}
    body["spec"]["template"] = {**body["spec"]["template"], "spec": {
        **body["spec"]["template"]["spec"],
        "requirements": [{"key": TEAM, "operator": "In", "values": list(teams)}]}}
    return body


def test_an_unchanged_nodeclaim_is_not_judged_again_but_the_cloud_is_asked() -> None:
    world = bench(pool=pool_requiring("a"))
    controller, cloud = controller_of(world)
    name = launched(world, labels={TEAM: "a"})
    controller.reconcile(name)
    checks, asked = controller.static_checks, cloud.asked
    assert checks >= 1

    controller.reconcile(name)  # a requeue: nothing changed
    set_condition(world, "NodeClaim", name, "Example", "True")  # a write drift ignores
    controller.reconcile(name)

    assert controller.static_checks == checks
    assert cloud.asked == asked + 2
    assert status_of(get(world, name), "Drifted") is None


def test_the_clouds_new_answer_is_seen_at_the_next_reconcile() -> None:
    """Karpenter's "should remove the status condition from the nodeClaim if the nodeClaim
    is no longer drifted", the other way round: nothing in the cluster changed, the cloud
    now says drifted."""
    world = bench(pool=pool_requiring("a"))
    controller, cloud = controller_of(world)
    name = launched(world, labels={TEAM: "a"})
    controller.reconcile(name)
    cloud.reason = "AMIDrift"
    controller.reconcile(name)
    assert condition_of(get(world, name), "Drifted") == ("True", "AMIDrift")


def test_a_changed_nodepool_requirement_is_judged_again() -> None:
    world = bench(pool=pool_requiring("a"))
    controller, _ = controller_of(world)
    name = launched(world, labels={TEAM: "a"})
    controller.reconcile(name)
    checks = controller.static_checks

    world.apply(pool_requiring("b"))
    controller.reconcile(name)

    assert controller.static_checks == checks + 1
    assert condition_of(get(world, name), "Drifted") == ("True", REQUIREMENTS_DRIFTED)


def test_a_changed_nodeclaim_label_is_judged_again() -> None:
    world = bench(pool=pool_requiring("a"))
    controller, _ = controller_of(world)
    name = launched(world, labels={TEAM: "a"})
    controller.reconcile(name)
    checks = controller.static_checks

    world.cluster.patch("NodeClaim", name, {"metadata": {"labels": {TEAM: "c"}}})
    world.deliver()
    controller.reconcile(name)

    assert controller.static_checks == checks + 1
    assert condition_of(get(world, name), "Drifted") == ("True", REQUIREMENTS_DRIFTED)


def test_a_changed_ec2nodeclass_is_judged_again() -> None:
    world = bench(pool=pool_requiring("a"))
    controller, _ = controller_of(world)
    node_class = EC2NodeClass.model_validate(world.cluster.get("EC2NodeClass", "default"))
    name = launched(world, labels={TEAM: "a"},
                    annotations=hashes.node_class_hash_annotations(node_class))
    controller.reconcile(name)
    assert status_of(get(world, name), "Drifted") is None
    checks = controller.static_checks

    world.cluster.patch("EC2NodeClass", "default", {"spec": {"tags": {"cost-center": "42"}}})
    world.deliver()
    controller.reconcile(name)

    assert controller.static_checks == checks + 1
    assert condition_of(get(world, name), "Drifted") == ("True", NODECLASS_DRIFTED)


def test_a_nodepool_status_write_keeps_the_verdict() -> None:
    """The NodePool controllers write its status (resources, conditions) all the time: the
    template hash and the requirements are what the rules read."""
    world = bench(pool=pool_requiring("a"))
    controller, _ = controller_of(world)
    name = launched(world, labels={TEAM: "a"})
    controller.reconcile(name)
    checks = controller.static_checks

    set_condition(world, "NodePool", "default", "Example", "True")
    controller.reconcile(name)

    assert controller.static_checks == checks


def test_a_node_class_change_wakes_only_the_nodeclaims_launched_with_it() -> None:
    """Karpenter's NodeClassEventHandler: an EC2NodeClass event enqueues the NodeClaims whose
    nodeClassRef names it, not every NodeClaim of the cluster."""
    world = bench()
    mine = nodeclaim("mine")
    theirs = nodeclaim("theirs", nodeClassRef={"group": "karpenter.k8s.aws",
                                               "kind": "EC2NodeClass", "name": "other"})
    create(world, mine, theirs)
    controller, _ = controller_of(world)
    (watch,) = [w for w in controller.watches if w.kind == "EC2NodeClass"]
    event = WatchEvent("MODIFIED", {"apiVersion": "karpenter.k8s.aws/v1",
                                    "kind": "EC2NodeClass", "metadata": {"name": "other"}})
    assert list(watch.keys(event)) == ["theirs"]


class RecordingCloud(CountingCloud):
    """Counting, and keeping the NodeClaim models it was handed."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self.models: list[Any] = []

    def drift_reason(self, *args: Any) -> str | None:
        self.models.append(args[0])
        return super().drift_reason(*args)


def test_the_cloud_is_handed_what_it_reads_of_the_latest_nodeclaim() -> None:
    """A condition or pod-event write is a new resourceVersion the cloud's check does not
    read: it gets the model it had; an annotation or image written is in the next one."""
    world = bench(pool=pool_requiring("a"))
    controller = world.controllers.get("nodeclaim.disruption", NodeClaimConditions)
    assert controller is not None
    cloud = RecordingCloud(controller.provider)
    controller.provider = cloud  # type: ignore[assignment]
    name = launched(world, labels={TEAM: "a"})
    controller.reconcile(name)
    set_condition(world, "NodeClaim", name, "Example", "True")
    world.cluster.patch("NodeClaim", name, {"status": {"lastPodEventTime":
                                                       "2030-01-01T00:00:00Z"}},
                        subresource="status")
    world.deliver()
    controller.reconcile(name)
    first, again = cloud.models[-2:]
    assert again is first

    world.cluster.patch("NodeClaim", name, {"metadata": {"annotations": {"example": "x"}}})
    world.cluster.patch("NodeClaim", name, {"status": {"imageID": "ami-new"}},
                        subresource="status")
    world.deliver()
    controller.reconcile(name)

    latest = cloud.models[-1]
    assert latest is not first
    assert (latest.metadata.annotations or {}).get("example") == "x"
    assert latest.status is not None and latest.status.image_id == "ami-new"
    assert latest.status.provider_id == get(world, name)["status"]["providerID"]  # type: ignore[index]


def test_the_cached_nodeclaim_is_read_and_left_as_it_was() -> None:
    """The controller reads the state cache's NodeClaim (the latest version: events are
    delivered before a reconcile), as Karpenter's client reads its informer's, and works
    its conditions out on copies: the cached object is not changed by the Drifted write."""
    world = bench(pool=pool_requiring("a"))
    controller, cloud = controller_of(world)
    name = launched(world, labels={TEAM: "a"})
    cached = controller.state.nodeclaim(name)
    assert cached is not None
    as_it_was = copy.deepcopy(cached)
    cloud.reason = "AMIDrift"

    controller.reconcile(name)

    assert cached == as_it_was
    assert condition_of(get(world, name), "Drifted") == ("True", "AMIDrift")
