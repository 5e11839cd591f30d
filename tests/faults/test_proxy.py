"""The fault proxy itself, against local servers: what passes through it untouched (TLS
included), and each fault it injects, as the client on the other side sees it."""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.faults.proxy import WATCHES, FaultProxy, Rule, fail, lose_answer
from tests.faults.servers import LocalHttpServer, TlsEchoServer
from tests.kube.waiting import eventually


@pytest.fixture
def server() -> Iterator[LocalHttpServer]:
    served = LocalHttpServer()
    yield served
    served.stop()


@pytest.fixture
def echo() -> Iterator[TlsEchoServer]:
    served = TlsEchoServer()
    yield served
    served.stop()


@pytest.fixture
def http_proxy(server: LocalHttpServer) -> Iterator[FaultProxy]:
    with FaultProxy(server.address, mode="http") as proxy:
        yield proxy


def tls_client(port: int, ca_file: Path, timeout: float = 15.0) -> ssl.SSLSocket:
    context = ssl.create_default_context(cafile=str(ca_file))
    raw = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    return context.wrap_socket(raw, server_hostname="127.0.0.1")


def get(port: int, path: str = "/hello", *,
        connection: http.client.HTTPConnection | None = None,
        ) -> tuple[int, dict[str, str], bytes]:
    conn = connection or http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    conn.request("GET", path)
    answer = conn.getresponse()
    return answer.status, dict(answer.getheaders()), answer.read()


def post(port: int, body: bytes = b"{}") -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    conn.request("POST", "/items", body=body)
    answer = conn.getresponse()
    return answer.status, dict(answer.getheaders()), answer.read()


# --- tcp: connection faults, TLS passing through ------------------------------------------------


def test_tls_passes_through_untouched_and_the_client_checks_the_servers_own_certificate(
        echo: TlsEchoServer) -> None:
    with FaultProxy(f"127.0.0.1:{echo.port}") as proxy, \
            tls_client(proxy.port, echo.ca_file) as client:
        client.sendall(b"ping")
        assert client.recv(100) == b"ping"
        assert proxy.stats["connections"] == 1


def test_a_delay_holds_each_chunk_back(echo: TlsEchoServer) -> None:
    with FaultProxy(f"127.0.0.1:{echo.port}") as proxy, \
            tls_client(proxy.port, echo.ca_file) as client:
        with proxy.delayed(0.3):
            started = time.monotonic()
            client.sendall(b"slow")
            assert client.recv(100) == b"slow"
            # at least one delay each way (a lower bound: the proxy's own doing)
            assert time.monotonic() - started >= 0.6
        assert proxy.stats["delayed"] >= 2


def test_a_partition_loses_what_is_sent_and_the_heal_resets_the_connection(
        echo: TlsEchoServer) -> None:
    with FaultProxy(f"127.0.0.1:{echo.port}") as proxy, \
            tls_client(proxy.port, echo.ca_file, timeout=10) as client:
        client.sendall(b"before")
        assert client.recv(100) == b"before"
        proxy.partition()
        client.sendall(b"lost")
        client.settimeout(1.0)  # long enough for an answer that would come
        with pytest.raises(TimeoutError):
            client.recv(100)  # nothing comes back: the bytes went nowhere
        eventually(lambda: proxy.stats["dropped_bytes"] > 0, "the bytes dropped")
        proxy.heal()
        client.settimeout(5)
        with pytest.raises((ConnectionResetError, ssl.SSLError)):
            data = client.recv(100)
            if not data:
                raise ConnectionResetError("closed")
        with tls_client(proxy.port, echo.ca_file) as again:  # a new connection goes through
            again.sendall(b"after")
            assert again.recv(100) == b"after"


def test_a_new_connection_made_during_a_partition_gets_nowhere(echo: TlsEchoServer) -> None:
    with FaultProxy(f"127.0.0.1:{echo.port}") as proxy, proxy.partitioned(), \
            pytest.raises((TimeoutError, ssl.SSLError, OSError)):
        tls_client(proxy.port, echo.ca_file, timeout=1.0)  # the handshake never ends


