"""Registration: the Node of a launched NodeClaim joins; it gets the NodeClaim's labels,
annotations, taints, owner reference and finalizer, loses the unregistered taint once the
provider's registration hooks are ready, and the NodePool's NodeRegistrationHealthy
follows.

Ported from Karpenter v1.14.1 pkg/controllers/nodeclaim/lifecycle/registration_test.go
(Describe "Registration", Context "RegistrationHooks")."""

from __future__ import annotations

from typing import Any

import pytest

from nodewright.controllers.common.registration_health import (
    RegistrationHealth,
    RegistrationHealthWriter,
)
from nodewright.controllers.nodeclaim.registration import Registration
from tests.controllers.nodeclaim_bench import (
    bench,
    condition_of,
    create,
    exists,
    get,
    linked_node,
    nodeclaim,
    refuse_launches,
    set_condition,
    status_of,
)
from tests.harness import World

UNREGISTERED = {"key": "karpenter.sh/unregistered", "effect": "NoExecute"}
TAINTS = [{"key": "custom-taint", "effect": "NoSchedule", "value": "custom-value"},
          {"key": "other-custom-taint", "effect": "NoExecute", "value": "other-custom-value"}]
STARTUP_TAINTS = [{"key": "custom-startup-taint", "effect": "NoSchedule",
                   "value": "custom-startup-value"},
                  {"key": "other-custom-startup-taint", "effect": "NoExecute",
                   "value": "other-custom-startup-value"}]
DO_NOT_SYNC = "karpenter.sh/do-not-sync-taints"


def launched(world: World, claim: dict[str, Any]) -> str:
    (created,) = create(world, claim)
    world.advance(5)
    name: str = created["metadata"]["name"]
    assert status_of(get(world, name), "Launched") == "True"
    return name


def joined(world: World, name: str, **node: Any) -> dict[str, Any]:
    claim = get(world, name)
    assert claim is not None
    node.setdefault("taints", [UNREGISTERED])
    created = linked_node(world, claim, **node)
    world.advance(5)
    found = get(world, created["metadata"]["name"], "Node")
    assert found is not None
    return found


def keys(taints: list[dict[str, Any]] | None) -> set[tuple[str, str]]:
    return {(t["key"], t["effect"]) for t in taints or []}


@pytest.mark.parametrize("managed", [True, False], ids=["managed", "unmanaged"])
def test_the_nodeclaim_is_matched_to_its_node(managed: bool) -> None:
    """Entries "should match the nodeClaim to the Node when the Node comes online" and
    "should ignore NodeClaims not managed by this Karpenter instance"."""
    world = bench()
    pool = world.cluster.get("NodePool", "default")
    (claim,) = create(world, nodeclaim(owner=pool, managed=managed))
    name = claim["metadata"]["name"]
    world.advance(5)
    if not managed:
        # Nothing launched it: its Node would be a stranger's, matched by nobody.
        assert (get(world, name) or {}).get("status") in (None, {})
        return
    node = joined(world, name)
    after = get(world, name)
    assert status_of(after, "Registered") == "True"
    assert after["status"]["nodeName"] == node["metadata"]["name"]  # type: ignore[index]
    assert status_of(world.cluster.get("NodePool", "default"),
                     "NodeRegistrationHealthy") == "True"


def test_the_node_is_owned_by_its_nodeclaim() -> None:
    """It "should add the owner reference to the Node when the Node comes online"."""
    world = bench()
    name = launched(world, nodeclaim())
    node = joined(world, name)
    uid = get(world, name)["metadata"]["uid"]  # type: ignore[index]
    assert [(r["kind"], r["uid"]) for r in node["metadata"]["ownerReferences"]] == [
        ("NodeClaim", uid)]


def test_an_owner_reference_already_there_is_not_added_twice() -> None:
    """It "should not add the owner reference to the Node when the Node already has the
    owner reference"."""
    world = bench()
    name = launched(world, nodeclaim())
    claim = get(world, name)
    assert claim is not None
    owner = {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "name": name,
             "uid": claim["metadata"]["uid"], "blockOwnerDeletion": True}
    node = linked_node(world, claim, taints=[UNREGISTERED])
    world.cluster.patch("Node", node["metadata"]["name"],
                        {"metadata": {"ownerReferences": [owner]}})
    world.advance(5)
    after = get(world, node["metadata"]["name"], "Node")
    assert after is not None
    assert [r["uid"] for r in after["metadata"]["ownerReferences"]] == [owner["uid"]]


