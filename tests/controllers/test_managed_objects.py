"""One answer to "is this NodeClaim or NodePool ours" (Karpenter's nodeclaimutils.IsManaged and
nodepoolutils.IsManaged: its nodeClassRef's group and kind are a node class the provider
supports), and the callers that had their own answer before it was one: the provisioner,
the cluster state (its NodeClaims and consolidation mark), the EC2NodeClass finalizer and
`nodewright validate`'s manifest check. The other callers are proved by their Karpenter
ports (nodepool metrics, consistency, counter/hash/readiness/validation, static,
hydration, disruption conditions)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from nodewright.api.managed import nodeclaim_is_managed, nodepool_is_managed
from nodewright.api.manifests import parse_documents
from nodewright.api.validation import validate_documents
from nodewright.cluster.memory import InMemoryCluster
from nodewright.controllers.driver import VirtualDriver
from nodewright.controllers.nodeclass.cleanup import NodeClassTermination
from nodewright.runtime.clock import VirtualClock
from nodewright.runtime.reconciler import WatchEvent
from nodewright.state import ClusterState
from tests.harness import NODE_CLASS, World, node_pool
from tests.operator.test_nodeclass_and_sim_kubelet import NODE_CLASS as NODE_CLASS_OBJECT
from tests.operator.test_nodeclass_cleanup import Cleaner, claim

OURS = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}
# Another provider's class, and one that only borrows our kind's name.
KWOK = {"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass", "name": "default"}
LOOKALIKE = {"group": "karpenter.test.sh", "kind": "EC2NodeClass", "name": "default"}


def pool_on(reference: dict[str, str], name: str = "default") -> dict[str, Any]:
    body = node_pool(name)
    body["spec"]["template"]["spec"]["nodeClassRef"] = dict(reference)
    return body


@pytest.mark.parametrize(("reference", "ours"), [
    pytest.param(OURS, True, id="karpenter.k8s.aws EC2NodeClass"),
    pytest.param(KWOK, False, id="another provider's class"),
    pytest.param(LOOKALIKE, False, id="our kind in another group"),
    pytest.param({**OURS, "group": ""}, False, id="no group"),
])
def test_a_nodeclaim_or_nodepool_is_ours_when_its_node_class_group_and_kind_are(
        reference: dict[str, str], ours: bool) -> None:
    nodeclaim = {"kind": "NodeClaim", "spec": {"nodeClassRef": dict(reference)}}
    assert nodeclaim_is_managed(nodeclaim) is ours
    assert nodepool_is_managed(pool_on(reference)) is ours


def test_pods_wait_rather_than_launch_for_a_nodepool_of_another_provider() -> None:
    """The provisioner skips a NodePool on another provider's node class (Karpenter's
    provisioner lists only managed NodePools): the pod stays pending, nothing launches."""
    world = World()
    world.apply(NODE_CLASS, pool_on(KWOK, "kwok"), """
apiVersion: v1
kind: Pod
metadata: {name: waiting, namespace: default}
spec:
  containers: [{name: app, image: pause, resources: {requests: {cpu: 100m}}}]
""")
    world.advance(60)
    assert world.nodeclaims() == []
    [pod] = world.pods()
    assert not pod["spec"].get("nodeName")


@pytest.mark.parametrize(("reference", "marks"), [
    pytest.param(OURS, True, id="ours"),
    pytest.param(KWOK, False, id="another provider's"),
])
def test_only_our_nodepools_changes_mark_the_cluster_unconsolidated(
        reference: dict[str, str], marks: bool) -> None:
    """Karpenter's state.nodepool informer is filtered by nodepoolutils.IsManaged: another
    provider's NodePool changing asks no consolidation pass of ours."""
    clock = VirtualClock()
    state = ClusterState(clock)
    state.mark_unconsolidated()
    clock.advance(60)
    before = state.consolidation_state()
    body = pool_on(reference)
    body["metadata"]["generation"] = 1
    state.observe(WatchEvent("ADDED", body))
    assert (state.consolidation_state() != before) is marks


def test_a_deleted_node_class_does_not_wait_for_a_nodeclaim_of_another_group() -> None:
    """Karpenter's nodeclaimutils.ForNodeClass matches the group, kind and name: a NodeClaim
    of another provider's class of the same kind and name does not hold the EC2NodeClass."""
    clock = VirtualClock()
    cluster = InMemoryCluster(clock)
    cluster.create(NODE_CLASS_OBJECT)
    lookalike = claim("lookalike")
    lookalike["spec"]["nodeClassRef"] = dict(LOOKALIKE)
    cluster.create(lookalike)
    cleaner = Cleaner()
    driver = VirtualDriver(clock, cluster, raise_errors=True)
    driver.add(NodeClassTermination(cluster, cleaner))
    driver.start()
    clock.advance(1)
    cluster.delete("EC2NodeClass", "default")
    driver.deliver()
    clock.advance(5)
    assert cleaner.deleted == ["default"]
    assert cluster.list("EC2NodeClass") == []


@pytest.mark.parametrize(("reference", "kept"), [
    pytest.param(OURS, True, id="ours"),
    pytest.param(KWOK, False, id="another provider's"),
    pytest.param(LOOKALIKE, False, id="our kind in another group"),
])
def test_the_cluster_state_keeps_only_our_nodeclaims(
        reference: dict[str, str], kept: bool) -> None:
    """Karpenter's state.nodeclaim informer is filtered by nodeclaimutils.IsManaged."""
    state = ClusterState(VirtualClock())
    claim_of_class = claim("somebodys")
    claim_of_class["spec"]["nodeClassRef"] = dict(reference)
    state.observe(WatchEvent("ADDED", claim_of_class))
    assert (state.nodeclaim("somebodys") is not None) is kept


def test_nodewright_validate_names_a_nodepool_on_a_node_class_it_does_not_run() -> None:
    """The manifest check (`nodewright validate` / `plan`) answers with the same rule."""
    text = "\n---\n".join(yaml.safe_dump(body) for body in (
        yaml.safe_load(NODE_CLASS), pool_on(LOOKALIKE, "lookalike"), pool_on(OURS, "ours")))
    documents, problems = parse_documents(text, "pools.yaml")
    assert problems == []
    _, found = validate_documents(documents)
    assert [(p.name, p.message) for p in found] == [
        ("lookalike", "nodeClassRef must name a karpenter.k8s.aws EC2NodeClass, got "
                      "karpenter.test.sh/EC2NodeClass")]
