"""Offerings of a partition placement group (one per partition, as Karpenter v1.14's
placement group offering resolver makes them): topology spread over the partition label
steers pods into different partitions, a pod's partition selects its offerings, and
catalogs without partitions plan as before."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

from nodewright.scheduling.catalog import InstanceType
from nodewright.scheduling.solver import SchedulingResult

from .test_solver import instance_type, nodepool, pod, replicas, run

PARTITION = "karpenter.k8s.aws/placement-group-partition"
PLAIN = instance_type("m.1", 4, 16, 0.20, zones=("zone-a",))


def partitioned(it: InstanceType, partitions: Sequence[str] = ("1", "2", "3")) -> InstanceType:
    return replace(it, offerings=tuple(replace(o, partition=p)
                                       for o in it.offerings for p in partitions))


def partitions_of(result: SchedulingResult) -> Counter[str]:
    counted: Counter[str] = Counter()
    for claim in result.nodeclaims:
        requirement = claim.requirements[PARTITION]
        assert not requirement.complement
        counted.update(requirement.values if len(requirement.values) == 1 else ["any"])
    return counted


SPREAD = {"topologySpreadConstraints": [{
    "maxSkew": 1, "topologyKey": PARTITION, "whenUnsatisfiable": "DoNotSchedule",
    "labelSelector": {"matchLabels": {"app": "db"}}}]}


def test_spread_over_partitions_puts_each_replica_in_its_own_partition() -> None:
    result = run(replicas(3, "db", cpu="3", memory="1Gi", **SPREAD),
                 [nodepool(catalog=[partitioned(PLAIN)])])

    assert result.unschedulable == ()
    assert partitions_of(result) == {"1": 1, "2": 1, "3": 1}


def test_spread_with_more_replicas_than_partitions_keeps_the_skew_at_one() -> None:
    result = run(replicas(5, "db", cpu="3", memory="1Gi", **SPREAD),
                 [nodepool(catalog=[partitioned(PLAIN)])])

    assert result.unschedulable == ()
    assert sorted(partitions_of(result).values()) == [1, 2, 2]


def test_a_pod_selecting_a_partition_is_planned_there() -> None:
    picky = pod("picky", nodeSelector={PARTITION: "2"})

    result = run([picky], [nodepool(catalog=[partitioned(PLAIN)])])

    (claim,) = result.nodeclaims
    assert claim.requirements[PARTITION].values == {"2"}


def test_a_partition_no_offering_has_leaves_the_pod_unschedulable() -> None:
    picky = pod("picky", nodeSelector={PARTITION: "4"})

    result = run([picky], [nodepool(catalog=[partitioned(PLAIN)])])

    assert result.nodeclaims == ()
    assert [key for key, _ in result.unschedulable] == ["default/picky"]


def test_an_unavailable_partition_is_no_domain() -> None:
    it = partitioned(PLAIN)
    it = replace(it, offerings=tuple(replace(o, available=o.partition != "2")
                                     for o in it.offerings))

    result = run(replicas(2, "db", cpu="3", memory="1Gi", **SPREAD),
                 [nodepool(catalog=[it])])

    assert partitions_of(result) == {"1": 1, "3": 1}


def test_without_partition_offerings_a_claim_has_no_partition_requirement() -> None:
    result = run(replicas(2, "web", cpu="3", memory="1Gi"), [nodepool(catalog=[PLAIN])])

    assert result.nodeclaims and all(PARTITION not in c.requirements
                                     for c in result.nodeclaims)
