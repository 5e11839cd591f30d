"""Two requests lightkube's public API cannot express, made through its own request path.

- A watch with `allowWatchBookmarks=true`: `Client.watch` has no parameter for it.
- A delete with `preconditions.uid`: `Client.delete` sends no DeleteOptions body.

Both build lightkube's `BasicRequest` with `prepare_request` (URL, namespace, fieldManager
rules), add the one missing piece, and go through lightkube's sending, error decoding and
watch loop, so no HTTP is written by hand. They touch lightkube's generic client
(`Client._client`); docs/decisions.md records it, and tests/kube covers both against
stubbed HTTP, so an upgrade that moves these internals fails there first.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from lightkube import Client
from lightkube.types import OnErrorHandler


def watch_with_bookmarks(
    client: Client,
    resource: Any,
    *,
    resource_version: str,
    server_timeout: int,
    on_error: OnErrorHandler,
) -> Iterator[tuple[str, Any]]:
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
    events: Iterator[tuple[str, Any]] = generic.watch(request, on_error=on_error)
    return events


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