def test_a_registered_node_is_labelled_and_loses_the_unregistered_taint() -> None:
    """It "should sync the karpenter.sh/registered label to the Node and remove the
    karpenter.sh/unregistered taint when the Node comes online"."""
    world = bench()
    node = joined(world, launched(world, nodeclaim()))
    assert node["metadata"]["labels"]["karpenter.sh/registered"] == "true"
    assert ("karpenter.sh/unregistered", "NoExecute") not in keys(node["spec"].get("taints"))


def test_a_node_without_the_unregistered_taint_registers_with_a_warning() -> None:
    """It "should succeed registration if the karpenter.sh/unregistered taint is not
    present and emit an event"."""
    world = bench()
    name = launched(world, nodeclaim())
    node = joined(world, name, taints=[])
    after = get(world, name)
    assert status_of(after, "Registered") == "True"
    assert after["status"]["nodeName"] == node["metadata"]["name"]  # type: ignore[index]
    assert node["metadata"]["labels"]["karpenter.sh/registered"] == "true"
    assert len(world.events("UnregisteredTaintMissing")) == 1


def test_the_nodeclaims_labels_are_synced_to_the_node() -> None:
    """It "should sync the labels to the Node when the Node comes online"."""
    world = bench()
    name = launched(world, nodeclaim(labels={"custom-label": "custom-value",
                                             "other-custom-label": "other-custom-value"}))
    node = joined(world, name)
    labels = get(world, name)["metadata"]["labels"]  # type: ignore[index]
    assert labels["custom-label"] == "custom-value"
    assert labels.items() <= node["metadata"]["labels"].items()


def test_the_nodeclaims_annotations_are_synced_to_the_node() -> None:
    """It "should sync the annotations to the Node when the Node comes online"."""
    world = bench()
    name = launched(world, nodeclaim(annotations={"karpenter.sh/do-not-disrupt": "true",
                                                  "my-custom-annotation": "my-custom-value"}))
    node = joined(world, name)
    annotations = node["metadata"]["annotations"]
    assert annotations["karpenter.sh/do-not-disrupt"] == "true"
    assert annotations["my-custom-annotation"] == "my-custom-value"


@pytest.mark.parametrize("label", [None, "false"], ids=["no-label", "label-not-true"])
def test_the_nodeclaims_taints_are_synced_to_the_node(label: str | None) -> None:
    """Its "should sync the taints to the Node when the Node comes online, if node label do
    not sync taints is not present" and "..., if node label do not sync taints is present
    but key is not true"."""
    world = bench()
    name = launched(world, nodeclaim(taints=TAINTS))
    node = joined(world, name, labels={DO_NOT_SYNC: label} if label else None)
    assert keys(TAINTS) <= keys(node["spec"]["taints"])


@pytest.mark.parametrize("label", [None, "false"], ids=["no-label", "label-not-true"])
def test_the_nodeclaims_startup_taints_are_synced_to_the_node(label: str | None) -> None:
    """Its "should sync the startupTaints to the Node when the Node comes online, if node
    label do not sync taints is not present" and "..., if node label do not sync taints is
    present but key is not true"."""
    world = bench()
    name = launched(world, nodeclaim(taints=TAINTS, startupTaints=STARTUP_TAINTS))
    node = joined(world, name, labels={DO_NOT_SYNC: label} if label else None)
    assert keys(TAINTS) | keys(STARTUP_TAINTS) <= keys(node["spec"]["taints"])


@pytest.mark.parametrize("startup", [False, True], ids=["taints", "startup-taints"])
def test_a_node_labelled_do_not_sync_taints_keeps_its_own_taints(startup: bool) -> None:
    """Its "should not sync the taints to the Node when the Node comes online, with node
    label do not sync taints" and "should not sync the startupTaints to the Node when the
    Node comes online, with node label do not sync taints"."""
    world = bench()
    extra = {"startupTaints": STARTUP_TAINTS} if startup else {}
    name = launched(world, nodeclaim(taints=TAINTS, **extra))
    not_ready = {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}
    node = joined(world, name, labels={DO_NOT_SYNC: "true"}, taints=[UNREGISTERED, not_ready])
    assert keys(node["spec"]["taints"]) == {("node.kubernetes.io/not-ready", "NoSchedule")}
    assert get(world, name)["spec"]["taints"] == TAINTS  # type: ignore[index]


