"""Karpenter's CapacityBuffer virtual pods, ported: kubernetes-sigs/karpenter v1.14.1
pkg/state/virtualpods/utilities_test.go and virtualpods_test.go. Each test names its file,
Describe and It.

Karpenter's `virtualpods.Cache` is our `BufferPods` (the cluster state's `buffers`), kept
by the capacitybuffer controller: a buffer that resolves gets `virtual_pods` of its chunk
(Karpenter's BuildVirtualPods and sanitizeVirtualPodSpec, `UpdateEntry`), one that does
not or is gone gets none (`RemoveEntry`). Virtual pods are the solver's pod models, never
API objects: what Karpenter's annotations, UIDs, priority and Unschedulable condition
mark (a virtual pod, of which buffer) `BufferPods.owner` answers. Karpenter fills its
cache lazily on first use from the buffers' statuses (`hydrateCache`); Nodewright has no
such step: a controller process starting lists every buffer and resolves each again, so
the stories of hydration are told on a controller process that restarts.

As in Karpenter's tests, the controller runs alone where they build one buffer
(`Env`, the capacitybuffer controller suite's rig), and the whole process where they
hydrate."""

from __future__ import annotations

from typing import Any

import pytest

from nodewright.controllers.provisioning.provisioner import Provisioner
from nodewright.scheduling.pods import parse_pod_spec
from nodewright.state.buffers import virtual_pods
from tests.buffer.helpers import buffer as buffer_in_world
from tests.buffer.helpers import world as buffer_world
from tests.buffer.test_capacitybuffer_controller_karpenter import (
    Env,
    buffer,
    container,
    deployment_ref,
    workload,
)
from tests.harness import World


@pytest.fixture
def env() -> Env:
    return Env()


def template(name: str, *, labels: dict[str, str] | None = None, **spec: Any
             ) -> dict[str, Any]:
    """The PodTemplate a buffer refers to: one 100m container unless `spec` says more."""
    body: dict[str, Any] = {"containers": [container("100m")], **spec}
    meta: dict[str, Any] = {"labels": labels} if labels else {}
    return {"apiVersion": "v1", "kind": "PodTemplate",
            "metadata": {"name": name, "namespace": "default"},
            "template": {"metadata": meta, "spec": body}}


def ready_buffer(env: Env, name: str, replicas: int, **template_spec: Any) -> None:
    """Karpenter's ReadyBuffer: a buffer on the PodTemplate <name>-template, resolved."""
    env.apply(template(f"{name}-template", **template_spec),
              buffer(name, podTemplateRef={"name": f"{name}-template"}, replicas=replicas))
    env.reconcile(name)


def ready_scalable_buffer(env: Env, name: str, deployment_replicas: int,
                          labels: dict[str, str] | None = None) -> None:
    """Karpenter's ReadyScalableRefBuffer: 20 % of the Deployment <name>-deploy, resolved."""
    deploy = workload("Deployment", f"{name}-deploy", deployment_replicas, container("100m"))
    if labels:
        deploy["spec"]["template"]["metadata"]["labels"] = labels
        deploy["spec"]["selector"]["matchLabels"] = labels
    env.apply(deploy, buffer(name, scalableRef=deployment_ref(f"{name}-deploy"),
                             percentage=20))
    env.reconcile(name)


def names(env: Env) -> list[str]:
    return [pod.name for pod in env.cache.all()]


# -- utilities_test.go, Describe("buildVirtualPods") ------------------------------------------


def test_a_buffer_gets_its_replicas_as_virtual_pods_of_its_chunk(env: Env) -> None:
    """utilities_test.go buildVirtualPods It("should create the correct number of pods with
    expected metadata")."""
    ready_buffer(env, "web", 3, labels={"app": "web", "env": "prod"})
    pods = env.cache.all()
    assert [pod.name for pod in pods] == [f"capacity-buffer-web-{i}" for i in (1, 2, 3)]
    for pod in pods:
        assert pod.namespace == "default"
        assert env.cache.is_virtual(pod.key)
        assert env.cache.owner(pod.key) == "default/web"
        assert dict(pod.labels) == {"app": "web", "env": "prod"}
        assert pod.node_name is None


def test_the_same_buffer_gives_the_same_virtual_pods(env: Env) -> None:
    """utilities_test.go buildVirtualPods It("should produce deterministic UIDs across
    calls"): the same keys each time, and no labels where the template has none."""
    ready_buffer(env, "web", 2)
    first = [pod.key for pod in env.cache.all()]
    env.reconcile("web")
    assert [pod.key for pod in env.cache.all()] == first == [
        "default/capacity-buffer-web-1#virtual", "default/capacity-buffer-web-2#virtual"]
    assert all(dict(pod.labels) == {} for pod in env.cache.all())


