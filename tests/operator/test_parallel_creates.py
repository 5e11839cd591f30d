"""NodeClaims are created together through the operator, as Karpenter's
`Provisioner.CreateNodeClaims` sends them (`workqueue.ParallelizeUntil(ctx, n, n, ...)`,
pkg/controllers/provisioning/provisioner.go): a provisioning round's, a disruption
command's replacements (pkg/controllers/disruption/queue.go, createReplacementNodeClaims)
and a static NodePool's missing replicas (pkg/controllers/static/provisioning).

The operator runs as in the other stories, taking turns at the world lock with the
cluster's actors; the world lock is the one whose order deadlocked the first attempt (the
provisioner's thread held it through its reconcile while the threads creating for it
waited for it). The API server's creates are slow (`SlowCreates`): creates sent together
are in flight at the same moment, creates sent one after another never are, which the
stories read from the recorded intervals.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from nodewright.cluster.api import ApiError, ClusterAPI
from nodewright.runtime.reconciler import WatchEvent
from tests.controllers.expectations import expect_consistent, expect_running
from tests.controllers.test_limits_story import LIMITED_POOL
from tests.harness import node_pool
from tests.kube.waiting import eventually
from tests.operator.conftest import WORKSHOP, JsonLogs
from tests.operator.slow_creates import SlowCreates
from tests.operator.world import FAST_CONTROLLERS, RealTimeWorld
from tests.static.helpers import static_pool

POOL = node_pool(types=["m5.large"], labels={"type": "karpenter"})


def big_pod(name: str) -> dict[str, Any]:
    """1500m: one to an m5.large (1805m free beside the workshop's DaemonSets)."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"nodeSelector": {"type": "karpenter"},
                     "containers": [{"name": "app", "image": "app",
                                     "resources": {"requests": {"cpu": "1500m"}}}]}}


def big_pods(replicas: int) -> dict[str, Any]:
    """A Deployment of `replicas` big pods that stop at once when evicted."""
    template = big_pod("big")
    template["metadata"] = {"labels": {"app": "big"}}
    template["spec"]["terminationGracePeriodSeconds"] = 0
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "big", "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "big"}},
                     "template": template}}


def slow_operator(world: RealTimeWorld, **options: Any) -> tuple[SlowCreates, Any]:
    """The operator (FAST_CONTROLLERS with `options`) on an API server whose creates are
    slow."""
    made: list[SlowCreates] = []

    def client(inner: ClusterAPI) -> ClusterAPI:
        made.append(SlowCreates(inner))
        return made[0]  # type: ignore[return-value]

    operator = world.operator("nodewright-a", leader_elect=False, client=client,
                              options=dataclasses.replace(FAST_CONTROLLERS, **options))
    return made[0], operator


def pods_at_once(world: RealTimeWorld, *names: str) -> None:
    """The pods appear in one moment, so the provisioner solves them in one round."""
    with world.lock:
        world.apply(*(big_pod(name) for name in names))


def nodeclaims_of(world: RealTimeWorld, pool: str) -> int:
    return sum(1 for claim in world.memory.peek_all("NodeClaim")
               if claim["metadata"]["labels"].get("karpenter.sh/nodepool") == pool)


def expect_settled(world: RealTimeWorld, pods: int) -> None:
    world.settle()
    with world.lock:
        expect_running(world, pods)
        expect_consistent(world)


def test_a_rounds_nodeclaims_are_in_flight_together(world: RealTimeWorld) -> None:
    api, operator = slow_operator(world)
    world.apply(WORKSHOP, POOL)
    api.arm(together=4)

    pods_at_once(world, "a", "b", "c", "d")

    world.wait_until_running(pods=4, nodes=4)
    assert len(api.intervals) == 4
    assert api.most_in_flight() == 4, "the round's creates went one after another"
    (round_,) = [o for o in operator.controllers.provisioner.outcomes if o.created]
    assert sorted(round_.created) == sorted(api.created())
    nominated = {e["regarding"]["name"]: e["note"] for e in world.events("Nominated")}
    assert sorted(nominated) == ["a", "b", "c", "d"]
    assert len(set(nominated.values())) == 4  # each to its own NodeClaim
    expect_settled(world, 4)
    assert world.errors == []


