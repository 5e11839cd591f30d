"""The solver against small hand-built catalogs: one story per constraint it honours."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from nodewright.scheduling.allocatable import Overhead
from nodewright.scheduling.catalog import InstanceType, Offering
from nodewright.scheduling.nodepools import NodePoolTemplate
from nodewright.scheduling.pods import (
    ExistingNode,
    Pod,
    SpecError,
    Taint,
    daemonset_from_manifest,
    parse_pod_spec,
    pods_from_manifest,
)
from nodewright.scheduling.requirements import Requirement, Requirements
from nodewright.scheduling.solver import SchedulingProblem, SchedulingResult, solve

GIB = 2**30 * 1000
ZONES = ("zone-a", "zone-b", "zone-c")
ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"


def instance_type(
    name: str,
    cpu: int,
    memory_gib: int,
    price: float,
    *,
    pods: int = 110,
    zones: Sequence[str] = ZONES,
    capacity_types: Sequence[str] = ("on-demand",),
    spot_discount: float = 0.4,
    extra: dict[str, int] | None = None,
    labels: dict[str, str] | None = None,
) -> InstanceType:
    """A type with no overhead: allocatable equals capacity, which keeps the arithmetic plain."""
    capacity = {"cpu": cpu * 1000, "memory": memory_gib * GIB, "pods": pods * 1000}
    capacity.update({k: v * 1000 for k, v in (extra or {}).items()})
    offerings = tuple(
        Offering(zone, None, ct, round(price * (spot_discount if ct == "spot" else 1.0), 6))
        for zone in zones
        for ct in capacity_types
    )
    return InstanceType(
        name=name,
        labels={
            "node.kubernetes.io/instance-type": name,
            "kubernetes.io/arch": "amd64",
            "kubernetes.io/os": "linux",
            "karpenter.k8s.aws/instance-cpu": str(cpu),
            "karpenter.k8s.aws/instance-family": name.split(".")[0],
            **(labels or {}),
        },
        capacity=capacity,
        overhead=Overhead({}, {}, {}),
        offerings=offerings,
    )


SMALL = instance_type("small.1", 2, 4, 0.10)
MEDIUM = instance_type("medium.1", 4, 8, 0.20)
LARGE = instance_type("large.1", 8, 16, 0.40)
CATALOG = [SMALL, MEDIUM, LARGE]


def nodepool(
    name: str = "default",
    *,
    requirements: Sequence[Requirement] = (),
    labels: dict[str, str] | None = None,
    taints: Sequence[Taint] = (),
    weight: int = 0,
    limits: dict[str, int] | None = None,
    catalog: Sequence[InstanceType] = CATALOG,
) -> NodePoolTemplate:
    merged = Requirements(requirements)
    for key, value in (labels or {}).items():
        merged.add(Requirement.single(key, value))
    merged.add(Requirement.single("karpenter.sh/nodepool", name))
    return NodePoolTemplate(
        name=name,
        requirements=merged,
        instance_types=catalog,
        taints=tuple(taints),
        weight=weight,
        limits=limits,
    )


def pod(name: str, cpu: str = "500m", memory: str = "512Mi", **spec: Any) -> Pod:
    labels = spec.pop("labels", {"app": name.rsplit("-", 1)[0]})
    requests = {"cpu": cpu, "memory": memory}
    body = {"containers": [{"name": "c", "resources": {"requests": requests}}]}
    body.update(spec)
    return parse_pod_spec("default", name, labels, body, "spec")


def replicas(count: int, prefix: str, **kwargs: Any) -> list[Pod]:
    return [pod(f"{prefix}-{n}", **kwargs) for n in range(count)]


def run(
    pods: Sequence[Pod],
    pools: Sequence[NodePoolTemplate] | None = None,
    **problem: Any,
) -> SchedulingResult:
    return solve(SchedulingProblem(pods=pods, nodepools=pools or [nodepool()], **problem))


def test_pods_are_packed_onto_the_cheapest_types_that_hold_them() -> None:
    result = run(replicas(4, "web", cpu="1", memory="1Gi"))

    assert [claim.instance_type for claim in result.nodeclaims] == ["medium.1"]
    assert result.nodeclaims[0].instance_types == (("medium.1", 0.20), ("large.1", 0.40))


def test_a_node_does_not_grow_when_a_second_node_is_cheaper() -> None:
    # Six pods: one large (0.40) would hold them, a medium plus a small (0.30) is cheaper.
    result = run(replicas(6, "web", cpu="1", memory="1Gi"))

    assert [claim.instance_type for claim in result.nodeclaims] == ["medium.1", "small.1"]
    assert result.hourly_cost == pytest.approx(0.30)


def test_existing_nodes_are_filled_before_anything_is_launched() -> None:
    node = ExistingNode(
        "node-1",
        {ZONE: "zone-a", HOSTNAME: "node-1"},
        (),
        {"cpu": 4000, "memory": 8 * GIB, "pods": 110_000},
    )

    result = run(replicas(3, "web", cpu="1", memory="1Gi"), nodes=[node])

    assert result.nodeclaims == ()
    assert result.existing == (("node-1", ("default/web-0", "default/web-1", "default/web-2")),)


def test_a_taint_keeps_pods_without_a_toleration_off_the_pool() -> None:
    gpu_pool = nodepool("gpu", taints=[Taint("gpu", "true", "NoSchedule")], weight=10)
    plain_pool = nodepool("plain")

    tolerant = pod(
        "trainer-0", tolerations=[{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]
    )
    result = run([tolerant, pod("web-0")], [gpu_pool, plain_pool])

    by_pod = {p: claim.nodepool for claim in result.nodeclaims for p in claim.pods}
    assert by_pod == {"default/trainer-0": "gpu", "default/web-0": "plain"}


def test_prefer_no_schedule_taints_are_tolerated_only_as_a_last_resort() -> None:
    # The tainted pool weighs more, so it would be tried first if its taint were ignored.
    soft = nodepool("soft", taints=[Taint("spare", "", "PreferNoSchedule")], weight=50)
    plain = nodepool("plain", weight=1)

    first = run([pod("web-0")], [soft, plain])
    # With nowhere else to go, the pod still gets a node from the tainted pool.
    last = run([pod("web-0")], [soft])

    assert [claim.nodepool for claim in first.nodeclaims] == ["plain"]
    assert [claim.nodepool for claim in last.nodeclaims] == ["soft"]


def test_the_heaviest_nodepool_that_fits_wins() -> None:
    pools = [nodepool("light", weight=1), nodepool("heavy", weight=50), nodepool("none")]

    result = run([pod("web-0")], pools)

    assert [claim.nodepool for claim in result.nodeclaims] == ["heavy"]


def test_among_equal_weights_the_name_that_sorts_last_is_tried_first() -> None:
    # Karpenter orders NodePools by weight, then by name descending.
    pools = [nodepool("alpha"), nodepool("charlie"), nodepool("bravo")]

    result = run([pod("web-0")], pools)

    assert [claim.nodepool for claim in result.nodeclaims] == ["charlie"]
    weighted = run([pod("web-0")], [*pools, nodepool("aardvark", weight=5)])
    assert [claim.nodepool for claim in weighted.nodeclaims] == ["aardvark"]


def test_limits_drop_types_that_would_exceed_them_and_stop_new_nodes() -> None:
    limited = nodepool("capped", limits={"cpu": 6000})

    result = run(replicas(5, "web", cpu="1500m", memory="1Gi"), [limited])

    # 6 cpu: a medium (4) for two pods, then only a small (2) still fits under the limit.
    assert [claim.instance_type for claim in result.nodeclaims] == ["medium.1", "small.1"]
    assert len(result.unschedulable) == 2
    assert all("limits leave no room" in reason for _, reason in result.unschedulable)


def test_a_node_count_limit_stops_new_nodes() -> None:
    capped = nodepool("capped", limits={"nodes": 2000})  # limits: {nodes: "2"}

    # Each pod needs a large node of its own: only two may be launched.
    result = run(replicas(3, "big", cpu="7", memory="1Gi"), [capped])

    assert [claim.instance_type for claim in result.nodeclaims] == ["large.1", "large.1"]
    ((_, reason),) = result.unschedulable
    assert "limits leave no room for another node (remaining: nodes 0)" in reason


def test_existing_nodes_of_the_pool_count_toward_its_node_limit() -> None:
    node = ExistingNode(
        "node-1", {ZONE: "zone-a", HOSTNAME: "node-1", "karpenter.sh/nodepool": "capped"}, (),
        {"cpu": 1000, "memory": 1 * GIB, "pods": 110_000},
    )
    capped = nodepool("capped", limits={"nodes": 1000})

    result = run([pod("web-0", cpu="1500m")], [capped], nodes=[node])

    assert result.nodeclaims == ()
    assert len(result.unschedulable) == 1


def test_spot_is_chosen_when_the_pool_allows_it_and_it_is_cheaper() -> None:
    catalog = [instance_type("medium.1", 4, 8, 0.20, capacity_types=("on-demand", "spot"))]

    result = run([pod("web-0")], [nodepool(catalog=catalog)])

    (claim,) = result.nodeclaims
    assert (claim.capacity_type, claim.price) == ("spot", 0.08)


def test_on_demand_only_pools_never_launch_spot() -> None:
    catalog = [instance_type("medium.1", 4, 8, 0.20, capacity_types=("on-demand", "spot"))]
    on_demand = nodepool(
        requirements=[Requirement.build("karpenter.sh/capacity-type", "In", ["on-demand"])],
        catalog=catalog,
    )

    (claim,) = run([pod("web-0")], [on_demand]).nodeclaims

    assert (claim.capacity_type, claim.price) == ("on-demand", 0.20)


def test_min_values_keeps_enough_instance_types_or_refuses() -> None:
    flexible = nodepool(
        requirements=[Requirement.build("node.kubernetes.io/instance-type", "Exists", [], 3)]
    )
    (claim,) = run([pod("web-0")], [flexible]).nodeclaims
    assert len(claim.instance_types) == 3

    big_pod = pod("big-0", cpu="3")
    result = run([big_pod], [flexible])
    assert result.nodeclaims == ()
    assert "minValues 3" in result.unschedulable[0][1]


def test_hostname_anti_affinity_puts_each_replica_on_its_own_node() -> None:
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"topologyKey": HOSTNAME, "labelSelector": {"matchLabels": {"app": "db"}}}
            ]
        }
    }

    result = run(replicas(3, "db", affinity=anti))

    assert [len(claim.pods) for claim in result.nodeclaims] == [1, 1, 1]
    assert [claim.instance_type for claim in result.nodeclaims] == ["small.1"] * 3


def test_a_running_pods_anti_affinity_keeps_matching_pods_away() -> None:
    node = ExistingNode("node-1", {ZONE: "zone-a", HOSTNAME: "node-1"}, (), {
        "cpu": 8000, "memory": 16 * GIB, "pods": 110_000})
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"topologyKey": HOSTNAME, "labelSelector": {"matchLabels": {"app": "web"}}}
            ]
        }
    }
    loner = pod("loner-0", affinity=anti, nodeName="node-1")

    result = run([pod("web-0")], nodes=[node], bound_pods=[loner])

    assert result.existing == ()
    assert [claim.pods for claim in result.nodeclaims] == [("default/web-0",)]


def test_zonal_pod_affinity_keeps_replicas_in_one_zone() -> None:
    together = {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"topologyKey": ZONE, "labelSelector": {"matchLabels": {"app": "cache"}}}
            ]
        }
    }

    result = run(replicas(12, "cache", cpu="2", memory="1Gi", affinity=together))

    assert len(result.nodeclaims) > 1
    assert {claim.zone for claim in result.nodeclaims} == {"zone-a"}


def test_hostname_spread_with_max_skew_one_gives_one_pod_per_node() -> None:
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": HOSTNAME,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "api"}},
        }
    ]

    result = run(replicas(4, "api", topologySpreadConstraints=spread))

    assert sorted(len(claim.pods) for claim in result.nodeclaims) == [1, 1, 1, 1]


def test_schedule_anyway_spread_is_dropped_when_it_cannot_be_met() -> None:
    only_zone_a = [instance_type("medium.1", 4, 8, 0.20, zones=("zone-a",))]
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": ZONE,
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": {"app": "api"}},
        }
    ]
    node = ExistingNode("node-b", {ZONE: "zone-b", HOSTNAME: "node-b"}, (), {"cpu": 0})
    bound = [pod(f"api-old-{n}", labels={"app": "api"}, nodeName="node-b") for n in range(3)]

    result = run(
        replicas(3, "api", topologySpreadConstraints=spread),
        [nodepool(catalog=only_zone_a)],
        nodes=[node],
        bound_pods=bound,
    )

    assert result.unschedulable == ()
    assert {claim.zone for claim in result.nodeclaims} == {"zone-a"}


def test_preferred_node_affinity_is_honoured_when_possible_and_dropped_when_not() -> None:
    def prefer(zone: str) -> dict[str, Any]:
        term = {"matchExpressions": [{"key": ZONE, "operator": "In", "values": [zone]}]}
        return {
            "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 10, "preference": term}
                ]
            }
        }

    (claim,) = run([pod("web-0", affinity=prefer("zone-b"))]).nodeclaims
    assert claim.zone == "zone-b"

    result = run([pod("web-0", affinity=prefer("zone-z"))])
    assert result.unschedulable == ()
    assert result.nodeclaims[0].zone is None


def test_later_required_node_affinity_terms_are_tried_in_turn() -> None:
    terms = [
        {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["zone-z"]}]},
        {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["zone-c"]}]},
    ]
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}
        }
    }

    (claim,) = run([pod("web-0", affinity=affinity)]).nodeclaims

    assert claim.zone == "zone-c"


def test_host_ports_never_share_a_node() -> None:
    ports = [{"name": "c", "ports": [{"containerPort": 80, "hostPort": 8080}],
              "resources": {"requests": {"cpu": "100m"}}}]

    result = run(replicas(2, "proxy", containers=ports))

    assert [len(claim.pods) for claim in result.nodeclaims] == [1, 1]


def test_extended_resources_pick_a_type_that_has_them() -> None:
    gpu_type = instance_type("gpu.1", 8, 32, 1.5, extra={"nvidia.com/gpu": 1})
    trainer = parse_pod_spec(
        "default",
        "trainer-0",
        {},
        {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": 1}}}]},
        "spec",
    )

    result = run([trainer], [nodepool(catalog=[*CATALOG, gpu_type])])

    assert [claim.instance_type for claim in result.nodeclaims] == ["gpu.1"]


def test_daemonset_overhead_is_added_to_new_nodes_it_would_run_on() -> None:
    agent = daemonset_from_manifest({
        "kind": "DaemonSet",
        "metadata": {"name": "agent", "namespace": "kube-system"},
        "spec": {"template": {"metadata": {"labels": {"app": "agent"}}, "spec": {
            "containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}}}]}}},
    })
    elsewhere = daemonset_from_manifest({
        "kind": "DaemonSet",
        "metadata": {"name": "gpu-agent", "namespace": "kube-system"},
        "spec": {"template": {"spec": {
            "nodeSelector": {"accelerator": "yes"},
            "containers": [{"name": "a", "resources": {"requests": {"cpu": "4"}}}]}}},
    })

    result = run([pod("web-0", cpu="1500m")], daemonsets=[agent, elsewhere])

    assert [claim.instance_type for claim in result.nodeclaims] == ["medium.1"]


def _agent_with_terms(*terms: list[dict[str, Any]]) -> Any:
    return daemonset_from_manifest({
        "kind": "DaemonSet",
        "metadata": {"name": "agent", "namespace": "kube-system"},
        "spec": {"template": {"spec": {
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": term} for term in terms]}}},
            "containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}}}]}}},
    })


def test_daemonset_overhead_counts_when_any_ored_node_selector_term_matches() -> None:
    # The first term names another pool; the second matches this one. Kubernetes ORs them,
    # so the agent runs on this pool's nodes and its 1 cpu must be planned for.
    agent = _agent_with_terms(
        [{"key": "karpenter.sh/nodepool", "operator": "In", "values": ["gpu"]}],
        [{"key": "karpenter.sh/nodepool", "operator": "In", "values": ["default"]}],
    )
    unrelated = _agent_with_terms(
        [{"key": "karpenter.sh/nodepool", "operator": "In", "values": ["gpu"]}],
        [{"key": "karpenter.sh/nodepool", "operator": "In", "values": ["batch"]}],
    )

    # 1.5 cpu of pod + 1 cpu of agent do not fit the small type (2 cpu).
    assert [c.instance_type for c in run([pod("web-0", cpu="1500m")], daemonsets=[agent])
            .nodeclaims] == ["medium.1"]
    assert [c.instance_type for c in run([pod("web-0", cpu="1500m")], daemonsets=[unrelated])
            .nodeclaims] == ["small.1"]


def test_an_existing_node_reserves_room_for_a_daemonset_matching_its_second_term() -> None:
    agent = _agent_with_terms(
        [{"key": "node-role", "operator": "In", "values": ["gpu"]}],
        [{"key": "node-role", "operator": "In", "values": ["web"]}],
    )
    node = ExistingNode(
        "node-1", {ZONE: "zone-a", HOSTNAME: "node-1", "node-role": "web"}, (),
        {"cpu": 2000, "memory": 8 * GIB, "pods": 110_000},
    )

    # The agent's pod is not running yet: its 1 cpu is kept free, so 1.5 cpu go elsewhere.
    result = run([pod("web-0", cpu="1500m")], nodes=[node], daemonsets=[agent])

    assert result.existing == ()
    assert [claim.instance_type for claim in result.nodeclaims] == ["small.1"]


def test_the_init_container_rule_and_overhead_decide_the_requests() -> None:
    spec = {
        "initContainers": [
            {"name": "migrate", "resources": {"requests": {"cpu": "3"}}},
            {"name": "proxy", "restartPolicy": "Always",
             "resources": {"requests": {"cpu": "250m"}}},
        ],
        "containers": [
            {"name": "a", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}},
            {"name": "b", "resources": {"limits": {"cpu": "500m"}}},
        ],
        "overhead": {"cpu": "100m"},
    }

    parsed = parse_pod_spec("default", "app", {}, spec, "spec")

    assert parsed.requests == {"cpu": 3100, "memory": 1 * GIB, "pods": 1000}


def test_workloads_expand_to_their_replicas() -> None:
    deployment = {
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "shop"},
        "spec": {"replicas": 3, "template": {"metadata": {"labels": {"app": "web"}},
                 "spec": {"containers": [{"name": "c"}]}}},
    }

    pods = pods_from_manifest(deployment)

    assert [p.key for p in pods] == ["shop/web-0", "shop/web-1", "shop/web-2"]
    assert {p.owner for p in pods} == {"Deployment/web"}
    assert [p.key for p in pods_from_manifest(deployment, replicas=1)] == ["shop/web-0"]


def test_bad_pod_fields_name_the_field_and_the_problem() -> None:
    spec = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "lots"}}}]}

    with pytest.raises(SpecError) as raised:
        parse_pod_spec("default", "app", {}, spec, "spec")

    assert raised.value.path == "spec.containers[0].resources.requests"
    assert "'lots' is not a quantity" in raised.value.message


def test_an_empty_problem_plans_nothing() -> None:
    result = run([])

    assert result.to_dict() == {
        "nodeclaims": [], "existing": [], "unschedulable": [], "cost": {"hourly": 0}
    }


# ---------------------------------------------------------------------------------------
# Which nodes a topology spread constraint counts: nodeAffinityPolicy and nodeTaintsPolicy


def zone_spread(**policies: str) -> list[dict[str, Any]]:
    return [
        {
            "maxSkew": 1,
            "topologyKey": ZONE,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "api"}},
            **policies,
        }
    ]


def full_node_in_zone_a(labels: dict[str, str], taints: Sequence[Taint] = ()) -> ExistingNode:
    return ExistingNode(
        "node-a", {ZONE: "zone-a", HOSTNAME: "node-a", **labels}, tuple(taints), {"cpu": 0}
    )


def three_running_api_pods() -> list[Pod]:
    return [pod(f"api-old-{n}", labels={"app": "api"}, nodeName="node-a") for n in range(3)]


def planned_zones(result: SchedulingResult) -> list[str]:
    return sorted(claim.zone or "unpinned" for claim in result.nodeclaims for _ in claim.pods)


def test_pods_on_nodes_outside_the_pods_node_selector_do_not_count_by_default() -> None:
    # Three api pods already run in zone-a, but on a node of another pool: with the default
    # nodeAffinityPolicy Honor they do not count, so the new replicas spread over all zones.
    main = nodepool("main", labels={"pool": "main"})
    running_elsewhere = full_node_in_zone_a({"pool": "other"})

    def plan(**policies: str) -> SchedulingResult:
        new_pods = replicas(
            3, "api", nodeSelector={"pool": "main"}, topologySpreadConstraints=zone_spread(
                **policies)
        )
        return run(new_pods, [main], nodes=[running_elsewhere], bound_pods=three_running_api_pods())

    assert planned_zones(plan()) == ["zone-a", "zone-b", "zone-c"]

    ignored = plan(nodeAffinityPolicy="Ignore")
    assert ignored.unschedulable == ()
    assert "zone-a" not in planned_zones(ignored)


def test_pods_on_nodes_with_untolerated_taints_count_unless_the_policy_honours_taints() -> None:
    dedicated = Taint("dedicated", "batch", "NoSchedule")
    running_on_tainted = full_node_in_zone_a({}, [dedicated])

    def plan(**policies: str) -> SchedulingResult:
        new_pods = replicas(3, "api", topologySpreadConstraints=zone_spread(**policies))
        return run(new_pods, nodes=[running_on_tainted], bound_pods=three_running_api_pods())

    # Default nodeTaintsPolicy Ignore: the three pods in zone-a count, so zone-a is avoided.
    assert "zone-a" not in planned_zones(plan())
    # Honor: the tainted node is left out of the counts, so every zone gets one.
    assert planned_zones(plan(nodeTaintsPolicy="Honor")) == ["zone-a", "zone-b", "zone-c"]


def test_zones_only_a_tainted_pool_offers_hold_back_the_spread_unless_taints_are_honoured() -> (
    None
):
    zone = Requirement.build
    tainted = nodepool(
        "tainted",
        requirements=[zone(ZONE, "In", ["zone-c"])],
        taints=[Taint("dedicated", "batch", "NoSchedule")],
    )
    open_pool = nodepool("open", requirements=[zone(ZONE, "In", ["zone-a", "zone-b"])])

    def plan(**policies: str) -> SchedulingResult:
        new_pods = replicas(4, "api", topologySpreadConstraints=zone_spread(**policies))
        return run(new_pods, [tainted, open_pool])

    # Ignore: zone-c is a domain with zero pods the pods can never reach, so skew stops at one
    # pod per reachable zone.
    held_back = plan()
    assert planned_zones(held_back) == ["zone-a", "zone-b"]
    assert len(held_back.unschedulable) == 2
    assert "topology spread" in held_back.unschedulable[0][1]

    honoured = plan(nodeTaintsPolicy="Honor")
    assert honoured.unschedulable == ()
    assert planned_zones(honoured) == ["zone-a", "zone-a", "zone-b", "zone-b"]


def test_zones_outside_the_pods_node_affinity_count_only_when_the_policy_ignores_it() -> None:
    zone = Requirement.build
    main = nodepool("main", labels={"pool": "main"}, requirements=[
        zone(ZONE, "In", ["zone-a", "zone-b"])])
    other = nodepool("other", labels={"pool": "other"}, requirements=[
        zone(ZONE, "In", ["zone-c"])])

    def plan(**policies: str) -> SchedulingResult:
        new_pods = replicas(
            4, "api", nodeSelector={"pool": "main"},
            topologySpreadConstraints=zone_spread(**policies),
        )
        return run(new_pods, [main, other])

    honoured = plan()
    assert honoured.unschedulable == ()
    assert planned_zones(honoured) == ["zone-a", "zone-a", "zone-b", "zone-b"]

    ignored = plan(nodeAffinityPolicy="Ignore")
    assert planned_zones(ignored) == ["zone-a", "zone-b"]
    assert len(ignored.unschedulable) == 2


def test_cpu_heavy_and_memory_heavy_pods_share_nodes_instead_of_wasting_them() -> None:
    # Every type has 2 GiB per vCPU. Taken largest cpu first, the four cpu-heavy pods would
    # fill a box.8 leaving its memory idle, and the memory-heavy ones another box.8 ($0.80).
    # Mixed, they fit one box.8 and a box.2.
    catalog = [
        instance_type("box.2", 2, 4, 0.10),
        instance_type("box.4", 4, 8, 0.20),
        instance_type("box.8", 8, 16, 0.40),
    ]
    pods = replicas(4, "compute", cpu="2", memory="512Mi") + replicas(
        4, "cache", cpu="250m", memory="3584Mi"
    )

    result = run(pods, [nodepool(catalog=catalog)])

    assert result.unschedulable == ()
    assert sorted(claim.instance_type for claim in result.nodeclaims) == ["box.2", "box.8"]
    assert result.hourly_cost == pytest.approx(0.50)


def test_a_claim_grows_into_a_bigger_type_that_is_as_cost_efficient() -> None:
    # Forty pods of 1 vCPU: growing past a node's price is allowed because the bigger types
    # cost the same per vCPU, so five large nodes are planned rather than many small ones.
    result = run(replicas(40, "web", cpu="1", memory="1Gi"))

    assert [claim.instance_type for claim in result.nodeclaims] == ["large.1"] * 5
    assert result.hourly_cost == pytest.approx(2.0)


# ---------------------------------------------------------------------------------------
# Which namespaces a pod (anti-)affinity term looks at: namespaces and namespaceSelector

NAMESPACE_LABELS = {"ledger": {"team": "payments"}, "sandbox": {"team": "playground"}}


def pod_in(namespace: str, name: str, **spec: Any) -> Pod:
    labels = spec.pop("labels", {"app": name.rsplit("-", 1)[0]})
    body = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "500m"}}}]}
    body.update(spec)
    return parse_pod_spec(namespace, name, labels, body, "spec")


def roomy_node(name: str, zone: str = "zone-a", **node: Any) -> ExistingNode:
    return ExistingNode(
        name, {ZONE: zone, HOSTNAME: name}, (), {"cpu": 8000, "memory": 16 * GIB,
                                                  "pods": 110_000}, **node
    )


def db_anti_affinity(**scope: Any) -> dict[str, Any]:
    term = {"topologyKey": HOSTNAME, "labelSelector": {"matchLabels": {"app": "db"}}, **scope}
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


@pytest.mark.parametrize(
    ("scope", "placement"),
    [
        # No namespaces and no selector: only db pods in the pod's own namespace count,
        # and neither running db pod is in "default".
        ({}, (("node-1", ("default/backup-0",)),)),
        # The selector picks namespaces by their labels: ledger is the payments team's.
        (
            {"namespaceSelector": {"matchLabels": {"team": "payments"}}},
            (("node-2", ("default/backup-0",)),),
        ),
        # A namespace with no manifest still has its kubernetes.io/metadata.name label.
        (
            {"namespaceSelector": {"matchExpressions": [
                {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["quiet"]}
            ]}},
            (("node-1", ("default/backup-0",)),),
        ),
        # Listed namespaces and selected ones add up: both nodes are off limits.
        (
            {"namespaces": ["sandbox"],
             "namespaceSelector": {"matchLabels": {"team": "payments"}}},
            (),
        ),
        # An empty selector means every namespace.
        ({"namespaceSelector": {}}, ()),
    ],
    ids=["own-namespace", "selector-by-label", "metadata-name", "list-plus-selector", "all"],
)
def test_an_anti_affinity_term_sees_pods_in_the_namespaces_it_selects(
    scope: dict[str, Any], placement: tuple[tuple[str, tuple[str, ...]], ...]
) -> None:
    # A db pod runs on node-1 (namespace ledger) and one on node-2 (namespace sandbox).
    running = [
        pod_in("ledger", "db-0", nodeName="node-1"),
        pod_in("sandbox", "db-1", nodeName="node-2"),
    ]
    backup = pod_in("default", "backup-0", affinity=db_anti_affinity(**scope))

    result = run(
        [backup],
        nodes=[roomy_node("node-1"), roomy_node("node-2")],
        bound_pods=running,
        namespaces=NAMESPACE_LABELS,
    )

    assert result.existing == placement
    assert len(result.nodeclaims) == (0 if placement else 1)


def test_zonal_affinity_follows_pods_only_in_the_selected_namespaces() -> None:
    # Cache pods run in zone-a (namespace sandbox) and zone-b (namespace ledger) on full
    # nodes; the new pod wants to be near the payments team's cache only.
    nodes = [
        ExistingNode("node-a", {ZONE: "zone-a", HOSTNAME: "node-a"}, (), {"cpu": 0}),
        ExistingNode("node-b", {ZONE: "zone-b", HOSTNAME: "node-b"}, (), {"cpu": 0}),
    ]
    running = [
        pod_in("sandbox", "cache-0", nodeName="node-a"),
        pod_in("ledger", "cache-1", nodeName="node-b"),
    ]
    near = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
        "topologyKey": ZONE,
        "labelSelector": {"matchLabels": {"app": "cache"}},
        "namespaceSelector": {"matchLabels": {"team": "payments"}},
    }]}}

    result = run(
        [pod_in("default", "worker-0", affinity=near)],
        nodes=nodes,
        bound_pods=running,
        namespaces=NAMESPACE_LABELS,
    )

    assert [claim.zone for claim in result.nodeclaims] == ["zone-b"]


# ---------------------------------------------------------------------------------------
# Cordoned nodes: no new pods, but the pods on them still count


def test_pods_on_a_cordoned_node_count_toward_zone_spread_but_it_takes_no_new_pods() -> None:
    cordoned = roomy_node("node-a", unschedulable=True)
    running = [pod(f"api-old-{n}", labels={"app": "api"}, nodeName="node-a") for n in range(2)]

    result = run(
        replicas(2, "api", topologySpreadConstraints=zone_spread()),
        nodes=[cordoned],
        bound_pods=running,
    )

    assert result.existing == ()
    assert result.unschedulable == ()
    assert planned_zones(result) == ["zone-b", "zone-c"]


def test_a_pod_on_a_cordoned_node_keeps_its_anti_affinity() -> None:
    cordoned = roomy_node("node-a", unschedulable=True)
    apart = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": ZONE, "labelSelector": {"matchLabels": {"app": "web"}}}
    ]}}
    loner = pod("loner-0", affinity=apart, nodeName="node-a")

    zone_a_only = nodepool(requirements=[Requirement.single(ZONE, "zone-a")])

    result = run([pod("web-0")], [zone_a_only], nodes=[cordoned], bound_pods=[loner])

    assert result.existing == ()
    assert result.nodeclaims == ()
    ((name, reason),) = result.unschedulable
    assert name == "default/web-0"
    assert "anti-affinity" in reason


def test_a_cordoned_nodes_pods_do_not_count_when_spread_honours_taints() -> None:
    # Kubernetes taints a cordoned node node.kubernetes.io/unschedulable:NoSchedule, so a
    # spread constraint with nodeTaintsPolicy Honor leaves its pods out of the counts.
    cordoned = roomy_node("node-a", unschedulable=True)
    running = [pod(f"api-old-{n}", labels={"app": "api"}, nodeName="node-a") for n in range(3)]

    result = run(
        replicas(3, "api", topologySpreadConstraints=zone_spread(nodeTaintsPolicy="Honor")),
        nodes=[cordoned],
        bound_pods=running,
    )

    assert result.existing == ()
    assert planned_zones(result) == ["zone-a", "zone-b", "zone-c"]