def test_zero_replicas_give_no_virtual_pods(env: Env) -> None:
    """utilities_test.go buildVirtualPods It("should return nil for zero replicas")."""
    ready_buffer(env, "web", 0)
    assert env.ready("web")[0] == "True"
    assert env.cache.all() == []
    assert env.cache.buffers() == []
    chunk = parse_pod_spec("default", "web", {}, {"containers": [container()]}, "spec")
    assert virtual_pods("default", "web", chunk, 0) == []


# -- utilities_test.go, Describe("sanitizeVirtualPodSpec") ------------------------------------

PVC_VOLUME = {"name": "data", "persistentVolumeClaim": {"claimName": "my-pvc"}}
EPHEMERAL_VOLUME = {"name": "scratch",
                    "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}
CONFIG_VOLUME = {"name": "config", "configMap": {"name": "cfg"}}


def chunk_and_virtual_pod(env: Env, volumes: list[dict[str, Any]]) -> tuple[Any, Any]:
    """The chunk as the solver reads a real pod of it, and the buffer's virtual pod."""
    mounts = [{"name": v["name"], "mountPath": f"/{v['name']}"} for v in volumes]
    spec = {"containers": [container("100m", volumeMounts=mounts)],
            "initContainers": [container("100m", name="init", volumeMounts=mounts[:1])],
            "volumes": volumes}
    ready_buffer(env, "web", 1, **spec)
    (pod,) = env.cache.all()
    return parse_pod_spec("default", "web", {}, spec, "spec"), pod


def test_claimed_volumes_are_dropped(env: Env) -> None:
    """utilities_test.go sanitizeVirtualPodSpec It("should drop PVC volumes and their
    mounts"): the claim a virtual pod's volume names never exists, so it does not narrow
    where the pod goes (the solver keeps no mounts)."""
    chunk, pod = chunk_and_virtual_pod(env, [PVC_VOLUME, CONFIG_VOLUME])
    assert [claim.claim for claim in chunk.volume_claims] == ["my-pvc"]
    assert pod.volume_claims == ()
    assert pod.volume_requirements == ()
    assert pod.volumes == ()


def test_ephemeral_volumes_are_dropped(env: Env) -> None:
    """utilities_test.go sanitizeVirtualPodSpec It("should drop ephemeral volumes and their
    mounts")."""
    chunk, pod = chunk_and_virtual_pod(env, [EPHEMERAL_VOLUME, CONFIG_VOLUME])
    assert [claim.volume for claim in chunk.volume_claims] == ["scratch"]
    assert pod.volume_claims == ()


def test_claimed_and_ephemeral_volumes_are_dropped_together(env: Env) -> None:
    """utilities_test.go sanitizeVirtualPodSpec It("should drop both PVC and ephemeral
    volumes together")."""
    secret = {"name": "secret-vol", "secret": {"secretName": "s"}}
    chunk, pod = chunk_and_virtual_pod(env, [PVC_VOLUME, EPHEMERAL_VOLUME, secret])
    assert len(chunk.volume_claims) == 2
    assert pod.volume_claims == ()


def test_tolerations_node_selector_and_affinity_are_kept(env: Env) -> None:
    """utilities_test.go sanitizeVirtualPodSpec It("should preserve tolerations,
    nodeSelector, and affinity")."""
    ready_buffer(env, "web", 1,
                 tolerations=[{"key": "dedicated", "operator": "Equal", "value": "buffer",
                               "effect": "NoSchedule"}],
                 nodeSelector={"node-type": "buffer"},
                 affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                     {"labelSelector": {"matchLabels": {"app": "web"}},
                      "topologyKey": "kubernetes.io/hostname"}]}})
    (pod,) = env.cache.all()
    (toleration,) = pod.tolerations
    assert (toleration.key, toleration.value) == ("dedicated", "buffer")
    assert dict(pod.node_selector) == {"node-type": "buffer"}
    (term,) = pod.pod_affinity
    assert term.topology_key == "kubernetes.io/hostname"


# -- utilities_test.go, Describe("listBuffersReadyForProvisioning") ---------------------------


def test_a_scalable_ref_buffer_has_virtual_pods_without_a_pod_template(env: Env) -> None:
    """utilities_test.go listBuffersReadyForProvisioning It("should include scalableRef
    buffers without Status.PodTemplateRef")."""
    ready_scalable_buffer(env, "scalable", 15)
    assert "podTemplateRef" not in env.status("scalable")
    assert names(env) == ["capacity-buffer-scalable-1", "capacity-buffer-scalable-2",
                          "capacity-buffer-scalable-3"]  # 20 % of 15


