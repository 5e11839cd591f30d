"""The disruption issue's workshop step through the operator's driver in real time: the
disruption loop runs on the operator's timers and its replace command spans several
reconciles (launch, wait for the replacement to initialize, drain), as in a cluster.

The step takes about ten seconds of wall time: the node the pods were scheduled to stays
nominated for max(2 x batchMaxDuration, 10 s) as in Karpenter, and disruption leaves a
nominated node alone. Deletion (12 -> 5) is told in simulated time in tests/disruption."""

from __future__ import annotations

from nodewright.cluster.api import ConflictError
from tests.kube.waiting import eventually
from tests.operator.conftest import WORKSHOP
from tests.operator.world import RealTimeWorld


def test_the_workshop_replaces_an_underused_m5_large_by_a_c5_large(
        world: RealTimeWorld) -> None:
    operator = world.operator("nodewright-a", leader_elect=False)
    world.apply(WORKSHOP)
    world.cluster.patch("NodePool", "default",
                        {"spec": {"disruption": {"consolidateAfter": "1s"}}})
    world.scale("inflate", 5)
    world.wait_until_running(pods=5, nodes=1)
    assert world.instance_types() == ["m5.large"]

    world.scale("inflate", 1)  # a cheaper c5.large holds the one pod left
    eventually(lambda: world.instance_types() == ["c5.large"]
               and len(world.running_pods()) == 1 and len(world.ready_nodes()) == 1,
               f"one c5.large running 1 pod (now {world.instance_types()})", patience=40)
    reasons = {str(event.get("reason")) for event in world.cluster.list("Event")}
    assert {"DisruptionLaunching", "DisruptionTerminating"} <= reasons
    assert [error for _, _, error in operator.driver.errors
            if not isinstance(error, ConflictError)] == []