def test_startup_taints_removed_from_the_node_are_not_put_back() -> None:
    """It "should not re-sync the startupTaints to the Node when the startupTaints are
    removed"."""
    world = bench()
    name = launched(world, nodeclaim(startupTaints=STARTUP_TAINTS))
    node = joined(world, name, taints=[*STARTUP_TAINTS, UNREGISTERED])
    assert keys(STARTUP_TAINTS) <= keys(node["spec"]["taints"])
    world.cluster.patch("Node", node["metadata"]["name"], {"spec": {"taints": []}})
    world.advance(30)
    after = get(world, node["metadata"]["name"], "Node")
    assert (after or {}).get("spec", {}).get("taints") in (None, [])


def writer_of(world: World) -> RegistrationHealthWriter:
    """The lifecycle's writer of NodeRegistrationHealthy over a buffer that has recorded
    nothing: Karpenter's registration tests run the NodeClaim controller alone, so no
    NodePool controller fills the buffer from the condition a test wrote (ours, running,
    would, as Karpenter's nodepool.registrationhealth does)."""
    return RegistrationHealthWriter(world.cluster, world.clock, RegistrationHealth())


def test_a_registration_makes_an_unhealthy_nodepool_healthy() -> None:
    """It "should add NodeRegistrationHealthy=true on the nodePool if registration succeeds
    and if it was previously false"."""
    world = bench()
    world.advance(5)
    pool = world.cluster.get("NodePool", "default")
    set_condition(world, "NodePool", "default", "NodeRegistrationHealthy", "False",
                  "unhealthy")
    claim = nodeclaim(owner=pool)
    writer_of(world).registered(claim)
    assert status_of(world.cluster.get("NodePool", "default"),
                     "NodeRegistrationHealthy") == "True"


def test_one_registration_after_two_failures_leaves_the_nodepool_unhealthy() -> None:
    """It "should not add NodeRegistrationHealthy=true on the nodePool if registration
    succeeds once and if it had previously failed twice in the registrationHealthBuffer"."""
    world = bench()
    world.advance(5)
    pool = world.cluster.get("NodePool", "default")
    launch = world.cloud.create
    refuse_launches(world)
    failed = create(world, nodeclaim(owner=pool), nodeclaim(owner=pool))
    world.advance(6 * 60)
    assert status_of(world.cluster.get("NodePool", "default"),
                     "NodeRegistrationHealthy") == "False"
    assert not any(exists(world, c["metadata"]["name"]) for c in failed)
    world.cloud.create = launch  # type: ignore[method-assign]
    name = launched(world, nodeclaim(owner=pool))
    joined(world, name)
    assert status_of(get(world, name), "Registered") == "True"
    assert status_of(world.cluster.get("NodePool", "default"),
                     "NodeRegistrationHealthy") == "False"


def test_a_registration_is_not_counted_for_a_recreated_nodepool() -> None:
    """It "should not update NodeRegistrationHealthy status condition if nodePool owning
    the nodeClaim is deleted" (the NodeClaim is owned by the uid of a NodePool of the same
    name that is gone)."""
    world = bench()
    world.advance(5)
    pool = world.cluster.get("NodePool", "default")
    assert status_of(pool, "NodeRegistrationHealthy") == "Unknown"
    gone = {"metadata": {"name": "default", "uid": "uid-of-the-deleted-nodepool"}}
    writer_of(world).registered(nodeclaim(owner=gone))
    assert status_of(world.cluster.get("NodePool", "default"),
                     "NodeRegistrationHealthy") == "Unknown"


# -- RegistrationHooks --------------------------------------------------------------------


class Hook:
    def __init__(self, name: str, wait: float | None = None, error: bool = False,
                 labels: dict[str, str] | None = None) -> None:
        self.name = name
        self.wait = wait
        self.error = error
        self.labels = labels or {}
        self.calls = 0

    def registered(self, nodeclaim: dict[str, Any]) -> float | None:
        self.calls += 1
        if self.error:
            raise RuntimeError("cloud provider API error")
        nodeclaim["metadata"]["labels"] = {**nodeclaim["metadata"]["labels"], **self.labels}
        return self.wait


