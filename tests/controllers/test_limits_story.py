"""NodePool limits and weights: limits hold even when batches follow each other before
the first NodeClaims launch, and the heaviest compatible NodePool is used first."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from nodewright.api.quantity import parse_quantity
from nodewright.cloud.provider import CloudProviderError
from tests.controllers.conftest import WORKSHOP
from tests.controllers.expectations import expect_consistent, expect_no_controller_errors
from tests.harness import World, node_pool

LIMITED_POOL = node_pool(types=["m5.large"], labels={"type": "karpenter"}, limits={"cpu": "6"})


def deployment(name: str, replicas: int, cpu: str) -> str:
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: default}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      nodeSelector: {{type: karpenter}}
      containers: [{{name: app, resources: {{requests: {{cpu: "{cpu}"}}}}}}]
"""


def pool_cpu(world: World, pool: str) -> int:
    """The cpu capacity of the pool's NodeClaims that exist now (launched or not)."""
    total = 0
    for claim in world.nodeclaims():
        if claim["metadata"]["labels"].get("karpenter.sh/nodepool") != pool:
            continue
        capacity = claim.get("status", {}).get("capacity", {}).get("cpu")
        total += parse_quantity(capacity) if capacity else 2000  # m5.large
    return total


def test_limits_hold_while_batches_follow_each_other() -> None:
    world = World()
    # Launches fail for the first 20 s, so the first batch's NodeClaims are still in
    # flight (capacity unknown) when the second batch closes.
    launch = world.cloud.create

    def flaky_create(nodeclaim: Any, node_class: Any) -> Any:
        if world.clock.now() < start + timedelta(seconds=20):
            raise CloudProviderError("ec2:CreateFleet: RequestLimitExceeded", code="Throttled")
        return launch(nodeclaim, node_class)

    start = world.clock.now()
    world.cloud.create = flaky_create  # type: ignore[method-assign]
    world.apply(WORKSHOP, LIMITED_POOL)
    seen: list[int] = []
    world.apply(deployment("first", 3, "1500m"))
    for _ in range(4):  # the first batch is open, then a second workload arrives
        world.advance(0.5)
        seen.append(pool_cpu(world, "default"))
    world.apply(deployment("second", 3, "1500m"))
    in_flight = 0
    for _ in range(200):
        in_flight = max(in_flight, sum(
            1 for c in world.nodeclaims() if not c.get("status", {}).get("providerID")))
        world.advance(1)
        seen.append(pool_cpu(world, "default"))
    assert in_flight > 0, "no NodeClaim was ever in flight: the race did not happen"
    assert max(seen) <= 6000, f"the pool reached {max(seen)}m cpu with a 6 cpu limit"
    assert len(world.nodeclaims()) == 3
    running = sum(1 for pod in world.running_pods())
    assert running == 3, "one 1500m pod fits per m5.large (1930m allocatable)"
    limited = [e for e in world.events("FailedScheduling")
               if e["reportingController"] == "karpenter" and "limit" in e["note"]]
    assert limited, "pods left pending were not told about the limit"
    expect_consistent(world)
    expect_no_controller_errors(world)


def test_the_heaviest_compatible_nodepool_is_used() -> None:
    world = World()
    heavy = pool_named("heavy", 50)
    light = pool_named("light", 10)
    world.apply(WORKSHOP / "ec2nodeclass.yaml", WORKSHOP / "daemonsets.yaml",
                WORKSHOP / "inflate.yaml", light, heavy)
    world.scale("inflate", 5)
    assert world.settle()
    pools = {c["metadata"]["labels"]["karpenter.sh/nodepool"] for c in world.nodeclaims()}
    assert pools == {"heavy"}
    assert len(world.running_pods()) == 5


def pool_named(name: str, weight: int) -> dict[str, Any]:
    return node_pool(name, families=["c5", "m5"], capacity_types=(), labels={"type": "karpenter"},
                     weight=weight)
