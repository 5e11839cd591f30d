"""Karpenter's provisioning suite, ported: kubernetes-sigs/karpenter v1.14.1
pkg/controllers/provisioning/suite_test.go, the Its the solver decides (selectors and
affinities, NodePool limits, labels, taints, what a NodeClaim asks for, volume topology,
preferential fallback, several NodePools, minValues). Each test names its It/Entry; the
fixtures are Karpenter's fake instance types (`karpenter_scheduling`) and the suite's
`test.NodePool()`, which has no requirements."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pytest

from nodewright.controllers.provisioning.nodeclaims import custom_labels
from nodewright.scheduling.catalog import InstanceType, Offering
from nodewright.scheduling.nodepools import NodePoolTemplate, cheapest_offering_of
from nodewright.scheduling.pods import Pod, Taint, daemonset_from_manifest
from nodewright.scheduling.requirements import Requirement
from nodewright.scheduling.solver import (
    SchedulingProblem,
    SchedulingResult,
    ignore_preferences,
    solve,
)
from nodewright.state.objects import DaemonSetCache
from tests.scheduling.karpenter_fake import Cluster
from tests.scheduling.karpenter_scheduling import (
    ARCH,
    CAPACITY_TYPE,
    GPU_A,
    GPU_B,
    HOSTNAME,
    INSTANCE_TYPE,
    OS,
    ZONE,
    default_catalog,
    expression,
    fake_it,
    not_scheduled,
    pod,
    provisioned,
    requirement,
    scheduled,
)
from tests.scheduling.karpenter_scheduling import nodepool as suite_nodepool
from tests.scheduling.karpenter_storage import (
    Storage,
    claim,
    storage_class,
    volume,
    with_claims,
    with_ephemeral,
)

NODEPOOL = "karpenter.sh/nodepool"
CPU_2000 = {"cpu": 2_000_000}  # test.NodePool's default limit: 2000 cpu


def nodepool(name: str = "default", *, requirements: Sequence[Requirement] = (),
             **options: Any) -> NodePoolTemplate:
    """test.NodePool(): no requirements, a 2000-cpu limit unless given."""
    options.setdefault("limits", CPU_2000)
    limits = options.pop("limits")
    template = suite_nodepool(name, requirements=list(requirements), **options)
    return replace(template, limits=limits)


def plan(pods: Sequence[Pod], pools: Sequence[NodePoolTemplate]) -> SchedulingResult:
    return solve(SchedulingProblem(pods=list(pods), nodepools=list(pools)))


# -- top-level Its -----------------------------------------------------------------------

SUPPORTED = [{NODEPOOL: "default"}, {ZONE: "test-zone-1"},
             {INSTANCE_TYPE: "default-instance-type"}, {ARCH: "arm64"}, {OS: "linux"}]
UNSUPPORTED = [{NODEPOOL: "unknown"}, {ZONE: "unknown"}, {INSTANCE_TYPE: "unknown"},
               {ARCH: "unknown"}, {OS: "unknown"}, {CAPACITY_TYPE: "unknown"}, {"foo": "bar"}]


def test_pods_with_supported_node_selectors_are_provisioned() -> None:
    # It("should provision nodes for pods with supported node selectors")
    good = [pod(node_selector=s) for s in SUPPORTED]
    bad = [pod(node_selector=s) for s in UNSUPPORTED]
    cluster = provisioned(*good, pools=[nodepool()])
    provisioned(*bad, pools=[nodepool()], cluster=cluster)
    for p in good:
        scheduled(cluster, p)
    for p in bad:
        not_scheduled(cluster, p)


def test_pods_with_supported_node_affinities_are_provisioned() -> None:
    # It("should provision nodes for pods with supported node affinities")
    def affine(selector: dict[str, str]) -> Pod:
        ((key, value),) = selector.items()
        return pod(requirements=[expression(key, "In", value)])
    good = [affine(s) for s in SUPPORTED]
    bad = [affine(s) for s in UNSUPPORTED]
    cluster = provisioned(*good, pools=[nodepool()])
    provisioned(*bad, pools=[nodepool()], cluster=cluster)
    for p in good:
        scheduled(cluster, p)
    for p in bad:
        not_scheduled(cluster, p)


def test_accelerator_pods_are_provisioned() -> None:
    # It("should provision nodes for accelerators")
    pods = [pod(limits={GPU_A: "1"}), pod(limits={GPU_B: "1"})]
    cluster = provisioned(*pods, pools=[nodepool()])
    for p in pods:
        scheduled(cluster, p)


def test_a_one_pod_type_launches_a_node_per_pod() -> None:
    # It("should provision multiple nodes when maxPods is set")
    pool = nodepool(requirements=[requirement(INSTANCE_TYPE, "In", "single-pod-instance-type")])
    pods = [pod() for _ in range(3)]
    cluster = provisioned(*pods, pools=[pool])
    assert len(cluster.nodes) == 3
    for p in pods:
        scheduled(cluster, p)


# -- Context("Resource Limits") ----------------------------------------------------------


def _with_capacity(cluster: Cluster, pool: NodePoolTemplate) -> None:
    """The launched nodes count their instance type's capacity against the limits (as a
    NodeClaim's status capacity does)."""
    types = {it.name: it for it in pool.instance_types}
    cluster.nodes = [replace(n, capacity=dict(types[n.labels[INSTANCE_TYPE]].capacity))
                     if n.labels.get(INSTANCE_TYPE) in types else n for n in cluster.nodes]


