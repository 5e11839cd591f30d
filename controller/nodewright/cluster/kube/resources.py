"""lightkube resource classes for the kinds ClusterAPI knows (`cluster.api.KINDS`).

Every kind is a lightkube generic resource: objects travel as plain dicts in their wire
shape, which is what ClusterAPI promises, and the Karpenter CRDs need no generated
models. The status subresource is each class's `.Status`.
"""

from __future__ import annotations

import functools
from typing import Any

from lightkube.generic_resource import create_global_resource, create_namespaced_resource

from nodewright.cluster.api import kind_of


@functools.cache
def resource_class(kind: str) -> Any:
    spec = kind_of(kind)
    create = create_namespaced_resource if spec.namespaced else create_global_resource
    return create(spec.group, spec.version, spec.kind, spec.plural)


def status_class(kind: str) -> Any:
    return resource_class(kind).Status


def to_object(kind: str, resource: Any) -> dict[str, Any]:
    """A lightkube object as a wire-shape dict with apiVersion and kind (list items come
    without them)."""
    body: dict[str, Any] = resource.to_dict() if hasattr(resource, "to_dict") else dict(resource)
    spec = kind_of(kind)
    body.setdefault("apiVersion", spec.api_version)
    body.setdefault("kind", spec.kind)
    return body
