"""Two requests lightkube's public API cannot express, made through its own request path.

- A watch with `allowWatchBookmarks=true` and a read timeout: `Client.watch` has no
  parameter for either (and reconnects by itself, where the informer must decide).
- A delete with `preconditions.uid`: `Client.delete` sends no DeleteOptions body.

Both build lightkube's `BasicRequest` with `prepare_request` (URL, namespace, fieldManager
rules), add the one missing piece, and go through lightkube's sending, error decoding and
watch-event decoding, so no HTTP is written by hand. They touch lightkube's generic client
(`Client._client`); docs/decisions.md records it, and tests/kube covers both against
stubbed HTTP, so an upgrade that moves these internals fails there first.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import httpx2
from lightkube import Client
from lightkube.core.generic_client import WatchDriver


def watch_with_bookmarks(
    client: Client,
    resource: Any,
    *,
    resource_version: str,
    server_timeout: int,
    read_timeout: float,
    on_open: Callable[[], None] = lambda: None,
) -> Iterator[tuple[str, Any]]:
    """One watch stream, until the server ends it (the informer opens the next one).

    `read_timeout` bounds the wait for the next line: the server sends a BOOKMARK about
    every minute, so a longer silence means a connection that died without a word, which
    would otherwise freeze the cache for good (lightkube's watch reads without a timeout).
    `on_open` is called once the server has answered 200."""
    generic = client._client
    request = generic.prepare_request(
        "list",
        res=resource,
        namespace="*" if _namespaced(resource) else None,
        watch=True,
        params={
            "resourceVersion": resource_version,
            "timeoutSeconds": server_timeout,
            "allowWatchBookmarks": "true",
        },
    )
    driver = WatchDriver(request, generic._client.build_request)
    timeout = httpx2.Timeout(generic._watch_timeout)
    timeout.read = read_timeout
    built = driver.get_request(timeout=timeout)  # type: ignore[no-untyped-call]
    response = generic.send(built, stream=True)
    try:
        response.raise_for_status()
        on_open()
        for line in response.iter_lines():
            yield driver.process_one_line(line)  # type: ignore[no-untyped-call]
    finally:
        response.close()


def delete_with_options(
    client: Client,
    resource: Any,
    name: str,
    *,
    namespace: str | None,
    grace_period_seconds: int | None,
    uid: str | None,
) -> None:
    generic = client._client
    request = generic.prepare_request("delete", res=resource, name=name, namespace=namespace)
    options: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions",
                               "propagationPolicy": "Background"}
    if grace_period_seconds is not None:
        options["gracePeriodSeconds"] = grace_period_seconds
    if uid:
        options["preconditions"] = {"uid": uid}
    request.data = options
    response = generic.send(generic.build_adapter_request(request))
    generic.handle_response("delete", response, request)


def _namespaced(resource: Any) -> bool:
    from lightkube.core import resource as lightkube_resource

    return issubclass(resource, lightkube_resource.NamespacedResource)
