"""The one NodeClaim builder: what a NodePool's template gives every NodeClaim, and what
each caller adds (Karpenter's NodeClaimTemplate.ToNodeClaim)."""

from __future__ import annotations

import yaml

from nodewright.api.hashes import NODEPOOL_HASH
from nodewright.api.nodeclaim import NodeClaim
from nodewright.api.nodeclaim_template import nodeclaim_from_template
from nodewright.api.nodepool import NodePool
from tests.conftest import REPO_ROOT

POOL = NodePool.model_validate(
    yaml.safe_load((REPO_ROOT / "examples" / "workshop" / "nodepool.yaml").read_text()))
ZONE = [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-west-2a"]}]


def test_a_claim_carries_the_template_and_its_pool() -> None:
    claim = nodeclaim_from_template(POOL, "uid-1", ZONE)
    metadata = claim["metadata"]
    assert metadata["generateName"] == "default-" and "name" not in metadata
    assert metadata["labels"] == {"type": "karpenter", "karpenter.sh/nodepool": "default",
                                  "karpenter.k8s.aws/ec2nodeclass": "default"}
    assert NODEPOOL_HASH in metadata["annotations"]
    assert metadata["ownerReferences"] == [{
        "apiVersion": "karpenter.sh/v1", "kind": "NodePool", "name": "default",
        "uid": "uid-1", "blockOwnerDeletion": True}]
    assert claim["spec"]["requirements"] == ZONE and claim["spec"]["expireAfter"] == "720h"
    assert "resources" not in claim["spec"] and "taints" not in claim["spec"]
    NodeClaim.model_validate(claim)


def test_implied_labels_yield_to_the_template_and_given_labels_override_it() -> None:
    claim = nodeclaim_from_template(
        POOL, "uid-1", ZONE, implied_labels={"type": "implied", "team": "a"},
        labels={"type": "recorded"}, annotations={NODEPOOL_HASH: "old"},
        requests={"cpu": "1"}, name="default-abcde")
    metadata = claim["metadata"]
    assert metadata["name"] == "default-abcde" and "generateName" not in metadata
    assert metadata["labels"]["type"] == "recorded" and metadata["labels"]["team"] == "a"
    assert metadata["annotations"][NODEPOOL_HASH] == "old"
    assert claim["spec"]["resources"] == {"requests": {"cpu": "1"}}
    without_override = nodeclaim_from_template(POOL, "u", ZONE,
                                               implied_labels={"type": "implied"})
    assert without_override["metadata"]["labels"]["type"] == "karpenter"
