"""The controller's Kubernetes client behind the fault proxy (issue 28, part 8, where it can
run without Kubernetes binaries): the adapter (lightkube over httpx2, the transport's
retries and Retry-After, the informers) talks over real sockets to the adapter tests' fake
API server, and the proxy between them loses answers, throttles, cuts watches, answers them
410 Gone, partitions and goes down. The stories the e2e suite tells against the real API
server (tests/e2e/test_faults.py) are told here against the fake one: a create stored
once, writes that land once the window ends, caches that follow the server again."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from lightkube import Client, KubeConfig

from nodewright.cluster.kube.cluster import FIELD_MANAGER, KubeCluster, connect
from nodewright.cluster.kube.informer import Informer
from nodewright.install import InstallSettings
from tests.faults.proxy import WATCHES, FaultProxy, Rule, fail, lose_answer
from tests.faults.served_apiserver import ServedApiServer
from tests.faults.wiring import apiserver_proxy, kubeconfig_through
from tests.kube.apiserver import Authorizer, FakeApiServer
from tests.kube.conftest import NO_WAIT
from tests.kube.waiting import eventually

NODECLAIMS = "/apis/karpenter.sh/v1/nodeclaims"


@pytest.fixture
def served() -> Iterator[ServedApiServer]:
    fake = FakeApiServer(Authorizer.for_install(InstallSettings(cluster_name="test",
                                                                cloud="sim")))
    on_socket = ServedApiServer(fake)
    yield on_socket
    on_socket.stop()


@pytest.fixture
def server(served: ServedApiServer) -> FakeApiServer:
    return served.fake


@pytest.fixture
def proxy(served: ServedApiServer) -> Iterator[FaultProxy]:
    with FaultProxy(served.address, mode="http", name="apiserver") as faulty:
        yield faulty


@pytest.fixture
def cluster(proxy: FaultProxy) -> Iterator[KubeCluster]:
    config = KubeConfig.from_dict({
        "clusters": [{"name": "test", "cluster": {"server": proxy.url}}],
        "users": [{"name": "test", "user": {"token": "test-token"}}],
        "contexts": [{"name": "test", "context": {"cluster": "test", "user": "test"}}],
        "current-context": "test",
    })
    kube = KubeCluster(
        Client(config, field_manager=FIELD_MANAGER, trust_env=False),
        sync_timeout=10.0,
        informer_factory=lambda client, kind: Informer(client, kind, backoff=NO_WAIT,
                                                       watch_timeout=lambda: 1),
    )
    yield kube
    kube.close()


def nodeclaim(name: str = "", generate: str = "default-") -> dict[str, Any]:
    meta: dict[str, Any] = {"labels": {"karpenter.sh/nodepool": "default"},
                            "finalizers": ["karpenter.sh/termination"]}
    meta.update({"name": name} if name else {"generateName": generate})
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
            "metadata": meta,
            "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                      "name": "default"}, "requirements": []}}


def names(server: FakeApiServer) -> list[str]:
    return [claim["metadata"]["name"] for claim in server.objects("NodeClaim")]


def test_a_create_whose_answer_is_lost_as_a_503_with_retry_after_is_stored_once(
        server: FakeApiServer, proxy: FaultProxy, cluster: KubeCluster) -> None:
    """The server stored the NodeClaim; the proxy answered 503 with Retry-After in its
    place, and the transport sent the POST again: one NodeClaim, the first."""
    proxy.inject(lose_answer(503, retry_after=0, methods={"POST"}, path=NODECLAIMS, limit=1))

    created = cluster.create(nodeclaim())

    assert names(server) == [created["metadata"]["name"]]
    posts = [r for r in proxy.records if r.method == "POST"]
    assert [(r.fault, r.forwarded) for r in posts][:1] == [("lose_answer", True)]
    assert all(r.status != 201 for r in posts[1:]), "a second NodeClaim was stored"


def test_a_create_whose_connection_broke_after_the_write_is_stored_once(
        server: FakeApiServer, proxy: FaultProxy, cluster: KubeCluster,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("nodewright.cluster.kube.cluster.UNKNOWN_OUTCOME_RETRY_INTERVAL", 0.0)
    proxy.inject(lose_answer(0, methods={"POST"}, path=NODECLAIMS, limit=1))

    created = cluster.create(nodeclaim())

    assert names(server) == [created["metadata"]["name"]]
    assert proxy.stats["faulted_lose_answer"] == 1


def test_a_throttled_create_waits_out_retry_after_and_lands_once(
        server: FakeApiServer, proxy: FaultProxy, cluster: KubeCluster) -> None:
    window = proxy.inject(fail(429, retry_after=0, methods={"POST"}, path=NODECLAIMS,
                               limit=2))

    cluster.create(nodeclaim("throttled"))

    assert names(server) == ["throttled"]
    assert window.hits == 2
    assert [r.status for r in proxy.records if r.method == "POST"] == [429, 429, 201]


def test_a_5xx_window_on_reads_ends_and_the_cache_syncs(
        server: FakeApiServer, proxy: FaultProxy, cluster: KubeCluster) -> None:
    server.seed(nodeclaim("seeded"))
    window = proxy.inject(fail(500, methods={"GET"}, path=NODECLAIMS), seconds=1.0)
    informer = cluster.informer("NodeClaim")
    eventually(lambda: window.hits > 0, "the list answered 500")
    assert informer.wait_synced(15)
    assert cluster.get("NodeClaim", "seeded")["metadata"]["name"] == "seeded"


def watching(cluster: KubeCluster, server: FakeApiServer) -> Informer:
    informer = cluster.informer("NodeClaim")
    assert informer.wait_synced(15)
    return informer


def seen(informer: Informer, name: str) -> bool:
    return informer.get(name) is not None


def test_running_watches_cut_and_answered_410_list_again_and_see_what_changed(
        server: FakeApiServer, proxy: FaultProxy, cluster: KubeCluster) -> None:
    informer = watching(cluster, server)
    gone = proxy.inject(Rule("expire_watch", path=WATCHES, limit=2))
    proxy.reset(streaming=WATCHES)
    server.seed(nodeclaim("made-while-expired"))

    eventually(lambda: gone.hits == 2, "two watches answered 410 Gone")
    eventually(lambda: seen(informer, "made-while-expired"), "the re-list to find it")
    records = list(proxy.records)
    first = next(i for i, r in enumerate(records) if r.fault == "expire_watch")
    relists = [r for r in records[first:] if r.method == "GET"
               and r.target.startswith(NODECLAIMS) and "watch=" not in r.target]
    assert relists, "the informer listed again after the 410"


def test_a_partition_then_heal_and_the_cache_follows_the_server(
        server: FakeApiServer, proxy: FaultProxy, cluster: KubeCluster) -> None:
    informer = watching(cluster, server)
    with proxy.partitioned():
        server.seed(nodeclaim("made-in-the-partition"))
        eventually(lambda: proxy.stats["requests"] > 0 and not seen(
            informer, "made-in-the-partition"), "the partition to hold the watch")
    eventually(lambda: seen(informer, "made-in-the-partition"), "the cache to catch up")
    cluster.create(nodeclaim("after-the-heal"))
    assert sorted(names(server)) == ["after-the-heal", "made-in-the-partition"]


def test_an_outage_then_restore_and_writes_and_the_cache_work_again(
        server: FakeApiServer, proxy: FaultProxy, cluster: KubeCluster) -> None:
    informer = watching(cluster, server)
    with proxy.down():
        server.seed(nodeclaim("made-in-the-outage"))
        eventually(lambda: not seen(informer, "made-in-the-outage"), "the outage")
    eventually(lambda: seen(informer, "made-in-the-outage"), "the cache to catch up")
    cluster.create(nodeclaim("after-the-outage"))
    assert sorted(names(server)) == ["after-the-outage", "made-in-the-outage"]
    assert cluster.problems() == []


def test_the_controllers_kubeconfig_through_the_tls_terminating_proxy_reaches_the_server(
        tmp_path: Path) -> None:
    """The e2e stories' wiring: the ServiceAccount's kubeconfig (a token and the server's
    CA) rewritten by `kubeconfig_through` for `apiserver_proxy`, read by the controller's
    `connect`: TLS to the proxy checked against the proxy's CA, TLS to the server against
    the server's, the token passed on."""
    fake = FakeApiServer(Authorizer.for_install(InstallSettings(cluster_name="test",
                                                                cloud="sim")))
    served = ServedApiServer(fake, tls=True)
    assert served.ca_file is not None
    source = tmp_path / "sa.kubeconfig"
    source.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "e2e", "cluster": {
            "server": f"https://{served.address}",
            "certificate-authority": str(served.ca_file)}}],
        "users": [{"name": "sa", "user": {"token": "sa-token"}}],
        "contexts": [{"name": "e2e", "context": {"cluster": "e2e", "user": "sa"}}],
        "current-context": "e2e"}))
    try:
        with apiserver_proxy(f"https://{served.address}", served.ca_file) as proxy:
            kubeconfig = kubeconfig_through(proxy, source, tmp_path / "through.kubeconfig")
            kube = KubeCluster(connect(str(kubeconfig)), sync_timeout=10.0)
            try:
                created = kube.create(nodeclaim())
                assert kube.get("NodeClaim", created["metadata"]["name"])
            finally:
                kube.close()
            assert {r.status for r in proxy.records} <= {200, 201}
            assert any(r.method == "POST" and r.status == 201 for r in proxy.records)
    finally:
        served.stop()