def _rounds(pool: NodePoolTemplate, *rounds: Sequence[Pod]) -> Cluster:
    cluster = Cluster()
    for pods in rounds:
        cluster.provision([pool], *pods)
        _with_capacity(cluster, pool)
    return cluster


ANTI_FOO = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"labelSelector": {"matchLabels": {"app": "foo"}}, "topologyKey": HOSTNAME}]}}


def test_nothing_launches_when_the_limits_are_exceeded() -> None:
    # It("should not schedule when limits are exceeded"): a NodeClaim of the pool already
    # has 100 cpu against a 20-cpu limit.
    pool = replace(nodepool(limits={"cpu": 20_000}), usage={"cpu": 100_000})
    p = pod()
    not_scheduled(provisioned(p, pools=[pool]), p)


def test_a_node_within_the_limits_launches() -> None:
    # It("should schedule if limits would be met"): a 2-cpu node fits a 2-cpu limit.
    p = pod(requests={"cpu": "1.75"})
    scheduled(provisioned(p, pools=[nodepool(limits={"cpu": 2_000})]), p)


def test_only_what_the_limits_allow_launches() -> None:
    # It("should partially schedule if limits would be exceeded")
    pods = [pod(labels={"app": "foo"}, affinity=ANTI_FOO, requests={"cpu": "1.5"})
            for _ in range(2)]
    cluster = provisioned(*pods, pools=[nodepool(limits={"cpu": 3_000})])
    assert sorted(cluster.node_of(p) is not None for p in pods) == [False, True]


def test_a_node_beyond_the_limits_does_not_launch() -> None:
    # It("should not schedule if limits would be exceeded")
    p = pod(requests={"cpu": "2.1"})
    not_scheduled(provisioned(p, pools=[nodepool(limits={"cpu": 2_000})]), p)


def test_a_gpu_node_beyond_a_pods_limit_does_not_launch() -> None:
    # It("should not schedule if limits would be exceeded (GPU)"): the GPU type has room
    # for 5 pods, the limit allows 1.
    p = pod(limits={GPU_A: "1"})
    not_scheduled(provisioned(p, pools=[nodepool(limits={"pods": 1_000})]), p)


def test_the_limits_count_the_nodes_of_earlier_rounds() -> None:
    # It("should not schedule to a nodepool after a scheduling round if limits would be
    # exceeded")
    pool = nodepool(limits={"cpu": 2_000})
    first, second = pod(requests={"cpu": "1.75"}), pod(requests={"cpu": "1.75"})
    cluster = _rounds(pool, [first], [second])
    scheduled(cluster, first)
    not_scheduled(cluster, second)


def test_a_node_count_limit_stops_the_third_node() -> None:
    # It("should not schedule if limits would be exceeded (node)")
    pool = nodepool(limits={"nodes": 2_000})
    pods = [pod(labels={"app": "foo"}, affinity=ANTI_FOO, requests={"cpu": "1.5"})
            for _ in range(3)]
    cluster = _rounds(pool, [pods[0]], [pods[1]], [pods[2]])
    scheduled(cluster, pods[0])
    scheduled(cluster, pods[1])
    not_scheduled(cluster, pods[2])


# -- Context("Labels") -------------------------------------------------------------------


@pytest.mark.parametrize("subdomain", ["", "subdomain."],
                         ids=["should label nodes with labels in the kubernetes domains",
                              "should label nodes with labels in the subdomain from "
                              "kubernetes domains"])
def test_labels_in_the_kubernetes_domains_are_put_on_nodes(subdomain: str) -> None:
    # It("should label nodes with labels in the kubernetes domains") and It("should label
    # nodes with labels in the subdomain from kubernetes domains")
    for domain in ("kubernetes.io", "k8s.io"):
        key = f"{subdomain}{domain}/test"
        p = pod(requirements=[expression(key, "In", "test-value")])
        result = plan([p], [nodepool(labels={key: "test-value"})])
        (claim_,) = result.nodeclaims
        assert custom_labels(claim_.requirements)[key] == "test-value"


