"""EC2NodeClass as a typed component: validated at construction, rendered as a CustomResource."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pulumi

from infra.components.errors import validated_manifest
from infra.components.render import custom_resource
from nodewright.api import EC2NodeClassSpec

API_VERSION = "karpenter.k8s.aws/v1"
KIND = "EC2NodeClass"
GROUP = "karpenter.k8s.aws"


@dataclass(frozen=True)
class EC2NodeClassArgs:
    """`spec` is a nodewright.api EC2NodeClassSpec or its camelCase manifest form."""

    spec: EC2NodeClassSpec | Mapping[str, Any]
    labels: Mapping[str, str] = field(default_factory=dict)


class EC2NodeClass(pulumi.ComponentResource):
    """One karpenter.k8s.aws/v1 EC2NodeClass named `name` in the cluster.

    Raises InvalidResourceError (naming the field) before registering anything when the spec
    is not valid. Pass the Kubernetes provider through `opts.providers` and the CRDs through
    `opts.depends_on`; both are handed on to the custom resource.
    """

    node_class_name: str
    manifest: dict[str, Any]

    def __init__(
        self, name: str, args: EC2NodeClassArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        spec = args.spec.to_manifest() if isinstance(args.spec, EC2NodeClassSpec) else args.spec
        _, manifest = validated_manifest(API_VERSION, KIND, name, spec, args.labels)
        super().__init__("nodewright:index:EC2NodeClass", name, None, opts)
        self.node_class_name = name
        self.manifest = manifest
        self.custom_resource = custom_resource(self, name, manifest, opts)
        self.register_outputs({"name": name})
