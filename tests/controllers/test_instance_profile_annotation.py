"""The NodeClaim names the instance profile its instance was launched with."""

from __future__ import annotations

from tests.controllers.conftest import WORKSHOP
from tests.harness import World


def test_a_launched_nodeclaim_names_its_instance_profile() -> None:
    """Karpenter's cloudprovider Create annotates the NodeClaim with
    karpenter.k8s.aws/instance-profile-name (pkg/cloudprovider/suite_test.go "should expect
    a strict set of annotation keys", its profile part): the launch writes it, and instance
    profile garbage collection keeps the profiles NodeClaims name."""
    world = World()
    world.apply(WORKSHOP)
    world.scale("inflate", 1)
    assert world.settle()

    (claim,) = world.nodeclaims()
    (node_class,) = world.cluster.list("EC2NodeClass")
    assert claim["metadata"]["annotations"]["karpenter.k8s.aws/instance-profile-name"] == \
        node_class["status"]["instanceProfile"]
