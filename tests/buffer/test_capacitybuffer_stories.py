"""CapacityBuffers (CapacityBuffer gate), ported from Karpenter's capacitybuffer controller
suite and its regression suite: a buffer's chunk and count resolved into its status, the
headroom launched before any pod asks for it, used by real pods and refilled."""

from __future__ import annotations

from nodewright.controllers.capacitybuffer.controller import (
    compute_replicas,
    limit_replicas,
    percentage_replicas,
)
from tests.buffer.helpers import buffer, conditions, pod_template, status, world
from tests.controllers.test_metrics_story import series
from tests.static.helpers import workload


def test_a_buffer_with_a_pod_template_resolves_and_launches_its_headroom() -> None:
    w = world(pod_template("chunk", "1"), buffer(podTemplateRef={"name": "chunk"}, replicas=3))
    assert w.settle()
    found = status(w)
    assert found["replicas"] == 3
    assert found["podTemplateRef"] == {"name": "chunk"}
    assert found["podTemplateGeneration"] == 1
    assert found["provisioningStrategy"] == "buffer.x-k8s.io/active-capacity"
    assert conditions(w)["ReadyForProvisioning"] == ("True", "Resolved")
    # Capacity was launched for three 1-cpu chunks, and now they fit what exists.
    assert w.nodeclaims()
    assert conditions(w)["Provisioning"] == ("True", "FitsExistingCapacity")
    assert w.pods() == []  # virtual pods never reach the API server
    assert not w.events(reason="Nominated") and not w.events(reason="FailedScheduling")


def test_a_missing_pod_template_is_reported_and_recovered_from() -> None:
    w = world(buffer(podTemplateRef={"name": "chunk"}, replicas=1))
    assert w.settle()
    assert conditions(w)["ReadyForProvisioning"] == ("False", "PodTemplateNotFound")
    assert conditions(w)["Provisioning"] == ("False", "NotReadyForProvisioning")
    assert w.nodeclaims() == []
    w.apply(pod_template("chunk", "1"))
    assert w.settle()
    assert conditions(w)["ReadyForProvisioning"] == ("True", "Resolved")
    assert len(w.nodeclaims()) == 1


def test_a_deployment_buffer_keeps_a_percentage_of_its_replicas() -> None:
    w = world(workload("app", 10, "100m"),
              buffer(scalableRef={"apiGroup": "apps", "kind": "Deployment", "name": "app"},
                     percentage=20))
    assert w.settle()
    assert status(w)["replicas"] == 2
    assert "podTemplateRef" not in status(w)
    w.scale("app", 21)
    assert w.settle()
    assert status(w)["replicas"] == 5  # ceil(21 * 20%)


def test_a_missing_workload_then_an_unsupported_kind() -> None:
    w = world(buffer(scalableRef={"kind": "Deployment", "name": "later"}, replicas=1))
    assert w.settle()
    assert conditions(w)["ReadyForProvisioning"] == ("False", "ScalableRefNotFound")
    w.apply(workload("later", 1, "100m"))
    assert w.settle()
    assert conditions(w)["ReadyForProvisioning"] == ("True", "Resolved")
    w.apply(buffer("job", scalableRef={"kind": "Job", "name": "later"}, replicas=1))
    assert w.run_until(lambda: "ReadyForProvisioning" in conditions(w, "job"), timeout=60)
    assert conditions(w, "job")["ReadyForProvisioning"] == ("False", "ResolutionFailed")
    assert 'unsupported kind "Job"' in str(status(w, "job")["conditions"])


def test_a_buffer_with_zero_replicas_is_empty() -> None:
    w = world(pod_template("chunk", "1"), buffer(podTemplateRef={"name": "chunk"}, replicas=0))
    assert w.settle()
    assert conditions(w)["Provisioning"] == ("False", "BufferEmpty")
    assert w.nodeclaims() == []