def test_well_known_labels_of_requirements_are_not_put_on_nodes() -> None:
    # It("should not label nodes with well-known labels from requirements")
    pool = nodepool(requirements=[requirement("foo", "In", "bar"),
                                  requirement("node.kubernetes.io/windows-build", "NotIn",
                                              "test-value")])
    (claim_,) = plan([pod()], [pool]).nodeclaims
    labels = custom_labels(claim_.requirements)
    assert labels["foo"] == "bar"
    assert labels.get("node.kubernetes.io/windows-build") != "test-value"


# -- Context("Taints") -------------------------------------------------------------------


def test_pods_that_tolerate_the_nodepools_taint_are_provisioned() -> None:
    # It("should schedule pods that tolerate taints")
    pool = nodepool(taints=[Taint("nvidia.com/gpu", "true", "NoSchedule")])
    tolerations = [
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"},
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "nvidia.com/gpu", "operator": "Exists"},
        {"operator": "Exists"},
    ]
    pods = [pod(tolerations=[t]) for t in tolerations]
    cluster = provisioned(*pods, pools=[pool])
    for p in pods:
        scheduled(cluster, p)


# -- Context("NodeClaim Creation") -------------------------------------------------------


def _types_of(result: SchedulingResult) -> set[str]:
    (claim_,) = result.nodeclaims
    return {name for name, _ in claim_.instance_types}


def test_a_nodeclaim_lists_every_type_and_its_nodepool() -> None:
    # It("should create a nodeclaim request with expected requirements")
    result = plan([pod()], [nodepool()])
    assert _types_of(result) == {it.name for it in default_catalog()}
    (claim_,) = result.nodeclaims
    assert claim_.requirements[NODEPOOL].values == frozenset({"default"})


def test_a_nodeclaim_carries_the_nodepools_custom_requirements() -> None:
    # It("should create a nodeclaim request with additional expected requirements")
    pool = nodepool(requirements=[requirement("custom-requirement-key", "In", "value"),
                                  requirement("custom-requirement-key2", "In", "value")])
    result = plan([pod()], [pool])
    assert _types_of(result) == {it.name for it in default_catalog()}
    (claim_,) = result.nodeclaims
    for key in ("custom-requirement-key", "custom-requirement-key2"):
        assert claim_.requirements[key].values == frozenset({"value"})


def test_a_nodeclaim_lists_only_the_types_of_the_nodepools_arch() -> None:
    # It("should create a nodeclaim request restricting instance types on architecture")
    result = plan([pod()], [nodepool(requirements=[requirement(ARCH, "In", "arm64")])])
    assert _types_of(result) == {"arm-instance-type"}
    (claim_,) = result.nodeclaims
    assert claim_.requirements[ARCH].values == frozenset({"arm64"})


def test_a_nodeclaim_lists_only_the_types_big_enough_for_the_pods() -> None:
    # It("should create a nodeclaim request restricting instance types based on pod
    # resource requests")
    result = plan([pod(requests={GPU_A: "1"}, limits={GPU_A: "1"})], [nodepool()])
    assert _types_of(result) == {"gpu-vendor-instance-type"}


# -- Context("Volume Topology Requirements") ---------------------------------------------

CLASS = "my-storage-class"


def _volume_story(*bodies: dict[str, Any]) -> Storage:
    """The Context's StorageClass (WaitForFirstConsumer, test-zone-2 and -3)."""
    storage = Storage(nodepool())
    storage.apply(storage_class(CLASS, mode="WaitForFirstConsumer",
                                zones=["test-zone-2", "test-zone-3"]), *bodies)
    return storage


def test_a_pod_of_a_missing_claim_is_ignored() -> None:
    # It("should not schedule if invalid pvc")
    storage = _volume_story()
    p = with_claims("invalid")
    storage.provision(p)
    assert [key for key, _ in storage.left_out] == [p.key]
    assert storage.cluster.nodes == []


@pytest.mark.parametrize("class_name", ["", "missing-storage-class"],
                         ids=["should schedule with an empty storage class if the pvc is "
                              "bound", "should schedule with a missing storage class if the "
                              "pvc is bound"])
def test_a_bound_claim_needs_no_class(class_name: str) -> None:
    storage = _volume_story(claim("data", class_name=class_name, volume_name="test-volume"),
                            volume("test-volume", class_name=class_name))
    p = with_claims("data")
    storage.provision(p)
    scheduled(storage.cluster, p)


@pytest.mark.parametrize("class_name", ["", "missing-storage-class"],
                         ids=["should not schedule with an empty storage class if the pvc "
                              "is not bound", "should not schedule with a missing storage "
                              "class if the pvc is not bound"])
def test_an_unbound_claim_needs_its_class(class_name: str) -> None:
    storage = _volume_story(claim("data", class_name=class_name))
    p = with_claims("data")
    storage.provision(p)
    assert storage.cluster.nodes == [] and storage.cluster.node_of(p) is None


