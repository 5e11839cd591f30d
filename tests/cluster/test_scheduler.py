"""kube-scheduler in the in-memory cluster: where pods land, and what pending pods say."""

from __future__ import annotations

from collections import Counter
from typing import Any

from nodewright.cluster import objects
from tests.cluster.world import HOSTNAME, ZONE, World, node, pod, workload


def anti_affinity(app: str, key: str = HOSTNAME) -> dict[str, Any]:
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}]}}


def test_a_pod_goes_where_its_requests_fit() -> None:
    world = World()
    world.apply(node("small", cpu="1"), node("big", cpu="4"))
    world.apply(pod("web", cpu="3"))
    assert world.placements() == {"web": "big"}
    scheduled = objects.condition(world.pod("web"), "PodScheduled") or {}
    assert scheduled.get("status") == "True"


def test_a_pod_that_fits_nowhere_says_why_like_kube_scheduler() -> None:
    world = World()
    world.apply(
        node("tiny", memory="1Gi", labels={"team": "a"}),
        node("other-1", labels={"team": "b"}),
        node("other-2", labels={"team": "b"}),
    )
    world.apply(pod("web", memory="2Gi", nodeSelector={"team": "a"}))
    assert world.placements() == {"web": None}
    assert world.pending_message("web") == (
        "0/3 nodes are available: 1 Insufficient memory, "
        "2 node(s) didn't match Pod's node affinity/selector."
    )
    events = world.cluster.list("Event")
    assert [(e["reason"], e["type"], e["regarding"]["name"]) for e in events] == [
        ("FailedScheduling", "Warning", "web")]


def test_a_pending_pod_is_bound_when_a_node_arrives() -> None:
    world = World()
    world.apply(pod("web", cpu="1"))
    assert world.pending_message("web") == "no nodes available to schedule pods"
    world.apply(node("n1"))
    # No plugin rejected it (there were no nodes): it is retried when its backoff
    # (1 s after the first attempt) runs out, not on the Node event.
    world.run(1)
    assert world.placements() == {"web": "n1"}


def test_init_containers_count_as_kubernetes_computes_them() -> None:
    world = World()
    world.apply(node("n1", cpu="2"))
    init = {"name": "init", "image": "init", "resources": {"requests": {"cpu": "3"}}}
    world.apply(pod("migrate", cpu="1", initContainers=[init]))
    assert world.pending_message("migrate") == "0/1 nodes are available: 1 Insufficient cpu."


def test_pod_level_requests_count_as_kubernetes_computes_them() -> None:
    """component-helpers PodRequests: pod-level `spec.resources` replace the containers'
    total for cpu and memory (KEP-2837)."""
    world = World()
    world.apply(node("small", cpu="2"), node("big", cpu="8"))
    world.apply(pod("batch", cpu="100m", resources={"requests": {"cpu": "6"}}))
    assert world.placements() == {"batch": "big"}


def test_a_resized_pod_holds_what_its_status_reports() -> None:
    """PodRequests(UseStatusResources): a bound pod whose resize down is still in
    progress keeps its larger allocation, so a second pod does not fit beside it."""
    world = World()
    world.apply(node("n1", cpu="4"))
    world.apply(pod("db", cpu="1", nodeName="n1"))
    world.cluster.patch("Pod", "db", {"status": {"containerStatuses": [{
        "name": "app", "resources": {"requests": {"cpu": "1"}},
        "allocatedResources": {"cpu": "3500m"}}]}}, "default", subresource="status")
    world.apply(pod("web", cpu="1"))
    assert world.pending_message("web") == "0/1 nodes are available: 1 Insufficient cpu."


def test_a_pod_claiming_devices_finds_no_node_without_a_dra_driver() -> None:
    world = World()
    world.apply(node("n1"))
    world.apply(pod("trainer", resourceClaims=[{"name": "gpu",
                                                 "resourceClaimTemplateName": "gpu"}]))
    assert world.pending_message("trainer") == (
        "0/1 nodes are available: 1 cannot allocate all claims.")


def test_the_pod_count_is_a_resource() -> None:
    world = World()
    world.apply(node("n1", pods=2))
    world.apply(pod("a"), pod("b"), pod("c"))
    assert sorted(world.placements().items()) == [("a", "n1"), ("b", "n1"), ("c", None)]
    assert world.pending_message("c") == "0/1 nodes are available: 1 Too many pods."