def test_a_buffer_without_refs_has_no_virtual_pods(env: Env) -> None:
    """utilities_test.go listBuffersReadyForProvisioning It("should exclude buffers with
    neither PodTemplateRef nor ScalableRef")."""
    env.apply(buffer("orphan", replicas=2))
    env.reconcile("orphan")
    assert env.ready("orphan")[0] == "False"
    assert env.cache.all() == []


def test_a_buffer_of_zero_replicas_has_no_virtual_pods(env: Env) -> None:
    """utilities_test.go listBuffersReadyForProvisioning It("should exclude buffers with zero
    replicas"): 20 % of a Deployment scaled to zero."""
    ready_scalable_buffer(env, "zero", 0)
    assert env.status("zero")["replicas"] == 0
    assert env.cache.all() == []


def test_a_buffer_not_ready_for_provisioning_has_no_virtual_pods(env: Env) -> None:
    """utilities_test.go listBuffersReadyForProvisioning It("should exclude buffers without
    ReadyForProvisioning condition"): a buffer whose PodTemplate does not exist."""
    env.apply(buffer("notready", podTemplateRef={"name": "notready-template"}, replicas=3))
    env.reconcile("notready")
    assert env.ready("notready") == ("False", "PodTemplateNotFound")
    assert env.cache.all() == []


def test_a_pod_template_buffer_has_virtual_pods(env: Env) -> None:
    """utilities_test.go listBuffersReadyForProvisioning It("should include podTemplateRef
    buffers with Status.PodTemplateRef set")."""
    ready_buffer(env, "ptref", 2)
    assert env.status("ptref")["podTemplateRef"] == {"name": "ptref-template"}
    assert len(env.cache.all()) == 2


# -- utilities_test.go, Describe("buildVirtualPods with scalableRef buffer") ------------------


def test_a_scalable_ref_buffers_virtual_pods_carry_its_workloads_labels(env: Env) -> None:
    """utilities_test.go buildVirtualPods with scalableRef buffer It("should create pods with
    expected metadata for scalableRef buffers")."""
    ready_scalable_buffer(env, "scalable-app", 10, labels={"app": "scalable"})
    pods = env.cache.all()
    assert [pod.name for pod in pods] == ["capacity-buffer-scalable-app-1",
                                          "capacity-buffer-scalable-app-2"]
    for pod in pods:
        assert pod.namespace == "default"
        assert env.cache.owner(pod.key) == "default/scalable-app"
        assert dict(pod.labels) == {"app": "scalable"}


# -- virtualpods_test.go, Describe("GetAll"): a controller process starting -------------------


def buffers_world(*buffers: tuple[str, int, bool]) -> World:
    """A cluster with CapacityBuffers (name, replicas, whether its PodTemplate exists) whose
    controller process then restarts: the new process starts with an empty cache."""
    bodies: list[dict[str, Any]] = []
    for name, replicas, with_template in buffers:
        if with_template:
            bodies.append(template(f"{name}-template"))
        bodies.append(buffer_in_world(name, podTemplateRef={"name": f"{name}-template"},
                                      replicas=replicas))
    w = buffer_world(*bodies)
    w.advance(5)
    w.restart_controllers()
    return w


def cached(w: World) -> list[str]:
    buffers = w.controllers.state.buffers
    assert buffers is not None
    return sorted(pod.name for pod in buffers.all())


def test_a_process_starting_without_buffers_has_no_virtual_pods() -> None:
    """virtualpods_test.go GetAll It("should return no virtual pods when there are no
    buffers")."""
    w = buffers_world()
    w.advance(5)
    assert cached(w) == []


def test_the_first_solve_of_a_starting_process_sees_every_buffer() -> None:
    """virtualpods_test.go GetAll It("should lazily hydrate from the cluster on the first
    call"): nothing had filled the new process's cache; its provisioner's first solve
    places the five virtual pods of both buffers."""
    w = buffers_world(("web", 3, True), ("api", 2, True))
    provisioner = w.controllers.built["provisioner"]
    assert isinstance(provisioner, Provisioner)
    assert w.run_until(lambda: bool(provisioner.outcomes), timeout=60)
    assert provisioner.outcomes[0].pods == 5


# -- virtualpods_test.go, Describe("UpdateEntry") ---------------------------------------------


