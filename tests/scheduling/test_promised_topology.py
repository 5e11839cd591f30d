"""Which pods promised to machines by an earlier solve their topology still lets go there
(`solver.promised.refused_by_topology`): judged as the solver judges a pod landing on an
existing node, for the rules Kubernetes enforces, against the pods bound now and the other
promised pods (the provisioner's nomination hold, `nominations.still_fitting`)."""

from __future__ import annotations

from typing import Any

from nodewright.scheduling.pods import ExistingNode, Pod, Taint
from nodewright.scheduling.solver.promised import Machine, refused_by_topology
from tests.scheduling.test_solver import HOSTNAME, ZONE, pod

WEB = {"app": "web"}


def machine(name: str, zone: str | None, *bound: Pod, settled: bool = True,
            taints: tuple[Taint, ...] = (), **labels: str) -> Machine:
    node_labels = {HOSTNAME: name, **labels}
    if zone is not None:
        node_labels[ZONE] = zone
    return Machine(ExistingNode(name, node_labels, taints, {"cpu": 4000}), bound, settled)


def spread(key: str = ZONE, **extra: Any) -> list[dict[str, Any]]:
    return [{"maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule",
             "labelSelector": {"matchLabels": WEB}, **extra}]


def web(name: str, labels: dict[str, str] | None = None, **spec: Any) -> Pod:
    spec.setdefault("topologySpreadConstraints", spread())
    return pod(name, labels=labels or WEB, **spec)


def plain(name: str, app: str) -> Pod:
    return pod(name, labels={"app": app})


def term(app: str, key: str = HOSTNAME) -> dict[str, Any]:
    return {"topologyKey": key, "labelSelector": {"matchLabels": {"app": app}}}


def avoiding(app: str, key: str = HOSTNAME) -> dict[str, Any]:
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        term(app, key)]}}


def near(app: str, key: str = ZONE) -> dict[str, Any]:
    return {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        term(app, key)]}}


def three_zones(a: int, b: int, c: int) -> list[Machine]:
    """One machine a zone, with that many replicas of web bound."""
    return [machine(f"node-{zone}", f"zone-{zone}",
                    *(web(f"bound-{zone}-{n}") for n in range(count)))
            for zone, count in zip("abc", (a, b, c), strict=True)]


def test_a_replica_promised_to_a_zone_its_bound_siblings_over_skewed_is_refused() -> None:
    # The wide_deployments case: 6, 5 and 6 bound; the one promised to zone c would make 7.
    refused = refused_by_topology(three_zones(6, 5, 6), [(web("web-17"), "node-c")])

    assert refused == {0}


def test_a_replica_promised_to_the_least_loaded_zone_keeps_its_place() -> None:
    assert refused_by_topology(three_zones(6, 5, 6), [(web("web-17"), "node-b")]) == set()


def test_replicas_promised_together_count_each_other_in() -> None:
    # Nothing bound yet: two promised to zone a, one each to b and c (a skew of 1 once all
    # bind). Judged one by one against the bound pods alone, the second in zone a would
    # see a skew of 2.
    promised = [(web("web-1"), "node-a"), (web("web-2"), "node-a"),
                (web("web-3"), "node-b"), (web("web-4"), "node-c")]

    assert refused_by_topology(three_zones(0, 0, 0), promised) == set()


def test_a_refused_replica_no_longer_counts_for_the_others() -> None:
    # 2, 0, 0 bound; promised: two to zone a (4 there: both over), one to b, one to c.
    # Refusing one of zone a leaves 3 against 1: the other is refused too; b and c hold.
    promised = [(web("web-1"), "node-a"), (web("web-2"), "node-a"),
                (web("web-3"), "node-b"), (web("web-4"), "node-c")]

    assert refused_by_topology(three_zones(2, 0, 0), promised) == {0, 1}


def test_a_machine_not_launched_yet_is_not_judged_on_a_zone_it_does_not_have() -> None:
    unlaunched = machine("claim-1", None, settled=False)
    registered_without_zone = machine("node-x", None)
    promised = [(web("web-1"), "claim-1"), (web("web-2"), "node-x")]

    refused = refused_by_topology([*three_zones(1, 1, 1), unlaunched, registered_without_zone],
                                  promised)

    # kube-scheduler refuses a node without the key; the NodeClaim gets its zone at launch.
    assert refused == {1}


def test_hostname_spread_takes_kube_schedulers_minimum_over_the_registered_nodes() -> None:
    # Not the zero of Karpenter's nextDomainTopologySpread (a solve can always add a
    # node): kube-scheduler binds a second replica on a node while every node it counts
    # holds one, so the place is kept.
    def replica(name: str) -> Pod:
        return web(name, topologySpreadConstraints=spread(HOSTNAME))

    crowded = machine("node-a", "zone-a", replica("web-1"))
    promised = [(replica("web-3"), "node-a")]

    assert refused_by_topology([crowded, machine("node-b", "zone-b")], promised) == {0}
    assert refused_by_topology(
        [crowded, machine("node-b", "zone-b", replica("web-2"))], promised) == set()
    # A machine not registered yet is no node kube-scheduler counts.
    assert refused_by_topology(
        [crowded, machine("claim-1", None, settled=False)], promised) == set()
    assert refused_by_topology(
        [crowded, machine("node-b", "zone-b")], [(replica("web-3"), "node-b")]) == set()


