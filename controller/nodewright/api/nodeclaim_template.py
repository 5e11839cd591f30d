"""The NodeClaim a NodePool's template becomes (Karpenter's NodeClaimTemplate.ToNodeClaim).

One builder for every NodeClaim the package creates: the provisioner's and disruption's
replacements, a static NodePool's claims and the simulator's starting fleet. Each caller
brings what differs (the requirements, resource requests, extra labels and annotations, a
fixed name); the template's labels, annotations, taints and lifetimes, the NodePool hash
annotations, the NodePool owner reference and the envelope are written here. The
EC2NodeClass hash is not: as in Karpenter (aws cloudprovider.go Create), the launch stamps
the hash of the node class it launched from.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nodewright.api.hashes import nodepool_hash_annotations
from nodewright.api.nodepool import NodePool

NODEPOOL_LABEL = "karpenter.sh/nodepool"
NODECLASS_LABEL = "karpenter.k8s.aws/ec2nodeclass"
# Template fields a NodeClaim copies as they are (left out when empty).
COPIED_SPEC_FIELDS = ("taints", "startupTaints", "expireAfter", "terminationGracePeriod")
_NO_STRINGS: Mapping[str, str] = {}


def nodeclaim_from_template(
    nodepool: NodePool,
    nodepool_uid: str,
    requirements: Sequence[Mapping[str, Any]],
    *,
    implied_labels: Mapping[str, str] = _NO_STRINGS,
    labels: Mapping[str, str] = _NO_STRINGS,
    annotations: Mapping[str, str] = _NO_STRINGS,
    requests: Mapping[str, str] | None = None,
    name: str | None = None,
) -> dict[str, Any]:
    """The NodeClaim manifest. `requirements` are written as given (rendered node selector
    requirements); `implied_labels` (what single-valued requirements imply) sit beneath the
    template's labels, `labels` over them; `annotations` go over the template's and the
    NodePool hash annotations. Without a `name` the API server generates one from the
    NodePool's. The NodeClaim gets its EC2NodeClass hash (karpenter.k8s.aws/ec2nodeclass-hash
    and -hash-version) when it launches, as in Karpenter (NodeClaimTemplate.ToNodeClaim
    writes the NodePool's only)."""
    template = nodepool.spec.template
    template_labels = (template.metadata.labels if template.metadata else None) or {}
    template_annotations = (template.metadata.annotations if template.metadata else None) or {}
    class_name = template.spec.node_class_ref.name
    spec_model = template.spec.to_manifest()
    spec: dict[str, Any] = {"nodeClassRef": spec_model["nodeClassRef"],
                            "requirements": [dict(entry) for entry in requirements]}
    if requests is not None:
        spec["resources"] = {"requests": dict(requests)}
    for field in COPIED_SPEC_FIELDS:
        if spec_model.get(field) not in (None, []):
            spec[field] = spec_model[field]
    metadata: dict[str, Any] = (
        {"name": name} if name is not None else {"generateName": f"{nodepool.name}-"})
    metadata["labels"] = {**implied_labels, **template_labels, **labels,
                          NODEPOOL_LABEL: nodepool.name, NODECLASS_LABEL: class_name}
    metadata["annotations"] = {**template_annotations,
                               **nodepool_hash_annotations(nodepool),
                               **annotations}
    metadata["ownerReferences"] = [{
        "apiVersion": "karpenter.sh/v1", "kind": "NodePool", "name": nodepool.name,
        "uid": nodepool_uid, "blockOwnerDeletion": True,
    }]
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "metadata": metadata,
            "spec": spec}