def test_pods_use_the_headroom_and_the_buffer_is_refilled() -> None:
    w = world(pod_template("chunk", "1"), buffer(podTemplateRef={"name": "chunk"}, replicas=1))
    assert w.settle()
    first = {c["metadata"]["name"] for c in w.nodeclaims()}
    assert len(first) == 1
    w.apply(workload("app", 1, "1"))
    assert w.settle()
    running = w.running_pods()
    assert len(running) == 1
    # The pod started on the buffer's node; a new node was launched for the headroom.
    assert running[0]["spec"]["nodeName"] in {
        c.get("status", {}).get("nodeName") for c in w.nodeclaims()
        if c["metadata"]["name"] in first}
    assert len(w.nodeclaims()) == 2
    assert conditions(w)["Provisioning"] == ("True", "FitsExistingCapacity")


def test_reducing_replicas_lets_the_extra_headroom_go() -> None:
    w = world(pod_template("chunk", "3"), buffer(podTemplateRef={"name": "chunk"}, replicas=4))
    assert w.settle()
    assert len(w.nodeclaims()) >= 2
    w.apply(buffer(podTemplateRef={"name": "chunk"}, replicas=0))
    assert w.settle()
    assert w.nodeclaims() == []


def test_buffer_nodes_are_not_empty_but_go_once_the_buffer_is_deleted() -> None:
    w = world(pod_template("chunk", "1"), buffer(podTemplateRef={"name": "chunk"}, replicas=1))
    assert w.settle()
    assert len(w.nodeclaims()) == 1
    w.advance(600)
    assert w.settle()
    assert len(w.nodeclaims()) == 1  # nothing runs there, yet it is kept
    assert any("has buffer pods" in str(e.get("note")) for e in w.events("Unconsolidatable"))
    controller = w.controllers.disruption
    assert controller is not None
    assert "BufferPods" in {d.cause for d in controller.decisions}
    w.delete("CapacityBuffer", "headroom", "default")
    assert w.settle()
    assert w.nodeclaims() == []


def test_without_the_gate_buffers_launch_nothing() -> None:
    w = world(pod_template("chunk", "1"), buffer(podTemplateRef={"name": "chunk"}, replicas=3),
              gate=False)
    assert w.settle()
    assert w.nodeclaims() == []
    assert "status" not in w.cluster.get("CapacityBuffer", "headroom", "default") or not \
        status(w).get("conditions")


def test_the_template_s_node_selector_and_anti_affinity_shape_the_headroom() -> None:
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
        "labelSelector": {"matchLabels": {"buffer": "spread"}},
        "topologyKey": "kubernetes.io/hostname"}]}}
    w = world(pod_template("spread", "100m", affinity=anti,
                           nodeSelector={"node.kubernetes.io/instance-type": "m5.xlarge"}),
              buffer(podTemplateRef={"name": "spread"}, replicas=3))
    assert w.settle()
    assert sorted(w.instance_types()) == ["m5.xlarge"] * 3


def test_nodepool_limits_cap_the_headroom() -> None:
    limited = {"apiVersion": "karpenter.sh/v1", "kind": "NodePool",
               "metadata": {"name": "default"}}
    w = world(pod_template("chunk", "1500m"), buffer(podTemplateRef={"name": "chunk"},
                                                     replicas=4))
    pool = w.cluster.get("NodePool", "default")
    pool["spec"]["limits"] = {"cpu": "4"}
    pool["spec"]["template"]["spec"]["requirements"][0]["values"] = ["m5.large"]
    w.cluster.update({**pool, **limited, "metadata": pool["metadata"]})
    w.deliver()
    assert w.settle()
    assert len(w.nodeclaims()) == 2  # 2 cpu each: a third would pass the 4 cpu limit
    assert conditions(w)["Provisioning"] == ("False", "RequiresNewCapacity")


# -- the count (Karpenter's replica calculation table and helpers) -------------------------

class _Shape:
    def __init__(self, requests: dict[str, int], workload: int | None = None) -> None:
        from nodewright.controllers.capacitybuffer.controller import Resolution
        from nodewright.scheduling.pods import Pod
        self.resolution = Resolution(Pod("default", "x", {}, requests),
                                     workload_replicas=workload)


