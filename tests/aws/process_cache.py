"""What stays the same from one AWS test to the next, read once per test process.

Every test builds its clients from a new boto3 session and lists the catalog through moto;
both redo work whose result cannot differ between tests, seconds of it each time:

- botocore's data files (service models, endpoint rules, partitions): a new session reads
  and parses them again. Every session made from now on shares one loader, which keeps
  what it has read; the files are botocore's own and never change under a test.
- A client's class (a method per operation, some 700 for EC2) is built from the service model
  and the session's `creating-client-class` handlers, botocore's and boto3's own, the same
  in every session: built once per service model and reused by every client made after.
- DescribeInstanceTypes, DescribeInstanceTypeOfferings and DescribeSpotPriceHistory answer
  from the tables moto ships (spot prices: one constant price per offering, whatever the
  StartTime, the one parameter that differs from call to call, now, and so left out of
  the request's key): the same request always gets the same answer, which moto
  nevertheless rebuilds each time (some 1,400 types serialized to XML, then parsed back by
  botocore). The first
  answer to each exact request (operation, endpoint, parameters: one entry per page) is
  kept and handed to the same request later in new containers (the answer's dicts and
  lists: a test's `after-call` handler may filter, add or drop entries) holding the same
  entries, read-only as EC2's answers are to the code under test (unpickling 1,400 of them
  afresh cost more than what is read from them). The call still goes through the
  client, so `provide-client-params` and `after-call` fire and a test's call recorder counts
  it. Only while moto mocks, only answers that succeeded, and registered last: a test's own
  `before-call` handler for these operations still answers first.
"""

from __future__ import annotations

from typing import Any

import botocore.loaders
import botocore.session
from botocore.awsrequest import AWSResponse
from botocore.client import ClientCreator
from botocore.handlers import BUILTIN_HANDLERS, REGISTER_LAST
from moto.core.models import botocore_stubber

STATIC_READS = ("DescribeInstanceTypes", "DescribeInstanceTypeOfferings",
                "DescribeSpotPriceHistory")
# Parameters moto's answer does not depend on, left out of the key.
_UNREAD = frozenset({"StartTime"})
_KEY = "tests.aws.process_cache"
_answers: dict[str, dict[str, Any]] = {}


class _SearchPaths(list[str]):
    """boto3 adds its own data folder to the loader of every session it makes: once is
    enough for a shared loader."""

    def extend(self, paths: Any) -> None:
        super().extend(path for path in paths if path not in self)


_loader: botocore.loaders.Loader | None = None


def _shared_loader(search_path_string: str | None = None) -> botocore.loaders.Loader:
    global _loader
    if _loader is None:
        _loader = botocore.loaders.create_loader(search_path_string)
        _loader._search_paths = _SearchPaths(_loader.search_paths)  # type: ignore[attr-defined]
    return _loader


_classes: dict[tuple[str, int], tuple[object, type]] = {}
_build_class = ClientCreator._create_client_class


def _client_class(creator: ClientCreator, service_name: str, service_model: Any) -> type:
    # The shared loader hands every session the same model document: kept with the class,
    # so its identity stays its own.
    document = service_model._service_description
    kept = _classes.get((service_name, id(document)))
    if kept is None or kept[0] is not document:
        kept = document, _build_class(creator, service_name, service_model)
        _classes[(service_name, id(document))] = kept
    return kept[1]


def _key(model: Any, params: dict[str, Any]) -> str:
    body = params.get("body") or {}
    return repr((model.name, params.get("url"),
                 sorted(item for item in body.items() if item[0] not in _UNREAD)))


def _answer(model: Any, params: dict[str, Any], context: dict[str, Any],
            **_: Any) -> tuple[AWSResponse, dict[str, Any]] | None:
    if model.name not in STATIC_READS or not botocore_stubber.enabled:
        return None
    key = _key(model, params)
    kept = _answers.get(key)
    if kept is None:
        context[_KEY] = key
        return None
    response = AWSResponse(params.get("url") or "", 200, {}, None)  # type: ignore[arg-type]
    return response, _fresh(kept)


def _keep(http_response: AWSResponse, parsed: dict[str, Any], context: dict[str, Any],
          **_: Any) -> None:
    key = context.pop(_KEY, None)
    if key is not None and http_response.status_code == 200:
        _answers[key] = _fresh(parsed)


def _fresh(answer: dict[str, Any]) -> dict[str, Any]:
    """The answer in new containers, down to its lists of entries; the entries shared."""
    return {name: list(value) if isinstance(value, list)
            else _fresh(value) if isinstance(value, dict) else value
            for name, value in answer.items()}


def install() -> None:
    """For every botocore session made from now on, by the tests or by the code under test."""
    botocore.session.create_loader = _shared_loader
    ClientCreator._create_client_class = _client_class  # type: ignore[method-assign]
    for operation in STATIC_READS:
        for spec in ((f"before-call.ec2.{operation}", _answer, REGISTER_LAST),
                     (f"after-call.ec2.{operation}", _keep)):
            if spec not in BUILTIN_HANDLERS:
                BUILTIN_HANDLERS.append(spec)
