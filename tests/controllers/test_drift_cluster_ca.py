"""The EC2NodeClass drift hash covers the cluster CA bundle the controller runs with, as
Karpenter's `EC2NodeClass.Hash(caBundle)` does (its operator reads CLUSTER_CA_BUNDLE, else
the CA its API client trusts). A node's user data carries the cluster CA: once the
controller runs with a new one, the nodes launched with the old one are drifted.
"""

from __future__ import annotations

from nodewright.api import hashes
from nodewright.api.ec2nodeclass import EC2NodeClass
from nodewright.controllers.nodeclaim.disruption_conditions import NodeClaimConditions
from nodewright.controllers.nodeclaim.drift import NODECLASS_DRIFTED
from nodewright.controllers.options import ControllerOptions
from tests.controllers.nodeclaim_bench import bench, condition_of, create, get, nodeclaim, status_of
from tests.harness import World

OLD_CA, NEW_CA = "b2xkLWNh", "bmV3LWNh"  # base64 PEM stand-ins


def node_class(world: World) -> EC2NodeClass:
    return EC2NodeClass.model_validate(world.cluster.get("EC2NodeClass", "default"))


def launched_under(world: World, ca_bundle: str) -> str:
    """A NodeClaim launched by a controller that ran with `ca_bundle` (its launch stamped
    the hash, as Karpenter's Create does: written here after this controller's launch)."""
    (claim,) = create(world, nodeclaim())
    world.advance(5)
    name = str(claim["metadata"]["name"])
    annotations = hashes.node_class_hash_annotations(node_class(world), ca_bundle)
    world.cluster.patch("NodeClaim", name, {"metadata": {"annotations": annotations}})
    world.deliver()
    return name


def drift_of(world: World, name: str) -> tuple[str, str | None] | None:
    controller = world.controllers.get("nodeclaim.disruption", NodeClaimConditions)
    assert controller is not None
    controller.reconcile(name)
    if status_of(get(world, name), "Drifted") is None:
        return None
    return condition_of(get(world, name), "Drifted")


def test_a_node_launched_with_the_old_cluster_ca_is_drifted() -> None:
    world = bench(options=ControllerOptions(cluster_ca_bundle=NEW_CA))
    kept = launched_under(world, NEW_CA)
    stale = launched_under(world, OLD_CA)

    assert drift_of(world, kept) is None
    assert drift_of(world, stale) == ("True", NODECLASS_DRIFTED)


def test_the_provisioner_stamps_the_hash_with_the_controllers_ca() -> None:
    world = bench(options=ControllerOptions(cluster_ca_bundle=NEW_CA))
    world.apply({"apiVersion": "v1", "kind": "Pod",
                 "metadata": {"name": "web", "namespace": "default"},
                 "spec": {"containers": [{"name": "web", "image": "web", "resources": {
                     "requests": {"cpu": "1"}}}]}})
    world.run_until(lambda: bool(world.nodeclaims()), timeout=60)

    (claim,) = world.nodeclaims()
    stamped = claim["metadata"]["annotations"][hashes.NODECLASS_HASH]
    assert stamped == hashes.node_class_hash(node_class(world), NEW_CA)
    assert stamped != hashes.node_class_hash(node_class(world))


def test_grace_periods_count_by_their_length() -> None:
    """Karpenter hashes the decoded metav1.Duration: writing 1m as 1m0s drifts nothing."""
    base = {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass",
            "metadata": {"name": "default"},
            "spec": {"role": "R", "amiSelectorTerms": [{"alias": "al2023@latest"}],
                     "subnetSelectorTerms": [{"tags": {"a": "b"}}],
                     "securityGroupSelectorTerms": [{"tags": {"a": "b"}}],
                     "kubelet": {"evictionSoft": {"memory.available": "5%"},
                                 "evictionSoftGracePeriod": {"memory.available": "1m"}}}}
    longer = {**base, "spec": {**base["spec"], "kubelet": {
        "evictionSoft": {"memory.available": "5%"},
        "evictionSoftGracePeriod": {"memory.available": "2m"}}}}
    spelled = {**base, "spec": {**base["spec"], "kubelet": {
        "evictionSoft": {"memory.available": "5%"},
        "evictionSoftGracePeriod": {"memory.available": "1m0s"}}}}

    def hash_of(body: dict[str, object]) -> str:
        return hashes.node_class_hash(EC2NodeClass.model_validate(body), OLD_CA)

    assert hash_of(spelled) == hash_of(base)
    assert hash_of(longer) != hash_of(base)