def test_min_domains_counts_missing_zones_as_empty() -> None:
    machines = three_zones(1, 1, 0)[:2]  # machines in two zones only
    plain_spread = web("web-3")
    wants_three = web("web-3", topologySpreadConstraints=spread(minDomains=3))

    assert refused_by_topology(machines, [(plain_spread, "node-a")]) == set()
    assert refused_by_topology(machines, [(wants_three, "node-a")]) == {0}


def test_node_taints_policy_honor_leaves_a_tainted_zone_out_of_the_minimum() -> None:
    tainted = Taint("dedicated", "gpu", "NoSchedule")
    machines = [*three_zones(1, 1, 0)[:2], machine("node-c", "zone-c", taints=(tainted,))]
    ignoring = web("web-3")
    honoring = web("web-3", topologySpreadConstraints=spread(nodeTaintsPolicy="Honor"))

    assert refused_by_topology(machines, [(ignoring, "node-a")]) == {0}
    assert refused_by_topology(machines, [(honoring, "node-a")]) == set()


def test_node_affinity_policy_ignore_counts_zones_the_pod_cannot_go_to() -> None:
    machines = [machine("node-a", "zone-a", web("bound-a"), pool="main"),
                machine("node-b", "zone-b", web("bound-b"), pool="main"),
                machine("node-c", "zone-c", pool="other")]
    honoring = web("web-3", nodeSelector={"pool": "main"})
    ignoring = web("web-3", nodeSelector={"pool": "main"},
                   topologySpreadConstraints=spread(nodeAffinityPolicy="Ignore"))

    assert refused_by_topology(machines, [(honoring, "node-a")]) == set()
    assert refused_by_topology(machines, [(ignoring, "node-a")]) == {0}


def test_match_label_keys_count_only_the_pods_of_the_same_revision() -> None:
    old = {"app": "web", "pod-template-hash": "old"}
    new = {"app": "web", "pod-template-hash": "new"}
    machines = [machine("node-a", "zone-a", web("old-1", old), web("old-2", old)),
                machine("node-b", "zone-b"), machine("node-c", "zone-c")]
    by_revision = web("new-1", new,
                      topologySpreadConstraints=spread(matchLabelKeys=["pod-template-hash"]))

    assert refused_by_topology(machines, [(web("new-1", new), "node-a")]) == {0}
    assert refused_by_topology(machines, [(by_revision, "node-a")]) == set()


def test_required_pod_affinity_needs_a_matching_pod_in_the_machines_zone() -> None:
    machines = [machine("node-a", "zone-a"), machine("node-b", "zone-b", plain("db-1", "db"))]
    client = pod("client-1", labels={"app": "client"}, affinity=near("db"))

    assert refused_by_topology(machines, [(client, "node-a")]) == {0}
    assert refused_by_topology(machines, [(client, "node-b")]) == set()


def test_a_promised_pod_its_company_was_promised_with_keeps_its_place() -> None:
    # The db is promised too, to the same zone: together they hold.
    machines = [machine("node-a", "zone-a"), machine("node-b", "zone-b")]
    client = pod("client-1", labels={"app": "client"}, affinity=near("db"))

    assert refused_by_topology(
        machines, [(client, "node-a"), (plain("db-1", "db"), "node-a")]) == set()


def test_a_bound_pods_anti_affinity_refuses_the_pods_it_repels() -> None:
    guard = pod("guard", labels={"app": "guard"}, affinity=avoiding("web", ZONE))
    machines = [machine("node-a", "zone-a", guard), machine("node-b", "zone-b")]

    assert refused_by_topology(machines, [(plain("web-1", "web"), "node-a")]) == {0}
    assert refused_by_topology(machines, [(plain("web-1", "web"), "node-b")]) == set()


def test_of_two_promised_pods_that_exclude_each_other_the_first_keeps_its_place() -> None:
    loners = [pod(f"loner-{n}", labels={"app": "loner"}, affinity=avoiding("loner"))
              for n in (1, 2)]
    machines = [machine("node-a", "zone-a")]

    assert refused_by_topology(machines, [(loners[0], "node-a"), (loners[1], "node-a")]) == {1}


def test_preferences_and_schedule_anyway_spread_refuse_nothing() -> None:
    soft = web("web-17", topologySpreadConstraints=spread(whenUnsatisfiable="ScheduleAnyway"),
               affinity={"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                   {"weight": 1, "podAffinityTerm": term("web")}]}})

    assert refused_by_topology(three_zones(6, 5, 6), [(soft, "node-c")]) == set()