def test_replica_calculation_follows_cluster_autoscaler() -> None:
    cpu = {"cpu": 1000, "memory": 1024 * 1000}

    def count(workload: int | None = None, **spec: object) -> int:
        return compute_replicas(spec, _Shape(cpu, workload).resolution)

    assert count(replicas=5) == 5
    assert count(replicas=5, limits={"cpu": "3"}) == 3  # a binding limit caps
    assert count(replicas=2, limits={"cpu": "10"}) == 2  # a loose one does not
    assert count(limits={"cpu": "4"}) == 4  # limits alone: as many as fit
    assert count(10, percentage=30) == 3
    assert count(10, percentage=10, replicas=4) == 4  # the larger of the two
    assert count(10, percentage=50, replicas=2) == 5
    assert count(10, percentage=50, replicas=2, limits={"cpu": "4"}) == 4
    assert count(3, percentage=10) == 1  # rounds up to at least one
    assert count(0, percentage=50) == 0


def test_limits_count_whole_chunks_over_the_resources_both_name() -> None:
    requests = {"cpu": 500, "memory": 1024 * 1024 * 1024 * 1000, "pods": 1000}
    assert limit_replicas({"cpu": "2"}, requests) == 4
    assert limit_replicas({"memory": "3Gi"}, requests) == 3
    assert limit_replicas({"cpu": "10", "memory": "2Gi"}, requests) == 2
    assert limit_replicas({"cpu": "1750m"}, requests) == 3  # floor, never rounded up
    assert limit_replicas({"cpu": "100m"}, requests) == 0
    assert limit_replicas({"nvidia.com/gpu": "4"}, requests) is None
    assert limit_replicas({"pods": "4"}, requests) is None
    assert limit_replicas({"cpu": "4"}, {}) is None


def test_percentages() -> None:
    assert percentage_replicas(10, 20) == 2
    assert percentage_replicas(10, 25) == 3
    assert percentage_replicas(1, 1) == 1
    assert percentage_replicas(0, 50) == 0
    assert percentage_replicas(10, 0) == 0
    assert percentage_replicas(10, 100) == 10
    assert percentage_replicas(10, 250) == 25
    assert percentage_replicas(1_000_000, 33) == 330_000


# -- more of Karpenter's controller and regression cases -----------------------------------

def test_a_new_template_generation_is_resolved_again() -> None:
    w = world(pod_template("chunk", "100m"), buffer(podTemplateRef={"name": "chunk"},
                                                    replicas=1))
    assert w.settle()
    assert status(w)["podTemplateGeneration"] == 1
    assert w.instance_types() == ["m5.large"]
    w.apply(pod_template("chunk", "6"))
    assert w.settle()
    assert status(w)["podTemplateGeneration"] == 2
    assert "m5.2xlarge" in w.instance_types()  # the bigger chunk needed a bigger node


def test_a_statefulset_without_replicas_counts_as_one() -> None:
    statefulset = {
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": "db", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "db"}}, "serviceName": "db",
                 "template": {"metadata": {"labels": {"app": "db"}},
                              "spec": {"containers": [{"name": "db", "image": "db",
                                                       "resources": {"requests":
                                                                     {"cpu": "1"}}}]}}}}
    w = world(statefulset, buffer(scalableRef={"kind": "StatefulSet", "name": "db"},
                                  percentage=50))
    assert w.settle()
    assert status(w)["replicas"] == 1  # ceil(1 * 50%)
    assert conditions(w)["ReadyForProvisioning"] == ("True", "Resolved")


def test_an_unsupported_api_group_fails_resolution() -> None:
    w = world(buffer(scalableRef={"apiGroup": "example.com", "kind": "Deployment",
                                  "name": "app"}, replicas=1))
    assert w.run_until(lambda: "ReadyForProvisioning" in conditions(w), timeout=60)
    assert conditions(w)["ReadyForProvisioning"] == ("False", "ResolutionFailed")
    assert 'unsupported scalableRef API group "example.com"' in str(status(w)["conditions"])
    assert w.nodeclaims() == []


def test_buffers_are_provisioned_independently() -> None:
    w = world(pod_template("small", "100m"), pod_template("large", "3"),
              buffer("a", podTemplateRef={"name": "small"}, replicas=2),
              buffer("b", podTemplateRef={"name": "large"}, replicas=1))
    assert w.settle()
    assert status(w, "a")["replicas"] == 2 and status(w, "b")["replicas"] == 1
    assert conditions(w, "a")["Provisioning"] == ("True", "FitsExistingCapacity")
    assert conditions(w, "b")["Provisioning"] == ("True", "FitsExistingCapacity")
    w.delete("CapacityBuffer", "b", "default")
    assert w.settle()
    assert conditions(w, "a")["Provisioning"] == ("True", "FitsExistingCapacity")
    # The node now holds only buffer a's headroom: as in Karpenter, a node with only
    # buffer pods is empty to consolidation (not replaced) and kept by emptiness.
    assert len(w.nodeclaims()) == 1


