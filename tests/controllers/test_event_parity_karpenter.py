"""Events as `kubectl get events` shows Karpenter v1.14.1's: reason, type, the object they
are about and their message, for the cases an audit found different.

- provisioner.go: a pod its Validate refuses gets PodFailedToScheduleEvent of the
  validation error itself, "Failed to schedule pod, <error>".
- scheduling/events.go NominatePodEvent: a pod nominated to a machine that has a Node
  names the NodeClaim, then the Node ("nodeclaim/<name>, node/<name>").
- nodeclaim/lifecycle/launch.go with the AWS provider's Create: a NodeClaim whose
  EC2NodeClass is gone (or being deleted, which the provider treats as gone) fails as
  insufficient capacity (InsufficientCapacityError event, "insufficient_capacity"
  disruption) after "Failed resolving NodeClass"; a NodeClassNotReady failure is logged,
  with no event (lifecycle/events.go declares NodeClassNotReadyEvent, nothing publishes
  it).
- nodeclaim/expiration: an expired NodeClaim is deleted without an event.
"""

from __future__ import annotations

from typing import Any

import yaml

from nodewright.cloud.provider import InsufficientCapacityError, NodeClassNotReadyError
from nodewright.cloud.sim import SimSettings
from nodewright.controllers.common import decision_log as ex
from tests.controllers.conftest import WORKSHOP
from tests.controllers.nodeclaim_bench import (
    bench,
    counter,
    create,
    exists,
    fail_next_launch,
    nodeclaim,
)
from tests.controllers.test_inflight_taints_story import STARTUP_POOL
from tests.harness import NODE_CLASS, World

DISRUPTED = "karpenter_nodeclaims_disrupted_total"
PENDING = {"conditions": [{"type": "PodScheduled", "status": "False",
                           "reason": "Unschedulable"}]}


def karpenters(world: World, reason: str, name: str | None = None) -> list[dict[str, Any]]:
    return [e for e in world.events(reason) if e.get("reportingController") == "karpenter"
            and (name is None or e["regarding"]["name"] == name)]


def pod(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"nodeSelector": {"type": "karpenter"},
                     "containers": [{"name": "app", "image": "app",
                                     "resources": {"requests": {"cpu": "100m"}}}],
                     **spec}}


def disrupted(reason: str) -> float:
    return counter(DISRUPTED, reason=reason, nodepool="default")


# -- the provisioner -------------------------------------------------------------------------


def test_a_pod_karpenter_refuses_is_told_it_failed_to_schedule() -> None:
    world = World()
    world.apply(WORKSHOP)
    world.apply(pod("odd", affinity={"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{
            "matchFields": [{"key": "metadata.name", "operator": "In",
                             "values": ["node-a"]}]}]}}}))
    world.cluster.patch("Pod", "odd", {"status": PENDING}, "default", subresource="status")
    world.advance(30)
    [event] = karpenters(world, "FailedScheduling", "odd")
    assert (event["type"], event["regarding"]["kind"]) == ("Warning", "Pod")
    assert event["note"] == ("Failed to schedule pod, node selector term with matchFields "
                             "is not supported")
    assert world.nodeclaims() == []


def test_a_pod_nominated_to_a_registered_node_names_its_nodeclaim_and_its_node() -> None:
    world = World(sim=SimSettings(startup_taint_delay=None))
    world.apply(WORKSHOP, STARTUP_POOL, pod("first"))
    world.advance(120)
    (claim,) = world.nodeclaims()
    world.apply(pod("second"))
    world.advance(60)
    notes = [e["note"] for e in karpenters(world, "Nominated", "second")]
    assert notes == [f"Pod should schedule on: nodeclaim/{claim['metadata']['name']}, "
                     f"node/{claim['status']['nodeName']}"]


# -- launch --------------------------------------------------------------------------------


def on_node_class(name: str) -> dict[str, Any]:
    claim = nodeclaim()
    claim["spec"]["nodeClassRef"]["name"] = name
    claim["metadata"]["labels"]["karpenter.k8s.aws/ec2nodeclass"] = name
    return claim


def test_a_nodeclaim_whose_node_class_is_gone_fails_as_insufficient_capacity() -> None:
    world = bench()
    before = disrupted("insufficient_capacity")
    (claim,) = create(world, on_node_class("missing"))
    name = claim["metadata"]["name"]
    world.advance(5)
    assert not exists(world, name)
    [ice] = karpenters(world, "InsufficientCapacityError", name)
    assert (ice["type"], ice["regarding"]["kind"]) == ("Warning", "NodeClaim")
    assert ice["note"] == (f"NodeClaim {name} event: insufficient capacity, resolving "
                           'nodeclass, ec2nodeclasses.karpenter.k8s.aws "missing" not found')
    [failed] = karpenters(world, "FailedResolvingNodeClass", name)
    assert failed["note"] == "Failed resolving NodeClass"
    assert karpenters(world, "NodeClassNotReady") == []
    assert disrupted("insufficient_capacity") == before + 1


def test_a_nodeclaim_whose_node_class_is_being_deleted_fails_the_same_way() -> None:
    world = bench()
    leaving = yaml.safe_load(NODE_CLASS)
    leaving["metadata"] = {"name": "leaving", "finalizers": ["test/hold"]}
    world.apply(leaving)
    world.cluster.delete("EC2NodeClass", "leaving")
    world.deliver()
    (claim,) = create(world, on_node_class("leaving"))
    name = claim["metadata"]["name"]
    world.advance(5)
    assert not exists(world, name)
    [ice] = karpenters(world, "InsufficientCapacityError", name)
    assert ice["note"].endswith('ec2nodeclasses.karpenter.k8s.aws "leaving" is terminating, '
                                "treating as not found")
    assert len(karpenters(world, "FailedResolvingNodeClass", name)) == 1


def test_the_clouds_insufficient_capacity_is_told_as_karpenters_error_says_it() -> None:
    world = bench()
    fail_next_launch(world, InsufficientCapacityError("all instance types were unavailable"))
    (claim,) = create(world, nodeclaim())
    name = claim["metadata"]["name"]
    world.advance(5)
    [ice] = karpenters(world, "InsufficientCapacityError", name)
    assert ice["note"] == (f"NodeClaim {name} event: insufficient capacity, all instance "
                           "types were unavailable")


def test_a_node_class_not_ready_deletes_the_nodeclaim_without_an_event() -> None:
    world = bench()
    before = disrupted("nodeclass_not_ready")
    fail_next_launch(world, NodeClassNotReadyError("nodeClass isn't ready"))
    (claim,) = create(world, nodeclaim())
    world.advance(5)
    assert not exists(world, claim["metadata"]["name"])
    assert [e for e in world.events() if e["regarding"]["kind"] == "NodeClaim"
            and e["type"] == "Warning"] == []
    assert disrupted("nodeclass_not_ready") == before + 1


# -- expiration ----------------------------------------------------------------------------


def test_an_expired_nodeclaim_goes_without_an_event() -> None:
    world = bench()
    (claim,) = create(world, nodeclaim(expireAfter="30s"))
    world.advance(60)
    assert not exists(world, claim["metadata"]["name"])
    assert karpenters(world, ex.DISRUPTION_TERMINATING) == []
