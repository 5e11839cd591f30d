"""Static drift hashes: the NodePool template and the EC2NodeClass spec, as annotations.

This is the one place both hashes are computed (the provisioner stamps them on every
NodeClaim it creates through `nodeclaim_hash_annotations`; the hash controller keeps them on
NodePools and EC2NodeClasses; the disruption controller and the AWS cloud provider's
`drift_reason` compare them). It sits in the API layer, pure, so that both can use it.

As Karpenter hashes them: the NodePool hash covers `spec.template` without its
requirements (a NodeClaim whose labels stop satisfying the requirements is drifted by a
separate check); the EC2NodeClass hash covers its spec without the selector terms (their
resolved values are checked by the cloud provider: AMI, subnets, security groups) and with
the *resolved* AMI family, so writing down the family an alias already implied is no
change. Lists count as sets and empty values as absent, so reordering a list or spelling
out an empty default drifts nothing. As Karpenter's, the EC2NodeClass hash also covers the
cluster CA bundle the controller runs with (CLUSTER_CA_BUNDLE, else the CA it trusts the API
server by): a new cluster CA drifts every node, whose user data carries the old one. And
since Karpenter hashes the decoded struct, kubelet grace periods count by their length
("1m" and "1m0s" are the same).

The values differ from Karpenter's (its hash library is Go's), so the hash versions differ
too: a cluster moving from Karpenter to Nodewright (or back) has mismatched versions, and a
version mismatch makes the hash controller re-stamp NodeClaims instead of drifting them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from nodewright.api.ec2nodeclass import EC2NodeClass
from nodewright.api.formats import as_go_writes_it
from nodewright.api.nodepool import NodePool

NODEPOOL_HASH = "karpenter.sh/nodepool-hash"
NODEPOOL_HASH_VERSION = "karpenter.sh/nodepool-hash-version"
NODECLASS_HASH = "karpenter.k8s.aws/ec2nodeclass-hash"
NODECLASS_HASH_VERSION = "karpenter.k8s.aws/ec2nodeclass-hash-version"

# Bump when a change to the hashed fields or to their defaults would change the hash of an
# unchanged object (see the module docstring for why these are not Karpenter's "v3"/"v6").
NODEPOOL_HASH_VERSION_VALUE = "nodewright-v1"
# v2: the CA bundle and kubelet grace periods by length (v1 claims are re-stamped, not
# drifted).
NODECLASS_HASH_VERSION_VALUE = "nodewright-v2"

_NODECLASS_IGNORED = frozenset(
    {
        "subnetSelectorTerms",
        "securityGroupSelectorTerms",
        "amiSelectorTerms",
        "capacityReservationSelectorTerms",
        "amiFamily",
        "ipPrefixCount",  # as Karpenter: changing it does not drift nodes
    }
)


def _is_empty(value: Any) -> bool:
    """Go's zero values: hashstructure's IgnoreZeroValue leaves them out."""
    if isinstance(value, bool | int | float):
        return not value
    return value is None or value == "" or value == [] or value == {}


def _canonical(value: Any) -> Any:
    if isinstance(value, Mapping):
        members = {str(k): _canonical(v) for k, v in value.items()}
        return {k: v for k, v in sorted(members.items()) if not _is_empty(v)}
    if isinstance(value, list | tuple):
        canonical = [_canonical(v) for v in value]
        members = {json.dumps(c, sort_keys=True): c for c in canonical}
        return [members[k] for k in sorted(members)]
    return value


def stable_hash(value: Any) -> str:
    """A 64-bit digest of the canonical form, written as a decimal number."""
    text = json.dumps(_canonical(value), sort_keys=True, separators=(",", ":"))
    digest = hashlib.blake2b(text.encode(), digest_size=8).digest()
    return str(int.from_bytes(digest, "big"))


def nodepool_hash(nodepool: NodePool) -> str:
    template = nodepool.spec.template.to_manifest()
    template.get("spec", {}).pop("requirements", None)
    return stable_hash(template)


def node_class_hash(node_class: EC2NodeClass, ca_bundle: str | None = None) -> str:
    """`ca_bundle`: the controller's cluster CA bundle (None where there is none, as in the
    simulator): Karpenter's EC2NodeClass.Hash(caBundle)."""
    spec = {
        key: value
        for key, value in node_class.spec.to_manifest().items()
        if key not in _NODECLASS_IGNORED
    }
    kubelet = spec.get("kubelet")
    if isinstance(kubelet, dict) and kubelet.get("evictionSoftGracePeriod"):
        spec["kubelet"] = {**kubelet, "evictionSoftGracePeriod": {
            signal: as_go_writes_it(period)
            for signal, period in kubelet["evictionSoftGracePeriod"].items()}}
    return stable_hash([spec, node_class.resolved_ami_family(), ca_bundle or ""])


def nodepool_hash_annotations(nodepool: NodePool) -> dict[str, str]:
    return {
        NODEPOOL_HASH: nodepool_hash(nodepool),
        NODEPOOL_HASH_VERSION: NODEPOOL_HASH_VERSION_VALUE,
    }


def node_class_hash_annotations(
    node_class: EC2NodeClass, ca_bundle: str | None = None
) -> dict[str, str]:
    return {
        NODECLASS_HASH: node_class_hash(node_class, ca_bundle),
        NODECLASS_HASH_VERSION: NODECLASS_HASH_VERSION_VALUE,
    }


def nodeclaim_hash_annotations(
    nodepool: NodePool, node_class: EC2NodeClass | None, ca_bundle: str | None = None
) -> dict[str, str]:
    """What a NodeClaim created now from this NodePool and node class carries."""
    annotations = nodepool_hash_annotations(nodepool)
    if node_class is not None:
        annotations.update(node_class_hash_annotations(node_class, ca_bundle))
    return annotations