@pytest.mark.parametrize("case", ["pvc", "storage class", "volume name"])
def test_valid_pods_are_provisioned_past_one_with_an_invalid_claim(case: str) -> None:
    # It("should schedule valid pods when a pod with an invalid pvc is encountered
    # (pvc)"), "(storage class)" and "(volume name)"
    bodies = {"pvc": [],
              "storage class": [claim("data", class_name="invalid-storage-class")],
              "volume name": [claim("data", volume_name="invalid-volume-name")]}[case]
    storage = _volume_story(*bodies)
    invalid = with_claims("invalid" if case == "pvc" else "data")
    storage.provision(invalid)
    valid = pod()
    storage.provision(valid)
    assert storage.cluster.node_of(invalid) is None
    scheduled(storage.cluster, valid)


ZONES_1_3 = [expression(ZONE, "In", "test-zone-1", "test-zone-3")]


def _ephemeral(name: str, **options: Any) -> Pod:
    base = with_ephemeral(name, CLASS)
    extra = pod(**options)
    return replace(base, required_terms=extra.required_terms)


@pytest.mark.parametrize("ephemeral", [False, True],
                         ids=["should schedule to storage class zones if volume does not "
                              "exist", "(ephemeral volume)"])
def test_an_unbound_claim_goes_to_its_class_zones(ephemeral: bool) -> None:
    storage = _volume_story(claim("pod-tmp-ephemeral" if ephemeral else "data",
                                  class_name=CLASS))
    p = (_ephemeral("pod", requirements=ZONES_1_3) if ephemeral
         else with_claims("data", requirements=ZONES_1_3))
    storage.provision(p)
    assert scheduled(storage.cluster, p).labels[ZONE] == "test-zone-3"


@pytest.mark.parametrize("ephemeral", [False, True],
                         ids=["should not schedule if storage class zones are incompatible",
                              "(ephemeral volume)"])
def test_class_zones_the_pod_refuses_leave_it_pending(ephemeral: bool) -> None:
    zone_1 = [expression(ZONE, "In", "test-zone-1")]
    storage = _volume_story(claim("pod-tmp-ephemeral" if ephemeral else "data",
                                  class_name=CLASS))
    p = (_ephemeral("pod", requirements=zone_1) if ephemeral
         else with_claims("data", requirements=zone_1))
    storage.provision(p)
    not_scheduled(storage.cluster, p)


@pytest.mark.parametrize("ephemeral", [False, True],
                         ids=["should schedule to volume zones if volume already bound",
                              "(ephemeral volume)"])
def test_a_bound_claim_goes_to_its_volume_zone(ephemeral: bool) -> None:
    name = "pod-tmp-ephemeral" if ephemeral else "data"
    storage = _volume_story(volume("pv", zones=["test-zone-3"]),
                            claim(name, class_name=CLASS, volume_name="pv"))
    p = with_ephemeral("pod", CLASS) if ephemeral else with_claims("data")
    storage.provision(p)
    assert scheduled(storage.cluster, p).labels[ZONE] == "test-zone-3"


LOCAL_IDS = ["when using local volumes", "when using hostpath volumes"]


@pytest.mark.parametrize("ephemeral", [False, True], ids=["", "(ephemeral volume)"])
@pytest.mark.parametrize("source", ["local", "hostPath"], ids=LOCAL_IDS)
def test_a_local_volumes_hostname_is_ignored(source: str, ephemeral: bool) -> None:
    # DescribeTable("should ignore hostname affinity scheduling when using local path
    # volumes") and its "(ephemeral volume)" table.
    terms = [[{"key": HOSTNAME, "operator": "In", "values": ["random-node"]}]]
    name = "pod-tmp-ephemeral" if ephemeral else "data"
    storage = Storage(nodepool())
    storage.apply(storage_class("local-path", provisioner="kubernetes.io/no-provisioner"),
                  volume("pv", source=source, terms=terms),
                  claim(name, class_name="local-path", volume_name="pv"))
    p = with_ephemeral("pod", "local-path") if ephemeral else with_claims("data")
    storage.provision(p)
    scheduled(storage.cluster, p)


def test_a_csi_volumes_hostname_is_followed() -> None:
    # It("should not ignore hostname affinity when using non-local path volumes")
    terms = [[{"key": HOSTNAME, "operator": "In", "values": ["random-node"]}]]
    storage = _volume_story(volume("pv", terms=terms),
                            claim("data", class_name=CLASS, volume_name="pv"))
    p = with_claims("data")
    storage.provision(p)
    not_scheduled(storage.cluster, p)


@pytest.mark.parametrize("ephemeral", [False, True],
                         ids=["should not schedule if volume zones are incompatible",
                              "(ephemeral volume)"])
def test_a_volume_zone_the_pod_refuses_leaves_it_pending(ephemeral: bool) -> None:
    name = "pod-tmp-ephemeral" if ephemeral else "data"
    zone_1 = [expression(ZONE, "In", "test-zone-1")]
    storage = _volume_story(volume("pv", zones=["test-zone-3"]),
                            claim(name, class_name=CLASS, volume_name="pv"))
    p = (_ephemeral("pod", requirements=zone_1) if ephemeral
         else with_claims("data", requirements=zone_1))
    storage.provision(p)
    not_scheduled(storage.cluster, p)


