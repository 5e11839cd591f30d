"""A pending pod nominated to an in-flight machine gives its place up at once when its
topology or its host ports no longer allow that machine, not only its resources and taints
(`nominations.still_fitting`, `solver.promised`).

kube-scheduler binds pods where they fit, not where the provisioner planned them: the
replicas of a Deployment spread over zones can land elsewhere than planned and leave a
nominee's zone over-skewed, a pod it must not share a node with can bind on its machine,
a pod can take its host port there. kube-scheduler then refuses the nominee there, and
Karpenter, which keeps no places and simulates every pending pod against the pods bound
now on every pass, launches for it on its next pass; so does the provisioner now. Seen in
Karpenter's wide_deployments performance test run in memory (docs/performance.md, "The
seventh test in memory": one pod of a zone-spread Deployment held 28 s).

As in test_nomination_story.py, the machines keep their startup taint (they never
initialize), so the nominees cannot bind and their places would be held indefinitely;
what lands on a machine meanwhile is bound to its node directly, as kube-scheduler
binding another pod there would.
"""

from __future__ import annotations

from typing import Any

from nodewright.cloud.sim.settings import SimSettings
from tests.controllers.conftest import WORKSHOP
from tests.controllers.expectations import claim_names, expect_no_controller_errors
from tests.harness import World, node_pool

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
ZONES = ["us-east-1a", "us-east-1b", "us-east-1c"]
STARTUP_TAINT = {"key": "example.com/agent", "value": "starting", "effect": "NoSchedule"}
# m5.large: 1805m for pods beside the workshop's DaemonSets: one 1-CPU replica a node.
POOL = node_pool(types=["m5.large"], labels={"type": "karpenter"},
                 requirements=[{"key": ZONE, "operator": "In", "values": ZONES}],
                 startupTaints=[STARTUP_TAINT])


def pending(name: str, cpu: str = "1", app: str = "web", **spec: Any) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "app", "image": "app",
                                 "resources": {"requests": {"cpu": cpu}}}
    ports = spec.pop("host_ports", None)
    if ports:
        container["ports"] = [{"containerPort": port, "hostPort": port} for port in ports]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": {"app": app}},
            "spec": {"nodeSelector": {"type": "karpenter"}, "containers": [container],
                     **spec}}


def zone_spread(name: str) -> dict[str, Any]:
    """A replica of the Deployment `web`, spread over zones (maxSkew 1, DoNotSchedule)."""
    return pending(name, topologySpreadConstraints=[{
        "maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "web"}}}])


def avoiding(app: str) -> dict[str, Any]:
    """A required pod anti-affinity term: not on a node with a pod labelled app=`app`."""
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
        "topologyKey": HOSTNAME, "labelSelector": {"matchLabels": {"app": app}}}]}}


def bound_to(node_name: str, name: str, app: str, cpu: str = "100m",
             **spec: Any) -> dict[str, Any]:
    """A pod bound to the node without the provisioner (as kube-scheduler binds one)."""
    pod = pending(name, cpu, app, **spec)
    pod["spec"]["nodeName"] = node_name
    pod["spec"]["tolerations"] = [{"operator": "Exists"}]
    return pod


def nominations(world: World, name: str) -> list[str]:
    return [str(e.get("note")).removeprefix("Pod should schedule on: ")
            for e in world.events("Nominated")
            if (e.get("regarding") or {}).get("name") == name]


def in_flight(world: World, *pods: dict[str, Any]) -> dict[str, str]:
    """Apply the pods and let their NodeClaims launch and register (the startup taint
    stays): each pod's NodeClaim name, by pod name."""
    world.apply(WORKSHOP, POOL, *pods)
    world.advance(120)
    claims: dict[str, str] = {}
    for pod in pods:
        name = pod["metadata"]["name"]
        (target,) = set(nominations(world, name))
        claims[name] = target.removeprefix("nodeclaim/")
    assert len(world.pending_pods()) == len(pods)
    return claims


def node_of(world: World, claim: str) -> tuple[str, str]:
    """(Node name, zone) of a launched NodeClaim."""
    (found,) = [c for c in world.nodeclaims() if c["metadata"]["name"] == claim]
    return found["status"]["nodeName"], found["metadata"]["labels"][ZONE]


def zones_of(world: World, claim: str) -> set[str]:
    """The zones a NodeClaim may launch in (its requirement) or launched in."""
    (found,) = [c for c in world.nodeclaims() if c["metadata"]["name"] == claim]
    launched = (found["metadata"].get("labels") or {}).get(ZONE)
    if launched:
        return {launched}
    (requirement,) = [r for r in found["spec"]["requirements"] if r["key"] == ZONE]
    return set(requirement["values"])


