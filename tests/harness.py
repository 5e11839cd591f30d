"""A whole cluster on a virtual clock, for stories about the controllers.

`World` builds the in-memory API server with its actors (kube-scheduler, kubelet,
workload controllers) on one driver, the simulated EC2, and Nodewright's controllers on
a second driver, as a separate process would be: `restart_controllers()` kills that
process (its queued work and in-memory state are lost) and starts a fresh one against
the same cluster and cloud. Manifests are applied from YAML text, files, directories or
dicts; `advance`, `run_until` and `settle` move virtual time; the query helpers read the
cluster as a test would with kubectl.

`NODE_CLASS` and `node_pool` are the manifests the stories share: one EC2NodeClass named
default, and NodePools on it that differ only in what a story is about.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from nodewright.cloud.sim import CapacityRule, PriceOverride, SimSettings, SimulatedEC2
from nodewright.cluster.api import KINDS, ClusterAPI, NotFoundError, Object
from nodewright.cluster.memory import ActorSettings, InMemoryCluster, cluster_actors
from nodewright.controllers.driver import VirtualDriver
from nodewright.controllers.options import ControllerOptions
from nodewright.controllers.registry import Controllers, build_controllers
from nodewright.runtime.clock import VirtualClock

Source = str | Path | Mapping[str, Any] | Sequence[Mapping[str, Any]]

NODE_CLASS = """
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  amiSelectorTerms: [{alias: al2023@latest}]
  role: KarpenterNodeRole
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
"""
# NODE_CLASS selecting the capacity reservations tagged team=ml.
RESERVING_CLASS = NODE_CLASS + "  capacityReservationSelectorTerms: [{tags: {team: ml}}]\n"

INSTANCE_TYPE = "node.kubernetes.io/instance-type"
INSTANCE_FAMILY = "karpenter.k8s.aws/instance-family"
CAPACITY_TYPE = "karpenter.sh/capacity-type"


def node_pool(
    name: str = "default",
    *,
    types: Sequence[str] = (),
    families: Sequence[str] = (),
    requirements: Sequence[Mapping[str, Any]] = (),
    capacity_types: Sequence[str] = ("on-demand",),
    labels: Mapping[str, str] | None = None,
    weight: int | None = None,
    limits: Mapping[str, str] | None = None,
    disruption: Mapping[str, Any] | None = None,
    **template_spec: Any,
) -> dict[str, Any]:
    """A NodePool on the EC2NodeClass `default` (`NODE_CLASS`, or the workshop's).

    Its requirements, in this order: instance types In `types`, families In `families`,
    `requirements` as given, capacity types In `capacity_types` (empty: no such
    requirement). `labels` are the template's, `template_spec` further fields of the
    template's spec as the API spells them (terminationGracePeriod=, startupTaints=, ...).
    """
    listed: list[dict[str, Any]] = []
    for key, values in ((INSTANCE_TYPE, types), (INSTANCE_FAMILY, families)):
        if values:
            listed.append({"key": key, "operator": "In", "values": list(values)})
    listed.extend(dict(requirement) for requirement in requirements)
    if capacity_types:
        listed.append({"key": CAPACITY_TYPE, "operator": "In", "values": list(capacity_types)})
    template: dict[str, Any] = {"spec": {
        "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                         "name": "default"},
        **template_spec,
        "requirements": listed,
    }}
    if labels is not None:
        template["metadata"] = {"labels": dict(labels)}
    spec: dict[str, Any] = {"template": template}
    if weight is not None:
        spec["weight"] = weight
    if limits is not None:
        spec["limits"] = dict(limits)
    if disruption is not None:
        spec["disruption"] = dict(disruption)
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": name},
            "spec": spec}
QUIET_SECONDS = 60.0
_STEP_SECONDS = 5.0


def documents(source: Source) -> list[dict[str, Any]]:
    """Objects from YAML text, a YAML file, a directory of them, or dicts."""
    if isinstance(source, Mapping):
        return [dict(source)]
    if isinstance(source, Sequence) and not isinstance(source, str):
        return [dict(item) for item in source]
    if isinstance(source, Path) or (isinstance(source, str) and "\n" not in source
                                    and Path(source).exists()):
        path = Path(source)
        files = sorted(path.glob("*.y*ml")) if path.is_dir() else [path]
        found: list[dict[str, Any]] = []
        for file in files:
            found.extend(documents(file.read_text()))
        return found
    return [doc for doc in yaml.safe_load_all(str(source)) if isinstance(doc, dict)]


class ClusterReads:
    """What a story reads back from a world: the cluster's objects and the live instances.
    Shared by the virtual-time `World` and the operator tests' real-time world."""

    cluster: ClusterAPI
    cloud: SimulatedEC2

    def nodes(self) -> list[Object]:
        return self.cluster.list("Node")

    def nodeclaims(self) -> list[Object]:
        return self.cluster.list("NodeClaim")

    def pods(self, namespace: str | None = "default",
             labels: Mapping[str, str] | None = None) -> list[Object]:
        return self.cluster.list("Pod", namespace, labels=labels)

    def pending_pods(self, namespace: str | None = "default") -> list[Object]:
        return [pod for pod in self.pods(namespace) if not (pod.get("spec") or {}).get("nodeName")]

    def running_pods(self, namespace: str | None = "default") -> list[Object]:
        return [pod for pod in self.pods(namespace)
                if (pod.get("spec") or {}).get("nodeName")
                and (pod.get("status") or {}).get("phase") == "Running"
                and not (pod.get("metadata") or {}).get("deletionTimestamp")]

    def events(self, reason: str | None = None, kind: str | None = None) -> list[Object]:
        return [
            event for event in self.cluster.list("Event")
            if (reason is None or event.get("reason") == reason)
            and (kind is None or (event.get("regarding") or {}).get("kind") == kind)
        ]

    def live_instances(self) -> list[Any]:
        return [i for i in self.cloud.list() if i.state not in ("shutting-down", "terminated")]

    def instance_types(self) -> list[str]:
        """The instance type of every live instance, sorted."""
        return sorted(i.instance_type for i in self.live_instances())


class World(ClusterReads):
    cluster: InMemoryCluster

    def __init__(
        self,
        *,
        seed: int = 0,
        sim: SimSettings | None = None,
        capacity: Sequence[CapacityRule] = (),
        prices: Sequence[PriceOverride] = (),
        zones: Sequence[str] | None = None,
        options: ControllerOptions | None = None,
        actor_settings: ActorSettings | None = None,
        start: datetime | None = None,
    ) -> None:
        self.clock = VirtualClock(start)
        self.cluster = InMemoryCluster(self.clock, seed=seed)
        self.cloud = SimulatedEC2(
            self.clock, cluster=self.cluster, seed=seed, settings=sim, capacity=capacity,
            prices=prices, zones=zones,
        )
        self.options = options
        self.cluster_driver = VirtualDriver(self.clock, self.cluster)
        self.cluster_driver.add(*cluster_actors(self.cluster, actor_settings))
        self.cluster_driver.start()
        self.restarts = 0
        self.driver, self.controllers = self._start_controllers()

    # -- the controller process ----------------------------------------------------------

    def _start_controllers(self) -> tuple[VirtualDriver, Controllers]:
        driver = VirtualDriver(self.clock, self.cluster)
        controllers = build_controllers(self.cluster, self.cloud, self.clock, self.options)
        controllers.attach(driver)
        driver.start()
        controllers.kick(driver)
        return driver, controllers

    def restart_controllers(self) -> None:
        """The controller process dies and a new one starts from nothing."""
        self.driver.stop()
        self.restarts += 1
        self.driver, self.controllers = self._start_controllers()

    @property
    def errors(self) -> list[tuple[str, str, BaseException]]:
        return list(self.driver.errors)

    # -- changing the cluster ------------------------------------------------------------

    def deliver(self) -> None:
        """Hand the watch events of changes made from outside (a test, a scenario) to
        both processes now, as a real API server would, without waiting for a tick."""
        self.cluster_driver.deliver()
        self.driver.deliver()

    def apply(self, *sources: Source) -> list[Object]:
        """Create each object, or replace the spec of one that exists."""
        applied = []
        for source in sources:
            for body in documents(source):
                applied.append(self._apply_one(body))
        self.deliver()
        return applied

    def _apply_one(self, body: dict[str, Any]) -> Object:
        kind = str(body.get("kind"))
        metadata = body.get("metadata") or {}
        namespace = metadata.get("namespace") or ("default" if KINDS[kind].namespaced else None)
        try:
            current = self.cluster.get(kind, str(metadata.get("name")), namespace)
        except NotFoundError:
            return self.cluster.create(body)
        merged = {**current, **{k: v for k, v in body.items() if k != "status"}}
        merged["metadata"] = {**current["metadata"], **metadata,
                              "resourceVersion": current["metadata"]["resourceVersion"]}
        return self.cluster.update(merged)

    def scale(self, name: str, replicas: int, *, kind: str = "Deployment",
              namespace: str = "default") -> None:
        self.cluster.patch(kind, name, {"spec": {"replicas": replicas}}, namespace)
        self.deliver()

    def delete(self, kind: str, name: str, namespace: str | None = None) -> None:
        self.cluster.delete(kind, name, namespace)
        self.deliver()

    # -- time ----------------------------------------------------------------------------

    def advance(self, seconds: float) -> None:
        self.deliver()
        self.clock.advance(seconds)

    def run_until(self, done: Callable[[], bool], timeout: float = 3600.0,
                  step: float = _STEP_SECONDS) -> bool:
        """Advance in steps until `done()` holds (True) or `timeout` virtual seconds pass."""
        self.deliver()
        waited = 0.0
        while not done():
            if waited >= timeout:
                return False
            self.clock.advance(step)
            waited += step
        return True

    def _fingerprint(self) -> tuple[int, ...]:
        return tuple(self.cluster.kind_version(kind) for kind in KINDS if kind != "Event")

    def settle(self, timeout: float = 3600.0, quiet: float = QUIET_SECONDS) -> bool:
        """Run until nothing but Events changed for `quiet` virtual seconds."""
        self.deliver()
        last = self._fingerprint()
        still = 0.0
        waited = 0.0
        while still < quiet:
            if waited >= timeout:
                return False
            self.clock.advance(_STEP_SECONDS)
            waited += _STEP_SECONDS
            current = self._fingerprint()
            still = still + _STEP_SECONDS if current == last else 0.0
            last = current
        return True


def node_labels(nodes: Iterable[Object], key: str) -> list[str]:
    return sorted(str((n.get("metadata") or {}).get("labels", {}).get(key, "")) for n in nodes)