def test_taints_keep_pods_away_unless_tolerated() -> None:
    world = World()
    gpu_taint = {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}
    world.apply(node("gpu", taints=[gpu_taint]))
    world.apply(pod("web"))
    assert world.pending_message("web") == (
        "0/1 nodes are available: 1 node(s) had untolerated taint {nvidia.com/gpu: true}.")
    world.apply(pod("trainer", tolerations=[
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]))
    assert world.placements()["trainer"] == "gpu"


def test_nodes_not_ready_unregistered_or_cordoned_take_no_pods() -> None:
    world = World()
    world.apply(
        node("booting", ready=False),
        node("joining", taints=[{"key": "karpenter.sh/unregistered", "effect": "NoExecute"}]),
        node("draining", unschedulable=True),
    )
    world.apply(pod("web"))
    assert world.pending_message("web") == (
        "0/3 nodes are available: 1 node(s) had untolerated taint "
        "{karpenter.sh/unregistered: }, 1 node(s) had untolerated taint "
        "{node.kubernetes.io/not-ready: }, 1 node(s) were unschedulable."
    )
    world.cluster.patch("Node", "booting", {"status": {"conditions": [
        {"type": "Ready", "status": "True"}]}}, subresource="status")
    # The not-ready taint going is what TaintToleration's hint waits for; the pod is
    # tried again once its 1 s backoff has run out.
    world.run(1)
    assert world.placements() == {"web": "booting"}


def test_required_anti_affinity_puts_one_pod_per_node() -> None:
    world = World()
    world.apply(node("n1"), node("n2"))
    world.apply(workload("Deployment", "web", 3, affinity=anti_affinity("web")))
    nodes = Counter(world.placements().values())
    assert nodes == {"n1": 1, "n2": 1, None: 1}
    pending = next(name for name, where in world.placements().items() if where is None)
    assert world.pending_message(pending) == (
        "0/2 nodes are available: 2 node(s) didn't match pod anti-affinity rules.")


def test_existing_pods_anti_affinity_keeps_others_out() -> None:
    world = World()
    world.apply(node("n1"))
    world.apply(pod("loner", labels={"app": "loner"}, affinity=anti_affinity("web")))
    world.apply(pod("web", labels={"app": "web"}))
    assert world.pending_message("web") == (
        "0/1 nodes are available: 1 node(s) didn't satisfy existing pods anti-affinity rules.")


def test_required_affinity_follows_the_pods_it_wants() -> None:
    world = World()
    world.apply(node("a1", zone="a"), node("b1", zone="b"), node("b2", zone="b"))
    world.apply(pod("db", labels={"app": "db"}, nodeSelector={HOSTNAME: "b2"}))
    near_db = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": ZONE}]}}
    world.apply(workload("Deployment", "cache", 4, affinity=near_db))
    zones = {name: where for name, where in world.placements().items() if name != "db"}
    assert set(zones.values()) <= {"b1", "b2"} and len(zones) == 4


def test_the_first_pod_of_a_self_affine_group_may_start_it() -> None:
    world = World()
    world.apply(node("a1", zone="a"), node("b1", zone="b"))
    together = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "band"}}, "topologyKey": ZONE}]}}
    world.apply(workload("Deployment", "band", 3, labels={"app": "band"}, affinity=together))
    assert len({where for where in world.placements().values()}) == 1
    assert None not in world.placements().values()


def spread(key: str = ZONE, **extra: Any) -> list[dict[str, Any]]:
    return [{"maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule",
             "labelSelector": {"matchLabels": {"app": "web"}}, **extra}]


def test_topology_spread_balances_three_zones() -> None:
    world = World()
    world.apply(node("a1", zone="a", cpu="8"), node("a2", zone="a", cpu="8"),
                node("b1", zone="b"), node("c1", zone="c"))
    world.apply(workload("Deployment", "web", 6, topologySpreadConstraints=spread()))
    zone_of = {"a1": "a", "a2": "a", "b1": "b", "c1": "c"}
    per_zone = Counter(zone_of[str(where)] for where in world.placements().values())
    assert per_zone == {"a": 2, "b": 2, "c": 2}