def test_a_volume_zone_is_not_relaxed_away() -> None:
    # It("should not relax an added volume topology zone node-selector away"): of the
    # pod's two ORed terms the first cannot be met; the second holds with the volume's
    # zone added to it.
    storage = _volume_story(volume("pv", zones=["test-zone-3"]),
                            claim("data", class_name=CLASS, volume_name="pv"))
    p = with_claims("data", affinity=_node_affinity(required=[
        [expression("example.com/label", "In", "unsupported")],
        [expression(CAPACITY_TYPE, "In", "on-demand")]]))
    storage.provision(p)
    assert scheduled(storage.cluster, p).labels[ZONE] == "test-zone-3"


# -- Context("Preferential Fallback") ----------------------------------------------------


def _node_affinity(required: Sequence[Sequence[dict[str, Any]]] = (),
                   preferred: Sequence[tuple[int, Sequence[dict[str, Any]]]] = ()
                   ) -> dict[str, Any]:
    affinity: dict[str, Any] = {}
    if required:
        affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": [{"matchExpressions": list(t)} for t in required]}
    if preferred:
        affinity["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": w, "preference": {"matchExpressions": list(t)}} for w, t in preferred]
    return {"nodeAffinity": affinity}


def test_the_final_required_term_is_not_relaxed() -> None:
    # Context("Required") It("should not relax the final term")
    p = pod(affinity=_node_affinity(required=[[expression(ZONE, "In", "invalid")]]))
    pool = nodepool(requirements=[requirement(ZONE, "In", "test-zone-1")])
    not_scheduled(provisioned(p, pools=[pool]), p)


def test_required_terms_are_relaxed_in_turn() -> None:
    # Context("Required") It("should relax multiple terms")
    p = pod(affinity=_node_affinity(required=[
        [expression(ZONE, "In", "invalid")], [expression(ZONE, "In", "invalid")],
        [expression(ZONE, "In", "test-zone-1")], [expression(ZONE, "In", "test-zone-2")]]))
    assert scheduled(provisioned(p, pools=[nodepool()]), p).labels[ZONE] == "test-zone-1"


def test_every_node_affinity_preference_can_go() -> None:
    # Context("Preferences") It("should relax all node affinity terms")
    p = pod(affinity=_node_affinity(preferred=[(1, [expression(ZONE, "In", "invalid")]),
                                               (1, [expression(INSTANCE_TYPE, "In", "invalid")])]))
    scheduled(provisioned(p, pools=[nodepool()]), p)


def test_lighter_preferences_are_kept_after_heavier_ones_go() -> None:
    # Context("Preferences") It("should relax to use lighter weights")
    p = pod(affinity=_node_affinity(preferred=[
        (100, [expression(INSTANCE_TYPE, "In", "test-zone-3")]),
        (50, [expression(ZONE, "In", "test-zone-2")]),
        (1, [expression(ZONE, "In", "test-zone-1")])]))
    pool = nodepool(requirements=[requirement(ZONE, "In", "test-zone-1", "test-zone-2")])
    assert scheduled(provisioned(p, pools=[pool]), p).labels[ZONE] == "test-zone-2"


def test_a_prefer_no_schedule_taint_is_tolerated_after_the_affinities_go() -> None:
    # Context("Preferences") It("should tolerate PreferNoSchedule taint only after trying
    # to relax Affinity terms")
    taint = Taint("foo", "bar", "PreferNoSchedule")
    p = pod(affinity=_node_affinity(preferred=[(1, [expression(ZONE, "In", "invalid")]),
                                               (1, [expression(INSTANCE_TYPE, "In", "invalid")])]))
    node = scheduled(provisioned(p, pools=[nodepool(taints=[taint])]), p)
    assert taint in node.taints


@pytest.mark.parametrize("key", [ZONE, HOSTNAME], ids=[ZONE, HOSTNAME])
def test_an_unsatisfiable_node_preference_does_not_take_a_node_of_its_own(key: str) -> None:
    # DescribeTable("should ignore node preferredDuringSchedulingIgnoredDuringExecution
    # affinity"): the preference goes, the pod shares the first pod's node.
    first = pod(labels={"app": "foo"}, requests={"cpu": "2"})
    preferring = pod(labels={"app": "baz"}, requests={"cpu": "1"},
                     preferences=[expression(key, "In", "value-1")])
    cluster = provisioned(first, preferring, pools=[nodepool()])
    assert scheduled(cluster, first).name == scheduled(cluster, preferring).name


# -- Context("Ignore Preferences") (PREFERENCE_POLICY=Ignore) -----------------------------


def _ignoring(*pods: Pod) -> Cluster:
    return provisioned(*[ignore_preferences(p) for p in pods], pools=[nodepool()])


