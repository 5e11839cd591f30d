"""karpenter_scheduler_* as Karpenter's Scheduler.Solve writes them
(pkg/controllers/provisioning/scheduling/scheduler.go, metrics.go): for the provisioner and
for disruption's simulations, an unfinished-work series while a solve runs, and the pending
pods by effective zone (computeEffectiveZoneFromPod)."""

from __future__ import annotations

from nodewright.controllers.provisioning.solve_metrics import scheduling_simulation
from nodewright.scheduling.effective_zone import effective_zone
from nodewright.scheduling.pods import Pod
from nodewright.scheduling.requirements import Requirement, Requirements
from tests.controllers.conftest import WORKSHOP
from tests.controllers.expectations import expect_no_controller_errors
from tests.controllers.metric_samples import samples, series
from tests.harness import World

ZONE = "topology.kubernetes.io/zone"


def value(metric: str, /, **labels: str) -> float:
    return next((s.value for s in samples(metric) if s.labels == labels), 0.0)


def pod(*, selector: dict[str, str] | None = None, zones: tuple[str, ...] = (),
        volume_zones: tuple[tuple[str, ...], ...] = ()) -> Pod:
    return Pod(
        namespace="default", name="p", labels={}, requests={"cpu": 100},
        node_selector=selector or {},
        required_terms=(Requirements([Requirement.build(ZONE, "In", zones)]),) if zones else (),
        volume_requirements=tuple(Requirements([Requirement.build(ZONE, "In", alternative)])
                                  for alternative in volume_zones))


def test_the_effective_zone_intersects_the_pods_zones_with_its_volumes() -> None:
    assert effective_zone(pod()) == "flexible"
    assert effective_zone(pod(selector={ZONE: "us-east-1a"})) == "us-east-1a"
    assert effective_zone(pod(zones=("us-east-1a", "us-east-1b"))) == "flexible"
    assert effective_zone(pod(volume_zones=(("us-east-1c",),))) == "us-east-1c"
    assert effective_zone(pod(zones=("us-east-1a", "us-east-1b"),
                              volume_zones=(("us-east-1b",),))) == "us-east-1b"
    assert effective_zone(pod(selector={ZONE: "us-east-1a"},
                              volume_zones=(("us-east-1b",),))) == "none"
    # Two volume alternatives: their union.
    assert effective_zone(pod(volume_zones=(("us-east-1a",), ("us-east-1b",)))) == "flexible"


def test_unfinished_work_is_reported_only_while_a_solve_runs() -> None:
    with scheduling_simulation("story", 3, [pod(selector={ZONE: "us-east-1a"})]):
        (running,) = series("karpenter_scheduler_unfinished_work_seconds", controller="story")
        assert value("karpenter_scheduler_unfinished_work_seconds", **running) >= 0
        assert value("karpenter_scheduler_queue_depth", **running) == 3
    assert series("karpenter_scheduler_unfinished_work_seconds", controller="story") == []
    assert value("karpenter_scheduler_queue_depth", **running) == 0
    assert value("karpenter_scheduler_pending_pods_by_effective_zone_count",
                 controller="story", zone="us-east-1a") == 1
    # The next simulation of the controller drops the previous one's series.
    with scheduling_simulation("story", 0):
        pass
    assert series("karpenter_scheduler_pending_pods_by_effective_zone_count",
                  controller="story") == []
    assert len(series("karpenter_scheduler_queue_depth", controller="story")) == 1


def test_provisioning_and_disruption_simulations_are_both_measured(world: World) -> None:
    solves = "karpenter_scheduler_scheduling_duration_seconds_count"
    before = {c: value(solves, controller=c) for c in ("provisioner", "disruption")}
    world.apply(WORKSHOP)
    world.scale("inflate", 5)
    assert world.settle()
    assert value("karpenter_scheduler_pending_pods_by_effective_zone_count",
                 controller="provisioner", zone="flexible") == 5
    world.scale("inflate", 1)
    assert world.settle()
    after = {c: value(solves, controller=c) for c in ("provisioner", "disruption")}
    assert after["provisioner"] > before["provisioner"]
    assert after["disruption"] > before["disruption"]
    expect_no_controller_errors(world)
