"""The simulated cloud's drift answer for a NodeClaim whose instance is gone is the AWS
provider's: NodeClaimNotFoundError (aws/karpenter-provider-aws pkg/cloudprovider/drift.go
isNodeClassDrifted 56-59, getInstance). Karpenter's Drift reconciler ignores that error
without touching the Drifted condition (pkg/controllers/nodeclaim/disruption/drift.go
64-67); "not drifted" would clear it."""

from __future__ import annotations

from datetime import timedelta

import pytest

from nodewright.cloud.provider import NodeClaimNotFoundError
from nodewright.cloud.sim import SimulatedEC2
from nodewright.runtime import VirtualClock

from .conftest import node_class, nodeclaim
from .test_drift import with_provider_id


def test_a_terminated_instance_is_not_found_rather_than_not_drifted(
        ec2: SimulatedEC2, clock: VirtualClock) -> None:
    claim = nodeclaim(types=("m5.large",))
    instance = ec2.create(claim, node_class())
    claim = with_provider_id(claim, instance.provider_id)
    ec2.set_image("al2023@latest", "amd64", "ami-0f00000000000new1")
    assert ec2.drift_reason(claim, node_class()) == "AMIDrift"

    ec2.delete(instance.provider_id)
    clock.run_until(clock.now() + timedelta(minutes=1))  # shutting-down, then terminated

    with pytest.raises(NodeClaimNotFoundError):
        ec2.drift_reason(claim, node_class())
