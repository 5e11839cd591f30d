"""Karpenter's v1 API as typed models: NodePool, NodeClaim (karpenter.sh/v1) and
EC2NodeClass (karpenter.k8s.aws/v1), with defaults, validation and CRDs."""

from nodewright.api.core import (
    Condition,
    NodeClassReference,
    NodeSelectorRequirementWithMinValues,
    ObjectMeta,
    Taint,
)
from nodewright.api.ec2nodeclass import (
    AMISelectorTerm,
    BlockDevice,
    BlockDeviceMapping,
    EC2NodeClass,
    EC2NodeClassSpec,
    EC2NodeClassStatus,
    KubeletConfiguration,
    MetadataOptions,
    SecurityGroupSelectorTerm,
    SubnetSelectorTerm,
)
from nodewright.api.manifests import Document, load_documents
from nodewright.api.nodeclaim import NodeClaim, NodeClaimSpec, NodeClaimStatus
from nodewright.api.nodepool import (
    Budget,
    Disruption,
    NodeClaimTemplate,
    NodeClaimTemplateSpec,
    NodePool,
    NodePoolSpec,
    TemplateMetadata,
)
from nodewright.api.problems import Problem
from nodewright.api.validation import ManifestError, check_model, parse_document, parse_manifest

__all__ = [
    "AMISelectorTerm",
    "BlockDevice",
    "BlockDeviceMapping",
    "Budget",
    "Condition",
    "Disruption",
    "Document",
    "EC2NodeClass",
    "EC2NodeClassSpec",
    "EC2NodeClassStatus",
    "KubeletConfiguration",
    "ManifestError",
    "MetadataOptions",
    "NodeClaim",
    "NodeClaimSpec",
    "NodeClaimStatus",
    "NodeClaimTemplate",
    "NodeClaimTemplateSpec",
    "NodeClassReference",
    "NodePool",
    "NodePoolSpec",
    "NodeSelectorRequirementWithMinValues",
    "ObjectMeta",
    "Problem",
    "SecurityGroupSelectorTerm",
    "SubnetSelectorTerm",
    "Taint",
    "TemplateMetadata",
    "check_model",
    "load_documents",
    "parse_document",
    "parse_manifest",
]
