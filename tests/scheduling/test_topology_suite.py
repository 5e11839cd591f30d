"""Karpenter's topology suite, ported: kubernetes-sigs/karpenter v1.14.1
pkg/controllers/provisioning/scheduling/topology_test.go. Each story names its It; the
fixtures (fake instance types, the suite's NodePool, rounds of ExpectProvisioned and
ExpectSkew) are in `karpenter_fake`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from itertools import pairwise
from typing import Any

from nodewright.scheduling.catalog import Offering
from nodewright.scheduling.pods import ExistingNode, Taint
from nodewright.scheduling.requirements import Requirement, Requirements
from tests.scheduling.karpenter_fake import (
    ARCH,
    CAPACITY_TYPE,
    GI,
    HOSTNAME,
    LABELS,
    ZONE,
    ZONES,
    Cluster,
    capacity_types,
    fake_type,
    match,
    nodepool,
    pod,
    pods,
    spread,
    zones,
)


def test_unknown_topology_keys_are_ignored() -> None:
    # It("should ignore unknown topology keys")
    cluster = Cluster()
    stuck = pod(LABELS, topologySpreadConstraints=spread("unknown", selector=match()))
    free = pod()
    result = cluster.provision([nodepool()], stuck, free)
    assert [key for key, _ in result.unschedulable] == [stuck.key]
    assert cluster.node_of(free) is not None


def test_a_nil_label_selector_does_not_spread() -> None:
    # It("should not spread when a nil label selector is defined")
    cluster = Cluster()
    cluster.provision([nodepool()], *pods(2, LABELS, topologySpreadConstraints=spread(ZONE)))
    assert cluster.skew(ZONE) == [2]


# -- Context("Zonal") ---------------------------------------------------------------------


def test_pods_are_balanced_across_zones_by_match_labels() -> None:
    # It("should balance pods across zones (match labels)")
    cluster = Cluster()
    cluster.provision([nodepool()], *pods(4, LABELS, topologySpreadConstraints=spread(
        ZONE, selector=match())))
    assert cluster.skew(ZONE) == [1, 1, 2]


def test_pods_are_balanced_across_zones_by_match_expressions() -> None:
    # It("should balance pods across zones (match expressions)")
    selector = {"matchExpressions": [{"key": "test", "operator": "In", "values": ["test"]}]}
    cluster = Cluster()
    cluster.provision([nodepool()], *pods(4, LABELS, topologySpreadConstraints=spread(
        ZONE, selector=selector)))
    assert cluster.skew(ZONE) == [1, 1, 2]


def test_the_nodepools_zones_are_respected() -> None:
    # It("should respect NodePool zonal constraints")
    cluster = Cluster()
    cluster.provision([nodepool(requirements=[zones("test-zone-1", "test-zone-2",
                                                    "test-zone-3")])],
                      *pods(4, LABELS, topologySpreadConstraints=spread(ZONE, selector=match())))
    assert cluster.skew(ZONE) == [1, 1, 2]


def test_a_subset_of_zones_in_the_requirements_is_the_universe() -> None:
    # It("should respect NodePool zonal constraints (subset) with requirements")
    cluster = Cluster()
    cluster.provision([nodepool(requirements=[zones("test-zone-1", "test-zone-2")])],
                      *pods(4, LABELS, topologySpreadConstraints=spread(ZONE, selector=match())))
    assert cluster.skew(ZONE) == [2, 2]


def test_a_zone_label_on_the_nodepool_is_the_only_domain() -> None:
    # It("should respect NodePool zonal constraints (subset) with labels")
    cluster = Cluster()
    cluster.provision([nodepool(labels={ZONE: "test-zone-1"})],
                      *pods(4, LABELS, topologySpreadConstraints=spread(ZONE, selector=match())))
    assert cluster.skew(ZONE) == [4]


def test_a_zone_label_inside_the_zone_requirement_is_the_only_domain() -> None:
    # It("should respect NodePool zonal constraints (subset) with requirements and labels")
    cluster = Cluster()
    cluster.provision([nodepool(requirements=[zones("test-zone-1", "test-zone-2")],
                                labels={ZONE: "test-zone-1"})],
                      *pods(4, LABELS, topologySpreadConstraints=spread(ZONE, selector=match())))
    assert cluster.skew(ZONE) == [4]


def test_zone_labels_across_nodepools_make_the_universe() -> None:
    # It("should respect NodePool zonal constraints (subset) with labels across NodePools")
    cluster = Cluster()
    cluster.provision([
        nodepool(requirements=[zones("test-zone-1", "test-zone-2")],
                 labels={ZONE: "test-zone-1"}),
        nodepool("second", labels={ZONE: "test-zone-2"}),
    ], *pods(4, LABELS, topologySpreadConstraints=spread(ZONE, selector=match())))
    assert cluster.skew(ZONE) == [2, 2]


def test_an_existing_pod_in_a_zone_the_nodepool_no_longer_offers_counts() -> None:
    # It("should respect NodePool zonal constraints (existing pod)")
    cluster = Cluster()
    first = pod(LABELS, cpu="1.1", nodeSelector={ZONE: "test-zone-3"})
    cluster.provision([nodepool()], first)
    assert cluster.node_of(first) is not None
    cluster.provision([nodepool(requirements=[zones("test-zone-1", "test-zone-2")])],
                      *pods(6, LABELS, cpu="1.1",
                            topologySpreadConstraints=spread(ZONE, selector=match())))
    assert cluster.skew(ZONE) == [1, 2, 2]


def test_the_non_minimum_domain_is_used_when_it_is_all_there_is() -> None:
    # It("should schedule to the non-minimum domain if its all that's available")
    cluster = Cluster()
    constraint = spread(ZONE, 5, selector=match())
    cluster.provision([nodepool(requirements=[zones("test-zone-1")])],
                      pod(LABELS, cpu="1.1", topologySpreadConstraints=constraint))
    assert cluster.skew(ZONE) == [1]
    cluster.provision([nodepool(requirements=[zones("test-zone-2")])],
                      pod(LABELS, cpu="1.1", topologySpreadConstraints=constraint))
    assert cluster.skew(ZONE) == [1, 1]
    cluster.provision([nodepool(requirements=[zones("test-zone-3")])],
                      *pods(10, LABELS, cpu="1.1", topologySpreadConstraints=constraint))
    assert cluster.skew(ZONE) == [1, 1, 6]


def test_only_the_minimum_domains_are_used_while_max_skew_is_violated() -> None:
    # It("should only schedule to minimum domains if already violating max skew")
    cluster = Cluster()
    constraint = spread(ZONE, selector=match())
    cluster.provision([nodepool()], *pods(9, LABELS, cpu="1.1",
                                          topologySpreadConstraints=constraint))
    assert cluster.skew(ZONE) == [3, 3, 3]
    zone_of = {n.name: n.labels[ZONE] for n in cluster.nodes}
    cluster.bound = [p for p in cluster.bound if zone_of[p.node_name or ""] == "test-zone-1"]
    assert cluster.skew(ZONE) == [3]
    cluster.provision([nodepool()], *pods(3, LABELS, cpu="1.1",
                                          topologySpreadConstraints=constraint))
    assert cluster.skew(ZONE) == [1, 2, 3]


def test_max_skew_is_not_violated_when_unsatisfiable_means_do_not_schedule() -> None:
    # It("should not violate max-skew when unsat = do not schedule")
    cluster = Cluster()
    constraint = spread(ZONE, selector=match())
    cluster.provision([nodepool(requirements=[zones("test-zone-1")])],
                      pod(LABELS, cpu="1.1", topologySpreadConstraints=constraint))
    cluster.provision([nodepool(requirements=[zones("test-zone-2", "test-zone-3")])],
                      *pods(10, LABELS, cpu="1.1", topologySpreadConstraints=constraint))
    assert cluster.skew(ZONE) == [1, 2, 2]


def test_max_skew_counts_a_domain_discovered_from_a_running_pod() -> None:
    # It("should not violate max-skew when unsat = do not schedule (discover domains)")
    cluster = Cluster()
    cluster.provision([nodepool(requirements=[zones("test-zone-1")])], pod(LABELS, cpu="1.1"))
    cluster.provision([nodepool(requirements=[zones("test-zone-2", "test-zone-3")])],
                      *pods(10, LABELS, cpu="1.1",
                            topologySpreadConstraints=spread(ZONE, selector=match())))
    assert cluster.skew(ZONE) == [1, 2, 2]


def test_a_spread_without_a_selector_matches_every_pod() -> None:
    # It("should match all pods when labelSelector is not specified") (zone)
    cluster = Cluster()
    cluster.provision([nodepool()], pod(topologySpreadConstraints=spread(ZONE)))
    assert cluster.skew(ZONE, None) == [1]


def test_a_selector_matching_none_of_the_spread_pods_packs_them_together() -> None:
    # It("should handle interdependent selectors")
    cluster = Cluster()
    spread_pods = pods(5, None, topologySpreadConstraints=spread(HOSTNAME, selector=match()))
    cluster.provision([nodepool()], *spread_pods)
    assert len({cluster.node_of(p).name for p in spread_pods}) == 1  # type: ignore[union-attr]


def test_min_domains_above_the_zones_available_keeps_one_pod_per_zone() -> None:
    # It("should respect minDomains constraints")
    cluster = Cluster()
    cluster.provision([nodepool(requirements=[zones("test-zone-1", "test-zone-2")])],
                      *pods(3, LABELS, topologySpreadConstraints=spread(
                          ZONE, selector=match(), minDomains=3)))
    assert cluster.skew(ZONE) == [1, 1]


def test_min_domains_met_exactly_lets_pods_spread_as_usual() -> None:
    # It("satisfied minDomains constraints (equal) should allow expected pod scheduling")
    cluster = Cluster()
    cluster.provision([nodepool(requirements=[zones(*("test-zone-1", "test-zone-2",
                                                      "test-zone-3"))])],
                      *pods(11, LABELS, topologySpreadConstraints=spread(
                          ZONE, selector=match(), minDomains=3)))
    assert cluster.skew(ZONE) == [3, 4, 4]


def test_min_domains_exceeded_lets_pods_spread_as_usual() -> None:
    # It("satisfied minDomains constraints (greater than minimum) should allow expected pod
    # scheduling")
    cluster = Cluster()
    cluster.provision([nodepool(requirements=[zones("test-zone-1", "test-zone-2",
                                                    "test-zone-3")])],
                      *pods(11, LABELS, topologySpreadConstraints=spread(
                          ZONE, selector=match(), minDomains=2)))
    assert cluster.skew(ZONE) == [3, 4, 4]


# -- Context("Hostname") ------------------------------------------------------------------


def test_pods_are_balanced_across_nodes() -> None:
    # It("should balance pods across nodes")
    cluster = Cluster()
    cluster.provision([nodepool()], *pods(4, LABELS, topologySpreadConstraints=spread(
        HOSTNAME, selector=match())))
    assert cluster.skew(HOSTNAME) == [1, 1, 1, 1]


def test_pods_share_a_hostname_up_to_max_skew() -> None:
    # It("should balance pods on the same hostname up to maxskew")
    cluster = Cluster()
    cluster.provision([nodepool()], *pods(4, LABELS, topologySpreadConstraints=spread(
        HOSTNAME, 4, selector=match())))
    assert cluster.skew(HOSTNAME) == [4]


def _app(name: str, arch: str | None = None) -> dict[str, object]:
    options: dict[str, object] = {"topologySpreadConstraints": spread(
        HOSTNAME, selector=match({"app": name}))}
    if arch is not None:
        options["nodeSelector"] = {ARCH: arch}
    return options


def test_two_deployments_with_hostname_spread_share_two_nodes() -> None:
    # It("balance multiple deployments with hostname topology spread")
    cluster = Cluster()
    spread_pods = [*pods(2, {"app": "app1"}, **_app("app1")),  # type: ignore[arg-type]
                   *pods(2, {"app": "app2"}, **_app("app2"))]  # type: ignore[arg-type]
    result = cluster.provision([nodepool()], *spread_pods)
    assert result.unschedulable == () and len(cluster.nodes) == 2


def test_two_deployments_of_different_arch_need_four_nodes() -> None:
    # It("balance multiple deployments with hostname topology spread & varying arch")
    cluster = Cluster()
    spread_pods = [*pods(2, {"app": "app1"}, **_app("app1", "amd64")),  # type: ignore[arg-type]
                   *pods(2, {"app": "app2"}, **_app("app2", "arm64"))]  # type: ignore[arg-type]
    result = cluster.provision([nodepool()], *spread_pods)
    assert result.unschedulable == () and len(cluster.nodes) == 4


# -- Context("CapacityType") --------------------------------------------------------------


def test_pods_are_balanced_across_capacity_types() -> None:
    # It("should balance pods across capacity types")
    cluster = Cluster()
    cluster.provision([nodepool()], *pods(4, LABELS, topologySpreadConstraints=spread(
        CAPACITY_TYPE, selector=match())))
    assert cluster.skew(CAPACITY_TYPE) == [2, 2]


def test_the_nodepools_capacity_type_is_respected() -> None:
    # It("should respect NodePool capacity type constraints")
    cluster = Cluster()
    pool = nodepool(requirements=[Requirement(CAPACITY_TYPE, False,
                                              frozenset({"spot", "on-demand"}))])
    cluster.provision([pool], *pods(4, LABELS, topologySpreadConstraints=spread(
        CAPACITY_TYPE, selector=match())))
    assert cluster.skew(CAPACITY_TYPE) == [2, 2]


def test_capacity_type_max_skew_holds_when_only_on_demand_is_left() -> None:
    # It("should not violate max-skew when unsat = do not schedule (capacity type)")
    cluster = Cluster()
    constraint = spread(CAPACITY_TYPE, selector=match())
    cluster.provision([nodepool(requirements=[capacity_types("spot")])],
                      pod(LABELS, cpu="1.1", topologySpreadConstraints=constraint))
    assert cluster.skew(CAPACITY_TYPE) == [1]
    cluster.provision([nodepool(requirements=[capacity_types("on-demand")])],
                      *pods(5, LABELS, cpu="1.1", topologySpreadConstraints=constraint))
    assert cluster.skew(CAPACITY_TYPE) == [1, 2]


def test_capacity_type_max_skew_gives_way_when_unsatisfiable_means_schedule_anyway() -> None:
    # It("should violate max-skew when unsat = schedule anyway (capacity type)")
    cluster = Cluster()
    constraint = spread(CAPACITY_TYPE, selector=match(), when="ScheduleAnyway")
    cluster.provision([nodepool(requirements=[capacity_types("spot")])],
                      pod(LABELS, cpu="1.1", topologySpreadConstraints=constraint))
    cluster.provision([nodepool(requirements=[capacity_types("on-demand")])],
                      *pods(5, LABELS, cpu="1.1", topologySpreadConstraints=constraint))
    assert cluster.skew(CAPACITY_TYPE) == [1, 5]


def _counting_story(key: str, first: str, second: str) -> Cluster:
    """Three nodes (`first`, `second`, and one without the key) with pods bound: only
    pods matching the selector, in the namespace, on a node with the key count. (Karpenter
    also leaves out terminating, Failed and Succeeded pods: the cluster state does,
    before a solve.)"""
    cluster = Cluster()
    labels_of = {"node-a": {key: first}, "node-b": {key: second}, "node-c": {}}
    for name, labels in labels_of.items():
        cluster.nodes.append(ExistingNode(name, {HOSTNAME: name, **labels}, (),
                                          {"cpu": 4000, "memory": 4 * GI, "pods": 5000}))
    bound = [("node-a", None, "default"), ("node-c", LABELS, "default"),
             ("node-a", LABELS, "elsewhere"), ("node-a", LABELS, "default"),
             ("node-a", LABELS, "default"), ("node-b", LABELS, "default")]
    for node, labels, namespace in bound:
        cluster.bound.append(replace(pod(labels, namespace=namespace), node_name=node))
    return cluster


def test_only_matching_pods_on_nodes_with_a_zone_count() -> None:
    # It("should only count running/scheduled pods with matching labels scheduled to nodes
    # with a corresponding domain") (Zonal)
    cluster = _counting_story(ZONE, "test-zone-1", "test-zone-2")
    cluster.provision([nodepool()], *pods(2, LABELS, topologySpreadConstraints=spread(
        ZONE, selector=match())))
    assert cluster.skew(ZONE) == [1, 2, 2]


def test_only_matching_pods_on_nodes_with_a_capacity_type_count() -> None:
    # It("should only count running/scheduled pods with matching labels scheduled to nodes
    # with a corresponding domain") (CapacityType)
    cluster = _counting_story(CAPACITY_TYPE, "spot", "on-demand")
    cluster.provision([nodepool()], *pods(2, LABELS, topologySpreadConstraints=spread(
        CAPACITY_TYPE, selector=match())))
    assert cluster.skew(CAPACITY_TYPE) == [2, 3]


def test_a_capacity_type_spread_without_a_selector_matches_every_pod() -> None:
    # It("should match all pods when labelSelector is not specified") (CapacityType)
    cluster = Cluster()
    cluster.provision([nodepool()], pod(topologySpreadConstraints=spread(CAPACITY_TYPE)))
    assert cluster.skew(CAPACITY_TYPE, None) == [1]


def test_spread_pods_outside_their_selector_pack_together_capacity_type() -> None:
    # It("should handle interdependent selectors") (CapacityType)
    cluster = Cluster()
    spread_pods = pods(5, None, topologySpreadConstraints=spread(HOSTNAME, selector=match()))
    cluster.provision([nodepool()], *spread_pods)
    assert len({b.node_name for b in cluster.bound}) == 1


def _zone_and_capacity(zone: str, capacity_type: str) -> dict[str, object]:
    return {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": ZONE, "operator": "In", "values": [zone]},
            {"key": CAPACITY_TYPE, "operator": "In", "values": [capacity_type]}]}]}}}}


def test_capacity_type_spread_is_limited_by_required_node_affinity() -> None:
    # It("should balance pods across capacity-types (node required affinity constrained)")
    cluster = Cluster()
    cluster.provision([nodepool()], pod(LABELS, **_zone_and_capacity(  # type: ignore[arg-type]
        "test-zone-1", "on-demand")))
    cluster.provision([nodepool()], *pods(
        5, LABELS, topologySpreadConstraints=spread(CAPACITY_TYPE, selector=match()),
        **_zone_and_capacity("test-zone-2", "spot")))  # type: ignore[arg-type]
    assert cluster.skew(CAPACITY_TYPE) == [1, 5]


def test_capacity_type_spread_counts_the_on_demand_pod_already_running() -> None:
    # It("should balance pods across capacity-types (no constraints)")
    cluster = Cluster()
    first = pod(LABELS, nodeSelector={"node.kubernetes.io/instance-type":
                                      "single-pod-instance-type",
                                      CAPACITY_TYPE: "on-demand"})
    cluster.provision([nodepool()], first)
    assert cluster.node_of(first) is not None
    cluster.provision([nodepool(requirements=[capacity_types("spot")])], *pods(
        5, LABELS, cpu="2", topologySpreadConstraints=spread(CAPACITY_TYPE, selector=match())))
    assert cluster.skew(CAPACITY_TYPE) == [1, 2]


def test_arch_spread_counts_the_amd64_pod_already_running() -> None:
    # It("should balance pods across arch (no constraints)")
    cluster = Cluster()
    first = pod(LABELS, nodeSelector={"node.kubernetes.io/instance-type":
                                      "single-pod-instance-type", ARCH: "amd64"})
    cluster.provision([nodepool()], first)
    assert cluster.node_of(first) is not None
    cluster.provision([nodepool(requirements=[Requirement(ARCH, False, frozenset({"arm64"}))])],
                      *pods(5, LABELS, cpu="2",
                            topologySpreadConstraints=spread(ARCH, selector=match())))
    assert cluster.skew(ARCH) == [1, 2]


# -- Context("Combined Hostname and Zonal Topology") -------------------------------------


def _zone_and_hostname(hostname_skew: int, hostname_when: str = "DoNotSchedule",
                       first: str = ZONE) -> list[dict[str, object]]:
    return [*spread(first, selector=match()),
            *spread(HOSTNAME, hostname_skew, selector=match(), when=hostname_when)]


def test_zone_and_hostname_spreads_hold_together_over_four_rounds() -> None:
    # It("should spread pods while respecting both constraints (hostname and zonal)")
    cluster = Cluster()
    expected = {2: [1, 1], 3: [1, 2, 2], 5: [3, 3, 4], 11: [7, 7, 7]}
    for count, skew in expected.items():
        cluster.provision([nodepool()], *pods(count, LABELS,
                                              topologySpreadConstraints=_zone_and_hostname(3)))
        assert cluster.skew(ZONE) == skew
        assert max(cluster.skew(HOSTNAME)) <= 3


def test_a_custom_label_of_two_nodepools_is_spread_evenly() -> None:
    # It("should balance pods across NodePool requirements")
    key = "capacity.spread.4-1"
    spot = nodepool("spot", requirements=[capacity_types("spot"),
                                          Requirement(key, False, frozenset("2345"))])
    on_demand = nodepool("on-demand", requirements=[capacity_types("on-demand"),
                                                    Requirement(key, False, frozenset("1"))])
    cluster = Cluster()
    result = cluster.provision([spot, on_demand], *pods(
        20, LABELS, topologySpreadConstraints=spread(key, selector=match())))
    assert result.unschedulable == ()
    assert cluster.skew(key) == [4, 4, 4, 4, 4]
    assert cluster.skew(CAPACITY_TYPE) == [4, 16]


def test_a_zone_only_a_pool_without_room_offers_still_limits_the_spread() -> None:
    # It("should spread pods while respecting both constraints") (zone and a ScheduleAnyway
    # hostname spread; the zone-3 NodePool's cpu limit is 0)
    cluster = Cluster()
    limited = replace(nodepool("b", requirements=[zones("test-zone-3")]), limits={"cpu": 0})
    cluster.provision([nodepool(requirements=[zones("test-zone-1", "test-zone-2")]), limited],
                      *pods(10, LABELS, topologySpreadConstraints=_zone_and_hostname(
                          1, "ScheduleAnyway")))
    assert cluster.skew(ZONE) == [1, 1]
    assert cluster.skew(HOSTNAME) == [1, 1]


def test_capacity_type_and_hostname_spreads_hold_together_over_four_rounds() -> None:
    # It("should spread pods while respecting both constraints") (capacity type, hostname)
    cluster = Cluster()
    expected = {2: [1, 1], 3: [2, 3], 5: [5, 5], 11: [10, 11]}
    for count, skew in expected.items():
        cluster.provision([nodepool()], *pods(count, LABELS, topologySpreadConstraints=(
            _zone_and_hostname(3, first=CAPACITY_TYPE))))
        assert cluster.skew(CAPACITY_TYPE) == skew
        assert max(cluster.skew(HOSTNAME)) <= 3


# -- Context("Combined Hostname, Zonal, and Capacity Type Topology") ---------------------


def _assorted() -> list[Any]:
    """As fake.InstanceTypesAssorted: a type for every zone and capacity type pair."""
    return [replace(fake_type(f"assorted-{zone}-{ct}"),
                    offerings=(Offering(zone, None, ct, 0.1),))
            for zone in ZONES for ct in ("spot", "on-demand")]


def _max_skew(cluster: Cluster, key: str, universe: Sequence[str]) -> int:
    counts = dict.fromkeys(universe, 0)
    nodes = {n.name: n for n in cluster.nodes}
    for p in cluster.bound:
        node = nodes[p.node_name or ""]
        counts[node.labels[key]] = counts.get(node.labels[key], 0) + 1
    return max(counts.values()) - min(counts.values())


def test_capacity_type_zone_and_hostname_spreads_hold_together() -> None:
    # It("should spread pods while respecting all constraints")
    pool = nodepool(catalog=_assorted())
    constraints = [*spread(CAPACITY_TYPE, selector=match()), *spread(ZONE, 2, selector=match()),
                   *spread(HOSTNAME, 3, selector=match())]
    cluster = Cluster()
    for count in range(1, 15):
        result = cluster.provision([pool], *pods(count, LABELS,
                                                 topologySpreadConstraints=constraints))
        assert result.unschedulable == ()
        assert _max_skew(cluster, CAPACITY_TYPE, ("spot", "on-demand")) <= 1
        assert _max_skew(cluster, ZONE, ZONES) <= 2
        assert _max_skew(cluster, HOSTNAME, [n.name for n in cluster.nodes]) <= 3


# -- Context("MatchLabelKeys") ------------------------------------------------------------


def test_match_label_keys_split_the_pods_into_groups() -> None:
    # It("should support matchLabelKeys")
    cluster = Cluster()
    constraint = spread(HOSTNAME, selector=match(), matchLabelKeys=["test-label"])
    cluster.provision([nodepool()],
                      *pods(2, {**LABELS, "test-label": "value-a"},
                            topologySpreadConstraints=constraint),
                      *pods(2, {**LABELS, "test-label": "value-b"},
                            topologySpreadConstraints=constraint))
    assert cluster.skew(HOSTNAME) == [2, 2]


def test_match_label_keys_the_pod_lacks_are_ignored() -> None:
    # It("should ignore unknown labels specified in matchLabelKeys")
    cluster = Cluster()
    cluster.provision([nodepool()], *pods(4, LABELS, topologySpreadConstraints=spread(
        HOSTNAME, selector=match(), matchLabelKeys=["test-label"])))
    assert cluster.skew(HOSTNAME) == [1, 1, 1, 1]


# -- Context("NodeTaintsPolicy") / Context("NodeAffinityPolicy") --------------------------

SPREAD_LABEL = "fake-label"
TAINT = Taint("taintname", "taintvalue", "NoSchedule")


def _two_full_nodes(taints: tuple[Taint, ...], extra: dict[str, str] | None = None) -> Cluster:
    """Two nodes with 100m cpu, in domains foo and bar of the spread label."""
    cluster = Cluster()
    for name, value in (("node-foo", "foo"), ("node-bar", "bar")):
        cluster.nodes.append(ExistingNode(
            name, {HOSTNAME: name, SPREAD_LABEL: value, **(extra or {})}, taints,
            {"cpu": 100, "memory": 4 * GI, "pods": 5000}))
    return cluster


def _label_spread(**policy: str) -> list[dict[str, object]]:
    return spread(SPREAD_LABEL, selector=match(), **policy)


def test_tainted_nodes_hold_back_the_spread_when_taints_are_ignored() -> None:
    # It("should balance pods across a label (NodeTaintsPolicy=ignore)")
    cluster = _two_full_nodes((TAINT,))
    cluster.provision([nodepool(labels={SPREAD_LABEL: "baz"})], *pods(
        5, LABELS, cpu="1", topologySpreadConstraints=_label_spread(nodeTaintsPolicy="Ignore")))
    assert cluster.skew(SPREAD_LABEL) == [1]


def test_tainted_nodes_do_not_count_when_taints_are_honoured() -> None:
    # It("should balance pods across a label (NodeTaintsPolicy=honor)")
    cluster = _two_full_nodes((TAINT,))
    cluster.provision([nodepool(labels={SPREAD_LABEL: "baz"})], *pods(
        5, LABELS, cpu="1", topologySpreadConstraints=_label_spread(nodeTaintsPolicy="Honor")))
    assert cluster.skew(SPREAD_LABEL) == [5]


def _label_pools() -> list[Any]:
    tainted = nodepool("tainted", requirements=[Requirement(SPREAD_LABEL, False,
                                                            frozenset({"bar"}))],
                       taints=[Taint("taint-key", "taint-value", "NoSchedule")])
    plain = nodepool(requirements=[Requirement(SPREAD_LABEL, False, frozenset({"foo"}))])
    return [plain, tainted]


def test_a_tainted_pools_domain_holds_back_the_spread_when_taints_are_ignored() -> None:
    # It("should balance pods across a label when discovered from the nodepool
    # (NodeTaintsPolicy=ignore)")
    cluster = Cluster()
    cluster.provision(_label_pools(), *pods(2, LABELS, topologySpreadConstraints=_label_spread(
        nodeTaintsPolicy="Ignore")))
    assert cluster.skew(SPREAD_LABEL) == [1]


def test_a_tainted_pools_domain_does_not_count_when_taints_are_honoured() -> None:
    # It("should balance pods across a label when discovered from the nodepool
    # (NodeTaintsPolicy=honor)")
    cluster = Cluster()
    cluster.provision(_label_pools(), *pods(2, LABELS, topologySpreadConstraints=_label_spread(
        nodeTaintsPolicy="Honor")))
    assert cluster.skew(SPREAD_LABEL) == [2]


def test_pools_exclusive_by_taints_share_a_domain_when_taints_are_honoured() -> None:
    # It("should balance pods across a label when mutually exclusive NodePools (by taints)
    # share domains (NodeTaintsPolicy=honor)")
    pools = [nodepool(f"pool-{i}", requirements=[Requirement(SPREAD_LABEL, False,
                                                             frozenset(domains))],
                      taints=[Taint("taint-key", f"nodepool-{i}", "NoSchedule")])
             for i, domains in enumerate((("foo", "bar"), ("foo", "baz")))]
    new = [pod(LABELS, topologySpreadConstraints=_label_spread(nodeTaintsPolicy="Honor"),
               tolerations=[{"key": "taint-key", "effect": "NoSchedule",
                             "value": f"nodepool-{i}"}])
           for i in range(2) for _ in range((i + 1) * 2)]
    cluster = Cluster()
    cluster.provision(pools, *new)
    assert cluster.skew(SPREAD_LABEL) == [1, 2, 3]


def test_nodes_outside_the_pods_affinity_hold_back_the_spread_when_ignored() -> None:
    # It("should balance pods across a label (NodeAffinityPolicy=ignore)")
    cluster = _two_full_nodes((), {"selector": "mismatch"})
    cluster.provision([nodepool(labels={SPREAD_LABEL: "baz", "selector": "value"})], *pods(
        5, LABELS, cpu="1", nodeSelector={"selector": "value"},
        topologySpreadConstraints=_label_spread(nodeAffinityPolicy="Ignore")))
    assert cluster.skew(SPREAD_LABEL) == [1]


def test_nodes_outside_the_pods_affinity_do_not_count_when_honoured() -> None:
    # It("should balance pods across a label (NodeAffinityPolicy=honor)")
    cluster = _two_full_nodes((), {"selector": "mismatch"})
    cluster.provision([nodepool(labels={SPREAD_LABEL: "baz", "selector": "value"})], *pods(
        5, LABELS, cpu="1", nodeSelector={"selector": "value"},
        topologySpreadConstraints=_label_spread(nodeAffinityPolicy="Honor")))
    assert cluster.skew(SPREAD_LABEL) == [5]


# -- Context("Combined Zonal and Capacity Type Topology") ---------------------------------


def test_zone_and_capacity_type_spreads_hold_together_over_four_rounds() -> None:
    # It("should spread pods while respecting both constraints") (zone and capacity type)
    cluster = Cluster()
    constraints = [*spread(CAPACITY_TYPE, selector=match()), *spread(ZONE, selector=match())]
    # (pods added, most per capacity type, most per zone), round after round
    rounds = [(2, 1, 1), (3, 3, 2), (3, 5, 4), (11, 11, 7)]
    for added, capacity_most, zone_most in rounds:
        cluster.provision([nodepool()], *pods(added, LABELS,
                                              topologySpreadConstraints=constraints))
        assert max(cluster.skew(CAPACITY_TYPE)) <= capacity_most
        assert max(cluster.skew(ZONE)) <= zone_most


# -- Context("Combined Zonal Topology and Node Affinity") ---------------------------------


def _zone_in(*values: str) -> dict[str, object]:
    return {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": ZONE, "operator": "In", "values": list(values)}]}]}}}}


def test_a_node_selector_limits_the_zones_a_spread_uses() -> None:
    # It("should limit spread options by nodeSelector") (zone)
    cluster = Cluster()
    constraint = spread(ZONE, selector=match())
    cluster.provision([nodepool()],
                      *pods(5, LABELS, topologySpreadConstraints=constraint,
                            nodeSelector={ZONE: "test-zone-1"}),
                      *pods(10, LABELS, topologySpreadConstraints=constraint,
                            nodeSelector={ZONE: "test-zone-2"}))
    assert cluster.skew(ZONE) == [5, 10]


def test_node_requirements_limit_the_zones_a_spread_uses() -> None:
    # It("should limit spread options by node requirements")
    cluster = Cluster()
    cluster.provision([nodepool()], *pods(
        10, LABELS, topologySpreadConstraints=spread(ZONE, selector=match()),
        **_zone_in("test-zone-1", "test-zone-2")))  # type: ignore[arg-type]
    assert cluster.skew(ZONE) == [5, 5]


def test_required_node_affinity_limits_the_spread_round_after_round() -> None:
    # It("should limit spread options by required node affinity")
    cluster = Cluster()
    constraint = spread(ZONE, selector=match())
    cluster.provision([nodepool()], *pods(6, LABELS, topologySpreadConstraints=constraint,
                                          **_zone_in("test-zone-1",  # type: ignore[arg-type]
                                                     "test-zone-2")))
    assert cluster.skew(ZONE) == [3, 3]
    everywhere = nodepool(requirements=[zones("test-zone-1", "test-zone-2", "test-zone-3")])
    cluster.provision([everywhere], pod(LABELS, topologySpreadConstraints=constraint,
                                        **_zone_in("test-zone-2",  # type: ignore[arg-type]
                                                   "test-zone-3")))
    assert cluster.skew(ZONE) == [1, 3, 3]
    cluster.provision([everywhere], *pods(5, LABELS, topologySpreadConstraints=constraint))
    assert cluster.skew(ZONE) == [4, 4, 4]


def test_preferred_node_affinity_does_not_limit_the_spread() -> None:
    # It("should not limit spread options by preferred node affinity")
    preference = {"weight": 1, "preference": {"matchExpressions": [
        {"key": ZONE, "operator": "In", "values": ["test-zone-1", "test-zone-2"]}]}}
    cluster = Cluster()
    cluster.provision([nodepool()], *pods(
        6, LABELS, topologySpreadConstraints=spread(ZONE, selector=match()),
        affinity={"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            preference]}}))
    assert cluster.skew(ZONE) == [2, 2, 2]


# -- Context("Combined Capacity Type Topology and Node Affinity") -------------------------


def test_a_node_selector_limits_the_capacity_types_a_spread_uses() -> None:
    # It("should limit spread options by nodeSelector") (capacity type)
    cluster = Cluster()
    constraint = spread(CAPACITY_TYPE, selector=match(), when="ScheduleAnyway")
    cluster.provision([nodepool()],
                      *pods(5, LABELS, topologySpreadConstraints=constraint,
                            nodeSelector={CAPACITY_TYPE: "spot"}),
                      *pods(5, LABELS, topologySpreadConstraints=constraint,
                            nodeSelector={CAPACITY_TYPE: "on-demand"}))
    assert cluster.skew(CAPACITY_TYPE) == [5, 5]


def _capacity_in(*values: str) -> dict[str, object]:
    return {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": CAPACITY_TYPE, "operator": "In", "values": list(values)}]}]}}}}


def test_node_affinity_limits_the_capacity_types_round_after_round() -> None:
    # It("should limit spread options by node affinity (capacity type)")
    cluster = Cluster()
    constraint = spread(CAPACITY_TYPE, selector=match())
    cluster.provision([nodepool()], *pods(3, LABELS, topologySpreadConstraints=constraint,
                                          **_capacity_in("spot")))  # type: ignore[arg-type]
    assert cluster.skew(CAPACITY_TYPE) == [3]
    cluster.provision([nodepool()], pod(LABELS, topologySpreadConstraints=constraint,
                                        **_capacity_in("on-demand",  # type: ignore[arg-type]
                                                       "spot")))
    assert cluster.skew(CAPACITY_TYPE) == [1, 3]
    cluster.provision([nodepool()], *pods(5, LABELS, topologySpreadConstraints=constraint))
    assert cluster.skew(CAPACITY_TYPE) == [4, 5]


# -- Context("Pod Affinity/Anti-Affinity") ------------------------------------------------

SECURITY = {"security": "s2"}


def _term(key: str, labels: dict[str, str] | None = None, **extra: Any) -> dict[str, Any]:
    return {"labelSelector": match(labels or SECURITY), "topologyKey": key, **extra}


def affine(key: str, labels: dict[str, str] | None = None, **extra: Any) -> dict[str, Any]:
    return {"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        _term(key, labels, **extra)]}}}


def anti_affine(key: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        _term(key, labels)]}}}


def _preferred(kind: str, key: str, labels: dict[str, str]) -> dict[str, Any]:
    return {"affinity": {kind: {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 50, "podAffinityTerm": _term(key, labels)}]}}}


def test_empty_pod_affinity_and_anti_affinity_schedule() -> None:
    # It("should schedule a pod with empty pod affinity and anti-affinity")
    cluster = Cluster()
    plain = pod(affinity={"podAffinity": {}, "podAntiAffinity": {}})
    cluster.provision([nodepool()], plain)
    assert cluster.node_of(plain) is not None


def test_pod_affinity_on_hostname_joins_the_target_pod() -> None:
    # It("should respect pod affinity (hostname)")
    cluster = Cluster()
    target = pod(SECURITY)
    follower = pod(**affine(HOSTNAME))
    cluster.provision([nodepool()], *pods(10, LABELS, topologySpreadConstraints=spread(
        HOSTNAME, selector=match())), target, follower)
    assert cluster.node_of(target) == cluster.node_of(follower) is not None


def test_self_affinity_on_zone_puts_the_replicas_together() -> None:
    # It("should respect self pod affinity (zone)")
    cluster = Cluster()
    replicas = pods(3, SECURITY, **affine(ZONE))
    cluster.provision([nodepool()], *replicas)
    assert len({cluster.node_of(p).name for p in replicas}) == 1  # type: ignore[union-attr]


def test_self_affinity_with_a_first_empty_hostname_fills_one_node_then_waits() -> None:
    # It("should respect self pod affinity for first empty topology domain only (hostname)")
    # Five pods fill a node (every fake type has 5 pod slots); the rest wait, now and later.
    cluster = Cluster()
    first = pods(10, SECURITY, **affine(HOSTNAME))
    result = cluster.provision([nodepool()], *first)
    assert len(result.nodeclaims) == 1 and len(result.nodeclaims[0].pods) == 5
    assert len(result.unschedulable) == 5
    second = cluster.provision([nodepool()],
                               *pods(10, SECURITY, **affine(HOSTNAME)))
    assert second.nodeclaims == () and len(second.unschedulable) == 10


def test_self_affinity_cannot_start_a_second_hostname_in_other_zones() -> None:
    # It("should respect self pod affinity for first empty topology domain only
    # (hostname/constrained zones)")
    cluster = Cluster()
    cluster.provision([nodepool()], pod(SECURITY, nodeSelector={ZONE: "test-zone-1"},
                                        **affine(HOSTNAME)))
    result = cluster.provision([nodepool()], *pods(
        10, SECURITY, **_with(affine(HOSTNAME), _zone_in("test-zone-2", "test-zone-3"))))
    assert result.nodeclaims == () and len(result.unschedulable) == 10


def _with(*options: dict[str, Any]) -> dict[str, Any]:
    """Pod spec fragments merged, `affinity` blocks included."""
    merged: dict[str, Any] = {}
    for option in options:
        for key, value in option.items():
            if key == "affinity":
                merged.setdefault("affinity", {}).update(value)
            else:
                merged[key] = value
    return merged


def test_two_self_affine_pods_in_different_zones_get_a_node_each() -> None:
    # It("should allow two nodes to be created when two pods with matching affinities have
    # incompatible selectors")
    cluster = Cluster()
    labels = {"security": "s1"}
    in_two = pod(labels, **_with(affine(ZONE, labels), _zone_in("test-zone-2")))
    in_three = pod(labels, **_with(affine(ZONE, labels), _zone_in("test-zone-3")))
    cluster.provision([nodepool()], in_two, in_three)
    two, three = cluster.node_of(in_two), cluster.node_of(in_three)
    assert two is not None and three is not None and two.name != three.name
    assert (two.labels[ZONE], three.labels[ZONE]) == ("test-zone-2", "test-zone-3")


def test_preferred_pod_affinity_gives_way() -> None:
    # It("should allow violation of preferred pod affinity")
    cluster = Cluster()
    hopeful = pod(**_preferred("podAffinity", HOSTNAME, SECURITY))
    cluster.provision([nodepool()], *pods(10, LABELS, topologySpreadConstraints=spread(
        HOSTNAME, selector=match())), hopeful)
    assert cluster.node_of(hopeful) is not None


def test_preferred_pod_anti_affinity_gives_way() -> None:
    # It("should allow violation of preferred pod anti-affinity")
    cluster = Cluster()
    repelled = pods(10, None, **_preferred("podAntiAffinity", ZONE, LABELS))
    cluster.provision([nodepool()], *pods(3, LABELS, topologySpreadConstraints=spread(
        ZONE, selector=match())), *repelled)
    assert all(cluster.node_of(p) is not None for p in repelled)


def test_hostname_anti_affinity_separates_the_pods_every_time() -> None:
    # It("should separate nodes using simple pod anti-affinity on hostname")
    cluster = Cluster()
    for _ in range(10):
        target = pod(SECURITY)
        repelled = pod(**anti_affine(HOSTNAME))
        cluster.provision([nodepool()], repelled, target)
        first, second = cluster.node_of(target), cluster.node_of(repelled)
        assert first is not None and second is not None and first.name != second.name


def _pinned(zone: str, **options: Any) -> Any:
    return pod(None, cpu="2", nodeSelector={ZONE: zone}, **options)


def test_zone_anti_affinity_keeps_a_pod_out_of_every_zone_with_a_match() -> None:
    # It("should not violate pod anti-affinity on zone")
    cluster = Cluster()
    pinned = [pod(SECURITY, cpu="2", nodeSelector={ZONE: z}) for z in ZONES]
    repelled = pod(**anti_affine(ZONE))
    result = cluster.provision([nodepool()], *pinned, repelled)
    assert all(cluster.node_of(p) is not None for p in pinned)
    assert [key for key, _ in result.unschedulable] == [repelled.key]


def test_zone_anti_affinity_waits_for_a_pod_whose_zone_is_open() -> None:
    # It("should not violate pod anti-affinity on zone (other schedules first)")
    cluster = Cluster()
    target = pod(SECURITY, cpu="2")
    repelled = pod(**anti_affine(ZONE))
    result = cluster.provision([nodepool()], target, repelled)
    assert cluster.node_of(target) is not None
    assert [key for key, _ in result.unschedulable] == [repelled.key]


def test_preferred_inverse_zone_anti_affinity_gives_way() -> None:
    # It("should violate preferred pod anti-affinity on zone (inverse)")
    cluster = Cluster()
    pinned = [_pinned(z, **_preferred("podAntiAffinity", ZONE, SECURITY)) for z in ZONES]
    target = pod(SECURITY)
    result = cluster.provision([nodepool()], *pinned, target)
    assert result.unschedulable == ()


def test_inverse_zone_anti_affinity_keeps_the_selected_pod_out() -> None:
    # It("should not violate pod anti-affinity on zone (inverse)")
    cluster = Cluster()
    pinned = [_pinned(z, **anti_affine(ZONE)) for z in ZONES]
    target = pod(SECURITY)
    result = cluster.provision([nodepool()], *pinned, target)
    assert [key for key, _ in result.unschedulable] == [target.key]


def test_zone_anti_affinity_waits_until_the_zone_is_known_then_avoids_it() -> None:
    # It("should not violate pod anti-affinity on zone (Schrödinger)")
    cluster = Cluster()
    anywhere = pod(None, cpu="2", **anti_affine(ZONE))
    target = pod(SECURITY)
    first = cluster.provision([nodepool()], anywhere, target)
    assert [key for key, _ in first.unschedulable] == [target.key]
    cluster.provision([nodepool()], target)
    one, two = cluster.node_of(anywhere), cluster.node_of(target)
    assert one is not None and two is not None and one.labels[ZONE] != two.labels[ZONE]


def test_inverse_zone_anti_affinity_of_running_pods_keeps_the_selected_pod_out() -> None:
    # It("should not violate pod anti-affinity on zone (inverse w/existing nodes)")
    cluster = Cluster()
    cluster.provision([nodepool()], *[_pinned(z, **anti_affine(ZONE)) for z in ZONES])
    target = pod(SECURITY)
    result = cluster.provision([nodepool()], target)
    assert [key for key, _ in result.unschedulable] == [target.key]


def test_preferred_inverse_anti_affinity_of_running_pods_gives_way() -> None:
    # It("should violate preferred pod anti-affinity on zone (inverse w/existing nodes)")
    cluster = Cluster()
    cluster.provision([nodepool()], *[_pinned(z, **_preferred("podAntiAffinity", ZONE,
                                                                SECURITY)) for z in ZONES])
    target = pod(SECURITY)
    cluster.provision([nodepool()], target)
    assert cluster.node_of(target) is not None


def test_a_pod_affinity_preference_gives_way_to_a_required_spread() -> None:
    # It("should allow violation of a pod affinity preference with a conflicting required
    # constraint")
    cluster = Cluster()
    target = pod(SECURITY)
    spread_pods = pods(3, LABELS, **_with(
        {"topologySpreadConstraints": spread(HOSTNAME, selector=match())},
        _preferred("podAffinity", HOSTNAME, SECURITY)))
    result = cluster.provision([nodepool()], *spread_pods, target)
    assert result.unschedulable == ()
    assert cluster.skew(HOSTNAME) == [1, 1, 1]


def test_self_zone_anti_affinity_places_one_pod_per_round_until_zones_run_out() -> None:
    # It("should support pod anti-affinity with a zone topology")
    cluster = Cluster()
    for expected in ([1], [1, 1], [1, 1, 1], [1, 1, 1]):
        cluster.provision([nodepool()], *pods(3, SECURITY, **anti_affine(ZONE)))
        assert cluster.skew(ZONE, SECURITY) == expected


def test_affinity_to_a_pod_that_does_not_exist_schedules_nothing() -> None:
    # It("should not schedule pods with affinity to a non-existent pod")
    cluster = Cluster()
    result = cluster.provision([nodepool()], *pods(10, None, **affine(ZONE)))
    assert result.nodeclaims == () and len(result.unschedulable) == 10


def test_zone_affinity_to_an_unconstrained_target_waits_for_its_zone() -> None:
    # It("should support pod affinity with zone topology (unconstrained target)")
    cluster = Cluster()
    target = pod(SECURITY)
    followers = pods(10, None, **affine(ZONE))
    first = cluster.provision([nodepool()], *followers, target)
    assert len(first.unschedulable) == 10 and cluster.node_of(target) is not None
    cluster.provision([nodepool()], *followers)
    assert cluster.skew(ZONE, None) == [11]


def test_zone_affinity_to_a_constrained_target_follows_it_in_one_round() -> None:
    # It("should support pod affinity with zone topology (constrained target)")
    cluster = Cluster()
    target = pod(SECURITY, **_zone_in("test-zone-1"))  # type: ignore[arg-type]
    cluster.provision([nodepool()], *pods(10, None, **affine(ZONE)), target)
    assert cluster.skew(ZONE, None) == [11]


def test_a_chain_of_hostname_affinities_lands_together() -> None:
    # It("should handle multiple dependent affinities"), in 50 fresh clusters
    tiers = ("db", "web", "cache", "ui")
    for _ in range(50):
        cluster = Cluster()
        chain = [pod({"type": "db", "spread": "spread"})]
        for before, tier in pairwise(tiers):
            chain.append(pod({"type": tier, "spread": "spread"},
                             **affine(HOSTNAME, {"type": before})))
        result = cluster.provision([nodepool()], *chain)
        assert result.unschedulable == ()


def test_affinity_to_a_pod_that_never_comes_leaves_the_pod_pending() -> None:
    # It("should fail to schedule pods with unsatisfiable dependencies")
    cluster = Cluster()
    lonely = pod({"type": "db", "spread": "spread"}, **affine(HOSTNAME, {"type": "web"}))
    result = cluster.provision([nodepool()], lonely)
    assert [key for key, _ in result.unschedulable] == [lonely.key]


def _namespace_story(**term: Any) -> tuple[Cluster, Any, Any, Any]:
    cluster = Cluster()
    target = pod(SECURITY, namespace="other-ns")
    follower = pod(**affine(HOSTNAME, **term))
    result = cluster.provision(
        [nodepool()], *pods(10, LABELS, topologySpreadConstraints=spread(
            HOSTNAME, selector=match())), target, follower,
        namespaces={"other-ns": {"foo": "bar"}})
    return cluster, target, follower, result


def test_pod_affinity_looks_only_in_its_own_namespace_by_default() -> None:
    # It("should filter pod affinity topologies by namespace, no matching pods")
    cluster, target, follower, result = _namespace_story()
    assert cluster.node_of(target) is not None
    assert [key for key, _ in result.unschedulable] == [follower.key]


def test_pod_affinity_looks_in_the_namespaces_it_lists() -> None:
    # It("should filter pod affinity topologies by namespace, matching pods namespace list")
    cluster, target, follower, _ = _namespace_story(namespaces=["other-ns"])
    assert cluster.node_of(target) == cluster.node_of(follower) is not None


def test_an_empty_namespace_selector_looks_in_every_namespace() -> None:
    # It("should filter pod affinity topologies by namespace, empty namespace selector")
    cluster, target, follower, _ = _namespace_story(namespaceSelector={"matchLabels": {}})
    assert cluster.node_of(target) == cluster.node_of(follower) is not None


# -- Describe("Taints") -------------------------------------------------------------------


def test_only_pods_tolerating_the_nodepools_taint_are_scheduled() -> None:
    # It("should schedule pods that tolerate NodePool constraints")
    pool = nodepool(taints=[Taint("test-key", "test-value", "NoSchedule")])
    cluster = Cluster()
    tolerating = [
        pod(tolerations=[{"key": "test-key", "operator": "Exists", "effect": "NoSchedule"}]),
        pod(tolerations=[{"key": "test-key", "value": "test-value", "operator": "Equal",
                          "effect": "NoSchedule"}]),
    ]
    assert cluster.provision([pool], *tolerating).unschedulable == ()
    others = [
        pod(),
        pod(tolerations=[{"key": "invalid", "operator": "Exists"}]),
        pod(tolerations=[{"key": "test-key", "operator": "Equal", "effect": "NoSchedule"}]),
    ]
    assert len(cluster.provision([pool], *others).unschedulable) == 3


# -- Describe("Topology with Volume Requirements") ----------------------------------------


def test_a_pod_whose_volume_pins_its_zone_may_exceed_the_even_spread() -> None:
    # It("should schedule pod with PVC and TSC minDomains=3 when pods are spread across 3
    # zones")
    pool = nodepool(requirements=[capacity_types("on-demand")])
    app = {"app": "test"}
    constraint = spread(ZONE, selector=match(app), minDomains=3)
    cluster = Cluster()
    cluster.provision([pool], *pods(3, app, topologySpreadConstraints=constraint))
    assert cluster.skew(ZONE, app) == [1, 1, 1]
    volume = Requirements([Requirement(ZONE, False, frozenset({"test-zone-1"}))])
    with_pvc = replace(pod(app, topologySpreadConstraints=constraint),
                       volumes=(("ebs.csi.aws.com", "default/test-pvc"),),
                       volume_requirements=(volume,))
    cluster.provision([pool], with_pvc)
    node = cluster.node_of(with_pvc)
    assert node is not None and node.labels[ZONE] == "test-zone-1"
    assert cluster.skew(ZONE, app) == [1, 1, 2]
