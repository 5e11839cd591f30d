"""Property: for random pods, NodePools and catalogs, every placement the solver makes is legal.

Checked on each planned NodeClaim, taking its cheapest instance type as the node that
launches: resources (with DaemonSet overhead), taints, nodeSelectors, NodePool
requirements, hostname anti-affinity, zone spread (maxSkew), host ports and limits.
Every pod ends up placed exactly once or reported unschedulable with a reason.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nodewright.scheduling.catalog import InstanceType
from nodewright.scheduling.nodepools import NodePoolTemplate
from nodewright.scheduling.pods import Pod, Taint, daemonset_from_manifest, parse_pod_spec
from nodewright.scheduling.requirements import Requirement
from nodewright.scheduling.solver import SchedulingProblem, SchedulingResult, solve
from tests.scheduling.test_solver import ZONE, ZONES, instance_type, nodepool
from tests.support.scheduling import single_values

TIERS = ("gold", "silver")
TEAMS = ("red", "blue")


@st.composite
def catalogs(draw: st.DrawFn) -> list[InstanceType]:
    count = draw(st.integers(1, 5))
    types = []
    for index in range(count):
        cpu = draw(st.integers(1, 16))
        memory = draw(st.integers(1, 32))
        types.append(
            instance_type(
                f"t{index}.x",
                cpu,
                memory,
                round(0.01 * cpu + 0.005 * memory + draw(st.integers(0, 5)) * 0.001, 4),
                pods=draw(st.integers(3, 30)),
                capacity_types=draw(
                    st.sampled_from([("on-demand",), ("spot",), ("on-demand", "spot")])
                ),
                labels={"tier": draw(st.sampled_from(TIERS))},
            )
        )
    return types


@st.composite
def pools(draw: st.DrawFn, catalog: list[InstanceType]) -> list[NodePoolTemplate]:
    result = []
    for index in range(draw(st.integers(1, 3))):
        requirements = []
        if draw(st.booleans()):
            tiers = draw(st.lists(st.sampled_from(TIERS), min_size=1, max_size=2, unique=True))
            requirements.append(Requirement.build("tier", "In", tiers))
        taints = [Taint("dedicated", "batch", "NoSchedule")] if draw(st.booleans()) else []
        limits = {"cpu": draw(st.integers(2, 40)) * 1000} if draw(st.booleans()) else None
        result.append(
            nodepool(
                f"pool-{index}",
                requirements=requirements,
                labels={"team": draw(st.sampled_from(TEAMS))},
                taints=taints,
                weight=draw(st.integers(0, 3)),
                limits=limits,
                catalog=catalog,
            )
        )
    return result


@st.composite
def workloads(draw: st.DrawFn) -> list[Pod]:
    pods = []
    for group in range(draw(st.integers(1, 4))):
        spec: dict[str, Any] = {
            "containers": [{
                "name": "c",
                "resources": {"requests": {
                    "cpu": f"{draw(st.integers(1, 40)) * 100}m",
                    "memory": f"{draw(st.integers(1, 16)) * 256}Mi",
                }},
            }]
        }
        if draw(st.booleans()):
            spec["nodeSelector"] = {"team": draw(st.sampled_from(TEAMS))}
        if draw(st.booleans()):
            spec["tolerations"] = [{"key": "dedicated", "operator": "Exists"}]
        rule = draw(st.sampled_from(["none", "spread", "anti", "port"]))
        selector = {"matchLabels": {"group": str(group)}}
        if rule == "spread":
            spec["topologySpreadConstraints"] = [{
                "maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": selector,
            }]
        elif rule == "anti":
            term = {"topologyKey": "kubernetes.io/hostname", "labelSelector": selector}
            spec["affinity"] = {
                "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
            }
        elif rule == "port":
            spec["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": 9000}]
        labels = {"group": str(group), "rule": rule}
        for replica in range(draw(st.integers(1, 8))):
            pods.append(parse_pod_spec("default", f"g{group}-{replica}", labels, spec, "spec"))
    return pods


DAEMON = daemonset_from_manifest({
    "kind": "DaemonSet",
    "metadata": {"name": "agent", "namespace": "kube-system"},
    "spec": {"template": {"spec": {
        "nodeSelector": {"team": "red"},
        "containers": [{"name": "a", "resources": {"requests": {"cpu": "200m", "memory": "64Mi"}}}],
    }}},
})


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_placement_satisfies_every_constraint(data: st.DataObject) -> None:
    catalog = data.draw(catalogs())
    templates = data.draw(pools(catalog))
    pods = data.draw(workloads())

    result = solve(SchedulingProblem(pods=pods, nodepools=templates, daemonsets=[DAEMON]))

    check_plan(result, pods, templates, catalog)


def check_plan(
    result: SchedulingResult,
    pods: list[Pod],
    templates: list[NodePoolTemplate],
    catalog: list[InstanceType],
) -> None:
    by_key = {pod.key: pod for pod in pods}
    placed = [key for claim in result.nodeclaims for key in claim.pods]
    assert len(placed) == len(set(placed))
    failed = {key for key, _ in result.unschedulable}
    assert set(placed) | failed == set(by_key) and not set(placed) & failed
    assert all(reason for _, reason in result.unschedulable)

    types = {it.name: it for it in catalog}
    pools = {pool.name: pool for pool in templates}
    used: Counter[str] = Counter()
    zone_counts: dict[str, Counter[str]] = {}
    for claim in result.nodeclaims:
        pool = pools[claim.nodepool]
        node_type = types[claim.instance_type]
        labels = {**node_type.labels, **single_values(pool.requirements)}
        if "tier" in pool.requirements:
            assert pool.requirements["tier"].has(labels["tier"])
        claim_pods = [by_key[key] for key in claim.pods]

        overhead = {"cpu": 0, "memory": 0, "pods": 0}
        # The agent DaemonSet selects team=red and tolerates no taint.
        if labels.get("team") == "red" and not pool.taints:
            overhead = {"cpu": 200, "memory": 64 * 2**20 * 1000, "pods": 1000}
        for resource, capacity in node_type.allocatable.items():
            requested = sum(p.requests.get(resource, 0) for p in claim_pods)
            assert requested + overhead.get(resource, 0) <= capacity, (claim, resource)

        offering_ok = any(
            o.available and o.capacity_type == claim.capacity_type and o.price == claim.price
            and (claim.zone is None or o.zone == claim.zone)
            for o in node_type.offerings
        )
        assert offering_ok
        for pod in claim_pods:
            for taint in pool.taints:
                assert any(t.tolerates(taint) for t in pod.tolerations)
            for key, value in pod.node_selector.items():
                assert labels.get(key) == value
        anti_groups = Counter(p.labels["group"] for p in claim_pods if p.labels["rule"] == "anti")
        assert all(count == 1 for count in anti_groups.values())
        port_pods = [p for p in claim_pods if p.host_ports]
        assert len(port_pods) <= 1
        for pod in claim_pods:
            if pod.labels["rule"] == "spread":
                assert claim.zone is not None
                zone_counts.setdefault(pod.labels["group"], Counter())[claim.zone] += 1
        if pool.limits is not None:
            used[claim.nodepool] += node_type.capacity["cpu"]

    for name, total in used.items():
        limits = pools[name].limits
        assert limits is not None and total <= limits["cpu"]
    for counts in zone_counts.values():
        per_zone = [counts.get(zone, 0) for zone in ZONES]
        assert max(per_zone) - min(per_zone) <= 1, counts
    assert abs(result.hourly_cost - sum(c.price for c in result.nodeclaims)) < 1e-9