def _zone_pods(affinity_pod: Pod) -> tuple[Cluster, Pod, Pod]:
    zone1 = pod(labels={"app": "foo"}, node_selector={ZONE: "test-zone-1"},
                requests={"cpu": "2"})
    zone2 = [pod(labels={"app": "bar"}, node_selector={ZONE: "test-zone-2"},
                 requests={"cpu": "3"}) for _ in range(2)]
    cluster = _ignoring(zone1, *zone2, affinity_pod)
    return cluster, zone1, zone2[0]


def _keys(pods: Sequence[Pod]) -> set[str]:
    return {p.key for p in pods}


def test_node_affinity_preferences_are_ignored() -> None:
    # It("should ignore node affinity preferences")
    preferring = pod(labels={"app": "baz"}, requests={"cpu": "1"},
                     preferences=[expression(ZONE, "In", "test-zone-2")])
    cluster, zone1, zone2 = _zone_pods(preferring)
    node = scheduled(cluster, preferring)
    assert node.name == scheduled(cluster, zone1).name
    assert node.name != scheduled(cluster, zone2).name


@pytest.mark.parametrize("key", [ZONE, HOSTNAME], ids=[ZONE, f"{ZONE} ({HOSTNAME})"])
def test_spread_preferences_are_ignored(key: str) -> None:
    # DescribeTable("should ignore topologySpreadConstraint preferences"); Karpenter names
    # both Entries after the zone key.
    constraint = [{"maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": "ScheduleAnyway",
                   "labelSelector": {"matchLabels": {"app": "foo"}}}]
    pods = [pod(labels={"app": "foo"}, topologySpreadConstraints=constraint)
            for _ in range(5)]
    cluster = _ignoring(*pods)
    assert len({scheduled(cluster, p).name for p in pods}) == 1


@pytest.mark.parametrize("key", [ZONE, HOSTNAME], ids=[ZONE, f"{ZONE} ({HOSTNAME})"])
def test_anti_affinity_preferences_are_ignored(key: str) -> None:
    # DescribeTable("should ignore pod anti-affinity preferences")
    anti = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 1, "podAffinityTerm": {"topologyKey": key, "labelSelector": {
            "matchLabels": {"app": "foo"}}}}]}}
    pods = [pod(labels={"app": "foo"}, affinity=anti) for _ in range(5)]
    cluster = _ignoring(*pods)
    assert len({scheduled(cluster, p).name for p in pods}) == 1


@pytest.mark.parametrize("key", [ZONE, HOSTNAME], ids=[ZONE, f"{ZONE} ({HOSTNAME})"])
def test_affinity_preferences_are_ignored(key: str) -> None:
    # DescribeTable("should ignore pod affinity preferences")
    affinity = {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 1, "podAffinityTerm": {"topologyKey": key, "labelSelector": {
            "matchLabels": {"app": "bar"}}}}]}}
    preferring = pod(labels={"app": "baz"}, requests={"cpu": "1"}, affinity=affinity)
    cluster, zone1, zone2 = _zone_pods(preferring)
    node = scheduled(cluster, preferring)
    assert node.name == scheduled(cluster, zone1).name
    assert node.name != scheduled(cluster, zone2).name


# -- Context("Multiple NodePools") -------------------------------------------------------


def test_an_explicitly_selected_nodepool_is_used() -> None:
    # It("should schedule to an explicitly selected NodePool")
    p = pod(node_selector={NODEPOOL: "chosen"})
    cluster = provisioned(p, pools=[nodepool("chosen"), nodepool("other")])
    assert scheduled(cluster, p).labels[NODEPOOL] == "chosen"


def test_a_nodepool_is_selected_by_its_labels() -> None:
    # It("should schedule to a NodePool by labels")
    p = pod(node_selector={"foo": "bar"})
    cluster = provisioned(p, pools=[nodepool("labelled", labels={"foo": "bar"}),
                                    nodepool("other")])
    assert scheduled(cluster, p).labels[NODEPOOL] == "labelled"


def test_a_prefer_no_schedule_nodepool_is_passed_over_for_another() -> None:
    # It("should not match NodePool with PreferNoSchedule taint when other NodePool match")
    p = pod()
    cluster = provisioned(p, pools=[
        nodepool("tainted", taints=[Taint("foo", "bar", "PreferNoSchedule")]),
        nodepool("plain")])
    assert scheduled(cluster, p).labels[NODEPOOL] == "plain"


def test_the_heaviest_nodepool_is_always_used() -> None:
    # Context("Weighted NodePools") It("should schedule to the nodepool with the highest
    # priority always")
    pools = [nodepool("zero"), nodepool("twenty", weight=20), nodepool("hundred", weight=100)]
    pods = [pod() for _ in range(3)]
    cluster = provisioned(*pods, pools=pools)
    assert {scheduled(cluster, p).labels[NODEPOOL] for p in pods} == {"hundred"}