def quiet_world() -> World:
    return World(sim=SimSettings(startup_taint_delay=None))


def test_a_zone_spread_replica_whose_zone_the_bound_siblings_over_skewed_gets_a_node_in_another_zone_on_the_next_pass() -> None:  # noqa: E501
    world = quiet_world()
    claims = in_flight(world, zone_spread("web-1"), zone_spread("web-2"), zone_spread("web-3"))
    planned = {name: node_of(world, claim)[1] for name, claim in claims.items()}
    assert sorted(planned.values()) == ZONES  # one replica planned in each zone
    (crowded_pod,) = [name for name, zone in planned.items() if zone == ZONES[2]]
    crowded_node, _ = node_of(world, claims[crowded_pod])

    # kube-scheduler put two more replicas in us-east-1c than planned: with the nominee
    # there too, 1c would hold 3 against 1 in each other zone (skew 2 > maxSkew 1).
    world.apply(bound_to(crowded_node, "web-4", "web"), bound_to(crowded_node, "web-5", "web"))
    world.advance(15)  # one pass (pending pods are looked at every 10 s)

    (new,) = [name for name in claim_names(world) if name not in claims.values()]
    assert nominations(world, crowded_pod)[-1] == f"nodeclaim/{new}"
    assert zones_of(world, new) <= set(ZONES[:2])
    for name in planned:  # the two others keep their places
        if name != crowded_pod:
            assert set(nominations(world, name)) == {f"nodeclaim/{claims[name]}"}
    expect_no_controller_errors(world)


def test_a_zone_spread_replica_whose_zone_still_allows_it_keeps_its_place() -> None:
    world = quiet_world()
    claims = in_flight(world, zone_spread("web-1"), zone_spread("web-2"), zone_spread("web-3"))
    first_zone = {node_of(world, claim)[1]: claim for claim in claims.values()}[ZONES[0]]
    node_name, _ = node_of(world, first_zone)

    # One replica more in us-east-1a than planned: 2 there with its nominee, 1 in each
    # other zone, a skew of 1.
    world.apply(bound_to(node_name, "web-4", "web"))
    world.advance(60)

    assert sorted(claim_names(world)) == sorted(claims.values())
    for name, claim in claims.items():
        assert set(nominations(world, name)) == {f"nodeclaim/{claim}"}


def test_a_nominee_gives_its_place_up_when_a_pod_it_must_not_share_a_node_with_binds_there() -> None:  # noqa: E501
    world = quiet_world()
    claims = in_flight(world, pending("quiet", affinity=avoiding("noisy")))
    node_name, _ = node_of(world, claims["quiet"])

    world.apply(bound_to(node_name, "noisy", "noisy"))
    world.advance(15)

    (new,) = [name for name in claim_names(world) if name != claims["quiet"]]
    assert nominations(world, "quiet")[-1] == f"nodeclaim/{new}"
    expect_no_controller_errors(world)


def test_a_nominee_gives_its_place_up_when_a_pod_that_must_not_share_a_node_with_it_binds_there() -> None:  # noqa: E501
    world = quiet_world()
    claims = in_flight(world, pending("web-1"))
    node_name, _ = node_of(world, claims["web-1"])

    # The pod bound there has the anti-affinity, toward the nominee (app=web).
    world.apply(bound_to(node_name, "loner", "loner", affinity=avoiding("web")))
    world.advance(15)

    (new,) = [name for name in claim_names(world) if name != claims["web-1"]]
    assert nominations(world, "web-1")[-1] == f"nodeclaim/{new}"


def test_a_nominee_keeps_its_place_when_the_pod_it_avoids_binds_on_another_node() -> None:
    world = quiet_world()
    claims = in_flight(world, pending("quiet", affinity=avoiding("noisy")), pending("other"))
    elsewhere, _ = node_of(world, claims["other"])

    world.apply(bound_to(elsewhere, "noisy", "noisy"))
    world.advance(60)

    assert sorted(claim_names(world)) == sorted(claims.values())
    assert set(nominations(world, "quiet")) == {f"nodeclaim/{claims['quiet']}"}


def test_a_nominee_gives_its_place_up_when_another_pod_takes_its_host_port_there() -> None:
    world = quiet_world()
    claims = in_flight(world, pending("agent", host_ports=[9100]))
    node_name, _ = node_of(world, claims["agent"])

    world.apply(bound_to(node_name, "exporter", "exporter", host_ports=[9100]))
    world.advance(15)

    (new,) = [name for name in claim_names(world) if name != claims["agent"]]
    assert nominations(world, "agent")[-1] == f"nodeclaim/{new}"
    expect_no_controller_errors(world)
