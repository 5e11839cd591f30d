"""What Nodewright's controllers write on NodeClaims and Nodes, field by field against what
Karpenter v1.14.1 writes in the same situation (an audit; docs in /work/sections/writes.md):

- the provisioner's NodeClaim requirements are the template's, the pods' and the
  topology's (pkg/controllers/provisioning/scheduling/nodeclaimtemplate.go ToNodeClaim,
  nodeclaim.go tryVolumeAlternative): no zone or zone ID nobody asked for;
- the launch stamps the hash of the EC2NodeClass it launched from (aws
  pkg/cloudprovider/cloudprovider.go Create, lines 156-161);
- registration leaves a Node's owner references as they are and appends its NodeClaim's
  only when missing (pkg/utils/nodeclaim/nodeclaim.go UpdateNodeOwnerReferences);
- termination labels the node excluded from load balancers with the value "karpenter"
  (pkg/controllers/node/termination/terminator/terminator.go Taint, lines 72-74);
- a launched NodeClaim is labelled with its tenancy (instanceToNodeClaim, line 465).
"""

from __future__ import annotations

from typing import Any

from nodewright.api.ec2nodeclass import EC2NodeClass
from nodewright.api.hashes import NODECLASS_HASH, node_class_hash
from nodewright.cloud.provider import CloudProviderError
from nodewright.controllers.provisioning.nodeclaims import nodeclaim_manifest
from nodewright.controllers.provisioning.problem import scheduling_problem
from nodewright.scheduling.solver import solve
from tests.controllers.nodeclaim_bench import (
    bench,
    create,
    fail_next_launch,
    get,
    linked_node,
    nodeclaim,
    status_of,
)
from tests.harness import NODE_CLASS, World, node_pool

ZONE = "topology.kubernetes.io/zone"
ZONE_ID = "topology.k8s.aws/zone-id"
UNREGISTERED = {"key": "karpenter.sh/unregistered", "effect": "NoExecute"}
EXCLUDE_LB = "node.kubernetes.io/exclude-from-external-load-balancers"


def planned_manifest(pool: dict[str, Any], **pod_spec: Any) -> dict[str, Any]:
    """The NodeClaim the provisioner would create for one pod of `pod_spec`."""
    world = World()
    world.apply(NODE_CLASS, pool)
    assert world.settle()
    world.apply({"apiVersion": "v1", "kind": "Pod",
                 "metadata": {"name": "app", "namespace": "default", "labels": {"app": "a"}},
                 "spec": {"containers": [{"name": "c", "image": "c"}], **pod_spec}})
    world.deliver()
    state = world.controllers.state
    planned = scheduling_problem(state, world.cloud, [state.pod_model("default/app")])
    (claim,) = solve(planned.problem).nodeclaims
    return nodeclaim_manifest(claim, planned.pools["default"],
                              {p.key: p for p in planned.problem.pods})


def requirement(manifest: dict[str, Any], key: str) -> list[dict[str, Any]]:
    return [r for r in manifest["spec"]["requirements"] if r["key"] == key]


# -- the provisioner's requirements --------------------------------------------------------


def test_a_nodeclaim_has_no_zone_requirement_nobody_asked_for() -> None:
    """ToNodeClaim writes the NodeClaimTemplate's requirements (the NodePool's, its labels)
    with the pods' and their topology's: a pod that names no zone leaves the NodeClaim free
    to launch in any zone its offerings have then. The zones and zone IDs the solve listed
    to pick topology domains from are not written."""
    manifest = planned_manifest(node_pool(families=["m5"]))

    assert requirement(manifest, ZONE) == []
    assert requirement(manifest, ZONE_ID) == []
    assert {r["key"] for r in manifest["spec"]["requirements"]} == {
        "karpenter.k8s.aws/ec2nodeclass", "karpenter.k8s.aws/instance-family",
        "karpenter.sh/capacity-type", "karpenter.sh/nodepool",
        "node.kubernetes.io/instance-type"}


def test_a_pods_zone_is_written_as_the_pod_asked() -> None:
    """A pod's node selector is one of the NodeClaim's requirements (and its zone ID is
    still nobody's)."""
    manifest = planned_manifest(node_pool(families=["m5"]),
                                nodeSelector={ZONE: "us-east-1b"})

    assert requirement(manifest, ZONE) == [
        {"key": ZONE, "operator": "In", "values": ["us-east-1b"]}]
    assert requirement(manifest, ZONE_ID) == []


