"""DaemonSet overhead per instance type, as Karpenter's `buildDaemonOverheadGroups` /
`isDaemonPodCompatible`: a DaemonSet counts against a type only where its pod would
schedule. Ported from kubernetes-sigs/karpenter v1.14.1
pkg/controllers/provisioning/suite_test.go, Context("Daemonsets") (named per story).

The catalog mirrors Karpenter's fake cloud provider: a 2-cpu "small" type, a 4-cpu
default type (both `size=small`) and a 16-cpu arm64 type (`size=large`)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from nodewright.controllers.provisioning.nodeclaims import claim_requests
from nodewright.scheduling.daemons import daemon_loads, least_overhead
from nodewright.scheduling.pods import ExistingNode, Taint, daemonset_from_manifest
from nodewright.scheduling.solver import SchedulingResult
from tests.scheduling.test_solver import GIB, HOSTNAME, ZONE, instance_type, nodepool, pod, run

# Karpenter's fake provider registers its `size` label as well known; an AWS instance
# label is, here.
SIZE = "karpenter.k8s.aws/instance-size"
ARCH = "kubernetes.io/arch"
SMALL = instance_type("small-instance-type.1", 2, 2, 0.10, labels={SIZE: "small"})
DEFAULT = instance_type("default-instance-type.1", 4, 4, 0.20, labels={SIZE: "small"})
ARM = instance_type("arm-instance-type.1", 16, 128, 0.80,
                    labels={SIZE: "large", ARCH: "arm64"})
FAKE = [SMALL, DEFAULT, ARM]


def daemonset(name: str, cpu: str = "2", memory: str = "2Gi", *,
              ports: tuple[int, ...] = (), **spec: Any) -> Any:
    container: dict[str, Any] = {"name": "d", "resources": {"requests": {"cpu": cpu,
                                                                          "memory": memory}}}
    if ports:
        container["ports"] = [{"containerPort": p, "hostPort": p} for p in ports]
    return daemonset_from_manifest({
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": "kube-system"},
        "spec": {"template": {"spec": {"containers": [container], **spec}}},
    })


def requiring(key: str, operator: str, *values: str) -> dict[str, Any]:
    term = {"matchExpressions": [{"key": key, "operator": operator, "values": list(values)}]}
    return {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [term]}}}}


def launched(result: SchedulingResult) -> list[str]:
    return [claim.instance_type for claim in result.nodeclaims]


def web(**spec: Any) -> Any:
    return pod("web-0", cpu="1", memory="1Gi", **spec)


def test_a_daemonset_on_every_node_takes_room_on_the_new_node() -> None:
    # "should account for daemonsets": 1 cpu of pod + 2 of DaemonSet skip the 2-cpu type.
    result = run([web()], [nodepool(catalog=FAKE)], daemonsets=[daemonset("agent")])
    assert launched(result) == ["default-instance-type.1"]


def test_a_daemonset_overhead_too_large_for_any_type_leaves_the_pod_pending() -> None:
    # "should not schedule if daemonset overhead is too large"
    result = run([web()], [nodepool(catalog=FAKE)],
                 daemonsets=[daemonset("huge", cpu="10000", memory="10000Gi")])
    assert result.nodeclaims == () and len(result.unschedulable) == 1
    assert "DaemonSets that would run on its nodes take more" in result.unschedulable[0][1]


def test_a_daemonset_that_does_not_tolerate_the_pools_taint_is_not_counted() -> None:
    # "should ignore daemonsets without matching tolerations"
    taint = Taint("foo", "bar", "NoSchedule")
    result = run([web(tolerations=[{"operator": "Exists"}])],
                 [nodepool(catalog=FAKE, taints=[taint])], daemonsets=[daemonset("agent")])
    assert launched(result) == ["small-instance-type.1"]


def test_a_daemonset_with_a_selector_no_node_carries_is_not_counted() -> None:
    # "should ignore daemonsets with an invalid selector"
    result = run([web()], [nodepool(catalog=FAKE)],
                 daemonsets=[daemonset("agent", nodeSelector={"node": "invalid"})])
    assert launched(result) == ["small-instance-type.1"]


def test_a_daemonset_requiring_a_type_that_does_not_exist_is_not_counted() -> None:
    # "should ignore daemonsets when no instance types meet the daemonset requirements"
    agent = daemonset("agent", **requiring("node.kubernetes.io/instance-type", "In",
                                           "non-existent-instance-type"))
    result = run([web()], [nodepool(catalog=FAKE)], daemonsets=[agent])
    assert launched(result) == ["small-instance-type.1"]


def test_a_daemonset_selecting_the_pools_custom_label_is_counted() -> None:
    # "should account for daemonsets with a custom label nodeSelector that matches the
    # nodepool"
    result = run([web()], [nodepool(catalog=FAKE, labels={"purpose": "monitoring"})],
                 daemonsets=[daemonset("agent", nodeSelector={"purpose": "monitoring"})])
    assert launched(result) == ["default-instance-type.1"]


def test_daemonsets_count_only_on_the_instance_types_they_select() -> None:
    # "should filter out daemonsets based on instance type requirements": the small-size
    # DaemonSet counts on the 2- and 4-cpu types, the large one (10 cpu) only on the arm
    # type, so the pod takes the 4-cpu type rather than the 16-cpu one.
    result = run([web()], [nodepool(catalog=FAKE)], daemonsets=[
        daemonset("on-small", cpu="1100m", memory="0", **requiring(SIZE, "In", "small")),
        daemonset("on-large", cpu="10", memory="0", **requiring(SIZE, "In", "large")),
    ])
    assert launched(result) == ["default-instance-type.1"]


def test_a_daemonset_with_not_in_on_an_unspecified_key_is_counted() -> None:
    # "should account daemonsets with NotIn operator and unspecified key"
    result = run([web(nodeSelector={ZONE: "zone-b"})], [nodepool(catalog=FAKE)],
                 daemonsets=[daemonset("agent", **requiring("foo", "NotIn", "bar"))])
    assert launched(result) == ["default-instance-type.1"]


def test_a_daemonset_matching_through_its_second_term_is_counted() -> None:
    # "should consider a daemonset schedulable with multiple node affinity terms"
    terms = [{"matchExpressions": [{"key": "foo", "operator": "In", "values": [v]}]}
             for v in ("voo", "bar")]
    agent = daemonset("agent", affinity={"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}})
    result = run([web()], [nodepool(catalog=FAKE, labels={"foo": "bar"})], daemonsets=[agent])
    assert launched(result) == ["default-instance-type.1"]


def test_a_daemonsets_node_preference_does_not_stop_it_counting() -> None:
    # "should consider a daemonset schedulable with an incompatible node affinity preference"
    preference = {"weight": 1, "preference": {"matchExpressions": [
        {"key": "node", "operator": "In", "values": ["invalid"]}]}}
    agent = daemonset("agent", affinity={"nodeAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [preference]}})
    result = run([web()], [nodepool(catalog=FAKE)], daemonsets=[agent])
    assert launched(result) == ["default-instance-type.1"]


def test_a_prefer_no_schedule_taint_does_not_keep_a_daemonset_off() -> None:
    # "should consider a daemonset schedulable with a PreferNoSchedule taint"
    taint = Taint("test", "", "PreferNoSchedule")
    result = run([web()], [nodepool(catalog=FAKE, taints=[taint])],
                 daemonsets=[daemonset("agent")])
    assert launched(result) == ["default-instance-type.1"]


def test_a_daemonsets_host_port_counts_only_where_it_would_run() -> None:
    # "should not account for daemonset hostports when daemonset would not schedule on
    # selected node": port 8080 is held on large nodes only; the pod asks for a small one.
    result = run(
        [web(containers=[{"name": "c", "ports": [{"containerPort": 8080, "hostPort": 8080}],
                          "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}],
             nodeSelector={SIZE: "small"})],
        [nodepool(catalog=FAKE)],
        daemonsets=[
            daemonset("large-proxy", cpu="4", memory="4Gi", ports=(8080,),
                      **requiring(SIZE, "In", "large")),
            daemonset("small-proxy", cpu="2", memory="2Gi", ports=(8081,),
                      **requiring(SIZE, "In", "small")),
        ])
    assert launched(result) == ["default-instance-type.1"]


def test_a_daemonsets_host_port_steers_a_pod_to_the_types_it_does_not_run_on() -> None:
    # The port is held on small nodes only: the pod asking for it launches the arm type.
    result = run(
        [web(containers=[{"name": "c", "ports": [{"containerPort": 8080, "hostPort": 8080}],
                          "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}])],
        [nodepool(catalog=FAKE)],
        daemonsets=[daemonset("proxy", cpu="100m", memory="0", ports=(8080,),
                              **requiring(SIZE, "In", "small"))])
    assert launched(result) == ["arm-instance-type.1"]
    (claim,) = result.nodeclaims
    assert claim.instance_types == (("arm-instance-type.1", 0.80),)


def test_an_arm64_only_daemonset_does_not_inflate_an_amd64_node() -> None:
    # The example: an arm64-only DaemonSet asking 3 cpu made a 1-cpu amd64 pod
    # launch a type with room for it; it must launch the 2-cpu type.
    agent = daemonset("arm-agent", cpu="3", memory="0", nodeSelector={ARCH: "arm64"})
    result = run([web(nodeSelector={ARCH: "amd64"})], [nodepool(catalog=FAKE)],
                 daemonsets=[agent])
    assert launched(result) == ["small-instance-type.1"]


def test_a_daemonset_that_only_runs_on_another_size_leaves_the_pod_schedulable() -> None:
    # A 15-cpu DaemonSet for large nodes: per NodePool it filled every type; per type it
    # fills only the arm type, and the pod lands on the 2-cpu one.
    agent = daemonset("big", cpu="15", memory="0", **requiring(SIZE, "In", "large"))
    result = run([web()], [nodepool(catalog=FAKE)], daemonsets=[agent])
    assert launched(result) == ["small-instance-type.1"] and result.unschedulable == ()


def test_an_existing_node_reserves_only_the_daemonsets_its_labels_admit() -> None:
    # scheduling/suite_test.go "should not subtract daemonset overhead that is not strictly
    # compatible with an existing node": the arm DaemonSet does not run on this amd64 node.
    node = ExistingNode("node-1", {ZONE: "zone-a", HOSTNAME: "node-1", ARCH: "amd64"}, (),
                        {"cpu": 2000, "memory": 8 * GIB, "pods": 110_000})
    agent = daemonset("arm-agent", cpu="1", memory="0", nodeSelector={ARCH: "arm64"})
    result = run([pod("web-0", cpu="1500m")], [nodepool(catalog=FAKE)], nodes=[node],
                 daemonsets=[agent])
    assert result.existing == (("node-1", ("default/web-0",)),) and result.nodeclaims == ()


def test_a_nodeclaim_requests_its_daemonsets_once_at_the_least_of_its_types() -> None:
    # "should create a nodeclaim with resource requests with daemon overhead" and "should
    # not double-count daemon overhead when multiple pods are scheduled to the same
    # nodeclaim": two 1-cpu pods and one 1-cpu DaemonSet request 3 cpu; the arm-only
    # DaemonSet runs on none of the claim's types but the arm one, so it is not requested.
    agent = daemonset("agent", cpu="1", memory="1Mi")
    arm_agent = daemonset("arm-agent", cpu="2", memory="0", nodeSelector={ARCH: "arm64"})
    pool = nodepool(catalog=FAKE)
    pods = [pod(f"web-{i}", cpu="1", memory="1Mi") for i in range(2)]

    (claim,) = run(pods, [pool], daemonsets=[agent, arm_agent]).nodeclaims
    loads = daemon_loads(pool, FAKE, [agent, arm_agent])
    overhead = least_overhead([loads[name] for name, _ in claim.instance_types])
    requests = claim_requests(claim, {p.key: p for p in pods}, overhead)

    assert "arm-instance-type.1" in [name for name, _ in claim.instance_types]
    assert requests["cpu"] == 3000 and requests["memory"] == 3 * 2**20 * 1000


def test_daemonsets_selecting_registered_and_initialized_nodes_count_on_new_ones() -> None:
    # scheduling/suite_test.go "Should properly handle DaemonSet resources with Node
    # Affinity for `karpenter.sh/initialized` and `karpenter.sh/registered`": both agents
    # run once the node joins, so a 2-cpu pod needs room for 4 cpu.
    agents = [daemonset(f"on-{key}", cpu="1", memory="0",
                        **requiring(f"karpenter.sh/{key}", "In", "true"))
              for key in ("initialized", "registered")]
    result = run([pod("web-0", cpu="2", memory="0")], [nodepool(catalog=FAKE)],
                 daemonsets=agents)
    assert launched(result) == ["default-instance-type.1"]
    (claim,) = result.nodeclaims
    assert "karpenter.sh/initialized" not in claim.requirements
    assert "karpenter.sh/registered" not in claim.requirements


def test_a_daemonset_an_existing_node_does_not_match_still_counts_on_new_nodes() -> None:
    # scheduling/suite_test.go "should not subtract daemonset overhead that is not strictly
    # compatible with an existing node": the node (no zone label) takes the first pod; the
    # 100-cpu zone-1 DaemonSet fills every new node, so the second pod waits.
    node = ExistingNode("node-1", {HOSTNAME: "node-1"}, (),
                        {"cpu": 1000, "memory": 1 * GIB, "pods": 110_000})
    agent = daemonset("zonal", cpu="100", memory="100Gi", **requiring(ZONE, "In", "zone-a"))
    first = run([web()], [nodepool(catalog=FAKE)], nodes=[node], daemonsets=[agent])
    assert first.existing == (("node-1", ("default/web-0",)),)
    running = replace(web(), node_name="node-1")
    second = run([pod("web-1", cpu="1", memory="1Gi")], [nodepool(catalog=FAKE)], nodes=[node],
                 bound_pods=[running], daemonsets=[agent])
    assert second.nodeclaims == () and len(second.unschedulable) == 1


def _sixteen_cpu_node(**labels: str) -> ExistingNode:
    return ExistingNode("node-1", {HOSTNAME: "node-1", ZONE: "zone-a", **labels}, (),
                        {"cpu": 15_900, "memory": 128 * GIB, "pods": 110_000})


def test_a_bound_daemonset_pod_is_counted_once() -> None:
    # scheduling/suite_test.go "should track daemonset usage separately so we know how many
    # DS resources are remaining to be scheduled": with the agent's pod bound, 14.9 of the
    # node's 15.9 cpu are left, and a 14.9-cpu pod fits there.
    agent = daemonset("agent", cpu="1", memory="1Gi")
    agent_pod = replace(pod("agent-x", cpu="1", memory="2Gi"), node_name="node-1",
                        owner="DaemonSet/agent")
    result = run([pod("big", cpu="14900m", memory="0")], [nodepool(catalog=FAKE)],
                 nodes=[_sixteen_cpu_node()], bound_pods=[agent_pod], daemonsets=[agent])
    assert result.existing == (("node-1", ("default/big",)),) and result.nodeclaims == ()


def test_a_daemonset_pod_bound_through_an_unexpected_label_still_leaves_others_reserved(
) -> None:
    # scheduling/suite_test.go "should handle unexpected daemonset pods binding to the node":
    # the node grew a label the first agent selects and its pod is bound; the second agent
    # (1m, every node) has not started and keeps its room, so 15.5 cpu do not fit.
    selective = daemonset("selective", cpu="1", memory="1Gi",
                          nodeSelector={"my-node-label": "value"})
    tiny = daemonset("tiny", cpu="1m", memory="0")
    agent_pod = replace(pod("selective-x", cpu="1", memory="2Gi",
                            nodeSelector={"my-node-label": "value"}),
                        node_name="node-1", owner="DaemonSet/selective")
    result = run([pod("big", cpu="15500m", memory="0")], [nodepool(catalog=FAKE)],
                 nodes=[_sixteen_cpu_node(**{"my-node-label": "value"})],
                 bound_pods=[agent_pod], daemonsets=[selective, tiny])
    assert result.existing == () and launched(result) == ["arm-instance-type.1"]
