"""The solver with pods' volume requirements (Karpenter's volume topology and volume
usage, pkg/controllers/provisioning/scheduling/suite_test.go): zones from volumes narrow
the node, not what spread counts; alternatives are tried in turn; a node's CSI attach
limit sends pods elsewhere; and the cluster's claims, volumes and classes read as
Karpenter reads them."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from nodewright.scheduling import volumes
from nodewright.scheduling.pods import ExistingNode, Pod
from nodewright.scheduling.requirements import Requirement, Requirements
from tests.scheduling.test_solver import GIB, HOSTNAME, ZONE, pod, run

EBS = "ebs.csi.aws.com"


def zones(*names: str) -> Requirements:
    return Requirements([Requirement(ZONE, False, frozenset(names))])


def with_volumes(base: Pod, *claims: str, alternatives: tuple[Requirements, ...] = ()
                 ) -> Pod:
    return replace(base, volumes=tuple((EBS, f"default/{c}") for c in claims),
                   volume_requirements=alternatives)


def test_a_volume_zone_narrows_the_nodeclaim_to_it() -> None:
    result = run([with_volumes(pod("db-0"), "data", alternatives=(zones("zone-b"),))])
    (claim,) = result.nodeclaims
    assert claim.zone == "zone-b"


def test_the_next_alternative_is_tried_when_the_first_cannot_be_met() -> None:
    pinned = pod("db-0", nodeSelector={ZONE: "zone-c"})
    result = run([with_volumes(pinned, "data",
                               alternatives=(zones("zone-a"), zones("zone-c")))])
    (claim,) = result.nodeclaims
    assert claim.zone == "zone-c"


def test_each_alternative_is_tried_on_a_node_before_a_new_one_opens() -> None:
    # Karpenter's ExistingNode.CanAdd / NodeClaim.CanAdd try every volume alternative on a
    # node before the next node (nodeclaim.go, existingnode.go): the running node in zone-b
    # takes the pod through the second alternative rather than a new node in zone-a.
    node = ExistingNode("node-b", {ZONE: "zone-b", HOSTNAME: "node-b"}, (),
                        {"cpu": 64_000, "memory": 64 * GIB, "pods": 110_000})
    result = run([with_volumes(pod("db-0", cpu="100m"), "data",
                               alternatives=(zones("zone-a"), zones("zone-b")))],
                 nodes=[node])
    assert result.nodeclaims == ()
    assert result.existing == (("node-b", ("default/db-0",)),)


def test_volume_zones_do_not_count_toward_spread() -> None:
    # Karpenter keeps volume requirements out of the pod's affinity: a spread with
    # nodeAffinityPolicy Honor still counts every zone, so the pod in zone-a (its
    # volume's) may go there although zone-b and zone-c have no pod yet.
    spread = [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": {"matchLabels": {"app": "db"}}}]
    pods = [with_volumes(pod(f"db-{i}", labels={"app": "db"},
                             topologySpreadConstraints=spread), f"data-{i}",
                         alternatives=(zones(zone),))
            for i, zone in enumerate(("zone-a", "zone-b", "zone-c"))]
    result = run(pods)
    assert sorted(claim.zone for claim in result.nodeclaims) == ["zone-a", "zone-b", "zone-c"]
    assert result.unschedulable == ()


def existing(limit: int) -> ExistingNode:
    return ExistingNode("node-1", {ZONE: "zone-a", HOSTNAME: "node-1"}, (),
                        {"cpu": 64_000, "memory": 64 * GIB, "pods": 110_000},
                        volume_limits={EBS: limit})


def test_a_nodes_attach_limit_sends_the_pods_beyond_it_to_a_new_node() -> None:
    # "should launch multiple nodes if required due to volume limits": two volumes per
    # pod, ten attachable: five pods fit on the node, the sixth needs another.
    pods = [with_volumes(pod(f"app-{i}", cpu="100m"), f"a-{i}", f"b-{i}") for i in range(6)]
    result = run(pods, nodes=[existing(10)])
    assert len(result.existing[0][1]) == 5
    assert [len(claim.pods) for claim in result.nodeclaims] == [1]


def test_pods_sharing_one_claim_count_it_once() -> None:
    # "should launch a single node if all pods use the same PVC"
    pods = [with_volumes(pod(f"app-{i}", cpu="100m"), "shared") for i in range(20)]
    result = run(pods, nodes=[existing(1)])
    assert result.nodeclaims == ()
    assert len(result.existing[0][1]) == 20


def test_volumes_already_mounted_count_against_the_limit() -> None:
    running = replace(with_volumes(pod("old-0", cpu="100m"), "old"), node_name="node-1")
    result = run([with_volumes(pod("app-0", cpu="100m"), "new")], nodes=[existing(1)],
                 bound_pods=[running])
    assert result.existing == ()
    assert len(result.nodeclaims) == 1


# -- reading claims, volumes and classes -----------------------------------------------


def lookup(*objects: dict[str, Any]) -> volumes.MappingLookup:
    claims = {f"{o['metadata'].get('namespace', 'default')}/{o['metadata']['name']}": o
              for o in objects if o["kind"] == "PersistentVolumeClaim"}
    pvs = {o["metadata"]["name"]: o for o in objects if o["kind"] == "PersistentVolume"}
    classes = {o["metadata"]["name"]: o for o in objects if o["kind"] == "StorageClass"}
    return volumes.MappingLookup(claims, pvs, classes)


def claim(name: str, **spec: Any) -> dict[str, Any]:
    annotations = {volumes.BIND_COMPLETED: "yes"} if spec.get("volumeName") else {}
    return {"kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": "default", "annotations": annotations},
            "spec": spec}


def storage_class(name: str, provisioner: str = EBS, **body: Any) -> dict[str, Any]:
    return {"kind": "StorageClass", "metadata": {"name": name}, "provisioner": provisioner,
            **body}


def pv(name: str, *terms: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    affinity = {"nodeAffinity": {"required": {"nodeSelectorTerms": [
        {"matchExpressions": t} for t in terms]}}} if terms else {}
    return {"kind": "PersistentVolume", "metadata": {"name": name}, "spec": {**spec, **affinity}}


def mounting(*claims: str) -> Pod:
    return pod("app-0", volumes=[{"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}}
                                 for i, c in enumerate(claims)])


def zone_in(*names: str) -> list[dict[str, Any]]:
    return [{"key": ZONE, "operator": "In", "values": list(names)}]


def test_each_term_of_a_volume_is_an_alternative_and_two_volumes_cross() -> None:
    found = lookup(claim("a", volumeName="pv-a"), claim("b", volumeName="pv-b"),
                   pv("pv-a", zone_in("zone-a"), zone_in("zone-b"), csi={"driver": EBS}),
                   pv("pv-b", zone_in("zone-b", "zone-c"), csi={"driver": EBS}))
    alternatives = volumes.requirements(mounting("a", "b"), found)
    # zone-a x zone-b|c is incompatible and dropped; zone-b x zone-b|c is kept.
    assert alternatives == (zones("zone-b"),)


def test_allowed_topologies_terms_are_alternatives() -> None:
    found = lookup(claim("a", storageClassName="gp3"), storage_class(
        "gp3", volumeBindingMode="WaitForFirstConsumer", allowedTopologies=[
            {"matchLabelExpressions": [{"key": ZONE, "values": ["zone-a"]}]},
            {"matchLabelExpressions": [{"key": ZONE, "values": ["zone-c"]}]}]))
    assert volumes.requirements(mounting("a"), found) == (zones("zone-a"), zones("zone-c"))


def test_drivers_come_from_the_volume_or_the_class_with_in_tree_names_translated() -> None:
    found = lookup(claim("csi", volumeName="pv-csi"), claim("tree", volumeName="pv-tree"),
                   claim("dynamic", storageClassName="old"), claim("nfs", volumeName="pv-nfs"),
                   pv("pv-csi", csi={"driver": "efs.csi.aws.com"}),
                   pv("pv-tree", awsElasticBlockStore={"volumeID": "vol-1"}),
                   pv("pv-nfs", nfs={"server": "x", "path": "/"}),
                   storage_class("old", provisioner="kubernetes.io/aws-ebs"))
    assert volumes.volumes(mounting("csi", "tree", "dynamic", "nfs"), found) == (
        (EBS, "default/dynamic"), (EBS, "default/tree"), ("efs.csi.aws.com", "default/csi"))


def test_a_claim_named_on_a_volume_but_not_marked_bound_is_not_planned_for() -> None:
    unmarked = claim("a", volumeName="pv-a")
    unmarked["metadata"]["annotations"] = {}
    found = lookup(unmarked, pv("pv-a", zone_in("zone-a")))
    assert volumes.problem(mounting("a"), found) == (
        'persistentvolumeclaim "a" is considered unbound: it lacks the '
        "pv.kubernetes.io/bind-completed annotation")
