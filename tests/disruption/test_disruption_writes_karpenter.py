"""What a started disruption command writes, against Karpenter v1.14.1
(pkg/controllers/disruption/queue.go markDisrupted and createReplacementNodeClaims;
pkg/controllers/state/statenode.go RequireNoScheduleTaint): the candidate's Node gets
`karpenter.sh/disrupted:NoSchedule` (no value), its NodeClaim `DisruptionReason` True with
the command's reason as reason and message and, as operatorpkg writes every condition, the
generation it saw; the replacement is a NodeClaim as the provisioner writes one (Karpenter's
CreateNodeClaims): its NodePool's label and owner reference, the min-values-relaxed
annotation, and requirements without the zones nobody asked for."""

from __future__ import annotations

from typing import Any

from nodewright.cluster import objects
from tests.disruption.test_drift_karpenter import drift, fleet
from tests.disruption.test_suite_karpenter_simulation import reason_condition
from tests.harness import World


def replacement(world: World, originals: set[str]) -> dict[str, Any] | None:
    extra = [c for c in world.nodeclaims() if objects.name(c) not in originals]
    return extra[0] if extra else None


def test_a_started_command_marks_its_candidate_as_karpenter_does(world: World) -> None:
    originals = fleet(world, 1)
    [candidate] = originals
    node_name = str(world.cluster.get("NodeClaim", candidate)["status"]["nodeName"])
    drift(world)
    assert world.run_until(lambda: replacement(world, originals) is not None,
                           timeout=900, step=1)

    claim = world.cluster.get("NodeClaim", candidate)
    condition = reason_condition(world, candidate)
    assert condition is not None
    assert (condition["status"], condition["reason"], condition["message"]) == (
        "True", "Drifted", "Drifted")
    assert condition["observedGeneration"] == claim["metadata"]["generation"]
    taints = world.cluster.get("Node", node_name)["spec"]["taints"]
    assert {"key": "karpenter.sh/disrupted", "effect": "NoSchedule"} in taints


def test_a_replacement_is_written_as_the_provisioner_writes_a_nodeclaim(world: World) -> None:
    originals = fleet(world, 1)
    drift(world)
    assert world.run_until(lambda: replacement(world, originals) is not None,
                           timeout=900, step=1)

    created = replacement(world, originals)
    assert created is not None
    metadata = created["metadata"]
    pool = world.cluster.get("NodePool", "default")
    assert metadata["generateName"] == "default-"
    assert metadata["labels"]["karpenter.sh/nodepool"] == "default"
    assert metadata["annotations"]["karpenter.sh/nodeclaim-min-values-relaxed"] == "false"
    assert metadata["ownerReferences"] == [{
        "apiVersion": "karpenter.sh/v1", "kind": "NodePool", "name": "default",
        "uid": pool["metadata"]["uid"], "blockOwnerDeletion": True}]
    keys = {r["key"] for r in created["spec"]["requirements"]}
    assert "topology.kubernetes.io/zone" not in keys
    assert "topology.k8s.aws/zone-id" not in keys
