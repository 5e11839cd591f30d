"""client-go's request metrics as a Karpenter v1.14.1 process exports them: operatorpkg's
RegisterClientMetrics (called in Karpenter's operator init) puts
`client_go_request_total{code,method}` and
`client_go_request_duration_seconds{verb,group,version,kind,subresource}` behind client-go's
REST client. Requests go through the adapter's transport to a stubbed server; time is a
counter that only the transport's waits advance, so the durations are exact."""

from __future__ import annotations

import httpx2
import pytest

from nodewright.cluster.kube.client_metrics import latency_labels
from nodewright.cluster.kube.transport import ClientLimits, LimitedTransport
from tests.controllers.metric_samples import sample_value, samples


class CountedTime:
    def __init__(self) -> None:
        self.now = 50.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def transport_answering(*answers: httpx2.Response | Exception,
                        time_: CountedTime) -> LimitedTransport:
    pending = list(answers)

    def answer(request: httpx2.Request) -> httpx2.Response:
        got = pending.pop(0)
        if isinstance(got, Exception):
            raise got
        return got

    return LimitedTransport(httpx2.MockTransport(answer), ClientLimits(),
                            monotonic=time_.monotonic, sleep=time_.sleep)


def attempts(code: str, method: str) -> float:
    return sample_value("client_go_request_total", {"code": code, "method": method}) or 0.0


def latency(suffix: str, **labels: str) -> float:
    return sample_value(f"client_go_request_duration_seconds_{suffix}", labels) or 0.0


URL = "https://kube.test:6443"


def test_every_attempt_is_counted_by_its_answer_and_a_failed_send_as_an_error() -> None:
    time_ = CountedTime()
    transport = transport_answering(
        httpx2.Response(429, headers={"Retry-After": "2"}), httpx2.Response(201),
        httpx2.ConnectError("connection refused"), time_=time_)
    before = {code: attempts(code, "POST") for code in ("429", "201", "<error>")}
    request = httpx2.Request("POST", f"{URL}/api/v1/namespaces/ns/pods/p/eviction")
    assert transport.handle_request(request).status_code == 201
    with pytest.raises(httpx2.ConnectError):
        transport.handle_request(httpx2.Request("POST", f"{URL}/api/v1/namespaces/ns/events"))
    assert attempts("429", "POST") == before["429"] + 1
    assert attempts("201", "POST") == before["201"] + 1
    assert attempts("<error>", "POST") == before["<error>"] + 1


def test_a_requests_latency_covers_its_retries_and_names_what_it_addressed() -> None:
    time_ = CountedTime()
    transport = transport_answering(
        httpx2.Response(429, headers={"Retry-After": "2"}), httpx2.Response(201),
        time_=time_)
    eviction = {"verb": "CREATE", "group": "", "version": "v1", "kind": "pods",
                "subresource": "eviction"}
    count, total = latency("count", **eviction), latency("sum", **eviction)
    transport.handle_request(
        httpx2.Request("POST", f"{URL}/api/v1/namespaces/ns/pods/p/eviction"))
    assert latency("count", **eviction) == count + 1
    assert latency("sum", **eviction) == total + 2.0  # the Retry-After waited out


def test_a_watch_is_counted_as_an_attempt_but_has_no_latency() -> None:
    time_ = CountedTime()
    transport = transport_answering(httpx2.Response(200), time_=time_)
    before = attempts("200", "GET")
    observed = sum(s.value for s in samples("client_go_request_duration_seconds_count")
                   if s.labels["kind"] == "leases")
    transport.handle_request(httpx2.Request(
        "GET", f"{URL}/apis/coordination.k8s.io/v1/namespaces/ns/leases",
        params={"watch": "true"}))
    assert attempts("200", "GET") == before + 1
    assert sum(s.value for s in samples("client_go_request_duration_seconds_count")
               if s.labels["kind"] == "leases") == observed


@pytest.mark.parametrize(("method", "path", "labels"), [
    ("GET", "/api/v1/nodes", ("LIST", "", "v1", "nodes", "")),
    ("GET", "/api/v1/nodes/node-a", ("GET", "", "v1", "nodes", "")),
    ("DELETE", "/api/v1/nodes/node-a", ("DELETE", "", "v1", "nodes", "")),
    ("GET", "/api/v1/namespaces/default/pods", ("LIST", "", "v1", "pods", "")),
    ("GET", "/api/v1/namespaces/default", ("GET", "", "v1", "namespaces", "")),
    ("POST", "/api/v1/namespaces/default/events", ("CREATE", "", "v1", "events", "")),
    ("PATCH", "/apis/karpenter.sh/v1/nodeclaims/default-x7k2p/status",
     ("PATCH", "karpenter.sh", "v1", "nodeclaims", "status")),
    ("PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/karpenter-leader",
     ("UPDATE", "coordination.k8s.io", "v1", "leases", "")),
    ("PUT", "/apis/karpenter.sh/v1/nodepools", ("CREATE", "karpenter.sh", "v1", "nodepools", "")),
    ("POST", "/api/v1/namespaces/default/pods/web-0/eviction",
     ("CREATE", "", "v1", "pods", "eviction")),
    # client-go templates a cluster-scoped object's other subresources as a namespace.
    ("GET", "/api/v1/nodes/node-a/proxy", ("LIST", "", "v1", "nodes", "proxy")),
])
def test_the_latency_labels_are_operatorpkgs_reading_of_client_gos_url_template(
        method: str, path: str, labels: tuple[str, ...]) -> None:
    assert latency_labels(method, path) == dict(
        zip(("verb", "group", "version", "kind", "subresource"), labels, strict=True))


@pytest.mark.parametrize("path", ["/version", "/apis", "/apis/karpenter.sh/v1", "/openapi/v2"])
def test_discovery_and_other_paths_have_no_latency_series(path: str) -> None:
    assert latency_labels("GET", path) is None
