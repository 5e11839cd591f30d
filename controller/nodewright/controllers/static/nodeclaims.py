"""The NodeClaim a static NodePool launches (Karpenter's NodeClaimTemplate.ToNodeClaim for
a static NodePool): the template's requirements and labels as they are, not narrowed to
instance types (no pods decide them), and no resource requests; the cloud provider
launches the cheapest offering the requirements allow.
"""

from __future__ import annotations

from typing import Any

from nodewright.api.ec2nodeclass import EC2NodeClass
from nodewright.api.hashes import nodeclaim_hash_annotations
from nodewright.api.nodepool import NodePool
from nodewright.controllers.provisioning.nodeclaims import custom_labels, render_requirements
from nodewright.controllers.provisioning.problem import without_hostname
from nodewright.scheduling.nodepools import nodepool_template
from nodewright.scheduling.requirements import Requirement
from nodewright.state.wellknown import NODECLASS_LABEL, NODEPOOL_LABEL


def static_nodeclaim_manifest(
    nodepool: NodePool, node_class: EC2NodeClass | None, uid: str
) -> dict[str, Any]:
    template = nodepool.spec.template
    node_class_ref = template.spec.node_class_ref
    requirements = without_hostname(nodepool_template(nodepool, []).requirements)
    requirements.add(Requirement.single(NODECLASS_LABEL, node_class_ref.name))
    labels: dict[str, str] = dict((template.metadata.labels if template.metadata else None) or {})
    labels[NODEPOOL_LABEL] = nodepool.name
    labels[NODECLASS_LABEL] = node_class_ref.name
    labels = {**custom_labels(requirements), **labels}
    annotations = dict((template.metadata.annotations if template.metadata else None) or {})
    annotations.update(nodeclaim_hash_annotations(nodepool, node_class))
    spec_model = template.spec.to_manifest()
    spec: dict[str, Any] = {
        "nodeClassRef": spec_model["nodeClassRef"],
        "requirements": render_requirements(requirements),
    }
    for field in ("taints", "startupTaints", "expireAfter", "terminationGracePeriod"):
        if spec_model.get(field) not in (None, []):
            spec[field] = spec_model[field]
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {
            "generateName": f"{nodepool.name}-",
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": [
                {
                    "apiVersion": "karpenter.sh/v1",
                    "kind": "NodePool",
                    "name": nodepool.name,
                    "uid": uid,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": spec,
    }