def test_an_explicitly_selected_nodepool_wins_over_heavier_ones() -> None:
    # Context("Weighted NodePools") It("should schedule to explicitly selected nodepool
    # even if other nodePools are higher priority")
    pools = [nodepool("targeted"), nodepool("twenty", weight=20),
             nodepool("hundred", weight=100)]
    p = pod(node_selector={NODEPOOL: "targeted"})
    assert scheduled(provisioned(p, pools=pools), p).labels[NODEPOOL] == "targeted"


# -- Context("MinValuesPolicy") ----------------------------------------------------------


def _min_values_type(name: str, *zones: str) -> InstanceType:
    return fake_it(name, arch="arm64", offerings=[
        Offering(zone, None, "spot", 0.52 + 0.02 * i) for i, zone in enumerate(zones)])


TWO_TYPES = [_min_values_type("instance-type-1", "test-zone-1-spot"),
             _min_values_type("instance-type-2", "test-zone-2-spot")]
TYPES_3 = ("instance-type-1", "instance-type-2", "instance-type-3")
SMALL_POD = {"cpu": "0.9", "memory": "0.9Gi"}


def _min_pool(name: str = "default", *, relax: bool, weight: int = 100,
              requirements: Sequence[Requirement] | None = None,
              catalog: Sequence[InstanceType] = TWO_TYPES) -> NodePoolTemplate:
    reqs = requirements if requirements is not None else [
        Requirement.build(INSTANCE_TYPE, "In", list(TYPES_3), 3)]
    return replace(nodepool(name, requirements=reqs, catalog=catalog, weight=weight),
                   relax_min_values=relax)


def test_strict_min_values_not_met_launches_nothing() -> None:
    # Context("with instance type requirements") Context("with MinValuesPolicy set to
    # Strict") It("should not schedule when minValues requirement is not met")
    p = pod(requests=SMALL_POD)
    not_scheduled(provisioned(p, pools=[_min_pool(relax=False)]), p)


def _relaxed_claim(pools: Sequence[NodePoolTemplate]) -> Any:
    result = plan([pod(requests=SMALL_POD)], pools)
    (claim_,) = result.nodeclaims
    assert claim_.min_values_relaxed
    return claim_


def test_best_effort_lowers_min_values_to_what_is_there() -> None:
    # Context("with MinValuesPolicy set to BestEffort") It("should schedule even when
    # minValues requirement is not met")
    claim_ = _relaxed_claim([_min_pool(relax=True)])
    assert claim_.instance_type == "instance-type-1"
    assert {name for name, _ in claim_.instance_types} == {"instance-type-1", "instance-type-2"}
    assert claim_.requirements[INSTANCE_TYPE].min_values == 2


def test_min_values_are_relaxed_before_another_nodepool_is_tried() -> None:
    # It("should relax minValues before falling back to other nodepools")
    plain = replace(nodepool("plain", requirements=[
        Requirement.build(INSTANCE_TYPE, "In", list(TYPES_3))], catalog=TWO_TYPES, weight=10),
        relax_min_values=True)
    claim_ = _relaxed_claim([_min_pool(relax=True), plain])
    assert claim_.nodepool == "default"
    assert claim_.requirements[INSTANCE_TYPE].min_values == 2


def test_the_heavier_nodepool_is_relaxed_first() -> None:
    # It("should choose nodepool with higher weight when relaxing minValues")
    claim_ = _relaxed_claim([_min_pool(relax=True),
                             _min_pool("lighter", relax=True, weight=10)])
    assert claim_.nodepool == "default"
    assert claim_.instance_type == "instance-type-1"
    assert claim_.requirements[INSTANCE_TYPE].min_values == 2


def _launch_zone(claim_: Any) -> str:
    """The zone of the offering the NodeClaim launches into (its cheapest)."""
    offering = cheapest_offering_of(TWO_ZONES[0], claim_.requirements)
    assert offering is not None
    return str(offering[2])


TWO_ZONES = [_min_values_type("instance-type-1", "test-zone-1", "test-zone-2")]
ZONES_3 = Requirement.build(ZONE, "In", ["test-zone-1", "test-zone-2", "test-zone-3"], 3)


def test_strict_zone_min_values_not_met_launches_nothing() -> None:
    # Context("with zone requirements") Context("with MinValuesPolicy set to Strict")
    # It("should not schedule when zone minValues requirement is not met")
    p = pod(requests=SMALL_POD)
    pool = _min_pool(relax=False, requirements=[ZONES_3], catalog=TWO_ZONES, weight=0)
    not_scheduled(provisioned(p, pools=[pool]), p)