def test_one_refused_create_leaves_the_others_created_and_is_reported(
        world: RealTimeWorld) -> None:
    api, operator = slow_operator(world)
    world.apply(WORKSHOP, POOL)
    api.arm(together=4)
    api.refuse = lambda number: ApiError("etcdserver: request timed out") if number == 1 else None

    pods_at_once(world, "a", "b", "c", "d")

    world.wait_until_running(pods=4, nodes=4)
    first_round = [i for i in api.intervals if i.number < 4]
    assert [i.name is None for i in sorted(first_round, key=lambda i: i.number)] == [
        False, True, False, False]
    assert api.most_in_flight() == 4
    (refused,) = [error for controller, _, error in world.errors if controller == "provisioner"]
    assert "etcdserver: request timed out" in str(refused)
    rounds = [o.created for o in operator.controllers.provisioner.outcomes if o.created]
    assert [len(created) for created in rounds] == [3, 1]  # the three stood; one more after
    assert sorted(name for created in rounds for name in created) == sorted(api.created())
    assert len(world.nodeclaims()) == 4
    expect_settled(world, 4)


def test_nodepool_limits_hold_with_the_creates_in_flight_together(
        world: RealTimeWorld) -> None:
    """cpu 6 holds three m5.large: of five NodeClaims planned in one round, three are
    created together and two pods are told the limit is reached, round after round."""
    most = [0]

    def on_nodeclaim(event: WatchEvent) -> None:
        if event.kind == "NodeClaim":
            most[0] = max(most[0], nodeclaims_of(world, "default"))

    with world.lock:
        world.cluster_driver.listen(on_nodeclaim)
    api, _ = slow_operator(world)
    world.apply(WORKSHOP, LIMITED_POOL)
    api.arm(together=3)

    pods_at_once(world, "a", "b", "c", "d", "e")

    world.wait_until_running(pods=3, nodes=3)
    eventually(lambda: len({e["regarding"]["name"] for e in world.events("FailedScheduling")
                            if 'NodePool "default": limits' in str(e.get("note"))}) == 2,
               "the two pods over the limit to be told so")
    world.settle()
    assert api.most_in_flight() == 3
    assert most[0] == 3
    assert nodeclaims_of(world, "default") == 3
    assert len(world.pending_pods()) == 2


def test_a_drifted_nodes_replacements_are_created_together(
        world: RealTimeWorld, json_logs: JsonLogs) -> None:
    """One m5.2xlarge holds a Deployment's three pods; its NodePool then allows only
    m5.large, so drift replaces it by three (one command, three replacements), created
    together."""
    api, _ = slow_operator(world)
    world.apply(WORKSHOP, node_pool(types=["m5.2xlarge"], labels={"type": "karpenter"}),
                big_pods(3))
    world.wait_until_running(pods=3, nodes=1)
    (first,) = [claim["metadata"]["name"] for claim in world.nodeclaims()]
    api.arm(together=3)

    world.apply(POOL)

    eventually(lambda: first not in {c["metadata"]["name"] for c in world.nodeclaims()}
               and len(world.running_pods()) == 3 and len(world.ready_nodes()) == 3,
               "the drifted node to be replaced by three m5.large")
    (logged,) = json_logs("disrupting node(s)")
    assert str(logged["reason"]).lower() == "drifted"
    assert (logged["disrupted-node-count"], logged["replacement-node-count"]) == (1, 3)
    replacements = sorted(r["NodeClaim"]["name"] for r in logged["replacement-nodes"])
    assert sorted(api.created()) == replacements
    assert api.most_in_flight() == 3, "the replacements were created one after another"
    assert world.instance_types() == ["m5.large"] * 3
    expect_settled(world, 3)
    assert world.errors == []


def test_a_static_nodepools_missing_replicas_are_created_together(
        world: RealTimeWorld) -> None:
    api, _ = slow_operator(world, static_capacity=True)
    world.apply(WORKSHOP)
    api.arm(together=3)

    world.apply(static_pool(replicas=3))

    eventually(lambda: len(world.ready_nodes()) == 3, "three static nodes")
    assert api.most_in_flight() == 3, "the replicas were created one after another"
    assert nodeclaims_of(world, "static") == 3
    world.settle()
    assert nodeclaims_of(world, "static") == 3
    assert world.errors == []
