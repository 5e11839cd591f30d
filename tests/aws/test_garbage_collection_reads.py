"""Instance garbage collection reads the NodeClaims the API server holds: an in-memory
server lends its stored objects (only their names and provider IDs are read, nothing is
copied or changed), a cluster that lends none is listed; both protect the same instances
and collect the same orphans."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from nodewright.cloud.aws.provider import AwsCloudProvider
from nodewright.cluster.api import ClusterAPI, StoredObjects
from nodewright.cluster.memory import InMemoryCluster
from nodewright.controllers.nodeclaim.garbagecollection import InstanceGarbageCollection
from nodewright.runtime import VirtualClock
from nodewright.runtime.outside_lock import outside_state_lock
from nodewright.sim.observed import ObservedCluster
from nodewright.state import ClusterState
from tests.support.read_only import ReadOnlyGuard

from .world import node_class, nodeclaim, store_nodeclaims


class CopiesOnly:
    """A cluster client that lends no stored objects (a real API server's)."""

    def __init__(self, inner: InMemoryCluster) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        if name == "peek_all":
            raise AttributeError(name)
        return getattr(self.inner, name)


Client = Callable[[InMemoryCluster, ClusterState], Any]
CLIENTS: dict[str, tuple[Client, bool]] = {
    "the in-memory server itself": (lambda cluster, _: cluster, True),
    "the simulator's, outside the state lock": (
        lambda cluster, state: outside_state_lock(ObservedCluster(cluster), state.lock), True),
    "a client that lends nothing": (lambda cluster, _: CopiesOnly(cluster), False),
}


@pytest.mark.parametrize("client", CLIENTS)
def test_every_client_protects_the_claimed_instances_and_collects_the_orphan(
    provider: AwsCloudProvider, client: str,
) -> None:
    claimed = provider.create(nodeclaim("claimed-1", uid="uid-claimed"), node_class())
    launching = provider.create(nodeclaim("launching-1", uid="uid-launching"), node_class())
    orphan = provider.create(nodeclaim("gone-1", uid="uid-gone"), node_class())
    clock = VirtualClock(provider.get(orphan.provider_id).launch_time + timedelta(minutes=1))
    cluster = InMemoryCluster(clock)
    guard = ReadOnlyGuard.install(cluster)
    store_nodeclaims(cluster, (("claimed-1", claimed.provider_id), ("launching-1", None)))
    state = ClusterState(clock)
    make, lends = CLIENTS[client]
    api: ClusterAPI = make(cluster, state)
    assert isinstance(api, StoredObjects) is lends
    collector = InstanceGarbageCollection(api, provider, clock, state)

    collector.reconcile("")

    assert collector.collected == [orphan.provider_id]
    assert provider.get(claimed.provider_id).state in ("pending", "running")
    assert provider.get(launching.provider_id).state in ("pending", "running")
    guard.verify_all()
