"""The CustomResource a NodePool or EC2NodeClass component renders, as a child of it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s


def custom_resource(
    parent: pulumi.ComponentResource,
    name: str,
    manifest: dict[str, Any],
    opts: pulumi.ResourceOptions | None,
    extra_depends_on: Sequence[pulumi.Resource] = (),
) -> k8s.apiextensions.CustomResource:
    """Render `manifest` under `parent`, depending on what `opts` names plus `extra_depends_on`."""
    depends_on: list[pulumi.Resource] = []
    given = opts.depends_on if opts is not None else None
    if isinstance(given, pulumi.Resource):
        depends_on.append(given)
    elif isinstance(given, list):
        depends_on.extend(given)
    depends_on.extend(extra_depends_on)
    return k8s.apiextensions.CustomResource(
        name,
        api_version=manifest["apiVersion"],
        kind=manifest["kind"],
        metadata=manifest["metadata"],
        spec=manifest["spec"],
        opts=pulumi.ResourceOptions(parent=parent, depends_on=depends_on),
    )
