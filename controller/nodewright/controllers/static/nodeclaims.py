"""The NodeClaim a static NodePool launches (Karpenter's NodeClaimTemplate.ToNodeClaim for
a static NodePool): the template's requirements and labels as they are, not narrowed to
instance types (no pods decide them), and no resource requests; the cloud provider
launches the cheapest offering the requirements allow.
"""

from __future__ import annotations

from typing import Any

from nodewright.api.nodeclaim_template import nodeclaim_from_template
from nodewright.api.nodepool import NodePool
from nodewright.controllers.provisioning.nodeclaims import custom_labels, render_requirements
from nodewright.controllers.provisioning.problem import without_hostname
from nodewright.scheduling.nodepools import nodepool_template
from nodewright.scheduling.requirements import Requirement
from nodewright.state.wellknown import NODECLASS_LABEL


def static_nodeclaim_manifest(nodepool: NodePool, uid: str) -> dict[str, Any]:
    node_class_ref = nodepool.spec.template.spec.node_class_ref
    requirements = without_hostname(nodepool_template(nodepool, []).requirements)
    requirements.add(Requirement.single(NODECLASS_LABEL, node_class_ref.name))
    return nodeclaim_from_template(nodepool, uid, render_requirements(requirements),
                                   implied_labels=custom_labels(requirements))
