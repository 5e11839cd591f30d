"""A cloud that answers as slowly as a real one, for the operator's concurrency stories and
bench/controller_latency.py.

`SlowCloud` puts the simulated EC2 behind what the AWS provider offers the controllers:
its calls are safe from any thread (so the operator makes them outside the state lock),
and a few of them are slow once their `Gate` is armed: the catalog refresh (the paged
DescribeInstanceTypes and the pricing download), the EC2NodeClass resolution, the
TerminateInstances of chosen instances and the CreateFleet of chosen NodeClaims (or of
every NodeClaim: `every_launch`). A slow call waits at its gate outside any lock, as a
request waits on the network; then the simulated EC2, written for one thread, does its own
quick work under the state lock its timers also run under. With a `launch_window`,
launches go through the AWS provider's CreateFleet batcher (`cloud.aws.batcher`): the
launches of one window with the same requirements are one CreateFleet, which waits at the
launch gate once; `batch_sizes` and `most_launches_in_flight` say how many launches the
controllers had in flight together.

`SlowWrites` is the in-memory API server as a slow one answers: writes to chosen objects
wait at a gate first, as a request sleeping out a 429's Retry-After does.

`LongPollQueue` is the simulated interruption queue received from as SQS is, with a long
poll: a receive returns as soon as a message arrives.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import replace
from typing import Any

from nodewright.api.ec2nodeclass import EC2NodeClass
from nodewright.api.nodeclaim import NodeClaim
from nodewright.cloud.aws.batcher import Batcher, Window
from nodewright.cloud.aws.batcher import Result as BatchResult
from nodewright.cloud.aws.interruption_queue import EventHandler, PollResult
from nodewright.cloud.capabilities import CloudCapabilities
from nodewright.cloud.provider import Instance
from nodewright.cloud.sim import SimulatedEC2
from nodewright.cloud.sim.interruptions import SimulatedInterruptionQueue
from nodewright.cluster.memory import InMemoryCluster
from nodewright.runtime.clock import Clock
from nodewright.scheduling.catalog import InstanceType
from tests.operator.world import LockedCluster, Object

# The longest a gate without `seconds` holds a call (a test that never opens it still ends).
GATE_LIMIT_SECONDS = 60.0
LONG_POLL_SECONDS = 10


class Gate:
    """Where one kind of slow call waits: `seconds` each, or (None) until `open`. Calls
    pass at once until the gate is armed."""

    def __init__(self, name: str, seconds: float | None = None) -> None:
        self.name = name
        self.seconds = seconds
        self.armed = False
        self.entered = threading.Event()
        self._opened = threading.Event()
        self._lock = threading.Lock()
        self._waiting = 0

    def arm(self) -> None:
        self.armed = True

    def open(self) -> None:
        self.armed = False
        self._opened.set()

    def blocked(self) -> bool:
        """Whether a call waits at the gate now."""
        with self._lock:
            return self._waiting > 0

    def pass_through(self) -> None:
        if not self.armed:
            return
        with self._lock:
            self._waiting += 1
        self.entered.set()
        try:
            self._opened.wait(GATE_LIMIT_SECONDS if self.seconds is None else self.seconds)
        finally:
            with self._lock:
                self._waiting -= 1


class SlowCloud:
    """The simulated EC2 as a real cloud looks to the controllers (see the module)."""

    # As the AWS provider: every call may be made from any thread, outside the state lock.
    launches_outside_state_lock = True

    def __init__(self, sim: SimulatedEC2, *, seconds: float | None = None,
                 slow_launches: Iterable[str] = (),
                 slow_terminations: Iterable[str] = (),
                 every_launch: bool = False,
                 launch_window: Window | None = None) -> None:
        self.sim = sim
        self.name = sim.name
        # The operator's state lock once there is one (`use_lock`).
        self.lock: AbstractContextManager[Any] = threading.RLock()
        self.catalog = Gate("catalog refresh", seconds)
        self.resolution = Gate("resolution", seconds)
        self.launch = Gate("launch", seconds)
        self.termination = Gate("termination", seconds)
        self.slow_launches = set(slow_launches)
        self.slow_terminations = set(slow_terminations)
        self.every_launch = every_launch
        self._counts = threading.Lock()
        self.launches_in_flight = 0
        self.most_launches_in_flight = 0
        self.batch_sizes: list[int] = []
        self._fleet: Batcher[tuple[NodeClaim, EC2NodeClass], Instance] | None = (
            None if launch_window is None else
            Batcher("create_fleet", launch_window, self._create_fleet, key=_fleet_key))

    @property
    def gates(self) -> tuple[Gate, ...]:
        return (self.catalog, self.resolution, self.launch, self.termination)

    def use_lock(self, lock: AbstractContextManager[Any]) -> None:
        self.lock = lock

    def __getattr__(self, name: str) -> Any:
        value = getattr(self.sim, name)
        if name.startswith("_") or not callable(value) or isinstance(value, type):
            return value

        def locked(*args: Any, **kwargs: Any) -> Any:
            with self.lock:
                return value(*args, **kwargs)
        return locked

    def capabilities(self) -> CloudCapabilities:
        """The simulated EC2's, with calls allowed outside the state lock (as AWS)."""
        with self.lock:
            found = self.sim.capabilities()
        return replace(found, node_classes=self, launches_outside_state_lock=True)

    def resolve(self, node_class: EC2NodeClass) -> Any:
        self.resolution.pass_through()
        with self.lock:
            return self.sim.resolve(node_class)

    def refreshing_catalog(self) -> CatalogRefreshing:
        """What the catalog refresh controller asks: the instance types, slowly."""
        return CatalogRefreshing(self)

    def get_instance_types(self, node_class: EC2NodeClass) -> list[InstanceType]:
        with self.lock:
            return self.sim.get_instance_types(node_class)

    def create(self, nodeclaim: NodeClaim, node_class: EC2NodeClass) -> Instance:
        with self._in_flight():
            if self._fleet is not None:
                return self._fleet.add((nodeclaim, node_class))
            if self.every_launch or nodeclaim.name in self.slow_launches:
                self.launch.pass_through()
            with self.lock:
                return self.sim.create(nodeclaim, node_class)

    @contextmanager
    def _in_flight(self) -> Iterator[None]:
        with self._counts:
            self.launches_in_flight += 1
            self.most_launches_in_flight = max(self.most_launches_in_flight,
                                               self.launches_in_flight)
        try:
            yield
        finally:
            with self._counts:
                self.launches_in_flight -= 1

    def _create_fleet(self, launches: list[tuple[NodeClaim, EC2NodeClass]]
                      ) -> list[BatchResult[Instance]]:
        """One CreateFleet for a window's launches of the same requirements: slow once,
        then one instance for each."""
        with self._counts:
            self.batch_sizes.append(len(launches))
        self.launch.pass_through()
        results: list[BatchResult[Instance]] = []
        for nodeclaim, node_class in launches:
            try:
                with self.lock:
                    results.append(BatchResult(output=self.sim.create(nodeclaim, node_class)))
            except Exception as error:  # this launch's caller gets its own failure
                results.append(BatchResult(error=error))
        return results

    def delete(self, provider_id: str) -> None:
        if provider_id in self.slow_terminations:
            self.termination.pass_through()
        with self.lock:
            self.sim.delete(provider_id)