def test_rapid_create_and_delete_leaks_no_node() -> None:
    w = world(pod_template("chunk", "1"))
    for _ in range(3):
        w.apply(buffer(podTemplateRef={"name": "chunk"}, replicas=2))
        w.advance(2)
        w.delete("CapacityBuffer", "headroom", "default")
        w.advance(2)
    assert w.settle()
    assert w.nodeclaims() == []


def test_consolidation_keeps_the_headroom_when_pods_go() -> None:
    w = world(pod_template("chunk", "1"), buffer(podTemplateRef={"name": "chunk"}, replicas=2),
              workload("app", 6, "1"))
    assert w.settle()
    w.scale("app", 1)
    assert w.settle()
    assert w.pending_pods() == []
    # Whatever consolidation did, what is left still hosts both chunks.
    assert conditions(w)["Provisioning"] == ("True", "FitsExistingCapacity")
    with_buffer = len(w.nodeclaims())
    alone = world(workload("app", 6, "1"), gate=False)
    assert alone.settle()
    alone.scale("app", 1)
    assert alone.settle()
    assert len(alone.nodeclaims()) <= with_buffer


def test_the_template_s_node_selector_is_kept() -> None:
    w = world(pod_template("chunk", "100m",
                           nodeSelector={"topology.kubernetes.io/zone": "us-east-1b"}),
              buffer(podTemplateRef={"name": "chunk"}, replicas=1))
    assert w.settle()
    (claim,) = w.nodeclaims()
    assert claim["metadata"]["labels"]["topology.kubernetes.io/zone"] == "us-east-1b"


def test_a_buffers_conditions_are_in_the_status_condition_metrics() -> None:
    # Karpenter runs operatorpkg's generic status controller over CapacityBuffers (gate on).
    w = world(pod_template("chunk", "1"),
              buffer("metered", podTemplateRef={"name": "chunk"}, replicas=1))
    assert w.settle()
    ready = series("operator_status_condition_count", kind="CapacityBuffer", name="metered",
                   type="ReadyForProvisioning")
    assert [(s["group"], s["namespace"], s["status"], s["reason"]) for s in ready] == [
        ("autoscaling.x-k8s.io", "default", "True", "Resolved")]
    assert {s["type"] for s in series("operator_status_condition_count",
                                      kind="CapacityBuffer", name="metered")} == set(
        conditions(w, "metered"))


def test_without_the_gate_no_buffer_is_in_the_status_condition_metrics() -> None:
    w = world(pod_template("chunk", "1"),
              buffer("unmetered", podTemplateRef={"name": "chunk"}, replicas=1), gate=False)
    assert w.settle()
    assert series("operator_status_condition_count", kind="CapacityBuffer",
                  name="unmetered") == []


def test_a_chunk_s_claim_volumes_are_dropped_before_it_is_simulated() -> None:
    """Karpenter's sanitizeVirtualPodSpec (pkg/state/virtualpods/utilities.go): a template's
    PersistentVolumeClaim and generic ephemeral volumes are dropped, as a virtual pod's
    claims never exist; the headroom is launched all the same."""
    volumes = [{"name": "data", "persistentVolumeClaim": {"claimName": "never-created"}},
               {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}},
               {"name": "cache", "emptyDir": {}}]
    w = world(pod_template("chunk", "1", volumes=volumes),
              buffer(podTemplateRef={"name": "chunk"}, replicas=2))
    assert w.settle()
    assert conditions(w)["ReadyForProvisioning"] == ("True", "Resolved")
    assert w.nodeclaims()
    assert conditions(w)["Provisioning"] == ("True", "FitsExistingCapacity")
    # What the solver got: the virtual pods, without the template's claims.
    buffers = w.controllers.state.buffers
    virtual = buffers.all() if buffers is not None else []
    assert len(virtual) == 2
    assert all(not pod.volume_claims and not pod.volumes for pod in virtual)
