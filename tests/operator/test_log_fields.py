"""The operator's JSON logs carry Karpenter's messages and fields, so log queries written
for Karpenter (controller, NodeClaim, NodePool, Node, provider-id, instance-type, ...) find
a launch and a drain."""

from __future__ import annotations

from typing import Any

from tests.kube.waiting import eventually
from tests.operator.conftest import WORKSHOP, JsonLogs
from tests.operator.world import RealTimeWorld


def one(records: list[dict[str, Any]], **fields: Any) -> dict[str, Any]:
    """The one record whose fields include `fields`."""
    found = [r for r in records if all(r.get(key) == value for key, value in fields.items())]
    assert len(found) == 1, f"{len(found)} records with {fields} among {records}"
    return found[0]


def test_a_launch_and_a_drain_are_logged_with_karpenters_fields(
        world: RealTimeWorld, json_logs: JsonLogs) -> None:
    world.operator("nodewright-a", leader_elect=False)
    world.apply(WORKSHOP)
    world.scale("inflate", 5)
    world.wait_until_running(pods=5, nodes=1)
    (claim,) = world.registered_nodeclaims(1)
    name, node = claim["metadata"]["name"], claim["status"]["nodeName"]
    provider_id = claim["status"]["providerID"]
    labels = claim["metadata"]["labels"]

    found = one(json_logs("found provisionable pod(s)"))
    assert found["controller"] == "provisioner"
    assert found["Pods"].startswith("default/inflate-") and "and 0 other" not in found["Pods"]
    assert found["duration"].endswith("s")
    computed = one(json_logs("computed new nodeclaim(s) to fit pod(s)"))
    assert (computed["nodeclaims"], computed["pods"]) == (1, 5)
    created = one(json_logs("created nodeclaim"), NodeClaim={"name": name})
    assert created["NodePool"] == {"name": "default"} and created["controller"] == "provisioner"
    assert created["requests"]["memory"] == "5Gi"
    assert "m5.large" in created["instance-types"]

    launched = one(json_logs("launched nodeclaim"), NodeClaim={"name": name})
    assert launched["level"] == "INFO"
    assert launched["controller"] == "nodeclaim.lifecycle"
    assert launched["NodePool"] == {"name": "default"}
    assert launched["provider-id"] == provider_id
    assert launched["instance-type"] == "m5.large"
    assert launched["zone"] == labels["topology.kubernetes.io/zone"]
    assert launched["capacity-type"] == "on-demand"
    assert launched["allocatable"]["cpu"] == "1930m"
    registered = one(json_logs("registered nodeclaim"), NodeClaim={"name": name})
    assert (registered["Node"], registered["provider-id"]) == ({"name": node}, provider_id)
    initialized = one(json_logs("initialized nodeclaim"), NodeClaim={"name": name})
    assert initialized["Node"] == {"name": node} and "allocatable" in initialized

    world.cluster.delete("NodeClaim", name)
    eventually(lambda: json_logs("deleted nodeclaim"), "the NodeClaim to be finalized")
    tainted = one(json_logs("tainted node"), Node={"name": node})
    assert tainted["controller"] == "node.termination"
    assert tainted["NodeClaim"] == {"name": name}
    assert tainted["provider-id"] == provider_id
    assert (tainted["taint.Key"], tainted["taint.Value"], tainted["taint.Effect"]) == (
        "karpenter.sh/disrupted", "", "NoSchedule")
    deleted_node = one(json_logs("deleted node"), Node={"name": node})
    assert deleted_node["controller"] == "node.termination"
    assert deleted_node["NodePool"] == {"name": "default"}
    deleted = one(json_logs("deleted nodeclaim"), NodeClaim={"name": name})
    assert deleted["controller"] == "nodeclaim.lifecycle"
    assert (deleted["Node"], deleted["provider-id"]) == ({"name": node}, provider_id)
