"""Pod affinity, anti-affinity and spread on any node label: `kubernetes.io/arch`, the
capacity type, an instance label, a custom label of the NodePool. The domains of a key
the NodePool leaves open are the values its instance types carry (Karpenter's
buildDomainGroups). Ported from kubernetes-sigs/karpenter v1.14.1
pkg/controllers/provisioning/scheduling/topology_test.go (named per story)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from nodewright.scheduling.pods import ExistingNode
from nodewright.scheduling.requirements import Requirement
from nodewright.scheduling.solver import SchedulingResult
from tests.scheduling.test_solver import GIB, HOSTNAME, instance_type, nodepool, pod, run

ARCH = "kubernetes.io/arch"
CAPACITY_TYPE = "karpenter.sh/capacity-type"
FAMILY = "karpenter.k8s.aws/instance-family"
SECURITY = {"security": "s2"}
AMD = instance_type("amd.large", 4, 8, 0.20)
ARM = instance_type("arm.large", 4, 8, 0.16, labels={"kubernetes.io/arch": "arm64"})
MIXED = [AMD, ARM]


def term(key: str) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": SECURITY}, "topologyKey": key}


def hostname_spread() -> list[dict[str, Any]]:
    return [{"maxSkew": 1, "topologyKey": HOSTNAME, "whenUnsatisfiable": "DoNotSchedule",
             "labelSelector": {"matchLabels": SECURITY}}]


def repelling(name: str, key: str = ARCH) -> Any:
    return pod(name, labels=SECURITY, affinity={"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [term(key)]}})


def arch_of(result: SchedulingResult, key: str) -> str:
    (claim,) = [c for c in result.nodeclaims if key in c.pods]
    return {AMD.name: "amd64", ARM.name: "arm64"}[claim.instance_type]


def node_of(result: SchedulingResult, key: str) -> str:
    (claim,) = [c for c in result.nodeclaims if key in c.pods]
    return claim.name


def test_pod_affinity_on_arch_follows_the_first_pods_arch() -> None:
    # "should respect pod affinity (arch)": the second pod wants the first one's arch,
    # and the hostname spread keeps them on different nodes.
    first = pod("aff-1", cpu="2", labels=SECURITY, topologySpreadConstraints=hostname_spread(),
                nodeSelector={ARCH: "arm64"})
    second = pod("aff-2", cpu="1", labels=SECURITY, topologySpreadConstraints=hostname_spread(),
                 affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                     term(ARCH)]}})

    result = run([first, second], [nodepool(catalog=MIXED)])

    assert result.unschedulable == ()
    assert arch_of(result, "default/aff-1") == arch_of(result, "default/aff-2") == "arm64"
    assert node_of(result, "default/aff-1") != node_of(result, "default/aff-2")


def test_pod_anti_affinity_on_arch_puts_the_second_pod_on_the_other_arch() -> None:
    # "should not violate pod anti-affinity (arch)"
    first = pod("aff-1", cpu="2", labels=SECURITY, topologySpreadConstraints=hostname_spread(),
                nodeSelector={ARCH: "arm64"})
    second = pod("aff-2", cpu="1", labels=SECURITY, topologySpreadConstraints=hostname_spread(),
                 affinity={"podAntiAffinity": {
                     "requiredDuringSchedulingIgnoredDuringExecution": [term(ARCH)]}})

    result = run([first, second], [nodepool(catalog=MIXED)])

    assert result.unschedulable == ()
    assert arch_of(result, "default/aff-1") == "arm64"
    assert arch_of(result, "default/aff-2") == "amd64"
    (claim,) = [c for c in result.nodeclaims if "default/aff-2" in c.pods]
    assert claim.requirements[ARCH].values == frozenset({"amd64"})


def test_self_anti_affinity_on_arch_places_one_pod_while_the_arch_is_open() -> None:
    # As Karpenter commits a NodeClaim's domain late, a pod on a NodeClaim whose arch is
    # still open counts in every arch: replicas repelling each other are placed one per
    # batch ("should not violate pod anti-affinity on zone (Schrödinger)", on arch).
    pods = [repelling(f"solo-{i}") for i in range(3)]

    result = run(pods, [nodepool(catalog=MIXED)])

    assert len(result.nodeclaims) == 1 and len(result.unschedulable) == 2


def test_self_anti_affinity_on_arch_avoids_the_arch_of_a_running_replica() -> None:
    # "should not violate pod anti-affinity on zone (inverse w/existing nodes)", on arch.
    node = ExistingNode("node-1", {HOSTNAME: "node-1", ARCH: "arm64"}, (),
                        {"cpu": 4000, "memory": 8 * GIB, "pods": 110_000})
    running = replace(repelling("solo-0"), node_name="node-1")

    result = run([repelling("solo-1")], [nodepool(catalog=MIXED)], nodes=[node],
                 bound_pods=[running])

    assert result.unschedulable == () and arch_of(result, "default/solo-1") == "amd64"


def test_self_affinity_on_arch_keeps_every_replica_on_one_arch() -> None:
    # "should respect self pod affinity (zone)", on arch: the replicas spill over two
    # nodes (hostname spread) but keep one arch.
    pods = [pod(f"together-{i}", cpu="1", labels=SECURITY,
                topologySpreadConstraints=hostname_spread(),
                affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                    term(ARCH)]}}) for i in range(3)]

    result = run(pods, [nodepool(catalog=MIXED)])

    assert result.unschedulable == () and len(result.nodeclaims) == 3
    assert len({arch_of(result, key) for c in result.nodeclaims for key in c.pods}) == 1


def test_pod_anti_affinity_on_capacity_type_splits_spot_and_on_demand() -> None:
    # Anti-affinity on karpenter.sh/capacity-type: the repelled pod takes the other one.
    catalog = [instance_type("m.large", 4, 8, 0.20, capacity_types=("on-demand", "spot"))]
    first = pod("ct-1", cpu="2", labels=SECURITY, nodeSelector={CAPACITY_TYPE: "spot"})
    second = repelling("ct-2", CAPACITY_TYPE)

    result = run([first, second], [nodepool(catalog=catalog)])

    assert result.unschedulable == ()
    assert [c.capacity_type for c in result.nodeclaims] == ["spot", "on-demand"]


def test_pod_affinity_on_capacity_type_follows_the_first_pods_capacity_type() -> None:
    catalog = [instance_type("m.large", 4, 8, 0.20, capacity_types=("on-demand", "spot"))]
    first = pod("ct-1", cpu="3", labels=SECURITY,
                nodeSelector={CAPACITY_TYPE: "on-demand"})
    second = pod("ct-2", cpu="3", labels=SECURITY, affinity={"podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [term(CAPACITY_TYPE)]}})

    result = run([first, second], [nodepool(catalog=catalog)])

    assert result.unschedulable == ()
    assert [c.capacity_type for c in result.nodeclaims] == ["on-demand", "on-demand"]


def test_pod_anti_affinity_on_a_custom_label_of_the_nodepool() -> None:
    # A custom key the NodePool defines (team In [a, b]): its values are the domains.
    pool = nodepool(requirements=[Requirement("team", False, frozenset({"a", "b"}))],
                    catalog=MIXED)
    first = pod("t-1", cpu="2", labels=SECURITY, nodeSelector={"team": "a"})

    result = run([first, repelling("t-2", "team")], [pool])

    assert result.unschedulable == ()
    teams = [sorted(c.requirements["team"].values) for c in result.nodeclaims]
    assert teams == [["a"], ["b"]]


def test_pod_anti_affinity_on_an_instance_family() -> None:
    # Any instance label is a topology key: the repelled pod takes the other family.
    catalog = [instance_type("c.large", 4, 8, 0.15), instance_type("m.large", 4, 8, 0.20)]
    first = pod("f-1", cpu="2", labels=SECURITY, nodeSelector={FAMILY: "c"})

    result = run([first, repelling("f-2", FAMILY)], [nodepool(catalog=catalog)])

    assert result.unschedulable == ()
    assert [c.instance_type for c in result.nodeclaims] == ["c.large", "m.large"]


def test_spread_on_arch_balances_across_the_arches_the_types_offer() -> None:
    # "should balance pods across arch (no constraints)", without the existing node: the
    # NodePool leaves arch open, its types offer amd64 and arm64.
    spread = [{"maxSkew": 1, "topologyKey": ARCH, "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": {"matchLabels": SECURITY}}]
    pods = [pod(f"s-{i}", cpu="2", labels=SECURITY, topologySpreadConstraints=spread)
            for i in range(4)]

    result = run(pods, [nodepool(catalog=MIXED)])

    assert result.unschedulable == ()
    arches = [arch_of(result, key) for c in result.nodeclaims for key in c.pods]
    assert sorted(arches) == ["amd64", "amd64", "arm64", "arm64"]