def test_a_reset_closes_every_open_connection(echo: TlsEchoServer) -> None:
    with FaultProxy(f"127.0.0.1:{echo.port}") as proxy, \
            tls_client(proxy.port, echo.ca_file) as client:
        client.sendall(b"x")
        assert client.recv(10) == b"x"
        assert proxy.reset() == 1
        with pytest.raises((ConnectionResetError, ssl.SSLError)):
            data = client.recv(10)
            if not data:
                raise ConnectionResetError("closed")
        assert proxy.stats["resets"] == 1


def test_an_outage_refuses_connections_until_restored_on_the_same_port(
        echo: TlsEchoServer) -> None:
    with FaultProxy(f"127.0.0.1:{echo.port}") as proxy:
        open_one = tls_client(proxy.port, echo.ca_file)
        open_one.sendall(b"a")
        assert open_one.recv(10) == b"a"
        with proxy.down():
            with pytest.raises(ConnectionRefusedError):
                socket.create_connection(("127.0.0.1", proxy.port), timeout=2)
            with pytest.raises((ConnectionResetError, ssl.SSLError, BrokenPipeError)):
                open_one.sendall(b"b")
                if not open_one.recv(10):
                    raise ConnectionResetError("closed")
        with tls_client(proxy.port, echo.ca_file) as client:
            client.sendall(b"back")
            assert client.recv(10) == b"back"
        open_one.close()


def test_request_faults_need_the_http_mode(echo: TlsEchoServer) -> None:
    with FaultProxy(f"127.0.0.1:{echo.port}") as proxy, pytest.raises(ValueError, match="http"):
        proxy.inject(fail(503))
    with pytest.raises(ValueError, match="mode='http'"):
        FaultProxy(f"127.0.0.1:{echo.port}", tls=True)
    with pytest.raises(ValueError, match="no host:port"):
        FaultProxy("http://127.0.0.1")
    with pytest.raises(ValueError, match="share"):
        Rule(share=0.0)


# --- http: requests relayed, faults per request ---------------------------------------------------


def test_requests_are_relayed_on_one_kept_alive_connection_and_recorded(
        server: LocalHttpServer, http_proxy: FaultProxy) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", http_proxy.port, timeout=5)
    for _ in range(3):
        assert get(http_proxy.port, connection=connection)[::2] == (200, b"hello")
    assert post(http_proxy.port, b'{"a": 1}')[0] == 201
    assert server.items == [b'{"a": 1}']
    assert http_proxy.stats["connections"] == 2
    assert [(r.method, r.target, r.status, r.forwarded) for r in http_proxy.records] == [
        ("GET", "/hello", 200, True)] * 3 + [("POST", "/items", 201, True)]
    assert [r.target for r in http_proxy.writes()] == ["/items"]


def test_a_503_window_with_retry_after_hits_exactly_its_share_of_matching_requests(
        server: LocalHttpServer, http_proxy: FaultProxy) -> None:
    with http_proxy.injected(fail(503, retry_after=2, share=0.5, methods={"GET"},
                                  path="^/hello")) as window:
        answers = [get(http_proxy.port) for _ in range(10)]
        assert post(http_proxy.port)[0] == 201  # not a GET: untouched
    statuses = [status for status, _, _ in answers]
    assert statuses.count(503) == 5 and statuses.count(200) == 5
    failed = next(a for a in answers if a[0] == 503)
    assert failed[1]["Retry-After"] == "2"
    assert json.loads(failed[2])["reason"] == "ServiceUnavailable"
    assert (window.seen, window.hits) == (10, 5)
    assert len([r for r in server.requests if r == ("GET", "/hello")]) == 5
    assert http_proxy.stats["faulted_answer"] == 5


