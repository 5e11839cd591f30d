"""Running a scenario: build the world, apply the manifests, run the steps in order, and
gather the timeline, the expectations and the summary."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from functools import partial

from nodewright.cluster.api import ApiError
from nodewright.runtime.clock import format_time
from nodewright.sim import expectations
from nodewright.sim.controller_errors import ControllerErrorLog
from nodewright.sim.durations import format_duration, format_offset
from nodewright.sim.fleet import current_fleet
from nodewright.sim.fleet_start import start_fleet
from nodewright.sim.interrupts import deliver_interruption
from nodewright.sim.progress import Progress
from nodewright.sim.result import RunResult, ScenarioInfo, Summary
from nodewright.sim.scenario import (
    AnyStep,
    ApplyStep,
    DeleteStep,
    ExpectStep,
    InterruptStep,
    ScaleStep,
    Scenario,
    SettleStep,
    WaitStep,
)
from nodewright.sim.settle import settle
from nodewright.sim.timeline import ExpectationResult, TimelineEvent
from nodewright.sim.world import World, build_world

EventSink = Callable[[TimelineEvent], None]


def run_scenario(
    scenario: Scenario,
    *,
    label: str = "as written",
    on_event: EventSink | None = None,
    progress: Progress | None = None,
) -> RunResult:
    world = build_world(scenario)
    if on_event is not None:
        world.recorder.listen(on_event)
    run = _Run(world, progress)
    return run.execute(label)


class _Run:
    def __init__(self, world: World, progress: Progress | None) -> None:
        self.world = world
        self.progress = progress
        self.outcomes: list[ExpectationResult] = []
        self.errors: list[str] = []
        self.controller_errors = ControllerErrorLog(world.recorder)
        world.driver.on_error = self.controller_errors.on_error

    def execute(self, label: str) -> RunResult:
        world = self.world
        recorder = world.recorder
        # Namespaces first, as `kubectl apply` of a directory needs them to be.
        # Then the classes objects refer to: StorageClasses (a claim without one gets
        # the default class when created) and RuntimeClasses (a pod's overhead).
        first = {"Namespace": 0, "StorageClass": 1, "RuntimeClass": 1, "PersistentVolume": 2}
        ordered = sorted(world.scenario.manifests, key=lambda d: first.get(d.kind, 3))
        for document in ordered:
            self._call(0, partial(world.apply, document))
        for problem in start_fleet(world):
            self._fail(0, problem)
        recorder.note("scenario", "start",
                      f"{world.scenario.name}: {len(world.scenario.manifests)} objects applied, "
                      f"region {world.scenario.region}, seed {world.scenario.seed}")
        world.driver.start()
        world.controllers.kick(world.driver)
        world.clock.after_each.append(recorder.after_callback)
        if self.progress is not None:
            world.clock.after_each.append(self._show_progress)
        recorder.sample()
        for step in world.scenario.steps:
            self._step(step)
        return self._finish(label)

    # -- steps ---------------------------------------------------------------------------

    def _step(self, step: AnyStep) -> None:
        world = self.world
        note = world.recorder.note
        prefix = f"step {step.number}"
        if isinstance(step, ScaleStep):
            target = step.target
            note("scenario", "step", f"{prefix}: scale {target} to {step.replicas} replicas",
                 step=step.number, action="scale", replicas=step.replicas)
            self._call(step.number, lambda: world.cluster.patch(
                target.kind, target.name, {"spec": {"replicas": step.replicas}},
                target.namespace or None))
        elif isinstance(step, ApplyStep):
            for document in step.documents:
                verb = self._call(step.number, partial(world.apply, document))
                if verb is not None:
                    note("scenario", "step", f"{prefix}: apply: {document.kind}/{document.name} "
                                             f"{verb}", step=step.number, action="apply")
        elif isinstance(step, DeleteStep):
            target = step.target
            note("scenario", "step", f"{prefix}: delete {target}", step=step.number,
                 action="delete")
            self._call(step.number, lambda: world.cluster.delete(
                target.kind, target.name, target.namespace or None))
        elif isinstance(step, WaitStep):
            note("scenario", "step", f"{prefix}: wait {format_duration(step.seconds)}",
                 step=step.number, action="wait")
            world.clock.advance(step.seconds)
        elif isinstance(step, SettleStep):
            self._settle(step)
        elif isinstance(step, InterruptStep):
            note("scenario", "step", f"{prefix}: interrupt {step.count} node(s) "
                                     f"({step.select.describe()}): {step.kind}",
                 step=step.number, action="interrupt")
            for problem in deliver_interruption(world, step):
                self._fail(step.number, problem)
        else:
            self._expect(step)
        world.driver.deliver()
        world.recorder.sample()

    def _call(self, number: int, action: Callable[[], object]) -> object | None:
        try:
            return action()
        except ApiError as error:
            self._fail(number, f"the API server refused it: {error.message}")
            return None

    def _fail(self, number: int, message: str) -> None:
        text = f"step {number}: {message}" if number else f"manifests: {message}"
        self.errors.append(text)
        self.world.recorder.note("scenario", "error", text, step=number)

    def _settle(self, step: SettleStep) -> None:
        world = self.world
        started = world.offset()
        world.recorder.note("scenario", "step", f"step {step.number}: settle (timeout "
                                                f"{format_duration(step.timeout)})",
                            step=step.number, action="settle")
        outcome = settle(world, step.timeout)
        took = format_offset(world.offset() - started)
        if outcome.quiet:
            world.recorder.note("scenario", "settled", f"step {step.number}: settled after "
                                                       f"{took}{outcome.note}",
                                step=step.number)
            return
        result = ExpectationResult(step.number, step.line, world.offset(), (
            f"settle: not quiet after {format_duration(step.timeout)}: {outcome.busy}",))
        self.outcomes.append(result)
        world.recorder.note("expect", "expect", result.describe(), step=step.number,
                            held=False)

    def _expect(self, step: ExpectStep) -> None:
        world = self.world
        self._check_instances()
        fleet = current_fleet(world.cluster, world.ec2.ledger(), world.scenario.start,
                              world.clock.now())
        so_far = expectations.RunSoFar(
            disruptions=world.recorder.disruptions(),
            launched=world.recorder.launched,
            pods_evicted=world.observed.evictions,
            violations=len(world.monitor.found),
        )
        found = expectations.check(step.expectation, fleet, so_far)
        result = ExpectationResult(step.number, step.line, world.offset(), tuple(found))
        self.outcomes.append(result)
        world.recorder.note("expect", "expect", result.describe(), step=step.number,
                            held=result.held, differences=list(found))

    def _check_instances(self) -> None:
        world = self.world
        gone = {name: world.scenario.start + timedelta(seconds=record.gone)
                for name, record in world.recorder.claims.items() if record.gone is not None}
        world.monitor.check_instances(world.ec2.ledger(), gone)

    def _show_progress(self) -> None:
        assert self.progress is not None
        if not self.progress.due():
            return  # called after every callback: the counts only when they are drawn
        recorder = self.world.recorder
        self.progress.update(recorder.offset(), len(recorder.events),
                             recorder.node_count, recorder.pending_pods)

    # -- the end -------------------------------------------------------------------------

    def _finish(self, label: str) -> RunResult:
        world = self.world
        recorder = world.recorder
        self._check_instances()
        recorder.sample()
        recorder.close()
        now = world.clock.now()
        ledger = world.ec2.ledger()
        fleet = current_fleet(world.cluster, ledger, world.scenario.start, now)
        samples = tuple(recorder.samples)
        duration = recorder.offset()
        pending_seconds = sum(
            sample.pending_pods * ((samples[i + 1].at if i + 1 < len(samples) else duration)
                                   - sample.at)
            for i, sample in enumerate(samples)
        )
        outcomes = tuple(self.outcomes)
        summary = Summary(
            duration=duration,
            nodes=len(fleet.nodes),
            nodes_by_type=fleet.by("instance_type"),
            hourly_cost=fleet.hourly_cost,
            node_hours=ledger.instance_hours(now),
            dollars_spent=ledger.total_cost(now),
            peak_nodes=max((sample.node_count for sample in samples), default=0),
            launched=recorder.launched,
            disruptions=recorder.disruptions(),
            pods_evicted=world.observed.evictions,
            pending_pod_seconds=pending_seconds,
            violations=len(world.monitor.found),
            expectations_held=sum(1 for outcome in outcomes if outcome.held),
            expectations_failed=sum(1 for outcome in outcomes if not outcome.held),
        )
        scenario = world.scenario
        info = ScenarioInfo(scenario.name, scenario.description, scenario.path, scenario.seed,
                            scenario.region, scenario.zones, format_time(scenario.start))
        return RunResult(
            scenario=info, label=label, timeline=tuple(recorder.events), expectations=outcomes,
            samples=samples, decisions=tuple(recorder.decisions), fleet=fleet.nodes,
            violations=tuple(world.monitor.found), summary=summary, errors=tuple(self.errors),
            controller_errors=self.controller_errors.errors,
        )

