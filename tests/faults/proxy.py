"""A proxy that puts faults between a client and its server, for tests.

`FaultProxy(upstream)` listens on 127.0.0.1 and forwards to `upstream` (`host:port` or a
URL). Point the client at `proxy.url` and the test decides, while the client runs, what
the network does to it.

Two modes:

- `tcp`: bytes relayed untouched (TLS passes through: the client still checks the
  server's own certificate). The faults are the network's: `set_delay(s)` before each
  relayed chunk; `partition()` (a blackhole: connections stay open, nothing passes either
  way and what was sent is lost; `heal()` then resets every connection that lived through
  it, as TCP gives up on them); `reset()` (open connections closed with a RST);
  `outage()` (the port refuses connections and every open one is reset, until
  `restore()`): the server gone, as when it is stopped.
- `http`: requests are read one by one (HTTP/1.1; TLS terminated with a CA of the
  proxy's own, `ca_file`, when `tls=True`) and sent on over a connection of the proxy's
  own (TLS checked against `upstream_ca` when given), responses streamed back chunk by
  chunk (a watch stays a watch). The connection faults above apply too, and `inject(rule)`
  sets a `Rule` in force for a window: matching requests (by method, path, body) are
  answered with a status (and Retry-After), have their answer lost after the server acted
  on them (or held until the window ends), are held unanswered, have their connection
  reset, or (a watch) are told their resourceVersion is too old (410 Gone). A rule hits a
  chosen `share` of the matching requests (exactly: every 1/share-th) up to a `limit`.
  The first window (in the order injected) that takes a request decides for it; a
  request no window takes is forwarded.

What it did is counted in `stats` (connections, resets, dropped bytes, requests,
forwarded, faulted) and, in http mode, kept per request in `records` (time, method,
target, status, whether the server saw it): the proxy is the test's audit log of what
the client sent.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import re
import select
import socket
import ssl
import struct
import threading
import time
import urllib.parse
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from tests.faults.certs import self_signed
from tests.faults.http_wire import CHUNK, answer, forward, read_request, relay_response

Action = Literal["answer", "lose_answer", "hold_answer", "stall", "reset", "expire_watch"]
# The query of a Kubernetes watch request (`?watch=true` or `watch=1`).
WATCHES = r"[?&]watch=(true|1)(&|$)"
TICK = 0.05


@dataclass(frozen=True)
class Rule:
    """What to do to the requests a window matches.

    - answer: not forwarded; answered `status` (with `Retry-After: retry_after`).
    - lose_answer: forwarded (the server acts on it), then its answer replaced by
      `status` (0: the connection reset instead): the client cannot know whether its
      write happened.
    - hold_answer: forwarded (the server acts on it), then its answer held until the
      window ends, and the connection reset: a client killed while it waits has done the
      work and never learnt it.
    - stall: not forwarded, not answered until the window ends; then the connection is
      reset (the client's request times out first if its timeout is shorter).
    - reset: not forwarded; the connection closed with a RST.
    - expire_watch: not forwarded; answered as the API server answers a watch from a
      resourceVersion it no longer has (200 with an ERROR event carrying 410 Expired).
    """

    action: Action = "answer"
    status: int = 503
    retry_after: float | None = None
    share: float = 1.0
    limit: int | None = None
    methods: frozenset[str] = frozenset()  # empty: every method
    path: str = ""  # a regular expression searched in the request target (path?query)
    body: str = ""  # a regular expression searched in the request body
    content: bytes | None = None  # the answer's body; None: a Kubernetes Status
    content_type: str = "application/json"

    def __post_init__(self) -> None:
        object.__setattr__(self, "methods", frozenset(m.upper() for m in self.methods))
        if not 0.0 < self.share <= 1.0:
            raise ValueError(f"Rule.share must be in (0, 1], got {self.share}")

    def matches(self, method: str, target: str, body: bytes) -> bool:
        if self.methods and method.upper() not in self.methods:
            return False
        if self.path and not re.search(self.path, target):
            return False
        return not self.body or re.search(self.body, body.decode("utf-8", "replace")) is not None

    def answer_body(self) -> bytes:
        if self.content is not None:
            return self.content
        return json.dumps(kube_status(self.status, "injected by the fault proxy")).encode()


def kube_status(code: int, message: str) -> dict[str, object]:
    reasons = {410: "Expired", 429: "TooManyRequests", 500: "InternalError",
               503: "ServiceUnavailable", 504: "Timeout"}
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reasons.get(code, "InternalError"), "code": code}


def fail(status: int, *, retry_after: float | None = None, share: float = 1.0,
         limit: int | None = None, methods: Iterable[str] = (), path: str = "",
         body: str = "", content: bytes | None = None,
         content_type: str = "application/json") -> Rule:
    """Matching requests answered `status` without reaching the server."""
    return Rule("answer", status, retry_after, share, limit, frozenset(methods), path, body,
                content, content_type)


def lose_answer(status: int = 503, *, retry_after: float | None = None, share: float = 1.0,
                limit: int | None = None, methods: Iterable[str] = (), path: str = "",
                body: str = "", content: bytes | None = None,
                content_type: str = "application/json") -> Rule:
    """Matching requests reach the server; the client gets `status` instead of its answer."""
    return Rule("lose_answer", status, retry_after, share, limit, frozenset(methods), path,
                body, content, content_type)


@dataclass
class Window:
    """A rule in force from `inject` until `end()` (or its `seconds` ran out)."""

    rule: Rule
    until: float | None = None  # time.monotonic() at which it ends by itself
    seen: int = 0  # matching requests
    hits: int = 0  # faulted requests
    ended: threading.Event = field(default_factory=threading.Event)

    def end(self) -> None:
        self.ended.set()

    @property
    def active(self) -> bool:
        if self.until is not None and time.monotonic() >= self.until:
            self.ended.set()
        return not self.ended.is_set()

    def take(self) -> bool:
        """One more matching request: whether it is to be faulted (every 1/share-th,
        exactly, up to the limit)."""
        before = self.seen
        self.seen += 1
        if self.rule.limit is not None and self.hits >= self.rule.limit:
            return False
        if int(self.seen * self.rule.share) > int(before * self.rule.share):
            self.hits += 1
            return True
        return False


@dataclass(frozen=True)
class Record:
    """One request the proxy read (http mode)."""

    at: float  # time.time() when it was read
    method: str
    target: str
    status: int | None  # what the client was answered (None: no answer, connection reset)
    forwarded: bool  # whether the server got it
    fault: str | None  # the rule's action, if one hit

    @property
    def write(self) -> bool:
        return self.method in ("POST", "PUT", "PATCH", "DELETE")


class _Connection:
    def __init__(self, client: socket.socket, partitioned: bool) -> None:
        self.client = client
        self.upstream: socket.socket | None = None
        self.doomed = threading.Event()
        self.partitioned = partitioned  # lived through a partition
        self.lost = False  # bytes were dropped on it
        self.streaming = ""  # the target of the response being relayed (http mode)


class FaultProxy:
    """See the module's text."""

    def __init__(self, upstream: str, *, mode: Literal["tcp", "http"] = "tcp",
                 tls: bool = False, upstream_ca: Path | str | None = None,
                 name: str = "proxy") -> None:
        parsed = urllib.parse.urlsplit(upstream if "//" in upstream else f"//{upstream}")
        if not parsed.hostname or not parsed.port:
            raise ValueError(f"FaultProxy: upstream {upstream!r} has no host:port")
        if tls and mode != "http":
            raise ValueError("FaultProxy: tls=True terminates TLS, which needs mode='http'")
        self.upstream = (parsed.hostname, parsed.port)
        self._upstream_scheme = parsed.scheme or "http"
        self.mode = mode
        self.name = name
        self.upstream_tls = (ssl.create_default_context(cafile=str(upstream_ca))
                             if upstream_ca is not None else None)
        self.ca_file: Path | None = None
        self._server_tls: ssl.SSLContext | None = None
        if tls:
            self.ca_file, self._server_tls = self_signed()
        self.stats: Counter[str] = Counter()
        self.records: list[Record] = []
        self._windows: list[Window] = []
        self._delay = 0.0
        self._partitioned = threading.Event()
        self._healed = threading.Event()
        self._down = False
        self._stopped = threading.Event()
        self._lock = threading.Lock()
        self._connections: set[_Connection] = set()
        self._threads: list[threading.Thread] = []
        listener = self._listen(0)
        self._listener: socket.socket | None = listener
        self.port = int(listener.getsockname()[1])
        self._acceptor = self._spawn(self._accept_loop, listener)

    # --- where the client connects ------------------------------------------------------

    @property
    def url(self) -> str:
        """Where the client connects: in tcp mode with the upstream's scheme (TLS passes
        through), in http mode https when the proxy terminates TLS."""
        if self.mode == "tcp":
            scheme = self._upstream_scheme
        else:
            scheme = "https" if self._server_tls is not None else "http"
        return f"{scheme}://127.0.0.1:{self.port}"

    # --- connection faults ----------------------------------------------------------------

    def set_delay(self, seconds: float) -> None:
        """Each chunk (tcp) or request (http) waits `seconds` before it is relayed."""
        self._delay = max(0.0, seconds)

    @contextlib.contextmanager
    def delayed(self, seconds: float) -> Iterator[None]:
        self.set_delay(seconds)
        try:
            yield
        finally:
            self.set_delay(0.0)

    def partition(self) -> None:
        """Nothing passes either way from now on; connections stay open."""
        with self._lock:
            self._healed.clear()
            self._partitioned.set()
            for connection in self._connections:
                connection.partitioned = True
        self.stats["partitions"] += 1

    def heal(self) -> None:
        """Traffic passes again; connections that lived through the partition are reset
        (what was lost on them cannot be resent)."""
        with self._lock:
            self._partitioned.clear()
            self._healed.set()
            survivors = [c for c in self._connections if c.partitioned]
        for connection in survivors:
            self._doom(connection)

    @contextlib.contextmanager
    def partitioned(self) -> Iterator[None]:
        self.partition()
        try:
            yield
        finally:
            self.heal()

    def reset(self, *, streaming: str | None = None) -> int:
        """Reset open connections (only those relaying a response whose request target
        matches the regular expression `streaming`, e.g. `WATCHES`, when given); how
        many."""
        with self._lock:
            chosen = [c for c in self._connections
                      if streaming is None or (c.streaming and re.search(streaming, c.streaming))]
        for connection in chosen:
            self._doom(connection)
        return len(chosen)

    def outage(self) -> None:
        """The server gone: new connections refused, open ones reset."""
        with self._lock:
            self._down = True
            listener, self._listener = self._listener, None
        if listener is not None:
            _close_listener(listener)
        self.stats["outages"] += 1
        self.reset()

    def restore(self) -> None:
        """The port accepts connections again."""
        with self._lock:
            if not self._down:
                return
            self._down = False
            self._listener = listener = self._listen(self.port)
        self._acceptor = self._spawn(self._accept_loop, listener)

    @contextlib.contextmanager
    def down(self) -> Iterator[None]:
        self.outage()
        try:
            yield
        finally:
            self.restore()

    # --- request faults (http mode) --------------------------------------------------------

    def inject(self, rule: Rule, *, seconds: float | None = None) -> Window:
        """`rule` in force for `seconds` (None: until `end()`)."""
        if self.mode != "http":
            raise ValueError("FaultProxy: request faults need mode='http'")
        window = Window(rule, None if seconds is None else time.monotonic() + seconds)
        with self._lock:
            self._windows.append(window)
        return window

    @contextlib.contextmanager
    def injected(self, rule: Rule, *, seconds: float | None = None) -> Iterator[Window]:
        window = self.inject(rule, seconds=seconds)
        try:
            yield window
        finally:
            window.end()

    def writes(self, *, since: float = 0.0, path: str = "") -> list[Record]:
        """The write requests the server got (time.time() >= since; target matching
        `path`)."""
        with self._lock:
            records = list(self.records)
        return [r for r in records if r.write and r.forwarded and r.at >= since
                and (not path or re.search(path, r.target))]

    # --- life ---------------------------------------------------------------------------

    def stop(self) -> None:
        self._stopped.set()
        self._healed.set()
        with self._lock:
            listener, self._listener = self._listener, None
            windows = list(self._windows)
        for window in windows:
            window.end()
        if listener is not None:
            _close_listener(listener)
        self.reset()
        deadline = time.monotonic() + 10
        for thread in list(self._threads):
            thread.join(max(0.0, deadline - time.monotonic()))

    def __enter__(self) -> FaultProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- inside -------------------------------------------------------------------------

    def _listen(self, port: int) -> socket.socket:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        deadline = time.monotonic() + 5
        while True:
            try:
                listener.bind(("127.0.0.1", port))
                break
            except OSError:  # the old listener not yet released by its accept thread
                if not port or time.monotonic() >= deadline:
                    listener.close()
                    raise
                time.sleep(TICK)
        listener.listen(128)
        listener.settimeout(TICK * 4)
        return listener

    def _spawn(self, target: Callable[..., None], *args: object) -> threading.Thread:
        thread = threading.Thread(target=target, args=args, daemon=True,
                                  name=f"{self.name}-{target.__name__}")
        with self._lock:
            self._threads = [t for t in self._threads if t.is_alive()]
            self._threads.append(thread)
        thread.start()
        return thread

    def _accept_loop(self, listener: socket.socket) -> None:
        while not self._stopped.is_set():
            try:
                client, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:  # closed: an outage or the end
                return
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                connection = _Connection(client, self._partitioned.is_set())
                self._connections.add(connection)
            self.stats["connections"] += 1
            handler = self._relay_tcp if self.mode == "tcp" else self._serve_http
            self._spawn(handler, connection)

    def _doom(self, connection: _Connection) -> None:
        """Reset a connection: the tcp relay closes it on its next tick; an http handler,
        blocked on a read, is woken by the shutdown."""
        if connection.doomed.is_set():
            return
        connection.doomed.set()
        self.stats["resets"] += 1
        for sock in (connection.client, connection.upstream):
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                if self.mode == "http":
                    with contextlib.suppress(OSError):
                        sock.shutdown(socket.SHUT_RDWR)

    def _finish(self, connection: _Connection) -> None:
        with self._lock:
            self._connections.discard(connection)
        for sock in (connection.client, connection.upstream):
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.close()

    # --- tcp ------------------------------------------------------------------------------

    def _relay_tcp(self, connection: _Connection) -> None:
        try:
            try:
                upstream = socket.create_connection(self.upstream, timeout=10)
            except OSError:
                self._doom(connection)
                return
            upstream.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            connection.upstream = upstream
            peers = {connection.client: upstream, upstream: connection.client}
            while not connection.doomed.is_set() and not self._stopped.is_set():
                readable, _, _ = select.select(list(peers), [], [], TICK)
                for sock in readable:
                    try:
                        data = sock.recv(CHUNK)
                    except OSError:
                        data = b""
                    if not data:  # one side closed: close the other as it would
                        return
                    if self._partitioned.is_set():
                        connection.lost = True
                        self.stats["dropped_bytes"] += len(data)
                        continue
                    if self._delay:
                        self.stats["delayed"] += 1
                        time.sleep(self._delay)
                    try:
                        peers[sock].sendall(data)
                    except OSError:
                        return
        finally:
            self._finish(connection)

    # --- http -----------------------------------------------------------------------------

    def _serve_http(self, connection: _Connection) -> None:
        upstream: http.client.HTTPConnection | None = None
        try:
            if self._server_tls is not None:
                connection.client.settimeout(10)
                try:
                    connection.client = self._server_tls.wrap_socket(connection.client,
                                                                     server_side=True)
                except (OSError, ssl.SSLError):
                    return
                connection.client.settimeout(None)
            reader = connection.client.makefile("rb")
            while not connection.doomed.is_set() and not self._stopped.is_set():
                request = read_request(reader)
                if request is None:
                    return
                if upstream is None:
                    upstream = self._upstream_connection()
                keep = self._exchange(connection, upstream, *request)
                if not keep:
                    return
        except (OSError, http.client.HTTPException, ValueError):
            return
        finally:
            if upstream is not None:
                upstream.close()
            self._finish(connection)

    def _upstream_connection(self) -> http.client.HTTPConnection:
        host, port = self.upstream
        if self.upstream_tls is not None:
            return http.client.HTTPSConnection(host, port, timeout=None,
                                               context=self.upstream_tls)
        return http.client.HTTPConnection(host, port, timeout=None)

    def _window_for(self, method: str, target: str, body: bytes) -> Window | None:
        with self._lock:
            self._windows = [w for w in self._windows if w.active]
            for window in self._windows:
                if window.rule.matches(method, target, body) and window.take():
                    return window
        return None

    def _record(self, method: str, target: str, status: int | None, forwarded: bool,
                fault: str | None, at: float) -> None:
        with self._lock:
            self.records.append(Record(at, method, target, status, forwarded, fault))

    def _exchange(self, connection: _Connection, upstream: http.client.HTTPConnection,
                  method: str, target: str, headers: list[tuple[str, str]],
                  body: bytes) -> bool:
        """One request: faulted or forwarded; whether the connection goes on."""
        at = time.time()
        self.stats["requests"] += 1
        if self._partitioned.is_set():
            connection.partitioned = True  # heal() resets it
            self._healed.wait()
            self._record(method, target, None, False, "partition", at)
            return False  # heal() reset it
        window = self._window_for(method, target, body)
        rule = window.rule if window is not None else None
        if rule is not None:
            self.stats["faulted"] += 1
            self.stats[f"faulted_{rule.action}"] += 1
        if rule is not None and rule.action not in ("lose_answer", "hold_answer"):
            return self._fault(connection, rule, window, method, target, at)
        if self._delay:
            self.stats["delayed"] += 1
            time.sleep(self._delay)
        try:
            if upstream.sock is None:
                upstream.connect()
            connection.upstream = upstream.sock  # for _doom to wake a read on it
            response = forward(upstream, method, target, headers, body)
        except (OSError, http.client.HTTPException):
            upstream.close()
            self._record(method, target, None, False, "upstream unreachable", at)
            self._doom(connection)
            return False
        self.stats["forwarded"] += 1
        if rule is not None:  # the server acted; the client never hears how
            response.read()
            if rule.action == "hold_answer":
                self._record(method, target, None, True, rule.action, at)
                self._hold(window)
                self._doom(connection)
                return False
            if rule.status == 0:
                self._record(method, target, None, True, rule.action, at)
                self._doom(connection)
                return False
            self._record(method, target, rule.status, True, rule.action, at)
            answer(connection.client, rule.status, rule.answer_body(), rule.content_type,
                    rule.retry_after)
            if response.will_close:
                upstream.close()
            return True
        self._record(method, target, response.status, True, None, at)
        connection.streaming = target
        try:
            relay_response(connection.client, response, head_only=method == "HEAD")
        finally:
            connection.streaming = ""
        client_closes = any(k.lower() == "connection" and v.lower() == "close"
                            for k, v in headers)
        if response.will_close:
            upstream.close()
        return not client_closes

    def _hold(self, window: Window | None) -> None:
        while window is not None and window.active and not self._stopped.is_set():
            window.ended.wait(TICK)

    def _fault(self, connection: _Connection, rule: Rule, window: Window | None,
               method: str, target: str, at: float) -> bool:
        if rule.action == "stall":
            self._record(method, target, None, False, rule.action, at)
            self._hold(window)
            self._doom(connection)
            return False
        if rule.action == "reset":
            self._record(method, target, None, False, rule.action, at)
            self._doom(connection)
            return False
        if rule.action == "expire_watch":
            self._record(method, target, 200, False, rule.action, at)
            status = kube_status(410, "too old resource version (injected by the fault proxy)")
            event = json.dumps({"type": "ERROR", "object": status}).encode() + b"\n"
            answer(connection.client, 200, event, "application/json", None)
            return True
        self._record(method, target, rule.status, False, rule.action, at)
        answer(connection.client, rule.status, rule.answer_body(), rule.content_type,
                rule.retry_after)
        return True


def _close_listener(listener: socket.socket) -> None:
    """Stop listening at once (a close alone waits for the accept thread's poll)."""
    with contextlib.suppress(OSError):
        listener.shutdown(socket.SHUT_RDWR)
    listener.close()
