"""`nodewright simulate` runs the controllers `nodewright controller` runs: both build them
from the one list (`controllers.registry.SPECS`); only the cloud and what plays the
kubelet differ. With `--cloud sim` the controller process runs against the same simulated
EC2, so the two sets must be equal, feature gates on or off, with the kubelet's stand-ins
(the in-memory cluster's actors, the `--cloud sim` process's `sim_kubelet`) left out."""

from __future__ import annotations

from pathlib import Path

import pytest

from nodewright.cluster.memory import InMemoryCluster, cluster_actors
from nodewright.cluster.memory.kubelet import Kubelet
from nodewright.controllers.options import GATE_OPTIONS
from nodewright.controllers.registry import SPECS
from nodewright.operator.config import FEATURE_GATES, OperatorConfig
from nodewright.operator.main import build_cloud, controller_options
from nodewright.operator.process import Operator, OperatorSettings
from nodewright.runtime.clock import SystemClock
from nodewright.sim.loading import load_scenario
from nodewright.sim.world import build_world

SCENARIO = """\
name: same-controllers
settings:
  featureGates: {GATES}
manifests: []
steps:
  - settle: {{}}
"""


def controller_process_names(gates: dict[str, bool]) -> list[str]:
    config = OperatorConfig(cluster_name="demo", cloud="sim",
                            feature_gates={**FEATURE_GATES, **gates})
    clock = SystemClock()
    cluster = InMemoryCluster(clock)
    cloud, kubelet = build_cloud(config, cluster, clock)  # type: ignore[arg-type]
    operator = Operator(cluster, cloud, OperatorSettings(
        identity="same", leader_elect=False, controllers=controller_options(config)),
        clock=clock, extra=kubelet)
    played_by_kubelet = {reconciler.name for reconciler in kubelet}
    return [r.name for r in operator.controllers.reconcilers
            if r.name not in played_by_kubelet]


def simulator_names(tmp_path: Path, gates: dict[str, bool]) -> list[str]:
    flow = "{" + ", ".join(f"{gate}: {str(on).lower()}" for gate, on in gates.items()) + "}"
    path = tmp_path / "scenario.yaml"
    path.write_text(SCENARIO.format(GATES=flow))
    scenario, problems = load_scenario(path)
    assert scenario is not None, problems
    world = build_world(scenario)
    actors = set(world.controllers.reconcilers) - set(world.controllers.built.values())
    assert not actors  # the cluster's actors run on the driver, not among the controllers
    return list(world.controllers.names)


@pytest.mark.parametrize("on", [False, True], ids=["gates-off", "gates-on"])
def test_simulate_runs_every_controller_the_controller_process_runs(
        tmp_path: Path, on: bool) -> None:
    gates = dict.fromkeys(GATE_OPTIONS, on)
    gates["ReservedCapacity"] = True

    process = controller_process_names(gates)
    simulated = simulator_names(tmp_path, gates)

    assert process == simulated
    # The EC2NodeClass controllers the simulated EC2 can serve run in both.
    assert {"nodeclass.status", "nodeclass.termination", "capacityreservation.expiration",
            "capacityreservation.capacitytype", "interruption",
            "interruption.instancestatus"} <= set(simulated)
    gated = {spec.name for spec in SPECS if spec.gate is not None}
    if on:
        # node.health needs the cloud's repair policies as well as its gate.
        assert gated <= set(simulated)
    else:
        assert not gated & set(simulated)


def test_only_the_cloud_s_missing_capabilities_keep_a_controller_out() -> None:
    """The simulated EC2 leaves nothing behind to clean up, keeps no price cache, has no
    SSM parameters, no zonal shifts and no memory to learn (its nodes report the capacity
    it planned): those five AWS controllers are the only ones it does not get."""
    names = set(controller_process_names(dict.fromkeys(GATE_OPTIONS, True)))
    left_out = {spec.name for spec in SPECS} - names
    assert left_out == {"catalog.refresh", "nodeclass.garbagecollection",
                        "providers.ssm.invalidation", "zonalshift",
                        "providers.instancetype.capacity", "nodeclaim.tagging"}


def test_simulate_and_the_sim_controller_process_run_one_simulated_kubelet() -> None:
    """What plays the kubelet differs only in its settings and the nodes it plays: the
    in-memory cluster's actors (`simulate`) and the `--cloud sim` process's `sim_kubelet`
    run the same pod reconciler, and it is the only class they share."""
    clock = SystemClock()
    config = OperatorConfig(cluster_name="demo", cloud="sim")
    _, process = build_cloud(config, InMemoryCluster(clock), clock)  # type: ignore[arg-type]
    simulated = cluster_actors(InMemoryCluster(clock))
    assert {type(r) for r in process} & {type(r) for r in simulated} == {Kubelet}
