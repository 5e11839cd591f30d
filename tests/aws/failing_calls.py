"""Make the next calls of one AWS operation fail or answer as a test says, in front of moto.

Like Karpenter's fake EC2 behaviours (`Error.Set(err, fake.MaxCalls(n))`): an answer queued
here is used by the next call of the operation; once the queue is empty, moto answers.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from botocore.awsrequest import AWSResponse
from botocore.client import BaseClient

Answer = Callable[[Mapping[str, Any]], tuple[AWSResponse, dict[str, Any]]]


def response(status: int, parsed: dict[str, Any]) -> tuple[AWSResponse, dict[str, Any]]:
    raw = AWSResponse("https://moto", status, {}, json.dumps(parsed).encode())
    return raw, parsed


def error(code: str, message: str = "", status: int = 400) -> Answer:
    """An AWS error answer (raised by botocore as a ClientError)."""
    return lambda _params: response(status, {
        "Error": {"Code": code, "Message": message},
        "ResponseMetadata": {"HTTPStatusCode": status}})


def answer(parsed: dict[str, Any]) -> Answer:
    return lambda _params: response(200, parsed)


class FailingCalls:
    def __init__(self) -> None:
        self.queued: dict[str, list[Answer]] = {}
        self.params: dict[str, list[Mapping[str, Any]]] = {}

    def queue(self, operation: str, outcome: Answer | Callable[[Mapping[str, Any]], Any],
              times: int = 1) -> None:
        self.queued.setdefault(operation, []).extend([outcome] * times)  # type: ignore[list-item]

    def _before(self, params: Mapping[str, Any], model: Any, **_: Any) -> Any:
        self.params.setdefault(model.name, []).append(params)
        pending = self.queued.get(model.name)
        if not pending:
            return None
        return pending.pop(0)(params)


@contextmanager
def failing(*clients: BaseClient) -> Iterator[FailingCalls]:
    calls = FailingCalls()
    captured: dict[int, Mapping[str, Any]] = {}

    def remember(params: Mapping[str, Any], model: Any, **_: Any) -> None:
        captured[id(model)] = params

    def before(model: Any, **kwargs: Any) -> Any:
        return calls._before(captured.get(id(model), {}), model)

    for client in clients:
        client.meta.events.register("provide-client-params.*.*", remember)
        client.meta.events.register("before-call.*.*", before)
    try:
        yield calls
    finally:
        for client in clients:
            client.meta.events.unregister("provide-client-params.*.*", remember)
            client.meta.events.unregister("before-call.*.*", before)
