"""Fixtures: a fake API server (RBAC as installed) and a KubeCluster talking to it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from lightkube import Client, KubeConfig

from nodewright.cluster.kube.cluster import FIELD_MANAGER, KubeCluster
from nodewright.cluster.kube.informer import Informer
from nodewright.install import InstallSettings
from nodewright.runtime.ratelimit import Backoff
from tests.kube.apiserver import Authorizer, FakeApiServer

NAMESPACE = "nodewright"
# Retry at once in tests: the backoff's growth is checked on its own.
NO_WAIT = Backoff(initial=0.001, maximum=0.001, jitter=0.0)


def make_client(server: FakeApiServer) -> Client:
    config = KubeConfig.from_dict({
        "clusters": [{"name": "test", "cluster": {"server": "https://kube.test"}}],
        "users": [{"name": "test", "user": {"token": "test-token"}}],
        "contexts": [{"name": "test", "context": {"cluster": "test", "user": "test"}}],
        "current-context": "test",
    })
    return Client(config, field_manager=FIELD_MANAGER, transport=server.transport,
                  trust_env=False)


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    fake = FakeApiServer(Authorizer.for_install(InstallSettings(cluster_name="test",
                                                                cloud="sim")))
    yield fake
    fake.close()


@pytest.fixture
def cluster(server: FakeApiServer) -> Iterator[KubeCluster]:
    kube = KubeCluster(
        make_client(server),
        sync_timeout=10.0,
        informer_factory=lambda client, kind: Informer(client, kind, backoff=NO_WAIT,
                                                       watch_timeout=lambda: 1),
    )
    yield kube
    kube.close()
