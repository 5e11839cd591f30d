"""Stories of the burst that stopped all provisioning (issue 28): a NodeClaim launched and
its Node joined while the provisioner was still waiting for the answer to the NodeClaim's
create. The late answer must not take the controller's view back to an unlaunched
NodeClaim; whichever of the Node and the NodeClaim's providerID reaches the controller
first, the NodeClaim registers, the state syncs and provisioning goes on.

The race is played in virtual time: the provisioner's ClusterAPI runs, between storing a
NodeClaim and returning the answer, what the operator's other threads did meanwhile in the
burst (the watch delivering events, the lifecycle launching, the instance's kubelet
joining)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nodewright.cloud.provider import CloudProviderError
from nodewright.cloud.sim import SimSettings, SimulatedEC2
from nodewright.cluster.api import ApiError, ClusterAPI, Object
from nodewright.controllers.nodeclaim.registration import REGISTERED
from tests.controllers.conftest import WORKSHOP
from tests.controllers.expectations import (
    claim_names,
    condition,
    expect_consistent,
    expect_no_controller_errors,
    expect_running,
)
from tests.harness import NODE_CLASS, World

NODE_CLASS_PERF = NODE_CLASS
FAST = SimSettings(launch_delay=0.0, registration_delay=0.0, startup_taint_delay=None)


class LateAnswers:
    """The provisioner's ClusterAPI: the first `count` NodeClaim creates are stored, then
    `meanwhile(created)` runs before the answer is returned."""

    def __init__(self, inner: ClusterAPI, meanwhile: Callable[[Object], None],
                 count: int = 1) -> None:
        self._inner = inner
        self._meanwhile = meanwhile
        self.remaining = count

    def create(self, obj: Object) -> Object:
        created = self._inner.create(obj)
        if obj.get("kind") == "NodeClaim" and self.remaining > 0:
            self.remaining -= 1
            self._meanwhile(created)
        return created

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class JoinsAtLaunch:
    """The lifecycle's cloud: the instance's kubelet registers its Node the moment the
    instance is created, before the NodeClaim's status (its providerID) is written."""

    def __init__(self, inner: SimulatedEC2) -> None:
        self._inner = inner
        self.joining = False

    def create(self, nodeclaim: Any, node_class: Any) -> Any:
        instance = self._inner.create(nodeclaim, node_class)
        if self.joining:
            sim = self._inner
            machine = sim._instances[sim._by_nodeclaim[nodeclaim.name]]
            sim._run(machine)
            sim._join(machine)
        return instance

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def burst_world(*, node_first: bool, sim: SimSettings = FAST) -> World:
    world = World(sim=sim)
    lifecycle = world.controllers.lifecycle
    cloud = JoinsAtLaunch(world.cloud)
    cloud.joining = node_first
    lifecycle.context.cloud = cloud  # type: ignore[assignment]

    def meanwhile(created: Object) -> None:
        name = created["metadata"]["name"]
        world.driver.deliver()  # the NodeClaim's ADDED event
        lifecycle.reconcile(name)  # finalizer, launch (and, node first, the Node), status
        world.driver.deliver()  # the Node (node first) and the providerID, in that order
        cloud.joining = False

    world.controllers.provisioner.cluster = LateAnswers(world.cluster, meanwhile)
    return world


def expect_registered_and_synced(world: World, count: int) -> None:
    assert world.settle(timeout=600)
    for name in claim_names(world):
        assert condition(world.cluster.get("NodeClaim", name), REGISTERED) == "True", name
    assert world.controllers.state.unlaunched_nodeclaims() == []
    assert world.controllers.state.synced(world.cluster)
    expect_running(world, count)
    expect_consistent(world)


def test_a_node_that_joins_before_its_nodeclaims_provider_id_reaches_the_cache() -> None:
    world = burst_world(node_first=True)
    world.apply(WORKSHOP)
    world.scale("inflate", 5)
    world.advance(15)
    (first,) = claim_names(world)
    state = world.controllers.state
    assert state.nodeclaim(first) is not None
    assert state.unlaunched_nodeclaims() == [], "the late answer took the NodeClaim back"

    expect_registered_and_synced(world, 5)
    # Provisioning goes on: more pods, more capacity.
    world.scale("inflate", 40)
    expect_registered_and_synced(world, 40)
    expect_no_controller_errors(world)


def test_a_nodeclaims_provider_id_that_reaches_the_cache_before_its_node() -> None:
    world = burst_world(node_first=False)
    world.apply(WORKSHOP)
    world.scale("inflate", 5)
    world.advance(15)
    assert world.controllers.state.unlaunched_nodeclaims() == []
    expect_registered_and_synced(world, 5)
    world.scale("inflate", 40)
    expect_registered_and_synced(world, 40)
    expect_no_controller_errors(world)


