"""Karpenter v1.14.1 pkg/controllers/disruption/consolidation_test.go, Context("Delete"): where
a candidate's pods may go. A node still within its NodePool's consolidateAfter (a pod
event there is recent) takes none of them, one whose NodePool says consolidateAfter Never
may, a new replacement always may; and a node that has not initialized is no
destination, so nothing is deleted on its account."""

from __future__ import annotations

from collections.abc import Callable

from nodewright.cloud.sim import SimSettings
from nodewright.cluster import objects
from nodewright.controllers.common import decision_log as ex
from tests.controllers.conftest import WORKSHOP
from tests.controllers.expectations import expect_running
from tests.disruption.helpers import BIG, decisions, nodepool_with, started
from tests.disruption.test_consolidation_karpenter import GUARD_ON, consolidated
from tests.disruption.test_consolidation_karpenter_budgets import FILLER, spread_then_shrink
from tests.harness import World

TOUCH = GUARD_ON.replace("name: guard", "name: touch").replace('"true"', '"false"')


def test_pods_do_not_move_onto_a_node_within_its_consolidate_after(world: World) -> None:
    """consolidation_test.go Delete: It("should not consolidate pods onto a destination node
    that is under its consolidateAfter window"): two c5.large of one 800m pod each; a pod
    comes and goes on the second five minutes in, so only the first is a candidate when
    consolidateAfter (10 minutes) ends, and its pod may not move onto the second until the
    second's window ends too."""
    spread_then_shrink(world, 2, {"consolidateAfter": "10m"})
    hosts = {objects.name(n) for n in world.nodes()}
    emptied = world.clock.now()
    world.advance(300)
    destination = sorted(hosts)[1]
    world.apply(TOUCH % destination)
    world.advance(10)
    world.delete("Pod", "touch", "default")
    touched = world.clock.now()
    world.run_until(lambda: (world.clock.now() - emptied).total_seconds() >= 660, step=5)
    assert consolidated(world) == []
    assert len(world.nodes()) == 2
    # The first node is a candidate, kept: its pod could only go to a new node of its type.
    kept = [d for d in decisions(world, sorted(hosts)[0]) if d.method == ex.SINGLE_NODE
            and d.cause in (ex.CAUSE_PODS_DO_NOT_FIT, ex.CAUSE_NO_CHEAPER)]
    assert kept, {d.cause for d in decisions(world, sorted(hosts)[0])}
    assert world.run_until(lambda: bool(consolidated(world)), timeout=900)
    assert (consolidated(world)[0].time - touched).total_seconds() >= 600
    assert world.settle()
    assert len(world.nodes()) == 1
    expect_running(world, 2, {"app": "filler"})


NEVER_POOL = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: keep}
spec:
  template:
    metadata: {labels: {type: karpenter}}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
        - {key: karpenter.k8s.aws/instance-family, operator: In, values: [c5]}
  disruption: {consolidateAfter: Never}
"""
ON_POOL = """
apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: default}
spec:
  nodeSelector: {karpenter.sh/nodepool: %s}
  terminationGracePeriodSeconds: 0
  containers: [{name: app, resources: {requests: {memory: 1Gi}}}]
"""
MOVABLE = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: movable, namespace: default}
spec:
  replicas: 1
  selector: {matchLabels: {app: movable}}
  template:
    metadata: {labels: {app: movable}}
    spec:
      nodeSelector: {type: karpenter}
      terminationGracePeriodSeconds: 0
      containers: [{name: app, resources: {requests: {cpu: 100m}}}]
"""


def test_pods_move_onto_a_node_whose_nodepool_never_consolidates(world: World) -> None:
    """consolidation_test.go Delete: It("should consolidate pods onto a destination node with
    consolidateAfter set to Never"): the destination's NodePool never consolidates, so its
    node is never within a window, however recent its last pod event."""
    world.apply(WORKSHOP, nodepool_with(disruption={"consolidateAfter": "0s"}), NEVER_POOL,
                ON_POOL % ("source-holder", "default"))
    assert world.settle()
    [source] = [objects.name(n) for n in world.nodes()]
    world.apply(MOVABLE)
    world.advance(5)
    world.apply(ON_POOL % ("destination-holder", "keep"))
    assert world.settle()
    assert len(world.nodes()) == 2
    [destination] = [objects.name(n) for n in world.nodes() if objects.name(n) != source]
    [pod] = world.pods(labels={"app": "movable"})
    assert pod["spec"]["nodeName"] == source
    world.delete("Pod", "source-holder", "default")
    assert world.run_until(lambda: bool(consolidated(world)), timeout=600)
    assert [(d.node, d.decision) for d in consolidated(world)] == [(source, "delete")]
    assert world.settle()
    assert [objects.name(n) for n in world.nodes()] == [destination]
    expect_running(world, 1, {"app": "movable"})


