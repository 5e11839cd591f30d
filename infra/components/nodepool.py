"""NodePool as a typed component: validated at construction, rendered as a CustomResource."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pulumi

from infra.components.ec2nodeclass import GROUP as NODE_CLASS_GROUP
from infra.components.ec2nodeclass import KIND as NODE_CLASS_KIND
from infra.components.ec2nodeclass import EC2NodeClass
from infra.components.errors import InvalidResourceError, validated_manifest
from infra.components.render import custom_resource
from nodewright.api import NodePoolSpec, Problem

API_VERSION = "karpenter.sh/v1"
KIND = "NodePool"
_REF_PATH = "spec.template.spec.nodeClassRef"


@dataclass(frozen=True)
class NodePoolArgs:
    """`spec` is a nodewright.api NodePoolSpec or its camelCase manifest form.

    `node_class` (an EC2NodeClass component) fills spec.template.spec.nodeClassRef and makes
    the NodePool depend on it; leave nodeClassRef out of the spec when you give it.
    """

    spec: NodePoolSpec | Mapping[str, Any]
    node_class: EC2NodeClass | None = None
    labels: Mapping[str, str] = field(default_factory=dict)


class NodePool(pulumi.ComponentResource):
    """One karpenter.sh/v1 NodePool named `name` in the cluster.

    Raises InvalidResourceError (naming the field) before registering anything when the spec
    is not valid. Pass the Kubernetes provider through `opts.providers` and the CRDs through
    `opts.depends_on`; both are handed on to the custom resource.
    """

    node_pool_name: str
    manifest: dict[str, Any]

    def __init__(
        self, name: str, args: NodePoolArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        raw = args.spec.to_manifest() if isinstance(args.spec, NodePoolSpec) else args.spec
        spec = copy.deepcopy(dict(raw))
        if args.node_class is not None:
            _refer_to(spec, name, args.node_class)
        _, manifest = validated_manifest(API_VERSION, KIND, name, spec, args.labels)
        super().__init__("nodewright:index:NodePool", name, None, opts)
        self.node_pool_name = name
        self.manifest = manifest
        node_class = [args.node_class] if args.node_class is not None else []
        self.custom_resource = custom_resource(self, name, manifest, opts, node_class)
        self.register_outputs({"name": name})


def _refer_to(spec: dict[str, Any], name: str, node_class: EC2NodeClass) -> None:
    template = spec.setdefault("template", {})
    template_spec = template.setdefault("spec", {}) if isinstance(template, dict) else None
    if not isinstance(template_spec, dict):
        return  # the shape is wrong; validation reports it
    ref = {"group": NODE_CLASS_GROUP, "kind": NODE_CLASS_KIND, "name": node_class.node_class_name}
    existing = template_spec.get("nodeClassRef")
    if existing is not None and existing != ref:
        raise InvalidResourceError([Problem(
            file="", line=0, kind=KIND, name=name, path=_REF_PATH,
            message=f"names {existing!r} but the NodePool was given EC2NodeClass "
                    f"{node_class.node_class_name!r}; give one or the other",
        )])
    template_spec["nodeClassRef"] = ref
