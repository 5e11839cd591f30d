"""The labels and taints a node registers with, derived from its NodeClaim or NodePool."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Final

from nodewright.cloud.aws.userdata import bottlerocket
from nodewright.cloud.aws.userdata.bootstrap import ClusterInfo, NodeBootstrap

if TYPE_CHECKING:
    from nodewright.api.core import NodeSelectorRequirementWithMinValues
    from nodewright.api.ec2nodeclass import EC2NodeClass
    from nodewright.api.nodepool import NodePool

# The kubelet may only set these labels in the kubernetes.io / k8s.io namespaces; any other
# label there is refused at registration, so it is left to the controller to apply.
KUBELET_ALLOWED: Final[frozenset[str]] = frozenset(
    {
        "kubernetes.io/arch",
        "kubernetes.io/os",
        "node.kubernetes.io/instance-type",
        "topology.kubernetes.io/region",
        "topology.kubernetes.io/zone",
    }
)
KUBELET_ALLOWED_PREFIXES: Final = ("kubelet.kubernetes.io/", "node.kubernetes.io/")
NODEPOOL_LABEL: Final = "karpenter.sh/nodepool"
CAPACITY_TYPE_LABEL: Final = "karpenter.sh/capacity-type"
DO_NOT_SYNC_TAINTS_LABEL: Final = "karpenter.sh/do-not-sync-taints"


def kubelet_may_set(key: str) -> bool:
    domain = key.split("/", 1)[0] if "/" in key else ""
    restricted = domain.endswith(("kubernetes.io", "k8s.io"))
    return not restricted or key in KUBELET_ALLOWED or key.startswith(KUBELET_ALLOWED_PREFIXES)


def node_labels(
    labels: Mapping[str, str] | None,
    requirements: Sequence[NodeSelectorRequirementWithMinValues],
    nodepool: str | None = None,
) -> dict[str, str]:
    """Explicit labels, plus each requirement fixed to a single value, plus the NodePool."""
    result = dict(labels or {})
    for requirement in requirements:
        values = requirement.values or []
        if requirement.operator == "In" and len(values) == 1:
            result.setdefault(requirement.key, values[0])
    if nodepool:
        result[NODEPOOL_LABEL] = nodepool
    return {key: value for key, value in sorted(result.items()) if kubelet_may_set(key)}


def with_do_not_sync_taints(family: str, labels: Mapping[str, str]) -> dict[str, str]:
    """The labels a node of this AMI family registers with: every family but Custom also
    carries karpenter.sh/do-not-sync-taints=true (Karpenter's InjectDoNotSyncTaintsLabel).
    These families' kubelets register with the startup taints, so registration must not
    re-apply them: an agent may already have removed one (the startup-taint race). A Custom
    image's user data is the user's, so registration keeps syncing its taints."""
    result = dict(labels)
    if family != "Custom":
        result[DO_NOT_SYNC_TAINTS_LABEL] = "true"
    return result


def bootstrap_for_nodepool(
    cluster: ClusterInfo,
    node_class: EC2NodeClass,
    nodepool: NodePool | None,
    max_pods: int | None = None,
) -> NodeBootstrap:
    """The bootstrap a node of this NodePool (or of no NodePool) would boot with."""
    template = nodepool.spec.template if nodepool else None
    labels = node_labels(
        template.metadata.labels if template and template.metadata else None,
        template.spec.requirements if template else [],
        nodepool.metadata.name if nodepool else None,
    )
    labels = with_do_not_sync_taints(node_class.resolved_ami_family(), labels)
    return NodeBootstrap.build(
        cluster,
        labels=labels,
        taints=(template.spec.taints or []) if template else [],
        startup_taints=(template.spec.startup_taints or []) if template else [],
        kubelet=node_class.spec.kubelet,
        max_pods=max_pods,
        custom_user_data=node_class.spec.user_data,
        instance_store_policy=node_class.spec.instance_store_policy,
        bottlerocket_version=bottlerocket_release(node_class),
    )


def bottlerocket_release(node_class: EC2NodeClass, image_names: Iterable[str] = (), *,
                         image_ids: Mapping[str, str] | None = None) -> str | None:
    """The Bottlerocket release a Bottlerocket node class boots, as far as its alias, its
    name terms, the resolved image its id terms select (`image_ids`: the resolved images'
    names by id) or its resolved images' names tell."""
    if node_class.resolved_ami_family() != "Bottlerocket":
        return None
    terms = node_class.spec.ami_selector_terms
    alias = next((t.alias.split("@", 1)[1] for t in terms
                  if t.alias and t.alias_family == "bottlerocket"), None)
    return bottlerocket.ami_version(alias, [t.name for t in terms if t.name], image_names,
                                    [t.id for t in terms if t.id], image_ids)
