"""What the cloud found out while a launch failed reaches the NodeClaim as Warning events."""

from __future__ import annotations

from typing import Any

from nodewright.cloud.provider import CloudProviderError, InsufficientCapacityError
from tests.controllers.conftest import WORKSHOP
from tests.controllers.expectations import expect_running
from tests.harness import World


def test_a_launch_failure_carrying_a_warning_publishes_it_on_the_nodeclaim() -> None:
    """Karpenter's SpotServiceLinkedRoleCreationFailure (pkg/providers/instance/events.go):
    the provider attaches it to the capacity error; the launch controller publishes it."""
    world = World()
    create = world.cloud.create
    failures: list[str] = []

    def spot_refused(claim: Any, node_class: Any) -> Any:
        if not failures:
            failures.append(claim.name)
            raise InsufficientCapacityError(
                "no spot", code="InsufficientCapacity",
                warnings=[("SpotServiceLinkedRoleCreationFailure", "Attempted to launch a spot "
                           "instance but failed due to \"AuthFailure.ServiceLinkedRoleCreation"
                           "NotPermitted\"")])
        return create(claim, node_class)

    world.cloud.create = spot_refused  # type: ignore[method-assign]
    world.apply(WORKSHOP)
    world.scale("inflate", 2)
    assert world.settle()
    (warning,) = world.events("SpotServiceLinkedRoleCreationFailure")
    assert warning["type"] == "Warning"
    assert warning["regarding"] == {**warning["regarding"], "kind": "NodeClaim",
                                    "name": failures[0]}
    assert "ServiceLinkedRoleCreationNotPermitted" in warning["note"]
    expect_running(world, 2)


def test_a_launch_failure_with_a_reason_names_it_in_the_launched_condition() -> None:
    """Karpenter's lifecycle launch: a CreateError's reason becomes the Launched
    condition's (Unknown), e.g. Unauthorized from pkg/errors ToReasonMessage."""
    world = World()

    def refused(claim: Any, node_class: Any) -> Any:
        raise CloudProviderError("ec2:CreateFleet: UnauthorizedOperation: no",
                                 code="UnauthorizedOperation", reason="Unauthorized")

    world.cloud.create = refused  # type: ignore[method-assign]
    world.apply(WORKSHOP)
    world.scale("inflate", 1)
    world.advance(5)
    (claim,) = world.nodeclaims()
    (launched,) = [c for c in claim["status"]["conditions"] if c["type"] == "Launched"]
    assert (launched["status"], launched["reason"]) == ("Unknown", "Unauthorized")
