"""Stories of the provisioner and the NodeClaim lifecycle on the workshop: pending pods
become NodeClaims, instances, registered and initialized nodes, and bound pods."""

from __future__ import annotations

from tests.controllers.conftest import WORKSHOP
from tests.controllers.expectations import (
    condition,
    expect_consistent,
    expect_instance_types,
    expect_no_controller_errors,
    expect_running,
)
from tests.harness import World


def test_the_workshop_scales_from_zero_to_five_to_twelve(world: World) -> None:
    world.apply(WORKSHOP)
    assert world.settle()
    assert world.nodeclaims() == [] and world.nodes() == []

    world.scale("inflate", 5)
    assert world.settle()
    expect_instance_types(world, "m5.large")
    expect_running(world, 5)

    world.scale("inflate", 12)
    assert world.settle()
    expect_instance_types(world, "m5.large", "m5.large")
    expect_running(world, 12)
    expect_consistent(world)
    expect_no_controller_errors(world)


def test_a_nodeclaim_carries_its_nodepool_template_and_what_launched(world: World) -> None:
    world.apply(WORKSHOP)
    world.scale("inflate", 5)
    assert world.settle()
    (claim,) = world.nodeclaims()
    metadata, spec, status = claim["metadata"], claim["spec"], claim["status"]
    nodepool = world.cluster.get("NodePool", "default")

    assert metadata["name"].startswith("default-")
    assert metadata["ownerReferences"] == [{
        "apiVersion": "karpenter.sh/v1", "kind": "NodePool", "name": "default",
        "uid": nodepool["metadata"]["uid"], "blockOwnerDeletion": True}]
    assert metadata["finalizers"] == ["karpenter.sh/termination"]
    labels = metadata["labels"]
    assert labels["type"] == "karpenter"  # the template's label
    assert labels["karpenter.sh/nodepool"] == "default"
    assert labels["node.kubernetes.io/instance-type"] == "m5.large"
    assert labels["karpenter.sh/capacity-type"] == "on-demand"
    assert labels["topology.kubernetes.io/zone"].startswith("us-east-1")
    annotations = metadata["annotations"]
    assert annotations["karpenter.sh/nodepool-hash"].isdigit()
    assert "karpenter.sh/nodepool-hash-version" in annotations
    assert spec["nodeClassRef"] == {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                    "name": "default"}
    assert spec["expireAfter"] == "720h"
    requirements = {r["key"]: r for r in spec["requirements"]}
    types = requirements["node.kubernetes.io/instance-type"]
    assert types["operator"] == "In" and types["values"]
    assert all(name.split(".")[0] in ("c5", "m5") for name in types["values"])
    assert requirements["karpenter.sh/capacity-type"]["values"] == ["on-demand"]
    # Five 1Gi pods plus the two DaemonSets' cpu.
    assert spec["resources"]["requests"] == {"cpu": "125m", "memory": "5Gi", "pods": "7"}
    assert status["providerID"].startswith("aws:///")
    assert status["allocatable"] == {"cpu": "1930m", "memory": "6903Mi",
                                     "ephemeral-storage": "17Gi", "pods": "29",
                                     "vpc.amazonaws.com/pod-eni": "9"}
    for kind in ("Launched", "Registered", "Initialized", "Ready"):
        assert condition(claim, kind) == "True", kind


def test_a_registered_node_is_synced_with_its_nodeclaim(world: World) -> None:
    world.apply(WORKSHOP)
    world.scale("inflate", 5)
    assert world.settle()
    (claim,) = world.nodeclaims()
    node = world.cluster.get("Node", claim["status"]["nodeName"])
    metadata = node["metadata"]
    assert node["spec"]["providerID"] == claim["status"]["providerID"]
    assert metadata["labels"]["karpenter.sh/registered"] == "true"
    assert metadata["labels"]["karpenter.sh/initialized"] == "true"
    assert metadata["labels"]["type"] == "karpenter"
    assert metadata["finalizers"] == ["karpenter.sh/termination"]
    assert [(ref["kind"], ref["name"]) for ref in metadata["ownerReferences"]] == [
        ("NodeClaim", claim["metadata"]["name"])]
    assert not any(t["key"] == "karpenter.sh/unregistered" for t in node["spec"].get("taints", []))
    assert metadata["annotations"]["karpenter.sh/nodepool-hash"] == (
        claim["metadata"]["annotations"]["karpenter.sh/nodepool-hash"])


