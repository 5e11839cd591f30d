"""Leader election has a client of its own (as controller-runtime gives it its own rest
config): a main client that its QPS limit holds back never delays a Lease renewal."""

from __future__ import annotations

import threading

from nodewright.cloud.sim import SimulatedEC2
from nodewright.cluster.kube.cluster import KubeCluster
from nodewright.cluster.kube.transport import ClientLimits
from nodewright.cluster.memory import InMemoryCluster
from nodewright.operator.leader import LeaderElector
from nodewright.operator.process import Operator, OperatorSettings
from nodewright.runtime.clock import SystemClock
from tests.kube.apiserver import FakeApiServer
from tests.kube.conftest import make_client
from tests.kube.conftest import server as server
from tests.kube.waiting import eventually
from tests.operator.world import FAST_LEASE


def test_the_operator_elects_through_the_lease_client_it_is_given() -> None:
    clock = SystemClock()
    cluster, lease_client = InMemoryCluster(clock), InMemoryCluster(clock)
    operator = Operator(cluster, SimulatedEC2(clock), OperatorSettings(identity="a"),
                        clock=clock, lease_cluster=lease_client)
    assert operator.elector is not None and operator.elector.cluster is lease_client
    alone = Operator(cluster, SimulatedEC2(clock), OperatorSettings(identity="b"),
                     clock=clock)
    assert alone.elector is not None and alone.elector.cluster is cluster


def test_renewals_go_on_while_the_main_client_waits_for_its_rate_limit(
        server: FakeApiServer) -> None:
    throttled = KubeCluster(make_client(server), cached_kinds=(),
                            limits=ClientLimits(qps=0.01, burst=1))
    lease_client = KubeCluster(make_client(server), cached_kinds=())
    throttled.list("Node")  # its one token: the next request waits 100 s
    waiting = threading.Thread(target=throttled.list, args=("Node",), daemon=True)
    waiting.start()
    eventually(lambda: throttled.transport.waits, "the main client to wait for a token")

    led = threading.Event()
    elector = LeaderElector(lease_client, name="nodewright-leader-election",
                            namespace="nodewright", identity="a", timing=FAST_LEASE,
                            on_started_leading=led.set)
    elector.start()
    try:
        assert led.wait(30)
        renewals: set[str] = set()

        def renewed_three_times() -> bool:
            lease = server.objects("Lease")[0]
            renewals.add(lease["spec"]["renewTime"])
            return len(renewals) >= 3

        eventually(renewed_three_times, "renewals through the lease client")
        assert waiting.is_alive()  # the main client is still held back
    finally:
        elector.stop(release=True, timeout=5)
        lease_client.close()