def test_liveness_deletes_a_nodeclaim_whose_node_never_joins_after_fifteen_minutes() -> None:
    """Karpenter's liveness (pkg/controllers/nodeclaim/lifecycle/liveness.go): a launched
    NodeClaim not registered 15 minutes after Registered last changed is deleted, and its
    pods are provisioned again. Here its create's answer came late too: liveness must still
    judge it on its real conditions, not on a copy the late answer took back."""
    never = SimSettings(launch_delay=0.0, registration_delay=24 * 3600.0,
                        startup_taint_delay=None)
    world = burst_world(node_first=False, sim=never)
    world.apply(WORKSHOP)
    world.scale("inflate", 5)
    world.advance(60)
    (stuck,) = claim_names(world)
    claim = world.cluster.get("NodeClaim", stuck)
    assert condition(claim, "Launched") == "True"
    assert condition(claim, REGISTERED) == "Unknown"

    world.cloud.settings = FAST  # instances launched from now on join
    world.advance(13 * 60)
    assert stuck in claim_names(world), "deleted before the registration timeout"
    world.advance(3 * 60)
    assert stuck not in claim_names(world), "still there after the registration timeout"
    expect_registered_and_synced(world, 5)


class FailingStatusWrites:
    """The lifecycle's ClusterAPI during an API server outage: the first `count` status
    writes fail (the instance is launched; saying so is not)."""

    def __init__(self, inner: ClusterAPI, count: int) -> None:
        self._inner = inner
        self.remaining = count

    def patch(self, kind: str, name: str, patch: Any, namespace: str | None = None, *,
              subresource: str | None = None) -> Object:
        if kind == "NodeClaim" and subresource == "status" and self.remaining > 0:
            self.remaining -= 1
            raise ApiError("the server is currently unable to handle the request")
        return self._inner.patch(kind, name, patch, namespace, subresource=subresource)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def test_launched_nodeclaim_is_logged_once_per_launch_not_per_retry(caplog: Any) -> None:
    """Issue 28: "launched nodeclaim" was logged on every retry of the status write (12
    times for one CreateFleet during an API server outage), overstating launches."""
    import logging

    caplog.set_level(logging.INFO, logger="nodewright.controllers.nodeclaim.launch")
    world = World(sim=FAST)
    failing = FailingStatusWrites(world.cluster, 4)
    world.controllers.lifecycle.context.cluster = failing  # type: ignore[assignment]
    world.apply(WORKSHOP)
    world.scale("inflate", 5)
    assert world.settle(timeout=600)
    assert failing.remaining == 0
    (name,) = claim_names(world)
    assert world.cloud.counters.launched == 1
    launched = [r for r in caplog.records if r.getMessage() == "launched nodeclaim"]
    assert len(launched) == 1
    assert launched[0].__dict__["NodeClaim"] == name
    expect_running(world, 5)


def test_the_create_identity_stays_on_the_nodeclaim() -> None:
    """The NodeClaim's annotations go to its Node at registration, except the identity of
    the create that stored the NodeClaim (it names one API request, not the machine)."""
    from nodewright.cluster.names import CREATE_ID_ANNOTATION
    from nodewright.controllers.nodeclaim.registration import sync_node

    claim = {"metadata": {"name": "c1", "uid": "u1", "annotations": {
        CREATE_ID_ANNOTATION: "0123", "team": "payments"}}, "spec": {}}
    node: dict[str, Any] = {"metadata": {"name": "n1"}, "spec": {}}
    sync_node(claim, node)
    assert node["metadata"]["annotations"] == {"team": "payments"}


class LostLaunchAnswers:
    """The lifecycle's cloud: the first `count` launches happen, and their answers are
    lost (CreateFleet timed out after EC2 launched)."""

    def __init__(self, inner: SimulatedEC2, count: int) -> None:
        self._inner = inner
        self.remaining = count

    def create(self, nodeclaim: Any, node_class: Any) -> Any:
        instance = self._inner.create(nodeclaim, node_class)
        if self.remaining > 0:
            self.remaining -= 1
            raise CloudProviderError("ec2:CreateFleet: read timeout (the answer was lost)")
        return instance

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def test_a_launch_whose_answer_was_lost_leaves_one_instance_for_its_nodeclaim() -> None:
    world = World(sim=FAST)
    lost = LostLaunchAnswers(world.cloud, 3)
    world.controllers.lifecycle.context.cloud = lost  # type: ignore[assignment]
    world.apply(WORKSHOP)
    world.scale("inflate", 5)
    expect_registered_and_synced(world, 5)
    assert lost.remaining == 0
    (claim,) = world.nodeclaims()
    (instance,) = world.live_instances()
    assert claim["status"]["providerID"] == instance.provider_id


def test_karpenters_basic_performance_burst_ends_with_every_pod_running() -> None:
    """Karpenter's basic performance shape (tests/perf_shape.py) in one burst, with fast
    simulated instances, NodeClaim creates answered late (the race of the stalled burst)
    for the first batch: every pod ends up running, every NodeClaim registered and the
    state synced: the full 500 + 500 (about 7 s here)."""
    from tests.perf_shape import REPLICAS, burst, perf_nodepool

    replicas = REPLICAS
    world = World(sim=FAST)
    lifecycle = world.controllers.lifecycle

    def meanwhile(created: Object) -> None:
        world.driver.deliver()
        lifecycle.reconcile(created["metadata"]["name"])
        world.driver.deliver()

    world.controllers.provisioner.cluster = LateAnswers(world.cluster, meanwhile, count=6)
    world.apply(NODE_CLASS_PERF, perf_nodepool())
    world.apply(*burst(replicas))
    assert world.run_until(lambda: len(world.running_pods()) == 2 * replicas, timeout=900)
    expect_registered_and_synced(world, 2 * replicas)
    expect_no_controller_errors(world)