def test_a_429_window_ends_by_itself_and_requests_pass_again(
        server: LocalHttpServer, http_proxy: FaultProxy) -> None:
    window = http_proxy.inject(fail(429, retry_after=1), seconds=0.5)
    assert get(http_proxy.port)[0] == 429
    eventually(lambda: not window.active, "the window to end")
    assert get(http_proxy.port)[::2] == (200, b"hello")


def test_a_limit_caps_the_faults_of_a_window(
        server: LocalHttpServer, http_proxy: FaultProxy) -> None:
    http_proxy.inject(fail(500, limit=2))
    assert [get(http_proxy.port)[0] for _ in range(4)] == [500, 500, 200, 200]


def test_a_lost_answer_reaches_the_server_and_the_client_hears_only_the_failure(
        server: LocalHttpServer, http_proxy: FaultProxy) -> None:
    http_proxy.inject(lose_answer(503, retry_after=1, methods={"POST"}, limit=1))
    status, headers, _ = post(http_proxy.port, b"first")
    assert (status, headers["Retry-After"]) == (503, "1")
    assert server.items == [b"first"]  # the write happened
    assert post(http_proxy.port, b"second")[0] == 201
    assert [(r.status, r.forwarded, r.fault) for r in http_proxy.records] == [
        (503, True, "lose_answer"), (201, True, None)]


def test_a_request_one_window_lets_pass_is_taken_by_the_next(
        server: LocalHttpServer, http_proxy: FaultProxy) -> None:
    first = http_proxy.inject(fail(503, limit=1))
    second = http_proxy.inject(fail(429, share=0.5))
    assert [get(http_proxy.port)[0] for _ in range(5)] == [503, 200, 429, 200, 429]
    assert (first.seen, first.hits, second.seen, second.hits) == (5, 1, 4, 2)


def test_a_held_answer_reaches_the_server_and_never_the_client(
        server: LocalHttpServer, http_proxy: FaultProxy) -> None:
    held = http_proxy.inject(Rule("hold_answer", methods=frozenset({"POST"})))
    waiting = http.client.HTTPConnection("127.0.0.1", http_proxy.port, timeout=10)
    waiting.request("POST", "/items", body=b"launched")
    eventually(lambda: server.items == [b"launched"], "the server to act on it")
    assert held.hits == 1
    held.end()
    with pytest.raises((http.client.RemoteDisconnected, ConnectionResetError)):
        waiting.getresponse()
    assert [(r.status, r.forwarded, r.fault) for r in http_proxy.records] == [
        (None, True, "hold_answer")]


def test_a_fault_can_match_on_the_request_body(
        server: LocalHttpServer, http_proxy: FaultProxy) -> None:
    """As moto's EC2 API has one path, and the action in the form body."""
    http_proxy.inject(fail(503, body="Action=CreateFleet"))
    assert post(http_proxy.port, b"Action=DescribeInstances")[0] == 201
    assert post(http_proxy.port, b"Action=CreateFleet&Version=2016-11-15")[0] == 503
    assert server.items == [b"Action=DescribeInstances"]


def test_a_stalled_request_gets_no_answer_and_its_connection_is_reset_at_the_windows_end(
        server: LocalHttpServer, http_proxy: FaultProxy) -> None:
    window = http_proxy.inject(Rule("stall", path="^/hello"))
    connection = http.client.HTTPConnection("127.0.0.1", http_proxy.port, timeout=0.5)
    with pytest.raises(TimeoutError):
        get(http_proxy.port, connection=connection)
    slow = http.client.HTTPConnection("127.0.0.1", http_proxy.port, timeout=10)
    slow.request("GET", "/hello")
    eventually(lambda: len(http_proxy.records) == 2, "the second request held")
    window.end()
    with pytest.raises((http.client.RemoteDisconnected, ConnectionResetError)):
        slow.getresponse()
    assert server.requests == []