def test_best_effort_lowers_zone_min_values() -> None:
    # Context("with zone requirements") Context("with MinValuesPolicy set to BestEffort")
    # It("should schedule even when zone minValues requirement is not met")
    pool = _min_pool(relax=True, requirements=[ZONES_3], catalog=TWO_ZONES, weight=0)
    claim_ = _relaxed_claim([pool])
    assert claim_.instance_type == "instance-type-1"
    assert _launch_zone(claim_) in {"test-zone-1", "test-zone-2"}
    assert claim_.requirements[ZONE].min_values == 2
    # Karpenter keeps the three zones; Nodewright narrows to the two offered (the same
    # launches).
    assert {"test-zone-1", "test-zone-2"} <= claim_.requirements[ZONE].values <= ZONES_3.values


def test_best_effort_lowers_type_and_zone_min_values() -> None:
    # Context("with both instance type and zone requirements") It("should schedule when
    # minValues requirement is not met")
    pool = _min_pool(relax=True, catalog=TWO_ZONES, requirements=[
        Requirement.build(INSTANCE_TYPE, "In", list(TYPES_3), 3), ZONES_3])
    claim_ = _relaxed_claim([pool])
    assert [name for name, _ in claim_.instance_types] == ["instance-type-1"]
    assert _launch_zone(claim_) in {"test-zone-1", "test-zone-2"}
    assert claim_.requirements[INSTANCE_TYPE].min_values == 1
    assert claim_.requirements[ZONE].min_values == 2


# -- Context("Daemonsets") ---------------------------------------------------------------


def test_pods_and_a_daemonset_without_requests_are_provisioned() -> None:
    # It("should be able to schedule pods if resource requests and limits are not defined")
    agent = daemonset_from_manifest({
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": "agent", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "agent"}}, "template": {
            "metadata": {"labels": {"app": "agent"}},
            "spec": {"containers": [{"name": "agent", "image": "agent"}]}}}})
    p = pod()
    result = solve(SchedulingProblem(pods=[p], nodepools=[nodepool()], daemonsets=[agent]))
    (claim_,) = result.nodeclaims
    assert claim_.pods == (p.key,)


def _daemonset_manifest(**template_spec: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "agent", "namespace": "default", "uid": "ds-uid"},
            "spec": {"selector": {"matchLabels": {"app": "agent"}}, "template": {
                "metadata": {"labels": {"app": "agent"}},
                "spec": {"containers": [{"name": "agent", "image": "agent", "resources": {
                    "requests": {"cpu": "4", "memory": "4Gi"}}}], **template_spec}}}}


def _daemonset_pod(**spec: Any) -> dict[str, Any]:
    """The DaemonSet's pod with smaller requests (as a LimitRange would have made them)."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "agent-abcde", "namespace": "default",
                         "creationTimestamp": "2026-01-05T00:00:00Z",
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet",
                                              "name": "agent", "uid": "ds-uid",
                                              "controller": True}]},
            "spec": {"containers": [{"name": "agent", "image": "agent", "resources": {
                "requests": {"cpu": "2", "memory": "2Gi"}}}], **spec}}


def _launched_beside(cache: DaemonSetCache, pool: NodePoolTemplate, p: Pod) -> str:
    result = solve(SchedulingProblem(pods=[p], nodepools=[pool], daemonsets=cache.models()))
    (claim_,) = result.nodeclaims
    return claim_.instance_type


def test_a_daemonset_is_sized_by_its_pod() -> None:
    # Context("Daemonsets") It("should account for overhead using daemonset pod spec
    # instead of daemonset spec"): the pod asks 2 cpu / 2Gi where the template asks 4 / 4Gi,
    # so a 4 cpu / 4Gi type holds it beside a 1 cpu / 1Gi pod.
    cache = DaemonSetCache()
    cache.put(_daemonset_manifest())
    p = pod(requests={"cpu": "1", "memory": "1Gi"}, node_selector={NODEPOOL: "default"})
    assert _launched_beside(cache, nodepool(), p) == "arm-instance-type"  # by the template
    cache.observe_pod(_daemonset_pod(), deleted=False)
    assert _launched_beside(cache, nodepool(), p) == "default-instance-type"


def test_a_daemonset_pods_pinned_node_is_not_held_against_new_nodes() -> None:
    # Context("Daemonsets") It("should remove daemonset node hostname affinity when
    # considering daemonset schedulability"): the pod's own node affinity (the node its
    # controller pinned it to) gives way to the template's.
    foo = [{"key": "foo", "operator": "In", "values": ["bar"]}]
    cache = DaemonSetCache()
    cache.put(_daemonset_manifest(affinity={"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": foo}]}}}))
    pinned = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": "metadata.name", "operator": "In", "values": ["node-name"]}]}]}}}
    cache.observe_pod(_daemonset_pod(affinity=pinned), deleted=False)
    p = pod(requests={"cpu": "1", "memory": "1Gi"}, node_selector={"foo": "bar"})
    assert _launched_beside(cache, nodepool(labels={"foo": "bar"}), p) == (
        "default-instance-type")
