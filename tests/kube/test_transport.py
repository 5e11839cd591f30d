"""What the adapter makes of answers that are not Kubernetes Status objects, and of no answer
at all; and the request counter on /metrics (client-go's rest_client_requests_total)."""

from __future__ import annotations

import httpx2
import pytest
from lightkube import Client, KubeConfig

from nodewright.cluster.api import ApiError, UnreachableError
from nodewright.cluster.kube.cluster import FIELD_MANAGER, KubeCluster
from tests.controllers.metric_samples import sample_value


def cluster_answering(handler: httpx2.MockTransport) -> KubeCluster:
    config = KubeConfig.from_dict({
        "clusters": [{"name": "t", "cluster": {"server": "https://kube.test:6443"}}],
        "users": [{"name": "t", "user": {"token": "t"}}],
        "contexts": [{"name": "t", "context": {"cluster": "t", "user": "t"}}],
        "current-context": "t",
    })
    client = Client(config, field_manager=FIELD_MANAGER, transport=handler, trust_env=False)
    return KubeCluster(client, cached_kinds=())


def requests(code: str, method: str) -> float:
    return sample_value("rest_client_requests_total",
                                     {"code": code, "method": method,
                                      "host": "kube.test:6443"}) or 0.0


def test_an_error_without_content_type_keeps_its_code_and_says_what_came_back() -> None:
    cluster = cluster_answering(httpx2.MockTransport(
        lambda request: httpx2.Response(502, content=b"upstream connect error")))
    with pytest.raises(ApiError) as failed:
        cluster.get("Node", "n1")
    assert failed.value.status == 502
    assert "upstream connect error" in failed.value.message
    assert "kube.test" in failed.value.message


def test_an_html_error_page_is_an_api_error_not_a_traceback() -> None:
    cluster = cluster_answering(httpx2.MockTransport(lambda request: httpx2.Response(
        404, headers={"Content-Type": "text/html"}, content=b"<h1>Not Found</h1>")))
    with pytest.raises(ApiError) as failed:
        cluster.list("Node")
    assert failed.value.status == 404


def test_no_answer_is_unreachable_and_names_the_server() -> None:
    def refuse(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("[Errno 111] Connection refused", request=request)

    cluster = cluster_answering(httpx2.MockTransport(refuse))
    with pytest.raises(UnreachableError) as failed:
        cluster.get("Node", "n1")
    assert failed.value.status == 503
    assert "cannot reach the API server at https://kube.test:6443" in failed.value.message


def test_every_answer_is_counted_by_code_and_method() -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}
    answers = iter([httpx2.Response(200, json=node),
                    httpx2.Response(403, json={"kind": "Status", "apiVersion": "v1",
                                               "code": 403, "reason": "Forbidden",
                                               "message": "no"})])
    cluster = cluster_answering(httpx2.MockTransport(lambda request: next(answers)))
    before_ok, before_refused = requests("200", "GET"), requests("403", "GET")
    cluster.get("Node", "n1")
    with pytest.raises(ApiError):
        cluster.get("Node", "n1")
    assert requests("200", "GET") == before_ok + 1
    assert requests("403", "GET") == before_refused + 1