def test_a_replacement_is_no_existing_destination_and_needs_no_window(world: World) -> None:
    """consolidation_test.go Delete: It("should replace a node with a cheaper one even when
    consolidateAfter has not expired") (the new node is not an existing one under its
    window)."""
    world.apply(WORKSHOP, nodepool_with(disruption={"consolidateAfter": "1m"}))
    world.scale("inflate", 5)
    assert world.settle()
    world.scale("inflate", 1)
    assert world.run_until(lambda: bool(started(world)), timeout=900)
    [replaced] = consolidated(world)
    assert (replaced.method, replaced.decision) == (ex.SINGLE_NODE, "replace")
    assert world.settle()
    assert world.instance_types() == ["c5.large"]
    expect_running(world, 1)


SLOW_POOL = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: slow}
spec:
  template:
    metadata: {labels: {type: karpenter}}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
        - {key: node.kubernetes.io/instance-type, operator: In, values: [c5.xlarge]}
      startupTaints: [{key: example.com/agent-not-ready, effect: NoSchedule}]
  disruption: {consolidateAfter: 0s}
"""
ANCHOR = """
apiVersion: v1
kind: Pod
metadata: {name: anchor, namespace: default}
spec:
  nodeSelector: {kubernetes.io/hostname: %s}
  terminationGracePeriodSeconds: 0
  containers: [{name: app, resources: {requests: {cpu: 100m}}}]
"""


# No node agent removes startup taints: a node with one never initializes.
NO_AGENT = SimSettings(startup_taint_delay=None)


def beside_a_node_that_never_initializes(world: World, nodes: int) -> tuple[str, str]:
    """`nodes` c5.large of the workshop's NodePool (weighted first), the 800m `filler` pod on
    one of them; then a c5.xlarge of a NodePool whose startup taint nobody removes, for a
    pod that waits for it. Returns the filler's node and the uninitialized one."""
    default = nodepool_with(disruption={"consolidateAfter": "0s"})
    default["spec"]["weight"] = 10
    world.apply(WORKSHOP, default, SLOW_POOL, BIG % nodes)
    assert world.settle()
    world.apply(FILLER % (1, 0))
    world.advance(5)
    [filler] = world.pods(labels={"app": "filler"})
    source = filler["spec"]["nodeName"]
    world.apply(ON_POOL % ("waits", "slow"))
    assert world.settle()
    [slow] = [n for n in world.nodes()
              if objects.labels(n).get("karpenter.sh/nodepool") == "slow"]
    assert objects.labels(slow).get("karpenter.sh/initialized") != "true"
    return source, objects.name(slow)


def test_pods_do_not_count_on_a_node_that_has_not_initialized(
        make_world: Callable[..., World]) -> None:
    """consolidation_test.go Delete: It("won't delete node if it would require pods to
    schedule on an uninitialized node")."""
    world = make_world(sim=NO_AGENT)
    source, _ = beside_a_node_that_never_initializes(world, 1)
    world.scale("big", 0)
    world.advance(600)
    assert consolidated(world) == []
    assert source in {objects.name(n) for n in world.nodes()}
    # Told as Karpenter's event says it, or found before simulating: the uninitialized
    # node's room is no room.
    [verdict] = decisions(world, source)[-1:]
    assert verdict.cause in (ex.CAUSE_PODS_DO_NOT_FIT, ex.CAUSE_NO_CHEAPER), verdict
    assert ("would schedule against uninitialized" in verdict.message
            or "fit on no other node" in verdict.message), verdict.message


def test_initialized_nodes_are_chosen_before_uninitialized_ones(
        make_world: Callable[..., World]) -> None:
    """consolidation_test.go Delete: It("should consider initialized nodes before
    uninitialized nodes"): an initialized node with room takes the pod, and the delete is
    not refused for the uninitialized one."""
    world = make_world(sim=NO_AGENT)
    source, _ = beside_a_node_that_never_initializes(world, 2)
    [other] = [objects.name(n) for n in world.nodes() if objects.name(n) != source
               and objects.labels(n).get("karpenter.sh/nodepool") == "default"]
    world.apply(ANCHOR % other)
    world.scale("big", 0)
    assert world.run_until(lambda: bool(consolidated(world)), timeout=600)
    assert [(d.node, d.decision) for d in consolidated(world)] == [(source, "delete")]
    assert world.run_until(lambda: world.pods(labels={"app": "filler"})[0]["spec"].get(
        "nodeName") == other, timeout=300)
