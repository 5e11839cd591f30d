"""AWS SDK request metrics, as Karpenter v1.14.1 exports them (prometheusv2.WithPrometheusMetrics
on its SDK config, github.com/jonathan-innis/aws-sdk-go-prometheus v0.1.1): every AWS call
the provider makes is counted by service (the model's service id: EC2, SSM, IAM, ...),
action (the operation) and HTTP status code, with its latency and retries.

- aws_sdk_go_request_total: one per call (code: the last attempt's status; -1 when no
  answer came back at all);
- aws_sdk_go_request_attempt_total: one per attempt, by that attempt's status;
- aws_sdk_go_request_duration_seconds: the call's seconds, retries and their back-off
  included;
- aws_sdk_go_request_attempt_duration_seconds: each attempt's seconds, labelled (as the Go
  library does) with the call's final status, so observed when the call ends;
- aws_sdk_go_request_retry_count: the retries a call took.

`instrument(client)` hooks a boto3 client's events; the state of one call rides in the
call's request context (botocore gives every hook of the call the same dict).
"""
from __future__ import annotations

import time
from collections.abc import Mapping, MutableMapping
from typing import Any, Final

from botocore.client import BaseClient

from nodewright import metrics

_CALL_START: Final = "nodewright.sdk_metrics.call_start"
_ATTEMPT_START: Final = "nodewright.sdk_metrics.attempt_start"
_ATTEMPTS: Final = "nodewright.sdk_metrics.attempts"
# The Go library's status code of an attempt that got no HTTP answer.
NO_ANSWER: Final = "-1"
_INSTRUMENTED: Final = "_nodewright_sdk_metrics"


def instrument(client: BaseClient) -> BaseClient:
    """Count `client`'s calls (once, however often it is asked)."""
    if getattr(client, _INSTRUMENTED, False):
        return client
    setattr(client, _INSTRUMENTED, True)
    service = str(client.meta.service_model.service_id)
    events = client.meta.events
    events.register("provide-client-params", _call_started)
    events.register("request-created", _attempt_started)
    events.register("response-received", lambda **kw: _attempt_done(service, **kw))
    events.register("after-call", lambda **kw: _call_done(service, **kw))
    events.register("after-call-error", lambda **kw: _call_failed(service, **kw))
    return client


def _seconds_since(context: Mapping[str, Any], key: str) -> float | None:
    start = context.get(key)
    return time.monotonic() - start if isinstance(start, float) else None


def _call_started(context: MutableMapping[str, Any] | None = None, **_: Any) -> None:
    if context is not None:
        context[_CALL_START] = time.monotonic()


def _attempt_started(request: Any = None, **_: Any) -> None:
    context = getattr(request, "context", None)
    if isinstance(context, dict):
        context[_ATTEMPT_START] = time.monotonic()


def _attempt_done(service: str, *, context: MutableMapping[str, Any] | None = None,
                  response_dict: Mapping[str, Any] | None = None,
                  event_name: str = "", **_: Any) -> None:
    action = event_name.rsplit(".", 1)[-1]
    status = str((response_dict or {}).get("status_code", NO_ANSWER))
    metrics.AWS_SDK_REQUEST_ATTEMPTS.labels(service, action, status).inc()
    elapsed = _seconds_since(context or {}, _ATTEMPT_START)
    if context is not None and elapsed is not None:
        context.setdefault(_ATTEMPTS, []).append(elapsed)


def _call_done(service: str, *, http_response: Any = None, model: Any = None,
               context: Mapping[str, Any] | None = None, **_: Any) -> None:
    status = str(getattr(http_response, "status_code", None) or NO_ANSWER)
    _count(service, str(getattr(model, "name", "")), status, context or {})


def _call_failed(service: str, *, context: Mapping[str, Any] | None = None,
                 event_name: str = "", **_: Any) -> None:
    _count(service, event_name.rsplit(".", 1)[-1], NO_ANSWER, context or {})


def _count(service: str, action: str, status: str, context: Mapping[str, Any]) -> None:
    metrics.AWS_SDK_REQUESTS.labels(service, action, status).inc()
    elapsed = _seconds_since(context, _CALL_START)
    if elapsed is not None:
        metrics.AWS_SDK_REQUEST_LATENCY.labels(service, action, status).observe(elapsed)
    for attempt in context.get(_ATTEMPTS) or ():
        metrics.AWS_SDK_REQUEST_ATTEMPT_LATENCY.labels(service, action, status).observe(attempt)
    attempts = (context.get("retries") or {}).get("attempt", 1)
    metrics.AWS_SDK_REQUEST_RETRY_COUNT.labels(service, action, status).observe(
        max(int(attempts) - 1, 0))
