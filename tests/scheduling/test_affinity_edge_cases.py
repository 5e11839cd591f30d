"""Pod (anti-)affinity edge cases of Karpenter's topology suite
(pkg/controllers/provisioning/scheduling/topology_test.go): self affinity and its first
empty domain, and zone anti-affinity seen from the pods it selects ("inverse") and
before the anti-affine pod's zone is known ("Schrödinger")."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from nodewright.scheduling.pods import ExistingNode
from tests.scheduling.test_solver import GIB, HOSTNAME, ZONE, pod, run

SECURITY = {"security": "s2"}


def term(key: str) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": SECURITY}, "topologyKey": key}


def affine(name: str, key: str, **spec: Any) -> Any:
    return pod(name, labels=SECURITY,
               affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                   term(key)]}}, **spec)


def anti(name: str, zone: str | None = None, *, preferred: bool = False) -> Any:
    if preferred:
        block = {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 10, "podAffinityTerm": term(ZONE)}]}
    else:
        block = {"requiredDuringSchedulingIgnoredDuringExecution": [term(ZONE)]}
    spec: dict[str, Any] = {"affinity": {"podAntiAffinity": block}}
    if zone is not None:
        spec["nodeSelector"] = {ZONE: zone}
    return pod(name, cpu="2", labels={"app": name}, **spec)


def where(result: Any) -> dict[str, str]:
    placed = {p: claim.name for claim in result.nodeclaims for p in claim.pods}
    placed.update({p: node for node, pods in result.existing for p in pods})
    return placed


def test_self_affinity_puts_the_pods_together() -> None:
    result = run([affine(f"s-{i}", HOSTNAME) for i in range(3)])
    assert len(set(where(result).values())) == 1 and result.unschedulable == ()


def test_self_affinity_uses_the_first_empty_domain_only() -> None:
    # 10 pods of 1 cpu, the largest type holds 8 cpu: one node, the rest wait.
    result = run([affine(f"s-{i}", HOSTNAME, cpu="1", memory="128Mi") for i in range(10)])
    assert len(result.nodeclaims) == 1
    assert len(result.unschedulable) == 10 - len(result.nodeclaims[0].pods)


def test_self_affinity_does_not_open_a_second_domain_next_to_an_existing_one() -> None:
    # A pod of the group runs on node-1 (zone-a); the new ones may not go to zone-a, so
    # they cannot join it and must not start another hostname domain.
    node = ExistingNode("node-1", {ZONE: "zone-a", HOSTNAME: "node-1"}, (),
                        {"cpu": 4000, "memory": 8 * GIB, "pods": 110_000})
    running = replace(affine("s-old", HOSTNAME, nodeSelector={ZONE: "zone-a"}),
                      node_name="node-1")
    elsewhere = {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": ZONE, "operator": "In", "values": ["zone-b", "zone-c"]}]}]}
    pods = [pod(f"s-{i}", labels=SECURITY, affinity={
        "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term(HOSTNAME)]},
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": elsewhere}})
        for i in range(3)]
    result = run(pods, nodes=[node], bound_pods=[running])
    assert result.nodeclaims == ()
    assert len(result.unschedulable) == 3


def test_self_affinity_in_a_constrained_zone() -> None:
    result = run([affine(f"s-{i}", ZONE, nodeSelector={ZONE: "zone-c"}) for i in range(3)])
    (claim,) = result.nodeclaims
    assert claim.zone == "zone-c" and len(claim.pods) == 3


def test_zone_anti_affinity_of_placed_pods_keeps_out_the_pods_it_selects_inverse() -> None:
    pods = [anti("z1", "zone-a"), anti("z2", "zone-b"), anti("z3", "zone-c"),
            pod("selected", labels=SECURITY)]
    result = run(pods)
    placed = where(result)
    assert {"default/z1", "default/z2", "default/z3"} <= set(placed)
    assert "default/selected" not in placed


def test_a_preferred_zone_anti_affinity_gives_way_inverse() -> None:
    pods = [anti("z1", "zone-a", preferred=True), anti("z2", "zone-b", preferred=True),
            anti("z3", "zone-c", preferred=True), pod("selected", labels=SECURITY)]
    assert result_all_placed(run(pods))


def result_all_placed(result: Any) -> bool:
    return result.unschedulable == ()


def test_a_pod_waits_until_the_anti_affine_pods_zone_is_known_schrodinger() -> None:
    # The anti-affine pod may land in any zone: the pod it selects cannot be placed in
    # this batch (whatever zone it picked could be the same).
    result = run([anti("anywhere"), pod("selected", labels=SECURITY)])
    placed = where(result)
    assert "default/anywhere" in placed
    assert "default/selected" not in placed


def test_existing_anti_affine_pods_in_every_zone_keep_it_out_inverse() -> None:
    nodes, bound = [], []
    for zone in ("zone-a", "zone-b", "zone-c"):
        name = f"node-{zone}"
        nodes.append(ExistingNode(name, {ZONE: zone, HOSTNAME: name}, (),
                                  {"cpu": 8000, "memory": 8 * GIB, "pods": 110_000}))
        bound.append(replace(anti(f"z-{zone}", zone), node_name=name))
    result = run([pod("selected", labels=SECURITY)], nodes=nodes, bound_pods=bound)
    assert where(result) == {}
    preferred = [replace(anti(f"z-{zone}", zone, preferred=True), node_name=f"node-{zone}")
                 for zone in ("zone-a", "zone-b", "zone-c")]
    assert result_all_placed(run([pod("selected", labels=SECURITY)], nodes=nodes,
                                 bound_pods=preferred))


def test_pods_with_zonal_anti_affinity_among_themselves_are_placed_one_per_batch() -> None:
    # "should support pod anti-affinity with a zone topology": the first pod's zone is
    # not known until its node launches, so the others wait for the next batch.
    pods = [pod(f"r-{i}", labels=SECURITY, affinity={"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [term(ZONE)]}}) for i in range(3)]
    result = run(pods)
    assert len(result.nodeclaims) == 1 and len(result.unschedulable) == 2


def test_a_zone_pinned_pod_with_anti_affinity_keeps_its_zone() -> None:
    result = run([anti("z2", "zone-b")])
    (claim,) = result.nodeclaims
    assert claim.zone == "zone-b"


def test_self_affinity_pods_that_cannot_share_a_domain_each_open_one() -> None:
    # "should allow two nodes to be created when two pods with matching affinities have
    # incompatible selectors"
    result = run([affine("s-b", ZONE, nodeSelector={ZONE: "zone-b"}),
                  affine("s-c", ZONE, nodeSelector={ZONE: "zone-c"})])
    assert sorted(claim.zone for claim in result.nodeclaims) == ["zone-b", "zone-c"]
    assert result.unschedulable == ()
