"""A node class's role changes while nodes run with the old one (Karpenter v1.14.1's
instance profile reconciler and garbage collection, pkg/controllers/nodeclass/
instanceprofile.go and garbagecollection/controller.go): the status moves to a new profile
for the new role, the NodeClaims launched before keep the profile they were launched with
(named by their karpenter.k8s.aws/instance-profile-name), and the old profile goes once no
NodeClaim names it and its hour of protection is over. Over moto, through the node class
status controller, the provider and the garbage collection controller.
"""

from __future__ import annotations

from typing import Any

from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.instance_profiles import PROFILE_ANNOTATION
from nodewright.cloud.aws.provider import AwsCloudProvider
from nodewright.cluster.memory import InMemoryCluster
from nodewright.controllers.nodeclass.cleanup import CloudGarbageCollection
from nodewright.controllers.nodeclass.status import NodeClassStatus
from nodewright.runtime.clock import VirtualClock
from tests.aws.world import FakeClock, World, node_class, nodeclaim


def _profiles(clients: AwsClients) -> dict[str, list[str]]:
    return {p["InstanceProfileName"]: [r["RoleName"] for r in p["Roles"]]
            for p in clients.iam.list_instance_profiles()["InstanceProfiles"]}


def _status_profile(cluster: InMemoryCluster) -> str:
    return str(cluster.get("EC2NodeClass", "default")["status"]["instanceProfile"])


def _claim(name: str, annotations: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
            "metadata": {"name": name, "annotations": annotations},
            "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                      "name": "default"}, "requirements": []}}


def test_a_role_change_moves_new_nodes_to_a_new_profile_and_keeps_the_old_for_running_ones(
    clients: AwsClients, world: World, clock: FakeClock, provider: AwsCloudProvider,
) -> None:
    clients.iam.create_role(RoleName="KarpenterNodeRole-next", AssumeRolePolicyDocument="{}")
    cluster = InMemoryCluster(VirtualClock())
    cluster.create(node_class().to_manifest())
    status = NodeClassStatus(cluster, provider, VirtualClock())
    collection = CloudGarbageCollection(cluster, provider)

    status.reconcile("default")
    old = _status_profile(cluster)
    launched = provider.create(nodeclaim(), node_class())
    # Karpenter's "should expect a strict set of annotation keys" (its profile part): the
    # NodeClaim names the profile it was launched with, the one the status names.
    assert launched.annotations == {PROFILE_ANNOTATION: old}
    cluster.create(_claim("running", dict(launched.annotations)))

    body = cluster.get("EC2NodeClass", "default")
    cluster.patch("EC2NodeClass", "default", {"spec": {"role": "KarpenterNodeRole-next"},
                                              "metadata": {"resourceVersion": body[
                                                  "metadata"]["resourceVersion"]}})
    status.reconcile("default")
    new = _status_profile(cluster)

    assert new != old
    assert _profiles(clients) == {old: ["KarpenterNodeRole-demo"],
                                  new: ["KarpenterNodeRole-next"]}

    clock.advance(3601)  # past both profiles' protection
    collection.reconcile("")
    assert set(_profiles(clients)) == {old, new}  # a NodeClaim still names the old one

    cluster.delete("NodeClaim", "running")
    collection.reconcile("")
    assert _profiles(clients) == {new: ["KarpenterNodeRole-next"]}


def test_a_deleted_node_class_takes_every_profile_it_had(
    clients: AwsClients, world: World, provider: AwsCloudProvider,
) -> None:
    """It("should delete all the instance profiles from cache when the nodeClass is
    deleted") (instanceprofile_test.go), its IAM half: roles A, B then C made three
    profiles; the finalizer's clean-up deletes all three (Nodewright keeps no profile
    cache)."""
    cluster = InMemoryCluster(VirtualClock())
    cluster.create(node_class().to_manifest())
    status = NodeClassStatus(cluster, provider, VirtualClock())
    for role in ("role-A", "role-B", "role-C"):
        clients.iam.create_role(RoleName=role, AssumeRolePolicyDocument="{}")
        version = cluster.get("EC2NodeClass", "default")["metadata"]["resourceVersion"]
        cluster.patch("EC2NodeClass", "default", {"spec": {"role": role},
                                                  "metadata": {"resourceVersion": version}})
        status.reconcile("default")
    assert len(_profiles(clients)) == 3

    report = provider.delete_node_class_resources("default")

    assert len(report.deleted_profiles) == 3
    assert _profiles(clients) == {}
