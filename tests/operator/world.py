"""A cluster in real time for the operator's stories.

The in-memory API server with its actors (kube-scheduler, kubelet, workload controllers)
runs on one `OperatorDriver` as "the cluster"; the simulated EC2 keeps its time on that
driver's clock; each `Operator` (a controller process, with its own driver, clock and
leader elector) talks to the same cluster. Delays are a fraction of a second, so a story
that takes minutes in a real cluster takes a second or two.

The in-memory cluster and the simulated EC2 are not thread-safe, so every driver holds
`world.lock` while it works, but for the operators' requests, and every call to the
cluster goes through `LockedCluster`, which takes it for the call: the threads take turns,
as the processes of a real cluster take turns at the API server. A test that reads several
things at once (the expectations of tests/controllers) holds `world.lock` too, to see one
moment.

The query helpers have the names of `tests.harness.World`, so the core
stories' expectations read both worlds. `freeze_when` stops a controller process at an
exact point of its work (the first watch event a predicate accepts: nothing is written
after it) and `crash` then tears it down, for the crash-safety stories.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from nodewright.cloud.provider import CloudProvider, Instance
from nodewright.cloud.sim import CapacityRule, SimEvent, SimSettings, SimulatedEC2
from nodewright.cluster.api import (
    KINDS,
    ClusterAPI,
    ConflictError,
    NotFoundError,
    Object,
    WatchStream,
)
from nodewright.cluster.memory import ActorSettings, InMemoryCluster, cluster_actors
from nodewright.controllers.disruption.controller import DisruptionOptions
from nodewright.controllers.options import ControllerOptions
from nodewright.operator.driver import OperatorDriver
from nodewright.operator.leader import LeaseTiming
from nodewright.operator.process import Operator, OperatorSettings
from nodewright.runtime.clock import SystemClock
from nodewright.runtime.reconciler import WatchEvent
from nodewright.runtime.statelock import StateLock
from tests.harness import ClusterReads, Source, documents
from tests.kube.waiting import PATIENCE, eventually
from tests.support.operator import crash
from tests.support.rbac import Request, request_for


@dataclass(frozen=True)
class FastControllerOptions(ControllerOptions):
    """Karpenter nominates a pod's machine for max(2 x batchMaxDuration, 10 s); the stories
    keep the first term only, so a nominated node is free for disruption a second later."""

    @property
    def nomination_seconds(self) -> float:
        return 2 * self.batch_max_seconds


FAST_CLOUD = SimSettings(launch_delay=0.05, registration_delay=0.05, termination_delay=0.05,
                         startup_taint_delay=0.02, spot_notice=1.0, node_monitor_grace=1.0)
FAST_CONTROLLERS = FastControllerOptions(
    batch_idle_seconds=0.05, batch_max_seconds=0.5,
    disruption=DisruptionOptions(poll_seconds=0.2, validation_seconds=0.2,
                                 in_flight_poll_seconds=0.1, unsynced_retry_seconds=0.1))
# Short but in Karpenter's proportions (15 s / 10 s / 2 s); a Lease counts whole seconds.
# Not shorter: on a loaded CI machine (four test workers on two cores) a renewal has taken
# longer than 0.7 s, and a leader that steps down mid-story fails it.
FAST_LEASE = LeaseTiming(lease_duration=3.0, renew_deadline=2.0, retry_period=0.2)


class LockedStream:
    def __init__(self, stream: WatchStream, lock: AbstractContextManager[object]) -> None:
        self._stream = stream
        self._lock = lock

    def poll(self) -> list[WatchEvent]:
        with self._lock:
            return self._stream.poll()

    def synced(self) -> bool:
        with self._lock:
            return self._stream.synced()

    def close(self) -> None:
        with self._lock:
            self._stream.close()


class LockedCluster:
    """ClusterAPI over the in-memory cluster, one caller at a time."""

    def __init__(self, cluster: InMemoryCluster, lock: AbstractContextManager[object]) -> None:
        self.memory = cluster
        self._lock = lock

    def get(self, kind: str, name: str, namespace: str | None = None) -> Object:
        with self._lock:
            return self.memory.get(kind, name, namespace)

    def list(self, kind: str, namespace: str | None = None, *,
             labels: Mapping[str, str] | None = None) -> list[Object]:
        with self._lock:
            return self.memory.list(kind, namespace, labels=labels)

    def create(self, obj: Object) -> Object:
        with self._lock:
            return self.memory.create(obj)

    def update(self, obj: Object, *, subresource: str | None = None) -> Object:
        with self._lock:
            return self.memory.update(obj, subresource=subresource)

    def patch(self, kind: str, name: str, patch: Mapping[str, Any],
              namespace: str | None = None, *, subresource: str | None = None) -> Object:
        with self._lock:
            return self.memory.patch(kind, name, patch, namespace, subresource=subresource)

    def delete(self, kind: str, name: str, namespace: str | None = None, *,
               grace_period_seconds: int | None = None, uid: str | None = None) -> None:
        with self._lock:
            self.memory.delete(kind, name, namespace,
                               grace_period_seconds=grace_period_seconds, uid=uid)

    def evict(self, name: str, namespace: str, *,
              grace_period_seconds: int | None = None, uid: str | None = None) -> None:
        with self._lock:
            self.memory.evict(name, namespace, grace_period_seconds=grace_period_seconds, uid=uid)

    def watch(self, kinds: Iterable[str]) -> LockedStream:
        with self._lock:
            return LockedStream(self.memory.watch(kinds), self._lock)


class AuditedCluster:
    """ClusterAPI that writes down the API request each call would be on a real server
    (`access.request_for`), so a story can check them against the installed RBAC."""

    def __init__(self, inner: ClusterAPI, requests: list[Request]) -> None:
        self.inner = inner
        self.requests = requests

    def get(self, kind: str, name: str, namespace: str | None = None) -> Object:
        self.requests.append(request_for("get", kind, name=name, namespace=namespace))
        return self.inner.get(kind, name, namespace)

    def list(self, kind: str, namespace: str | None = None, *,
             labels: Mapping[str, str] | None = None) -> list[Object]:
        self.requests.append(request_for("list", kind, namespace=namespace))
        return self.inner.list(kind, namespace, labels=labels)

    def create(self, obj: Object) -> Object:
        namespace = obj.get("metadata", {}).get("namespace")
        self.requests.append(request_for("create", str(obj["kind"]), namespace=namespace))
        return self.inner.create(obj)

    def update(self, obj: Object, *, subresource: str | None = None) -> Object:
        meta = obj.get("metadata", {})
        self.requests.append(request_for("update", str(obj["kind"]), name=meta.get("name"),
                                         namespace=meta.get("namespace"),
                                         subresource=subresource))
        return self.inner.update(obj, subresource=subresource)

    def patch(self, kind: str, name: str, patch: Mapping[str, Any],
              namespace: str | None = None, *, subresource: str | None = None) -> Object:
        self.requests.append(request_for("patch", kind, name=name, namespace=namespace,
                                         subresource=subresource))
        return self.inner.patch(kind, name, patch, namespace, subresource=subresource)

    def delete(self, kind: str, name: str, namespace: str | None = None, *,
               grace_period_seconds: int | None = None, uid: str | None = None) -> None:
        self.requests.append(request_for("delete", kind, name=name, namespace=namespace))
        self.inner.delete(kind, name, namespace, grace_period_seconds=grace_period_seconds,
                          uid=uid)

    def evict(self, name: str, namespace: str, *,
              grace_period_seconds: int | None = None, uid: str | None = None) -> None:
        self.requests.append(request_for("evict", "Pod", name=name, namespace=namespace))
        self.inner.evict(name, namespace, grace_period_seconds=grace_period_seconds, uid=uid)

    def watch(self, kinds: Iterable[str]) -> WatchStream:
        for kind in kinds:
            self.requests.append(request_for("list", kind))
        return self.inner.watch(kinds)


class RealTimeWorld(ClusterReads):
    def __init__(self, *, cloud: SimSettings = FAST_CLOUD,
                 actors: ActorSettings | None = None,
                 capacity: Sequence[CapacityRule] = (),
                 zones: Sequence[str] | None = None) -> None:
        # A StateLock: the operators' requests step out of it (StateLock.requesting).
        self.lock = StateLock()
        self.clock = SystemClock()
        memory = InMemoryCluster(self.clock)
        self.memory = memory
        self.cluster = LockedCluster(memory, self.lock)
        # What the controllers ask of the API server, and what the simulated EC2 asks
        # (with --cloud sim the controller's identity registers the nodes).
        self.controller_requests: list[Request] = []
        self.cloud_requests: list[Request] = []
        self.cloud = SimulatedEC2(self.clock,
                                  cluster=AuditedCluster(self.cluster, self.cloud_requests),
                                  settings=cloud, capacity=capacity, zones=zones)
        self.cluster_driver = OperatorDriver(
            self.cluster, clock=self.clock, kinds=[k for k in KINDS if k != "Event"],
            name="cluster", world_lock=self.lock)
        self.cluster_driver.add(*cluster_actors(
            memory, actors or ActorSettings(pod_start_delay=0.02)))
        self.cluster_driver.start()
        self.operators: list[Operator] = []

    def operator(self, identity: str, *, leader_elect: bool = True,
                 timing: LeaseTiming = FAST_LEASE,
                 options: ControllerOptions = FAST_CONTROLLERS,
                 cloud: CloudProvider | None = None,
                 client: Callable[[ClusterAPI], ClusterAPI] | None = None) -> Operator:
        """A controller process. With `cloud` (one safe from any thread, such as
        `tests.operator.slow_cloud.SlowCloud` over `world.cloud` and `world.lock`) it runs
        as `nodewright controller` does, taking no turn at the world lock: its workers
        run side by side, each call to the cluster or the cloud taking its turn. `client`
        wraps the API client it is given (an API server whose creates take time)."""
        settings = OperatorSettings(identity=identity, leader_elect=leader_elect,
                                    lease_namespace="kube-system", timing=timing,
                                    controllers=options, idle_interval=0.01)
        api: ClusterAPI = AuditedCluster(self.cluster, self.controller_requests)
        started = Operator(api if client is None else client(api),
                           cloud or self.cloud, settings,
                           world_lock=self.lock if cloud is None else None)
        started.start()
        self.operators.append(started)
        return started

    def close(self) -> None:
        for running in self.operators:
            crash(running)
        self.cluster_driver.stop(timeout=5)

    # --- controller processes dying -------------------------------------------------------

    def freeze_when(self, operator: Operator,
                    moment: Callable[[WatchEvent], bool]) -> threading.Event:
        """Stop `operator` from writing at the first watch event `moment` accepts (checked
        as the event reaches it, before any reconcile the event causes). The returned
        Event is set once it has frozen."""
        frozen = threading.Event()

        def listener(event: WatchEvent) -> None:
            if not frozen.is_set() and moment(event):
                operator.driver.leading.clear()
                frozen.set()

        with self.lock:
            operator.driver.listen(listener)
        return frozen

    def crash(self, operator: Operator) -> None:
        """The process dies (kill -9): its queued work and its state are gone."""
        crash(operator)
        self.operators.remove(operator)

    def pods_at_termination(self) -> dict[str, list[str]]:
        """From now on: for each instance that starts shutting down, the workload's pods
        (namespace default) still bound to its node at that moment. DaemonSet pods that
        tolerate every taint stay to the end, as on a real node."""
        found: dict[str, list[str]] = {}

        def on_cloud_event(event: SimEvent) -> None:
            if event.kind != "shutting-down":
                return
            nodes = {node["metadata"]["name"] for node in self.memory.peek_all("Node")
                     if str(node["spec"].get("providerID", "")).endswith(event.instance_id)}
            found[event.instance_id] = sorted(
                pod["metadata"]["name"] for pod in self.memory.peek_all("Pod", "default")
                if pod["spec"].get("nodeName") in nodes)

        with self.lock:
            self.cloud.listen(on_cloud_event)
        return found

    def fewest_running(self) -> list[int]:
        """From now on: the fewest running pods (namespace default) seen after any change
        to a pod, as a one-item list the test reads when it likes."""
        fewest = [len(self.running_pods())]

        def on_event(event: WatchEvent) -> None:
            if event.kind == "Pod":
                running = sum(1 for pod in self.memory.peek_all("Pod", "default")
                              if (pod.get("status") or {}).get("phase") == "Running"
                              and not pod["metadata"].get("deletionTimestamp"))
                fewest[0] = min(fewest[0], running)

        with self.lock:
            self.cluster_driver.listen(on_event)
        return fewest

    @property
    def errors(self) -> list[tuple[str, str, BaseException]]:
        """Reconcile failures of the running controller processes, conflicts left out
        (optimistic concurrency makes them part of normal work)."""
        return [failure for running in self.operators for failure in running.driver.errors
                if not isinstance(failure[2], ConflictError)]

    def settle(self, quiet: float = 0.3, patience: float = PATIENCE) -> None:
        """Wait until nothing but Events and Leases changed for `quiet` seconds."""
        kinds = [kind for kind in KINDS if kind not in ("Event", "Lease")]

        def fingerprint() -> tuple[int, ...]:
            with self.lock:
                return tuple(self.memory.kind_version(kind) for kind in kinds)

        last, since = fingerprint(), time.monotonic()

        def still() -> bool:
            nonlocal last, since
            current = fingerprint()
            if current != last:
                last, since = current, time.monotonic()
            return time.monotonic() - since >= quiet

        eventually(still, f"the cluster to stay unchanged for {quiet}s", patience)

    # --- the test's kubectl ---------------------------------------------------------------

    def apply(self, *sources: Source) -> None:
        """Create each object (YAML text, files, directories or dicts, as the harness's
        `World.apply` takes them), or replace the spec of one that exists."""
        for source in sources:
            for body in documents(source):
                self._apply_one(body)

    def _apply_one(self, body: dict[str, Any]) -> None:
        kind = str(body["kind"])
        metadata = body.get("metadata") or {}
        namespace = metadata.get("namespace") or ("default" if KINDS[kind].namespaced else None)
        with self.lock:
            try:
                current = self.cluster.get(kind, str(metadata.get("name")), namespace)
            except NotFoundError:
                self.cluster.create(body)
                return
            merged = {**current, **{k: v for k, v in body.items() if k != "status"}}
            merged["metadata"] = {**current["metadata"], **metadata,
                                  "resourceVersion": current["metadata"]["resourceVersion"]}
            self.cluster.update(merged)

    def scale(self, name: str, replicas: int, namespace: str = "default") -> None:
        self.cluster.patch("Deployment", name, {"spec": {"replicas": replicas}}, namespace)

    def live_instances(self) -> list[Instance]:
        with self.lock:
            return [i for i in self.cloud.list()
                    if i.state not in ("shutting-down", "terminated")]

    def ready_nodes(self) -> list[Object]:
        return [node for node in self.cluster.list("Node")
                if any(c.get("type") == "Ready" and c.get("status") == "True"
                       for c in (node.get("status") or {}).get("conditions") or [])
                and node["metadata"].get("labels", {}).get("karpenter.sh/initialized")]

    def wait_until_running(self, pods: int, nodes: int) -> None:
        eventually(lambda: len(self.running_pods()) == pods and len(self.ready_nodes()) == nodes,
                   f"{pods} running pods on {nodes} nodes (now {len(self.running_pods())} "
                   f"pods, {len(self.ready_nodes())} nodes)")

    def registered_nodeclaims(self, count: int) -> list[Object]:
        """The `count` NodeClaims once each has written its Node's name: a pod can run on
        a Node before registration's status write on the NodeClaim lands."""
        def registered() -> list[Object] | None:
            claims = self.nodeclaims()
            named = [c for c in claims if (c.get("status") or {}).get("nodeName")]
            return named if len(claims) == len(named) == count else None
        return eventually(registered, f"{count} NodeClaims with their Node's name")