def _fleet_key(launch: tuple[NodeClaim, EC2NodeClass]) -> str:
    """Launches batch together when their CreateFleet requests would be the same."""
    nodeclaim, node_class = launch
    return json.dumps([node_class.metadata.name,
                       [r.model_dump(mode="json") for r in nodeclaim.spec.requirements]],
                      sort_keys=True)


class CatalogRefreshing:
    """The slow cloud as the catalog refresh sees it: its instance types wait at the
    catalog gate (the other controllers read the cached catalog at once)."""

    launches_outside_state_lock = True

    def __init__(self, cloud: SlowCloud) -> None:
        self.cloud = cloud
        self.name = cloud.name

    def get_instance_types(self, node_class: EC2NodeClass) -> list[InstanceType]:
        self.cloud.catalog.pass_through()
        return self.cloud.get_instance_types(node_class)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.cloud, name)


class SlowWrites(LockedCluster):
    """The in-memory API server, one caller at a time, whose writes to `slow` objects
    (kind, name) wait at `gate` outside its lock once the gate is armed."""

    def __init__(self, memory: InMemoryCluster, lock: threading.RLock,
                 seconds: float | None = None) -> None:
        super().__init__(memory, lock)
        self.gate = Gate("API write", seconds)
        self.slow: set[tuple[str, str]] = set()

    def _write(self, kind: str, name: str) -> None:
        if (kind, name) in self.slow:
            self.gate.pass_through()

    def update(self, obj: Object, *, subresource: str | None = None) -> Object:
        self._write(str(obj.get("kind")), str((obj.get("metadata") or {}).get("name")))
        return super().update(obj, subresource=subresource)

    def patch(self, kind: str, name: str, patch: Mapping[str, Any],
              namespace: str | None = None, *, subresource: str | None = None) -> Object:
        self._write(kind, name)
        return super().patch(kind, name, patch, namespace, subresource=subresource)

    def delete(self, kind: str, name: str, namespace: str | None = None, *,
               grace_period_seconds: int | None = None, uid: str | None = None) -> None:
        self._write(kind, name)
        super().delete(kind, name, namespace, grace_period_seconds=grace_period_seconds,
                       uid=uid)


class LongPollQueue(SimulatedInterruptionQueue):
    """The simulated queue, received from as SQS is with WaitTimeSeconds: a receive waits
    until a message is there (or the wait ends)."""

    wait_seconds = LONG_POLL_SECONDS

    def __init__(self, clock: Clock, region: str, seed: int) -> None:
        super().__init__(clock, region, seed)
        self._arrived = threading.Condition()
        self._closed = False

    def send(self, body: str) -> str:
        with self._arrived:
            message_id = super().send(body)
            self._arrived.notify_all()
        return message_id

    def poll_once(self, handle: EventHandler) -> PollResult:
        with self._arrived:
            self._arrived.wait_for(lambda: self._closed or self.depth() > 0,
                                   timeout=self.wait_seconds)
        return super().poll_once(handle)

    def close(self) -> None:
        """End the receive in progress (and every later one) at once: a stop need not wait
        out the long poll."""
        with self._arrived:
            self._closed = True
            self._arrived.notify_all()