def test_the_nodepool_status_counts_its_nodes(world: World) -> None:
    world.apply(WORKSHOP)
    world.scale("inflate", 12)
    assert world.settle()
    status = world.cluster.get("NodePool", "default")["status"]
    count = len(world.nodeclaims())
    assert status["nodes"] == count
    assert status["resources"]["nodes"] == str(count)
    assert status["resources"]["cpu"] == str(
        sum(int(c["status"]["capacity"]["cpu"]) for c in world.nodeclaims()))
    assert {c["type"]: c["status"] for c in status["conditions"]} == {
        "NodeClassReady": "True", "ValidationSucceeded": "True", "Ready": "True",
        "NodeRegistrationHealthy": "True"}


def test_pods_are_nominated_to_their_nodeclaim_and_unschedulable_ones_told_why(
    world: World,
) -> None:
    world.apply(WORKSHOP)
    world.apply("""
apiVersion: v1
kind: Pod
metadata: {name: huge, namespace: default}
spec:
  nodeSelector: {type: karpenter}
  containers:
    - name: app
      resources: {requests: {memory: 4000Gi}}
""")
    world.scale("inflate", 2)
    assert world.settle()
    nominated = [e for e in world.events("Nominated")
                 if e["regarding"]["name"].startswith("inflate")]
    assert len(nominated) == 2
    claim_name = world.nodeclaims()[0]["metadata"]["name"]
    assert {e["note"] for e in nominated} == {f"Pod should schedule on: nodeclaim/{claim_name}"}
    failed = [e for e in world.events("FailedScheduling")
              if e["regarding"]["name"] == "huge" and e["reportingController"] == "karpenter"]
    assert failed and failed[0]["type"] == "Warning"
    assert failed[0]["note"].startswith("Failed to schedule pod, ")
    assert "memory" in failed[0]["note"]
    expect_running(world, 2)


def test_a_pod_whose_spec_cannot_be_read_is_reported_and_never_packed(world: World) -> None:
    world.apply(WORKSHOP)
    # Another scheduler (ours would say SchedulerError) marked it unschedulable.
    world.apply("""
apiVersion: v1
kind: Pod
metadata: {name: broken, namespace: default}
spec:
  schedulerName: other-scheduler
  nodeSelector: {type: karpenter}
  topologySpreadConstraints:
    - {maxSkew: 0, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule}
  containers: [{name: app, resources: {requests: {cpu: 100m}}}]
""")
    world.cluster.patch("Pod", "broken", {"status": {"conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}},
        "default", subresource="status")
    world.advance(30)
    ignored = [e for e in world.events("FailedScheduling")
               if e["regarding"]["name"] == "broken" and e["reportingController"] == "karpenter"]
    assert ignored, "no event about the unreadable pod"
    note = ignored[0]["note"]
    assert note.startswith("Failed to schedule pod, ") and "maxSkew" in note
    assert world.nodeclaims() == []


def test_daemonset_pods_and_pods_avoiding_karpenter_get_no_capacity(world: World) -> None:
    world.apply(WORKSHOP)
    world.apply("""
apiVersion: v1
kind: Pod
metadata: {name: elsewhere, namespace: default}
spec:
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
          - matchExpressions: [{key: karpenter.sh/nodepool, operator: DoesNotExist}]
  containers: [{name: app, resources: {requests: {cpu: 100m}}}]
""")
    assert world.settle()
    assert world.nodeclaims() == []
