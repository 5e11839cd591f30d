"""What the adapter says when the API server cannot be used as configured: checked at start
(it does not answer, it does not serve a CRD's kind: the text says what to fix), and while
informers run (RBAC refuses a list, a CRD went away: ERROR with what to do, and the problem
kept for /readyz until it is fixed)."""

from __future__ import annotations

import logging

import httpx2
import pytest
from lightkube import Client, KubeConfig

from nodewright.cluster.kube.cluster import FIELD_MANAGER, KubeCluster
from nodewright.cluster.kube.discovery import ServerCheckError, check_server, minor_version
from tests.kube.apiserver import Authorizer, FakeApiServer
from tests.kube.conftest import make_client
from tests.kube.waiting import eventually

KINDS = ["Pod", "Node", "NodeClaim", "NodePool", "EC2NodeClass", "Lease"]
CONFIGURED_BY = "the kubeconfig /home/me/.kube/config (--kubeconfig or KUBECONFIG)"


def errors(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]


def test_a_server_that_serves_every_kind_passes_with_its_version(
        server: FakeApiServer) -> None:
    assert check_server(make_client(server), KINDS, configured_by=CONFIGURED_BY) == "v1.32.0"


def test_the_kubernetes_version_is_read_as_major_minor(server: FakeApiServer) -> None:
    """What EKS_CONTROL_PLANE=false resolves AMI aliases for (Karpenter's version provider)."""
    assert minor_version(make_client(server)) == "1.32"


def test_a_missing_crd_is_named_with_how_to_install_it(server: FakeApiServer) -> None:
    server.unserved = {"NodeClaim", "EC2NodeClass"}
    with pytest.raises(ServerCheckError) as raised:
        check_server(make_client(server), KINDS, configured_by=CONFIGURED_BY)
    message = str(raised.value)
    assert "nodeclaims.karpenter.sh" in message
    assert "ec2nodeclasses.karpenter.k8s.aws" in message
    assert "nodepools" not in message
    assert "`nodewright crds | kubectl apply -f -`" in message


def test_an_unreachable_server_is_named_with_where_its_address_came_from() -> None:
    def refuse(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("[Errno 111] Connection refused", request=request)

    config = KubeConfig.from_dict({
        "clusters": [{"name": "c", "cluster": {"server": "https://10.9.8.7:6443"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "c",
    })
    client = Client(config, field_manager=FIELD_MANAGER,
                    transport=httpx2.MockTransport(refuse), trust_env=False)
    with pytest.raises(ServerCheckError) as raised:
        check_server(client, KINDS, configured_by=CONFIGURED_BY)
    message = str(raised.value)
    assert "cannot reach the Kubernetes API server at https://10.9.8.7:6443" in message
    assert "Connection refused" in message
    assert CONFIGURED_BY in message and "--kubeconfig" in message


def test_a_list_rbac_refuses_is_an_error_until_the_role_is_bound_again(
        server: FakeApiServer, cluster: KubeCluster,
        caplog: pytest.LogCaptureFixture) -> None:
    granted = server.authorizer
    server.authorizer = Authorizer(cluster_rules=[])  # the ClusterRoleBinding deleted
    informer = cluster.informer("NodePool")
    error = eventually(lambda: next((e for e in errors(caplog) if "403 Forbidden" in e), None),
                       "an ERROR naming what was refused")
    assert cluster.problems() == ["list nodepools.karpenter.sh: 403 Forbidden"]
    assert "refused to list nodepools.karpenter.sh" in error
    assert "`nodewright manifests`" in error and "ClusterRoleBinding" in error
    assert not informer.synced()

    server.authorizer = granted
    eventually(informer.synced, "the cache to sync once the binding is back")
    assert cluster.problems() == []


def test_a_kind_no_longer_served_names_the_crd_to_install(
        server: FakeApiServer, cluster: KubeCluster,
        caplog: pytest.LogCaptureFixture) -> None:
    server.unserved = {"NodeClaim"}
    informer = cluster.informer("NodeClaim")
    error = eventually(lambda: next((e for e in errors(caplog) if "nodeclaims" in e), None),
                       "an ERROR naming the missing CRD")
    assert informer.problem == "nodeclaims.karpenter.sh is not served (CRD missing)"
    assert "`nodewright crds | kubectl apply -f -`" in error
    server.unserved = set()
    eventually(informer.synced, "the cache to sync once the CRD is back")
    assert informer.problem is None
