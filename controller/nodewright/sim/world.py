"""Building the simulated world of a scenario: the virtual clock, the in-memory cluster
and its actors (kube-scheduler, the kubelets, the workload controllers), the simulated EC2,
the controllers (every one of `controllers.registry`, as `nodewright controller` builds
them), the driver that runs them, and the recorder and violation monitor watching it all."""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Any

from nodewright.api.formats import parse_duration
from nodewright.api.manifests import Document
from nodewright.cloud.sim.provider import SimulatedEC2
from nodewright.cloud.sim.settings import SimSettings
from nodewright.cloud.sim.world import CapacityRule, PriceOverride
from nodewright.cluster.api import KINDS, NotFoundError
from nodewright.cluster.memory import InMemoryCluster
from nodewright.cluster.memory.actors import ActorSettings, cluster_actors
from nodewright.cluster.memory.volumes import DETACH_DELAY
from nodewright.controllers.disruption.controller import DisruptionOptions
from nodewright.controllers.disruption.methods.disruption_pass import (
    SINGLE_NODE_SIMULATIONS,
    MethodOptions,
)
from nodewright.controllers.driver import VirtualDriver
from nodewright.controllers.options import ControllerOptions, with_gates
from nodewright.controllers.registry import Controllers, build_controllers
from nodewright.runtime.clock import VirtualClock
from nodewright.sim.observed import ObservedCluster
from nodewright.sim.recorder import Recorder
from nodewright.sim.scenario import Scenario
from nodewright.sim.violations import ViolationMonitor


@dataclass
class World:
    scenario: Scenario
    clock: VirtualClock
    cluster: InMemoryCluster
    observed: ObservedCluster
    ec2: SimulatedEC2
    controllers: Controllers
    driver: VirtualDriver
    recorder: Recorder
    monitor: ViolationMonitor

    def offset(self) -> float:
        return self.recorder.offset()

    def apply(self, document: Document) -> str:
        """Create the object, or replace the one of the same kind and name. Returns what
        was done ("created" or "updated")."""
        body = copy.deepcopy(document.body)
        kind = KINDS[document.kind]
        metadata = body.setdefault("metadata", {})
        if kind.namespaced:
            metadata.setdefault("namespace", "default")
        namespace = metadata.get("namespace") if kind.namespaced else None
        if namespace is not None and self.cluster.peek("Namespace", str(namespace)) is None:
            # As if the namespace had been created first (kubectl would refuse instead).
            self.cluster.create({"apiVersion": "v1", "kind": "Namespace",
                                 "metadata": {"name": namespace}})
        status = body.pop("status", None)
        try:
            existing = self.cluster.get(document.kind, document.name, namespace)
        except NotFoundError:
            stored = self.cluster.create(body)
            verb = "created"
        else:
            metadata["resourceVersion"] = existing["metadata"].get("resourceVersion")
            stored = self.cluster.update(body)
            verb = "updated"
        if status is not None and kind.has_status:
            self.cluster.update({**stored, "status": status}, subresource="status")
        return verb


def build_world(scenario: Scenario) -> World:
    settings = scenario.settings
    clock = VirtualClock(scenario.start)
    cluster = InMemoryCluster(clock, seed=scenario.seed)
    observed = ObservedCluster(cluster)
    ec2 = SimulatedEC2(
        clock,
        cluster=cluster,
        region=scenario.region,
        zones=scenario.zones,
        seed=scenario.seed,
        settings=SimSettings.from_scenario(_cloud_settings(scenario)),
        capacity=[CapacityRule(rule.instance_type, rule.available, rule.zone,
                               rule.capacity_type) for rule in scenario.capacity],
        prices=[PriceOverride(rule.instance_type, rule.capacity_type, rule.price, rule.zone)
                for rule in scenario.prices],
        reservations=scenario.reservations,
    )
    controllers = build_controllers(observed, ec2, clock, with_gates(ControllerOptions(
        batch_idle_seconds=settings.batch_idle_duration,
        batch_max_seconds=settings.batch_max_duration,
        disruption=DisruptionOptions(methods=MethodOptions(
            # Consolidation's compute budgets are wall-clock seconds; a simulation must not
            # depend on how fast the machine is, so they never run out here; single-node
            # consolidation counts its simulations instead.
            multi_node_timeout=math.inf,
            single_node_timeout=math.inf,
            single_node_max_simulations=SINGLE_NODE_SIMULATIONS,
        )),
        relax_min_values=settings.min_values_policy == "BestEffort",
    ), settings.feature_gates))
    driver = VirtualDriver(clock, cluster)
    raw_detach = settings.raw.get("volumeDetachDelay")
    detach = DETACH_DELAY if raw_detach is None else parse_duration(str(raw_detach).strip())
    driver.add(*cluster_actors(cluster, ActorSettings(
        pod_start_delay=settings.pod_start_delay,
        volume_detach_delay=detach,
    )))
    controllers.attach(driver)
    recorder = Recorder(scenario.start, clock.now, ec2, cluster,
                        nominations=_nomination_counter(controllers))
    monitor = ViolationMonitor(cluster, clock.now, scenario.start,
                               interrupted=ec2.interrupted)
    controllers.decisions.subscribe(recorder.on_decision)
    controllers.decisions.subscribe(monitor.on_decision)
    driver.listen(recorder.on_watch)
    ec2.listen(recorder.on_ec2)
    observed.before_evict.extend((monitor.before_evict, monitor.before_pod_eviction))
    observed.after_evict.append(monitor.after_evict)
    observed.before_delete.append(monitor.before_delete)
    return World(scenario, clock, cluster, observed, ec2, controllers, driver, recorder,
                 monitor)


def _cloud_settings(scenario: Scenario) -> dict[str, Any]:
    """The scenario's settings the simulated EC2 reads (delays in Go syntax)."""
    return {key: value for key, value in scenario.settings.raw.items()
            if key in ("launchDelay", "registrationDelay", "terminationDelay",
                       "startupTaintDelay", "spotInterruptionNotice", "nodeMonitorGracePeriod",
                       "kubernetesVersion")}


def _nomination_counter(controllers: Controllers) -> Any:
    provisioner = controllers.provisioner

    def pods_for(nodeclaim: str) -> int | None:
        target = f"nodeclaim/{nodeclaim}"
        for outcome in reversed(provisioner.outcomes):
            if nodeclaim in outcome.created:
                return sum(1 for where in outcome.nominated.values() if where == target)
        return None

    return pods_for