def test_a_resolved_buffer_fills_its_entry(env: Env) -> None:
    """virtualpods_test.go UpdateEntry It("should populate the cache with the buffer's
    virtual pods")."""
    ready_buffer(env, "web", 3)
    assert len(env.cache.all()) == 3
    assert {env.cache.owner(pod.key) for pod in env.cache.all()} == {"default/web"}


def test_resolving_again_replaces_the_entry(env: Env) -> None:
    """virtualpods_test.go UpdateEntry It("should replace an existing entry when called
    again")."""
    ready_buffer(env, "web", 3)
    assert len(env.cache.all()) == 3
    env.apply(buffer("web", podTemplateRef={"name": "web-template"}, replicas=1))
    env.reconcile("web")
    assert names(env) == ["capacity-buffer-web-1"]


def test_a_buffer_no_longer_ready_loses_its_entry(env: Env) -> None:
    """virtualpods_test.go UpdateEntry It("should remove the entry when the buffer is no
    longer ready for provisioning"): its PodTemplate deleted."""
    ready_buffer(env, "web", 3)
    assert len(env.cache.all()) == 3
    env.delete("PodTemplate", "web-template")
    env.reconcile("web")
    assert env.ready("web")[0] == "False"
    assert env.cache.all() == []


def test_a_scalable_ref_buffer_fills_its_entry(env: Env) -> None:
    """virtualpods_test.go UpdateEntry It("should build pods for scalableRef buffers")."""
    ready_scalable_buffer(env, "scalable", 10)
    assert len(env.cache.all()) == 2


# -- virtualpods_test.go, Describe("RemoveEntry") ---------------------------------------------


def test_removing_a_buffers_entry_leaves_the_others(env: Env) -> None:
    """virtualpods_test.go RemoveEntry It("should remove the entry for the given
    namespace/name")."""
    ready_buffer(env, "web", 3)
    ready_buffer(env, "api", 2)
    web = [pod.key for pod in env.cache.all() if pod.name.startswith("capacity-buffer-web-")]
    assert web and all(env.cache.is_virtual(key) for key in web)
    env.cache.remove("default/web")
    assert names(env) == ["capacity-buffer-api-1", "capacity-buffer-api-2"]
    assert not any(env.cache.is_virtual(key) for key in web)


def test_removing_an_unknown_entry_does_nothing(env: Env) -> None:
    """virtualpods_test.go RemoveEntry It("should be a no-op for an unknown entry")."""
    env.cache.remove("default/does-not-exist")
    assert env.cache.all() == []
    ready_buffer(env, "web", 1)
    env.cache.remove("default/does-not-exist")
    assert names(env) == ["capacity-buffer-web-1"]


# -- virtualpods_test.go, Describe("hydrateCache"): a controller process starting -------------


def test_a_starting_process_fills_the_cache_from_every_buffer() -> None:
    """virtualpods_test.go hydrateCache It("should populate the cache from all ready buffers
    in the cluster")."""
    w = buffers_world(("web", 3, True), ("api", 2, True))
    w.advance(5)
    assert cached(w) == ["capacity-buffer-api-1", "capacity-buffer-api-2",
                         "capacity-buffer-web-1", "capacity-buffer-web-2",
                         "capacity-buffer-web-3"]


def test_a_starting_process_skips_buffers_that_do_not_resolve() -> None:
    """virtualpods_test.go hydrateCache It("should skip buffers whose pod spec cannot be
    resolved"): api's PodTemplate does not exist."""
    w = buffers_world(("web", 3, True), ("api", 2, False))
    w.advance(5)
    assert cached(w) == ["capacity-buffer-web-1", "capacity-buffer-web-2",
                         "capacity-buffer-web-3"]


def test_the_cache_follows_the_buffers_of_the_cluster(env: Env) -> None:
    """virtualpods_test.go hydrateCache It("should replace previously cached entries"): web
    is gone and api is new; the cache holds api's pods only."""
    ready_buffer(env, "web", 3)
    assert len(env.cache.all()) == 3
    env.delete("CapacityBuffer", "web")
    ready_buffer(env, "api", 2)
    env.reconcile("web")
    assert names(env) == ["capacity-buffer-api-1", "capacity-buffer-api-2"]
    assert {env.cache.owner(pod.key) for pod in env.cache.all()} == {"default/api"}


def test_a_process_starting_after_every_buffer_went_has_an_empty_cache() -> None:
    """virtualpods_test.go hydrateCache It("should return an empty cache when there are no
    buffers")."""
    w = buffers_world(("web", 3, True))
    w.advance(5)
    assert len(cached(w)) == 3
    w.delete("CapacityBuffer", "web")
    w.restart_controllers()
    w.advance(5)
    assert cached(w) == []