def test_a_zone_spread_is_written_as_the_domain_it_picked() -> None:
    """The topology's requirement (one zone for a spread pod) is the NodeClaim's."""
    manifest = planned_manifest(node_pool(families=["m5"]), topologySpreadConstraints=[{
        "maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "a"}}}])

    (zone,) = requirement(manifest, ZONE)
    assert zone["operator"] == "In" and len(zone["values"]) == 1


def test_the_nodepools_zone_requirement_is_written_as_the_nodepool_has_it() -> None:
    """The template's requirement as the NodePool spells it, zones no offering has
    included (Karpenter intersects it with the pods' requirements only)."""
    zones = ["us-east-1a", "us-east-1b", "us-east-1z"]
    manifest = planned_manifest(node_pool(families=["m5"], requirements=[
        {"key": ZONE, "operator": "In", "values": zones}]))

    assert requirement(manifest, ZONE) == [{"key": ZONE, "operator": "In", "values": zones}]


# -- the launch ----------------------------------------------------------------------------


def test_the_launch_stamps_the_hash_of_the_node_class_it_launched_from() -> None:
    """Karpenter's Create annotates the NodeClaim with the EC2NodeClass hash when it
    launches: a NodeClaim whose first launch failed, then launched after its node class was
    edited, runs the edited node class and carries that hash (so it is not drifted)."""
    world = bench()
    stamped = node_class_hash(EC2NodeClass.model_validate(
        world.cluster.get("EC2NodeClass", "default")), world.controllers.state.ca_bundle)
    calls = fail_next_launch(world, CloudProviderError("ec2:CreateFleet: InternalError"),
                             times=2)
    (created,) = create(world, nodeclaim(annotations={NODECLASS_HASH: stamped}))
    name = created["metadata"]["name"]
    world.advance(0.5)
    assert calls and status_of(get(world, name), "Launched") == "Unknown"

    edited = world.cluster.get("EC2NodeClass", "default")
    edited["spec"]["tags"] = {"team": "payments"}
    world.apply(edited)
    world.advance(5)

    claim = get(world, name)
    assert status_of(claim, "Launched") == "True"
    node_class = EC2NodeClass.model_validate(world.cluster.get("EC2NodeClass", "default"))
    assert claim is not None
    current = node_class_hash(node_class, world.controllers.state.ca_bundle)
    assert current != stamped
    assert claim["metadata"]["annotations"][NODECLASS_HASH] == current
    assert status_of(claim, "Drifted") != "True"


def test_a_launched_nodeclaim_is_labelled_with_its_tenancy() -> None:
    """instanceToNodeClaim labels every launch karpenter.k8s.aws/instance-tenancy (shared
    hardware unless the NodeClaim allows only dedicated)."""
    world = bench()
    (created,) = create(world, nodeclaim())
    world.advance(5)

    claim = get(world, created["metadata"]["name"])
    assert claim is not None
    assert claim["metadata"]["labels"]["karpenter.k8s.aws/instance-tenancy"] == "default"


# -- registration --------------------------------------------------------------------------


def test_registration_appends_its_owner_reference_and_keeps_the_others() -> None:
    """UpdateNodeOwnerReferences appends the NodeClaim's reference when the Node has none
    to it: a reference to another owner stays, in its place."""
    world = bench()
    (created,) = create(world, nodeclaim())
    name = created["metadata"]["name"]
    world.advance(5)
    claim = get(world, name)
    assert claim is not None
    other = {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "name": "older",
             "uid": "0000-older"}
    node = linked_node(world, claim, taints=[UNREGISTERED])
    world.cluster.patch("Node", node["metadata"]["name"],
                        {"metadata": {"ownerReferences": [other]}})
    world.advance(5)

    after = get(world, node["metadata"]["name"], "Node")
    assert after is not None
    assert after["metadata"]["ownerReferences"] == [other, {
        "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "name": name,
        "uid": claim["metadata"]["uid"], "blockOwnerDeletion": True}]


def test_registration_leaves_an_owner_reference_to_its_nodeclaim_as_it_is() -> None:
    """A reference to the NodeClaim already there (its uid) is not rewritten, nor moved
    behind the others."""
    world = bench()
    (created,) = create(world, nodeclaim())
    name = created["metadata"]["name"]
    world.advance(5)
    claim = get(world, name)
    assert claim is not None
    own = {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "name": name,
           "uid": claim["metadata"]["uid"]}
    other = {"apiVersion": "v1", "kind": "ConfigMap", "name": "keeper", "uid": "0000-cm"}
    node = linked_node(world, claim, taints=[UNREGISTERED])
    world.cluster.patch("Node", node["metadata"]["name"],
                        {"metadata": {"ownerReferences": [own, other]}})
    world.advance(5)

    after = get(world, node["metadata"]["name"], "Node")
    assert after is not None
    assert after["metadata"]["labels"].get("karpenter.sh/registered") == "true"
    assert after["metadata"]["ownerReferences"] == [own, other]


# -- termination ---------------------------------------------------------------------------


def test_termination_labels_the_node_excluded_from_load_balancers_by_karpenter() -> None:
    """Terminator.Taint assigns exclude-from-external-load-balancers=karpenter whatever
    value the node had, even when the disrupted taint is already there."""
    world = World()
    world.apply(NODE_CLASS, node_pool(disruption={"consolidateAfter": "Never"}), {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "held", "namespace": "default",
                                                         "labels": {"app": "held"}},
        "spec": {"containers": [{"name": "c", "image": "c",
                                 "resources": {"requests": {"cpu": "100m"}}}]}}, {
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "block", "namespace": "default"},
        "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": "held"}}}})
    assert world.settle()
    (node,) = world.nodes()
    name = node["metadata"]["name"]
    world.cluster.patch("Node", name, {
        "metadata": {"labels": {EXCLUDE_LB: "true"}},
        "spec": {"taints": [*(node["spec"].get("taints") or []),
                            {"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}]}})
    world.delete("Node", name)
    world.advance(2)

    assert world.cluster.get("Node", name)["metadata"]["labels"][EXCLUDE_LB] == "karpenter"