def test_a_reset_rule_closes_the_connection_without_an_answer(
        server: LocalHttpServer, http_proxy: FaultProxy) -> None:
    http_proxy.inject(Rule("reset", limit=1))
    with pytest.raises((http.client.RemoteDisconnected, ConnectionResetError)):
        get(http_proxy.port)
    assert get(http_proxy.port)[0] == 200


def test_a_stream_is_relayed_line_by_line_and_can_be_cut_alone(
        server: LocalHttpServer, http_proxy: FaultProxy) -> None:
    watch = http.client.HTTPConnection("127.0.0.1", http_proxy.port, timeout=5)
    watch.request("GET", "/stream?watch=true")
    answer = watch.getresponse()
    assert answer.status == 200
    server.feed(b'{"type": "ADDED"}\n')
    assert answer.read1(100) == b'{"type": "ADDED"}\n'  # before the stream has ended
    other = http.client.HTTPConnection("127.0.0.1", http_proxy.port, timeout=5)
    assert get(http_proxy.port, connection=other)[0] == 200

    assert http_proxy.reset(streaming=WATCHES) == 1
    with pytest.raises((http.client.IncompleteRead, ConnectionResetError, OSError)):
        if not answer.read1(100):
            raise ConnectionResetError("the stream ended")
    assert get(http_proxy.port, connection=other)[0] == 200  # the other one lives


def test_an_expired_watch_is_answered_as_the_api_server_answers_a_too_old_version(
        server: LocalHttpServer, http_proxy: FaultProxy) -> None:
    http_proxy.inject(Rule("expire_watch", path=WATCHES, limit=1))
    status, _, body = get(http_proxy.port, "/stream?watch=true&resourceVersion=5")
    event = json.loads(body)
    assert status == 200
    assert event["type"] == "ERROR"
    assert (event["object"]["code"], event["object"]["reason"]) == (410, "Expired")
    assert server.requests == []


def test_a_partitioned_http_request_is_never_answered_and_reset_at_the_heal(
        server: LocalHttpServer, http_proxy: FaultProxy) -> None:
    http_proxy.partition()
    waiting = http.client.HTTPConnection("127.0.0.1", http_proxy.port, timeout=10)
    waiting.request("POST", "/items", body=b"held")
    eventually(lambda: http_proxy.stats["requests"] == 1, "the request read")
    http_proxy.heal()
    with pytest.raises((http.client.RemoteDisconnected, ConnectionResetError)):
        waiting.getresponse()
    assert server.items == []
    assert post(http_proxy.port, b"after")[0] == 201


def test_tls_is_terminated_with_the_proxys_ca_and_checked_again_upstream() -> None:
    server = LocalHttpServer(tls=True)
    assert server.ca_file is not None
    try:
        with FaultProxy(server.address, mode="http", tls=True,
                        upstream_ca=server.ca_file) as proxy:
            assert proxy.ca_file is not None and proxy.url.startswith("https://")
            context = ssl.create_default_context(cafile=str(proxy.ca_file))
            connection = http.client.HTTPSConnection("127.0.0.1", proxy.port, timeout=5,
                                                     context=context)
            assert get(proxy.port, connection=connection)[::2] == (200, b"hello")
            proxy.inject(fail(429, retry_after=3))
            status, headers, _ = get(proxy.port, connection=connection)
            assert (status, headers["Retry-After"]) == (429, "3")
    finally:
        server.stop()


def test_an_upstream_it_cannot_trust_is_not_reached() -> None:
    server = LocalHttpServer(tls=True)
    other = LocalHttpServer(tls=True)  # another CA
    assert other.ca_file is not None
    try:
        with FaultProxy(server.address, mode="http", upstream_ca=other.ca_file) as proxy:
            with pytest.raises((http.client.RemoteDisconnected, ConnectionResetError)):
                get(proxy.port)
            assert proxy.records[-1].fault == "upstream unreachable"
            assert server.requests == []
    finally:
        server.stop()
        other.stop()