def hooked(*hooks: Hook | None) -> tuple[World, str, dict[str, Any]]:
    world = bench()
    registration: Registration = world.controllers.lifecycle.registration
    registration.hooks = [h for h in hooks if h is not None]
    name = launched(world, nodeclaim())
    node = joined(world, name)
    return world, name, node


def expect_registered(world: World, name: str, node: dict[str, Any]) -> None:
    after = get(world, name)
    assert status_of(after, "Registered") == "True"
    assert after["status"]["nodeName"] == node["metadata"]["name"]  # type: ignore[index]


def expect_pending(world: World, name: str, node: dict[str, Any]) -> str:
    after = get(world, name)
    assert condition_of(after, "Registered") == ("Unknown", "RegistrationHookPending")
    assert not (after or {}).get("status", {}).get("nodeName")
    assert ("karpenter.sh/unregistered", "NoExecute") in keys(
        (get(world, node["metadata"]["name"], "Node") or {}).get("spec", {}).get("taints"))
    return next(str(c["message"]) for c in after["status"]["conditions"]  # type: ignore
                if c["type"] == "Registered")


def test_a_single_passing_hook_lets_the_node_register() -> None:
    """It "should complete registration when a single hook passes"."""
    expect_registered(*hooked(Hook("always-pass")))


def test_a_hook_that_is_not_ready_defers_registration() -> None:
    """It "should defer registration when a hook returns false"."""
    world, name, node = hooked(Hook("capacity-reservation", wait=5.0))
    assert "capacity-reservation" in expect_pending(world, name, node)


def test_a_failing_hook_defers_registration() -> None:
    """It "should return error when a hook returns an error" (the error is logged and the
    hook asked again; the NodeClaim stays unregistered)."""
    world, name, node = hooked(Hook("failing-hook", error=True))
    assert "failing-hook" in expect_pending(world, name, node)


def test_the_second_of_two_hooks_not_ready_defers_registration() -> None:
    """It "should defer registration when the second hook returns false with multiple
    hooks"."""
    world, name, node = hooked(Hook("pass-hook"), Hook("fail-hook", wait=5.0))
    message = expect_pending(world, name, node)
    assert "fail-hook" in message and "pass-hook" not in message


def test_two_passing_hooks_let_the_node_register() -> None:
    """It "should complete registration when multiple hooks all pass"."""
    expect_registered(*hooked(Hook("hook-one"), Hook("hook-two")))


def test_every_hook_is_asked_and_every_pending_one_named() -> None:
    """It "should call all hooks in parallel and list all pending hooks in status"."""
    second = Hook("also-blocking", wait=10.0)
    world, name, node = hooked(Hook("blocking-hook", wait=5.0), second)
    assert second.calls >= 1
    message = expect_pending(world, name, node)
    assert "blocking-hook" in message and "also-blocking" in message


def test_a_hook_that_becomes_ready_lets_the_node_register() -> None:
    """It "should complete registration after a hook transitions from not ready to
    ready"."""
    hook = Hook("eventually-ready", wait=5.0)
    world, name, node = hooked(hook)
    expect_pending(world, name, node)
    hook.wait = None
    world.advance(10)
    expect_registered(world, name, node)


@pytest.mark.parametrize("hooks", [(), (None,)], ids=["empty", "nil"])
def test_no_hooks_let_the_node_register(hooks: tuple[None, ...]) -> None:
    """Its "should complete registration with empty hooks slice" and "should complete
    registration with nil hooks slice"."""
    expect_registered(*hooked(*hooks))


def test_labels_a_hook_adds_reach_the_nodeclaim_and_the_node() -> None:
    """It "should propagate labels added by a registration hook to both the node and the
    nodeclaim"."""
    world, name, node = hooked(Hook("label-hook", labels={"hook-label": "hook-value"}))
    expect_registered(world, name, node)
    assert get(world, name)["metadata"]["labels"]["hook-label"] == "hook-value"  # type: ignore
    after = get(world, node["metadata"]["name"], "Node")
    assert after["metadata"]["labels"]["hook-label"] == "hook-value"  # type: ignore[index]
