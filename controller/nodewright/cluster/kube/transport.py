"""What every answer of the API server passes through on its way to lightkube.

- It is counted in client-go's `rest_client_requests_total{code,host,method}`, the metric a
  Karpenter process exposes, so the load the controller puts on the API server can be read
  from its own /metrics (a watch counts once, when its stream opens).
- An error answer without a Content-Type (a proxy, a load balancer, a server that is not
  Kubernetes) gets `text/plain`: lightkube looks that header up unguarded and would raise a
  KeyError; with it, lightkube raises its HTTP status error, which the adapter translates.

The hook is an httpx event hook on lightkube's HTTP client (`Client._client._client`; the
same internals gaps.py relies on), so the TLS and auth lightkube configured stay as they are.
"""

from __future__ import annotations

from typing import Any

import httpx2
from lightkube import Client

from nodewright.metrics import REST_CLIENT_REQUESTS


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
