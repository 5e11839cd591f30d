"""Launch: a new NodeClaim gets an instance and Launched=True; capacity and node class
errors delete it, other errors leave Launched=Unknown with the cloud's reason.

Ported from Karpenter v1.14.1 pkg/controllers/nodeclaim/lifecycle/launch_test.go
(Describe "Launch")."""

from __future__ import annotations

import pytest

from nodewright.cloud.provider import (
    CloudProviderError,
    InsufficientCapacityError,
    NodeClassNotReadyError,
)
from tests.controllers.nodeclaim_bench import (
    bench,
    condition_of,
    create,
    exists,
    fail_next_launch,
    get,
    nodeclaim,
    status_of,
)


@pytest.mark.parametrize("managed", [True, False], ids=["managed", "unmanaged"])
def test_a_new_nodeclaim_launches_one_instance(managed: bool) -> None:
    """Entries "should launch an instance when a new NodeClaim is created" and "should
    ignore NodeClaims which aren't managed by this Karpenter instance"."""
    world = bench()
    asked = fail_next_launch(world, None)
    (claim,) = create(world, nodeclaim(managed=managed))
    world.advance(5)
    after = get(world, claim["metadata"]["name"])
    assert after is not None
    if managed:
        provider_id = after["status"]["providerID"]
        assert [i.provider_id for i in world.live_instances()] == [provider_id]
        assert asked == [claim["metadata"]["name"]]
    else:
        assert asked == [] and world.live_instances() == []


def test_a_launched_nodeclaim_says_launched() -> None:
    """It "should add the Launched status condition after creating the NodeClaim"."""
    world = bench()
    (claim,) = create(world, nodeclaim())
    world.advance(5)
    assert status_of(get(world, claim["metadata"]["name"]), "Launched") == "True"


@pytest.mark.parametrize("error", [
    InsufficientCapacityError("all instance types were unavailable"),
    NodeClassNotReadyError("nodeClass isn't ready"),
], ids=["insufficient-capacity", "nodeclass-not-ready"])
def test_a_nodeclaim_the_cloud_cannot_launch_now_is_deleted(error: CloudProviderError) -> None:
    """Its "should delete the nodeclaim if InsufficientCapacity is returned from the
    cloudprovider" and "should delete the nodeclaim if NodeClassNotReady is returned from
    the cloudprovider"."""
    world = bench()
    fail_next_launch(world, error)
    (claim,) = create(world, nodeclaim(pool=None))
    world.advance(5)
    assert not exists(world, claim["metadata"]["name"])


def test_a_create_error_gives_the_launched_condition_its_reason_and_message() -> None:
    """It "should set nodeClaim status condition from the condition message received if
    error returned is CreateError"."""
    world = bench()
    fail_next_launch(world, CloudProviderError("instance creation failed",
                                               reason="CustomReason"), times=100)
    (claim,) = create(world, nodeclaim(pool=None))
    world.advance(0.5)
    after = get(world, claim["metadata"]["name"])
    assert condition_of(after, "Launched") == ("Unknown", "CustomReason")
    launched = next(c for c in after["status"]["conditions"] if c["type"] == "Launched")
    assert launched["message"] == "instance creation failed"
