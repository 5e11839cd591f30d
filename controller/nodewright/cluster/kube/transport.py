"""What every answer of the API server passes through on its way to lightkube.

- It is counted in client-go's `rest_client_requests_total{code,host,method}`, so the load
  the controller puts on the API server can be read from its own /metrics (a watch counts
  once, when its stream opens). The metrics a Karpenter process has samples of,
  `client_go_request_total` (every attempt, Retry-After retries and failed sends included)
  and `client_go_request_duration_seconds` (each request but a watch), are written by
  `LimitedTransport` (`client_metrics`).
- An error answer without a Content-Type (a proxy, a load balancer, a server that is not
  Kubernetes) gets `text/plain`: lightkube looks that header up unguarded and would raise a
  KeyError; with it, lightkube raises its HTTP status error, which the adapter translates.

Every request also passes `LimitedTransport` (installed by `limit`), which does what client-go's
REST client does with KUBE_CLIENT_QPS and KUBE_CLIENT_BURST: a token bucket spaces the
requests (a watch takes a token when it opens, none while it streams), and an answer 429
Too Many Requests, or a 5xx, that carries Retry-After is waited out (bounded) and the request
sent again a few times, for reads and writes alike (API Priority and Fairness answers so
when the server sheds load). A write request (anything but GET) first asks the transport's
`fence`, when one is set (`cluster.fencing`): each attempt, so a write that slept out a
Retry-After, or a create sent again after an unknown outcome, is refused once this replica
is not sure it still leads. `waits`, the log of what was waited, keeps the latest
WAITS_KEPT (older ones are dropped and counted in
`nodewright_buffer_dropped_total{buffer="transport_waits"}`).

The hook is an httpx event hook on lightkube's HTTP client (`Client._client._client`; the
same internals gaps.py relies on), so the TLS and auth lightkube configured stay as they are.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx2
from lightkube import Client

from nodewright.cluster.api import KINDS
from nodewright.cluster.fencing import Fence
from nodewright.cluster.kube import client_metrics
from nodewright.metrics import BUFFER_DROPPED, REST_CLIENT_REQUESTS
from nodewright.runtime.ratelimit import TokenBucket

log = logging.getLogger(__name__)

# Karpenter's defaults (pkg/operator/options: KUBE_CLIENT_QPS, KUBE_CLIENT_BURST).
DEFAULT_QPS = 200.0
DEFAULT_BURST = 300
# Entries of the wait log kept (tests and debugging read the latest).
WAITS_KEPT = 1000
READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
_KIND_BY_PLURAL = {kind.plural: name for name, kind in KINDS.items()}


@dataclass(frozen=True)
class ClientLimits:
    qps: float = DEFAULT_QPS
    burst: int = DEFAULT_BURST
    # Retries of an answer with Retry-After, and the longest wait honoured per retry.
    retries: int = 3
    max_retry_after: float = 10.0


class LimitedTransport(httpx2.BaseTransport):
    """QPS/burst and Retry-After around the transport lightkube built (TLS, auth kept).
    `monotonic` and `sleep` are injectable: tests count the waits instead of taking them."""

    def __init__(self, inner: httpx2.BaseTransport, limits: ClientLimits, *,
                 monotonic: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.inner = inner
        self.limits = limits
        self._bucket = TokenBucket(limits.qps, limits.burst, now=monotonic)
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._sleep = sleep
        # What was waited, for tests and debugging: (why, seconds), the latest WAITS_KEPT.
        self.waits: deque[tuple[str, float]] = deque(maxlen=WAITS_KEPT)
        # Asked before each write request (None: writes are never refused here).
        self.fence: Fence | None = None
        # The transport whose fence a mounted one (a proxy's) shares.
        self.primary: LimitedTransport | None = None

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        started = self._monotonic()
        attempts = 0
        try:
            retried = 0
            while True:
                with self._lock:
                    delay = self._bucket.reserve()
                if delay > 0:
                    self._wait("qps", delay)
                self._check_fence(request)
                attempts += 1
                response = self._attempt(request)
                retry_after = _retry_after(response)
                if retry_after is None or retried >= self.limits.retries:
                    return response
                response.close()
                retried += 1
                wait = min(retry_after, self.limits.max_retry_after)
                log.info("the API server answered %s %s with %d and Retry-After %s; "
                         "retrying in %.1fs (%d of %d)", request.method, request.url.path,
                         response.status_code, response.headers.get("retry-after"), wait,
                         retried, self.limits.retries)
                self._wait("retry-after", wait)
        finally:
            if attempts and request.url.params.get("watch") not in ("true", "1"):
                client_metrics.requested(request.method, request.url.path,
                                         self._monotonic() - started)

    def _attempt(self, request: httpx2.Request) -> httpx2.Response:
        """One send, counted by what came back."""
        try:
            response = self.inner.handle_request(request)
        except Exception:
            client_metrics.attempted(request.method, None)
            raise
        client_metrics.attempted(request.method, response.status_code)
        return response

    def _check_fence(self, request: httpx2.Request) -> None:
        fence = (self.primary or self).fence
        if fence is None or request.method in READ_METHODS:
            return
        path = request.url.path
        kind, name = resource_of(path)
        verb = "evict" if path.endswith("/eviction") else _VERBS.get(request.method, "write")
        fence.check(verb, kind, name)

    def _wait(self, why: str, seconds: float) -> None:
        if len(self.waits) == self.waits.maxlen:
            BUFFER_DROPPED.labels(buffer="transport_waits").inc()
        self.waits.append((why, seconds))
        self._sleep(seconds)

    def close(self) -> None:
        self.inner.close()


def resource_of(path: str) -> tuple[str, str]:
    """The kind and name an API path addresses ('' when it does not say):
    /apis/coordination.k8s.io/v1/namespaces/x/leases/y -> ("Lease", "y")."""
    parts = [part for part in path.split("/") if part]
    rest = parts[2:] if parts[:1] == ["api"] else parts[3:]
    if len(rest) > 2 and rest[0] == "namespaces":
        rest = rest[2:]
    if not rest:
        return "", ""
    return _KIND_BY_PLURAL.get(rest[0], rest[0]), rest[1] if len(rest) > 1 else ""


def _retry_after(response: httpx2.Response) -> float | None:
    """Seconds to wait before sending again, when the answer asks for it (client-go:
    429, or any 5xx, with a Retry-After in whole seconds)."""
    if response.status_code != 429 and not 500 <= response.status_code < 600:
        return None
    raw = response.headers.get("retry-after", "").strip()
    if not raw.isdigit():
        return None
    return float(raw)


def limit(client: Client, limits: ClientLimits, *,
          monotonic: Callable[[], float] = time.monotonic,
          sleep: Callable[[float], None] = time.sleep) -> LimitedTransport:
    """Route every request of `client` through one `LimitedTransport` (once)."""
    http: httpx2.Client = client._client._client
    if isinstance(http._transport, LimitedTransport):
        return http._transport
    limited = LimitedTransport(http._transport, limits, monotonic=monotonic, sleep=sleep)
    http._transport = limited
    # A proxy (HTTPS_PROXY) mounts transports of its own: the same limiter goes around
    # them by sharing its bucket.
    for pattern, mounted in list(http._mounts.items()):
        if mounted is not None and not isinstance(mounted, LimitedTransport):
            wrapped = LimitedTransport(mounted, limits, sleep=sleep)
            wrapped._bucket, wrapped._lock, wrapped.waits = (limited._bucket, limited._lock,
                                                             limited.waits)
            wrapped.primary = limited
            http._mounts[pattern] = wrapped
    return limited


def instrument(client: Client) -> None:
    """Add the hook to `client`'s HTTP client (once, however often it is called)."""
    http: httpx2.Client = client._client._client
    hooks: dict[str, list[Any]] = dict(http.event_hooks)
    responses = list(hooks.get("response", []))
    if on_response not in responses:
        hooks["response"] = [*responses, on_response]
        http.event_hooks = hooks


def on_response(response: httpx2.Response) -> None:
    request = response.request
    REST_CLIENT_REQUESTS.labels(code=str(response.status_code), host=request.url.netloc.decode(),
                                method=request.method).inc()
    if response.status_code >= 400 and "content-type" not in response.headers:
        response.headers["Content-Type"] = "text/plain"