def test_spread_with_min_domains_holds_pods_back_until_enough_zones() -> None:
    world = World()
    world.apply(node("a1", zone="a"), node("b1", zone="b"))
    world.apply(workload("Deployment", "web", 3,
                         topologySpreadConstraints=spread(minDomains=3)))
    assert Counter(world.placements().values()) == {"a1": 1, "b1": 1, None: 1}
    pending = next(name for name, where in world.placements().items() if where is None)
    assert world.pending_message(pending) == (
        "0/2 nodes are available: 2 node(s) didn't match pod topology spread constraints.")
    world.apply(node("c1", zone="c"))
    world.run(1)  # the spread plugin's hint admits the new zone; then the backoff
    assert Counter(world.placements().values()) == {"a1": 1, "b1": 1, "c1": 1}


def test_spread_ignores_nodes_the_pod_could_never_use_when_told_to_honor_them() -> None:
    world = World()
    taint = [{"key": "dedicated", "value": "batch", "effect": "NoSchedule"}]
    world.apply(node("a1", zone="a", cpu="8"), node("b1", zone="b", cpu="8"),
                node("c1", zone="c", taints=taint))
    honor = spread(nodeTaintsPolicy="Honor")
    world.apply(workload("Deployment", "web", 4, topologySpreadConstraints=honor))
    assert Counter(world.placements().values()) == {"a1": 2, "b1": 2}


def test_a_node_without_the_topology_key_cannot_take_a_spread_pod() -> None:
    world = World()
    world.apply(node("nozone"))
    world.apply(pod("web", labels={"app": "web"}, topologySpreadConstraints=spread()))
    assert world.pending_message("web") == (
        "0/1 nodes are available: 1 node(s) didn't match pod topology spread constraints "
        "(missing required label).")


def test_host_ports_do_not_collide() -> None:
    world = World()
    world.apply(node("n1"), node("n2"))
    world.apply(pod("a", host_port=8080), pod("b", host_port=8080), pod("c", host_port=8080))
    assert Counter(world.placements().values()) == {"n1": 1, "n2": 1, None: 1}
    assert world.pending_message("c") == (
        "0/2 nodes are available: 2 node(s) didn't have free ports for the requested pod ports.")


def test_the_least_allocated_node_wins_and_ties_go_by_name() -> None:
    world = World()
    world.apply(node("n1", cpu="4"), node("n2", cpu="4"), node("n3", cpu="4"))
    world.apply(pod("busy", cpu="3", nodeSelector={HOSTNAME: "n1"}))
    world.apply(pod("next", cpu="1"))
    assert world.placements()["next"] == "n2"
    world.apply(pod("after", cpu="1"))
    assert world.placements()["after"] == "n3"


def test_preferred_node_affinity_breaks_the_tie() -> None:
    world = World()
    world.apply(node("n1", labels={"disk": "hdd"}), node("n2", labels={"disk": "ssd"}))
    prefer_ssd = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 10, "preference": {"matchExpressions": [
            {"key": "disk", "operator": "In", "values": ["ssd"]}]}}]}}
    world.apply(pod("db", affinity=prefer_ssd))
    assert world.placements() == {"db": "n2"}


def test_thousands_of_identical_pending_replicas_share_one_verdict() -> None:
    world = World()
    world.apply(node("n1", cpu="1"))
    world.apply(workload("Deployment", "web", 1000, cpu="2"))
    pending = [p for p in world.pods() if not p["spec"].get("nodeName")]
    assert len(pending) == 1000
    assert {world.pending_message(objects.name(p)) for p in pending} == {
        "0/1 nodes are available: 1 Insufficient cpu."}


def test_a_pod_the_scheduler_cannot_read_says_which_field_is_wrong() -> None:
    world = World()
    world.apply(node("n1"))
    world.apply(pod("odd", tolerations=[{"key": "a", "operator": "Maybe"}]))
    condition = objects.condition(world.pod("odd"), "PodScheduled") or {}
    assert (condition.get("status"), condition.get("reason")) == ("False", "SchedulerError")
    assert condition.get("message") == (
        "pod default/odd: spec.tolerations[0].operator: expected Equal or Exists, got 'Maybe'")
