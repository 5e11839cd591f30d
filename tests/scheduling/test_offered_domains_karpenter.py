"""Which requirements of a planned NodeClaim only the solve gave values (the zones, zone
IDs and placement group partitions its NodePool's offerings have, listed so that topology
can pick a domain): Karpenter v1.14.1's NodeClaim never has those
(pkg/controllers/provisioning/scheduling/nodeclaimtemplate.go ToNodeClaim writes the
template's, the pods' and the topology's requirements), so the provisioner writes them as
the NodePool asked or not at all (`as_asked`). A NodeClaim pinned to partition 1..N would
launch every node into the lowest partition (aws pkg/providers/launchtemplate
launchtemplate.go, lines 166-175); without the requirement EC2 picks one."""

from __future__ import annotations

from dataclasses import replace

from nodewright.controllers.provisioning.nodeclaims import as_asked, render_requirements
from nodewright.scheduling.requirements import Requirement, Requirements
from nodewright.scheduling.targets import PlannedNodeClaim

from .test_solver import instance_type, nodepool, pod, run

PARTITION = "karpenter.k8s.aws/placement-group-partition"
ZONE = "topology.kubernetes.io/zone"
PLAIN = instance_type("m.1", 4, 16, 0.20, zones=("zone-a", "zone-b"))
PARTITIONED = replace(PLAIN, offerings=tuple(
    replace(o, partition=p) for o in PLAIN.offerings for p in ("1", "2", "3")))


def planned(*pods_spec: dict[str, object]) -> PlannedNodeClaim:
    result = run([pod("app", **spec) for spec in pods_spec] or [pod("app")],
                 [nodepool(catalog=[PARTITIONED])])
    (claim,) = result.nodeclaims
    return claim


def test_a_pod_asking_nothing_leaves_zone_and_partition_to_the_offerings() -> None:
    claim = planned()

    assert claim.offered_only == {ZONE, PARTITION}
    assert claim.requirements[PARTITION].values == {"1", "2", "3"}


def test_the_written_requirements_leave_out_what_only_the_offerings_gave() -> None:
    claim = planned()

    written = as_asked(claim.requirements, claim.offered_only, Requirements())

    assert {entry["key"] for entry in render_requirements(written)} & {ZONE, PARTITION} == set()


def test_a_pod_selecting_a_partition_keeps_its_requirement() -> None:
    claim = planned({"nodeSelector": {PARTITION: "2"}})

    assert claim.offered_only == {ZONE}
    written = as_asked(claim.requirements, claim.offered_only, Requirements())
    assert written[PARTITION].values == {"2"}


def test_a_pod_spreading_over_zones_keeps_the_zone_it_was_given() -> None:
    claim = planned({"labels": {"app": "app"}, "topologySpreadConstraints": [{
        "maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "app"}}}]})

    assert ZONE not in claim.offered_only
    assert len(claim.requirements[ZONE].values) == 1


def test_the_nodepools_own_requirement_is_written_back_as_it_is() -> None:
    """A template zone requirement naming a zone no offering has is written whole."""
    template = Requirements([Requirement.build(ZONE, "In", ["zone-a", "zone-b", "zone-z"])])
    claim = run([pod("app")], [nodepool(requirements=list(template.values()),
                                        catalog=[PARTITIONED])]).nodeclaims[0]

    assert claim.requirements[ZONE].values == {"zone-a", "zone-b"}
    written = as_asked(claim.requirements, claim.offered_only, template)
    assert written[ZONE].values == {"zone-a", "zone-b", "zone-z"}
