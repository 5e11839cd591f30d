"""Karpenter's CapacityBuffer controller suite, ported: kubernetes-sigs/karpenter v1.14.1
pkg/controllers/capacitybuffer/suite_test.go ("CapacityBuffer Controller") and
helpers_test.go ("Helpers"). Each story names its It or Entry.

As in Karpenter, the controller runs alone against an API server (our in-memory one): a
reconcile of one buffer, then what its status says. Karpenter's virtual pod cache is our
`BufferPods` (the cluster state's `buffers`); its `podTemplateToBuffers` mapping is the
controller's PodTemplate watch; its `calculateLimitReplicas`, `calculatePercentageReplicas`
and `resources.RequestsForSpec` are `limit_replicas`, `percentage_replicas` and the
requests of `parse_pod_spec`; its `CapacityBuffer.SetCondition` is `set_condition`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from nodewright.cluster import objects
from nodewright.cluster.api import NotFoundError
from nodewright.cluster.conditions import FALSE, TRUE, set_condition
from nodewright.cluster.memory import InMemoryCluster
from nodewright.controllers.capacitybuffer.controller import (
    CapacityBufferController,
    ResolveError,
    limit_replicas,
    percentage_replicas,
)
from nodewright.runtime.clock import VirtualClock
from nodewright.runtime.reconciler import Result, WatchEvent
from nodewright.scheduling.pods import parse_pod_spec
from nodewright.state import ClusterState
from nodewright.state.buffers import BufferPods

NOW = datetime(2026, 1, 5, tzinfo=UTC)


class Env:
    """An API server, the cluster state's buffer pods, and the controller."""

    def __init__(self) -> None:
        self.clock = VirtualClock()
        self.cluster = InMemoryCluster(self.clock)
        self.state = ClusterState(self.clock)
        self.state.buffers = BufferPods()
        self.cache: BufferPods = self.state.buffers
        self.controller = CapacityBufferController(self.cluster, self.clock, self.state)

    def apply(self, *bodies: dict[str, Any]) -> None:
        for body in bodies:
            meta = body["metadata"]
            try:
                current = self.cluster.get(body["kind"], meta["name"], meta.get("namespace"))
            except NotFoundError:
                self.cluster.create(body)
                continue
            self.cluster.update({**body, "metadata": {
                **meta, "resourceVersion": current["metadata"]["resourceVersion"]}})

    def delete(self, kind: str, name: str) -> None:
        self.cluster.delete(kind, name, "default")

    def reconcile(self, name: str) -> Result:
        return self.controller.reconcile(f"default/{name}")

    def buffer(self, name: str) -> dict[str, Any]:
        return self.cluster.get("CapacityBuffer", name, "default")

    def status(self, name: str) -> dict[str, Any]:
        return dict(self.buffer(name).get("status") or {})

    def ready(self, name: str) -> tuple[str, str]:
        found = objects.condition(self.buffer(name), "ReadyForProvisioning")
        assert found is not None
        return str(found["status"]), str(found["reason"])

    def mapped(self, template: str) -> list[str]:
        """The buffers a PodTemplate event makes due (Karpenter's podTemplateToBuffers)."""
        event = WatchEvent("MODIFIED", {"apiVersion": "v1", "kind": "PodTemplate",
                                        "metadata": {"name": template, "namespace": "default"}})
        (watch,) = [w for w in self.controller.watches if w.kind == "PodTemplate"]
        return list(watch.keys(event))


@pytest.fixture
def env() -> Env:
    return Env()


def container(cpu: str | None = None, memory: str | None = None,
              **extra: Any) -> dict[str, Any]:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    body: dict[str, Any] = {"name": "app", "image": "pause:latest", **extra}
    if requests:
        body["resources"] = {"requests": requests}
    return body


def pod_template(name: str, *containers: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "PodTemplate",
            "metadata": {"name": name, "namespace": "default"},
            "template": {"spec": {"containers": list(containers) or [container()]}}}


def workload(kind: str, name: str, replicas: int | None, *containers: dict[str, Any]
             ) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "selector": {"matchLabels": {"app": name}},
        "template": {"metadata": {"labels": {"app": name}},
                     "spec": {"containers": list(containers) or [container()]}}}
    if replicas is not None:
        spec["replicas"] = replicas
    if kind == "StatefulSet":
        spec["serviceName"] = name
    return {"apiVersion": "apps/v1", "kind": kind,
            "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def buffer(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "autoscaling.x-k8s.io/v1beta1", "kind": "CapacityBuffer",
            "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def deployment_ref(name: str) -> dict[str, str]:
    return {"apiGroup": "apps", "kind": "Deployment", "name": name}


# -- Context("PodTemplateRef resolution") ---------------------------------------------------


def test_a_pod_template_resolves_and_the_buffer_is_ready(env: Env) -> None:
    """suite_test.go It("should resolve a PodTemplate and set ReadyForProvisioning=True")."""
    env.apply(pod_template("test-template", container("1", "1Gi")),
              buffer("test-buffer", provisioningStrategy="buffer.x-k8s.io/active-capacity",
                     podTemplateRef={"name": "test-template"}, replicas=5))
    env.reconcile("test-buffer")
    assert env.ready("test-buffer") == ("True", "Resolved")
    status = env.status("test-buffer")
    assert status["podTemplateRef"] == {"name": "test-template"}
    assert status["replicas"] == 5
    assert status["provisioningStrategy"] == "buffer.x-k8s.io/active-capacity"


def test_a_missing_pod_template_leaves_the_buffer_not_ready(env: Env) -> None:
    """suite_test.go It("should set ReadyForProvisioning=False when PodTemplate is not
    found")."""
    env.apply(buffer("test-buffer-missing", podTemplateRef={"name": "nonexistent"},
                     replicas=3))
    env.reconcile("test-buffer-missing")
    assert env.ready("test-buffer-missing") == ("False", "PodTemplateNotFound")


# -- Context("ScalableRef resolution") ------------------------------------------------------


def test_a_deployment_resolves_with_a_percentage_of_its_replicas(env: Env) -> None:
    """suite_test.go It("should resolve a Deployment and calculate percentage-based
    replicas")."""
    env.apply(workload("Deployment", "my-app", 10, container("500m", "256Mi")),
              buffer("test-buffer-scalable", scalableRef=deployment_ref("my-app"),
                     percentage=20))
    env.reconcile("test-buffer-scalable")
    assert env.ready("test-buffer-scalable")[0] == "True"
    assert env.status("test-buffer-scalable")["replicas"] == 2  # 20% of 10
    assert "podTemplateRef" not in env.status("test-buffer-scalable")


def test_a_missing_scalable_ref_leaves_the_buffer_not_ready(env: Env) -> None:
    """suite_test.go It("should set ReadyForProvisioning=False when scalable ref is not
    found")."""
    env.apply(buffer("test-buffer-missing-ref", scalableRef=deployment_ref("nonexistent"),
                     replicas=3))
    env.reconcile("test-buffer-missing-ref")
    assert env.ready("test-buffer-missing-ref") == ("False", "ScalableRefNotFound")


def test_a_statefulset_resolves(env: Env) -> None:
    """suite_test.go It("should resolve a StatefulSet")."""
    env.apply(workload("StatefulSet", "my-sts", 5, container("500m")),
              buffer("test-buffer-sts", percentage=20,
                     scalableRef={"apiGroup": "apps", "kind": "StatefulSet", "name": "my-sts"}))
    env.reconcile("test-buffer-sts")
    assert env.ready("test-buffer-sts")[0] == "True"
    assert env.status("test-buffer-sts")["replicas"] == 1  # 20% of 5


def test_an_unsupported_kind_fails_the_reconcile(env: Env) -> None:
    """suite_test.go It("should return error for unsupported kind"): the reconcile fails
    (the driver retries it with backoff) after saying why in the status."""
    env.apply(buffer("test-buffer-bad-kind", percentage=20,
                     scalableRef={"apiGroup": "batch", "kind": "Job", "name": "my-job"}))
    with pytest.raises(ResolveError):
        env.reconcile("test-buffer-bad-kind")
    assert env.ready("test-buffer-bad-kind") == ("False", "ResolutionFailed")
    assert env.cache.all() == []


def test_an_unsupported_api_group_fails_the_reconcile(env: Env) -> None:
    """suite_test.go It("should return error for unsupported API group")."""
    env.apply(buffer("test-buffer-bad-group", percentage=20,
                     scalableRef={"apiGroup": "batch", "kind": "Deployment",
                                  "name": "my-deploy"}))
    with pytest.raises(ResolveError, match='unsupported scalableRef API group "batch"'):
        env.reconcile("test-buffer-bad-group")
    assert env.ready("test-buffer-bad-group") == ("False", "ResolutionFailed")


def test_a_workload_without_replicas_counts_as_one(env: Env) -> None:
    """suite_test.go It("should default to 1 replica when workload has nil
    Spec.Replicas")."""
    body = workload("Deployment", "nil-replicas-app", None, container("500m"))
    env.apply(body, buffer("test-buffer-nil-replicas", percentage=100,
                           scalableRef=deployment_ref("nil-replicas-app")))
    env.reconcile("test-buffer-nil-replicas")
    assert env.ready("test-buffer-nil-replicas")[0] == "True"
    assert env.status("test-buffer-nil-replicas")["replicas"] == 1  # 100% of 1


# -- Context("Replica calculation"): DescribeTable "should resolve buffer replicas from
#    replicas, percentage, and limits" ---------------------------------------------------

ONE_CPU = container("1")

REPLICA_TABLE = [
    # podTemplateRef: replicas and limits only (percentage needs a scalableRef).
    ("fixed replicas only", pod_template("pt-fixed"),
     {"podTemplateRef": {"name": "pt-fixed"}, "replicas": 7}, 7),
    ("replicas capped by binding limit", pod_template("pt-cap", ONE_CPU),
     {"podTemplateRef": {"name": "pt-cap"}, "replicas": 10, "limits": {"cpu": "3"}}, 3),
    ("non-binding limit does not reduce (podTemplateRef)", pod_template("pt-loose", ONE_CPU),
     {"podTemplateRef": {"name": "pt-loose"}, "replicas": 3, "limits": {"cpu": "10"}}, 3),
    ("limits only", pod_template("pt-limit", ONE_CPU),
     {"podTemplateRef": {"name": "pt-limit"}, "limits": {"cpu": "5"}}, 5),
    # scalableRef: the larger of replicas and percentage, then capped by limits.
    ("percentage only", workload("Deployment", "d-pct-only", 10),
     {"scalableRef": deployment_ref("d-pct-only"), "percentage": 20}, 2),
    ("replicas > percentage", workload("Deployment", "d-repl", 10),
     {"scalableRef": deployment_ref("d-repl"), "replicas": 5, "percentage": 20}, 5),
    ("percentage > replicas", workload("Deployment", "d-pct", 10),
     {"scalableRef": deployment_ref("d-pct"), "replicas": 5, "percentage": 80}, 8),
    ("max of replicas and percentage capped by limit",
     workload("Deployment", "d-cap", 10, ONE_CPU),
     {"scalableRef": deployment_ref("d-cap"), "replicas": 5, "percentage": 80,
      "limits": {"cpu": "4"}}, 4),
    ("percentage rounds up to a minimum of 1", workload("Deployment", "d-min", 1),
     {"scalableRef": deployment_ref("d-min"), "percentage": 10}, 1),
]


@pytest.mark.parametrize(("entry", "backing", "spec", "expected"), REPLICA_TABLE,
                         ids=[row[0] for row in REPLICA_TABLE])
def test_buffer_replicas_follow_replicas_percentage_and_limits(
        env: Env, entry: str, backing: dict[str, Any], spec: dict[str, Any],
        expected: int) -> None:
    """suite_test.go DescribeTable("should resolve buffer replicas from replicas,
    percentage, and limits"), each Entry by its text."""
    env.apply(backing, buffer("cb", **spec))
    env.reconcile("cb")
    assert env.status("cb")["replicas"] == expected


# -- Context("PodTemplate watch") -----------------------------------------------------------


def test_a_changed_template_is_resolved_again(env: Env) -> None:
    """suite_test.go It("should re-resolve the template when its generation changes")."""
    env.apply(pod_template("watched-template", container(image="pause:v1")),
              buffer("test-watch-buffer", podTemplateRef={"name": "watched-template"},
                     replicas=2))
    env.reconcile("test-watch-buffer")
    original = env.status("test-watch-buffer")["podTemplateGeneration"]
    env.apply(pod_template("watched-template", container("2", image="pause:v2")))
    assert env.mapped("watched-template") == ["default/test-watch-buffer"]
    env.reconcile("test-watch-buffer")
    assert env.status("test-watch-buffer")["podTemplateGeneration"] > original
    assert {pod.requests.get("cpu") for pod in env.cache.all()} == {2000}


# -- Context("Provisioner trigger") ---------------------------------------------------------


def test_a_resolved_buffer_wakes_the_provisioner(env: Env) -> None:
    """suite_test.go It("should trigger the provisioner after a successful reconcile").
    Our provisioner is woken by the buffer's watch events (Provisioner._on_buffer): the
    resolved buffer's status write is such an event, and its virtual pods are there for
    the pass it starts."""
    env.apply(pod_template("trig-template"),
              buffer("trig-buffer", podTemplateRef={"name": "trig-template"}, replicas=1))
    stream = env.cluster.watch(["CapacityBuffer"])
    stream.poll()
    env.reconcile("trig-buffer")
    events = stream.poll()
    assert [(e.type, e.key) for e in events] == [("MODIFIED", "default/trig-buffer")]
    assert [pod.name for pod in env.cache.all()] == ["capacity-buffer-trig-buffer-1"]


# Karpenter's It("should NOT trigger the provisioner when resolution fails") is a
# deliberate difference: a buffer that fails to resolve also wakes our provisioner, so
# that it writes Provisioning=False NotReadyForProvisioning at once (see
# docs/karpenter-differences.md). What it does not get is virtual pods:
def test_a_buffer_that_fails_to_resolve_has_no_virtual_pods(env: Env) -> None:
    env.apply(buffer("no-trig-buffer", podTemplateRef={"name": "does-not-exist"},
                     replicas=1))
    env.reconcile("no-trig-buffer")
    assert env.cache.all() == []
    assert env.cache.buffers() == []


# -- Context("Virtual pod cache") -----------------------------------------------------------


def test_a_resolved_buffer_fills_the_cache(env: Env) -> None:
    """suite_test.go It("should populate the cache after a successful reconcile")."""
    env.apply(pod_template("cache-template"),
              buffer("cache-buffer", podTemplateRef={"name": "cache-template"}, replicas=3))
    env.reconcile("cache-buffer")
    assert len(env.cache.all()) == 3


def test_a_template_gone_empties_the_cache(env: Env) -> None:
    """suite_test.go It("should remove the cache entry when resolution fails with
    NotFound")."""
    env.apply(pod_template("gone-template"),
              buffer("gone-buffer", podTemplateRef={"name": "gone-template"}, replicas=2))
    env.reconcile("gone-buffer")
    assert len(env.cache.all()) == 2
    env.delete("PodTemplate", "gone-template")
    env.reconcile("gone-buffer")
    assert env.cache.all() == []


def test_a_deleted_buffer_is_evicted_from_the_cache(env: Env) -> None:
    """suite_test.go It("should evict the cache entry when the buffer is deleted")."""
    env.apply(pod_template("del-template"),
              buffer("del-buffer", podTemplateRef={"name": "del-template"}, replicas=3))
    env.reconcile("del-buffer")
    assert len(env.cache.all()) == 3
    env.delete("CapacityBuffer", "del-buffer")
    env.reconcile("del-buffer")
    assert env.cache.all() == []


def test_a_buffer_without_refs_leaves_the_cache_alone(env: Env) -> None:
    """suite_test.go It("should not touch the cache when a buffer has neither ref set")."""
    env.apply(buffer("no-ref-buffer", replicas=1))
    result = env.reconcile("no-ref-buffer")
    assert env.cache.all() == []
    assert env.ready("no-ref-buffer") == ("False", "ResolutionFailed")
    assert result.requeue_after is not None  # not a failure: the user must fix it


# -- Context("podTemplateToBuffers mapping") ------------------------------------------------


def test_a_template_no_buffer_refers_to_maps_to_nothing(env: Env) -> None:
    """suite_test.go It("should return no requests when no buffers reference the
    template")."""
    env.apply(buffer("unrelated", podTemplateRef={"name": "different-template"}, replicas=1))
    assert env.mapped("unref-template") == []


def test_a_template_maps_to_the_buffer_that_refers_to_it(env: Env) -> None:
    """suite_test.go It("should return a single request for one matching buffer")."""
    env.apply(buffer("matching-buffer", podTemplateRef={"name": "map-template-1"},
                     replicas=1))
    assert env.mapped("map-template-1") == ["default/matching-buffer"]


def test_a_shared_template_maps_to_every_buffer(env: Env) -> None:
    """suite_test.go It("should return multiple requests when many buffers reference the
    same template")."""
    env.apply(buffer("shared-a", podTemplateRef={"name": "shared-template"}, replicas=1),
              buffer("shared-b", podTemplateRef={"name": "shared-template"}, replicas=2))
    assert sorted(env.mapped("shared-template")) == ["default/shared-a", "default/shared-b"]


def test_buffers_without_a_template_ref_are_not_mapped(env: Env) -> None:
    """suite_test.go It("should ignore buffers with nil podTemplateRef")."""
    env.apply(buffer("scalable-only", scalableRef=deployment_ref("some-deploy"),
                     percentage=10))
    assert env.mapped("ignore-template") == []


# -- helpers_test.go Context("calculateLimitReplicas") --------------------------------------


def requests(*containers: dict[str, Any], init: list[dict[str, Any]] | None = None
             ) -> dict[str, int]:
    spec: dict[str, Any] = {"containers": list(containers)}
    if init:
        spec["initContainers"] = init
    return parse_pod_spec("default", "chunk", {}, spec, "spec").requests


def sidecar(cpu: str) -> dict[str, Any]:
    return container(cpu, restartPolicy="Always")


LIMIT_TABLE = [
    ("should calculate replicas based on CPU limits", {"cpu": "4"}, [container("1")], None, 4),
    ("should calculate replicas based on memory limits", {"memory": "2Gi"},
     [container(memory="512Mi")], None, 4),
    ("should take the minimum across multiple resources", {"cpu": "8", "memory": "4Gi"},
     [container("1", "1Gi")], None, 4),
    ("should sum requests across multiple containers", {"cpu": "3"},
     [container("500m"), container("500m")], None, 3),
    ("should use init container max if larger than sum of containers", {"cpu": "8"},
     [container("1")], [container("4")], 2),
    ("should use container sum if larger than init containers", {"cpu": "6"},
     [container("2")], [container("500m")], 3),
    ("should return false when pod has no resource requests", {"cpu": "4"},
     [container()], None, None),
    ("should return false when no limit resources match pod requests", {"memory": "4Gi"},
     [container("1")], None, None),
    ("should floor divide (no rounding up)", {"cpu": "10"}, [container("3")], None, 3),
    ("should handle millicore-level precision", {"cpu": "1"}, [container("250m")], None, 4),
    ("should return 0 when limit is smaller than a single pod request", {"cpu": "1"},
     [container("2")], None, 0),
]


@pytest.mark.parametrize(("it", "limits", "containers", "init", "expected"), LIMIT_TABLE,
                         ids=[row[0] for row in LIMIT_TABLE])
def test_limit_replicas(it: str, limits: dict[str, str], containers: list[dict[str, Any]],
                        init: list[dict[str, Any]] | None, expected: int | None) -> None:
    """helpers_test.go Context("calculateLimitReplicas"), each It by its text ("return
    false" is our None: the limits constrain nothing)."""
    assert limit_replicas(limits, requests(*containers, init=init)) == expected


# -- helpers_test.go Context("totalPodRequests") --------------------------------------------

MI = 1024 * 1024 * 1000  # a mebibyte in milli-units

TOTAL_TABLE = [
    ("should sum requests from all containers",
     [container("1", "512Mi"), container("500m", "256Mi")], None,
     {"cpu": 1500, "memory": 768 * MI}),
    ("should take max of init containers vs regular containers",
     [container("1")], [container("4"), container("2")], {"cpu": 4000}),
    ("should return empty list for pod with no requests", [container()], None, {}),
    ("should handle mixed resources across containers",
     [container("1"), container(memory="1Gi")], None, {"cpu": 1000, "memory": 1024 * MI}),
    ("should sum sidecar init containers with regular containers",
     [container("1")], [sidecar("500m")], {"cpu": 1500}),
    ("should sum multiple sidecar init containers with regular containers",
     [container("1")], [sidecar("500m"), sidecar("200m")], {"cpu": 1700}),
    ("should use max of regular init container + preceding sidecars vs running total",
     [container("1")], [sidecar("500m"), container("4")], {"cpu": 4500}),
    ("should handle sidecar after regular init container",
     [container("1")], [container("4"), sidecar("500m")], {"cpu": 4000}),
    ("should not treat init containers without restartPolicy as sidecars",
     [container("1")], [container("2")], {"cpu": 2000}),
]


@pytest.mark.parametrize(("it", "containers", "init", "expected"), TOTAL_TABLE,
                         ids=[row[0] for row in TOTAL_TABLE])
def test_total_pod_requests(it: str, containers: list[dict[str, Any]],
                            init: list[dict[str, Any]] | None,
                            expected: dict[str, int]) -> None:
    """helpers_test.go Context("totalPodRequests"), each It by its text. Our requests
    also count the pod itself (`pods`), which Karpenter's RequestsForSpec does not and the
    limits never count."""
    found = requests(*containers, init=init)
    assert found.pop("pods") == 1000
    assert found == expected


# -- helpers_test.go Context("calculatePercentageReplicas") ---------------------------------

PERCENTAGE_TABLE = [
    ("should calculate percentage and ceil", 10, 20, 2),
    ("should ceil fractional results", 3, 10, 1),
    ("should return at least 1 when percentage > 0 and replicas > 0", 1, 1, 1),
    ("should return 0 when scalable has 0 replicas", 0, 50, 0),
    ("should return 0 when percentage is 0", 10, 0, 0),
    ("should handle 100 percent", 5, 100, 5),
    ("should handle large percentages (>100)", 5, 200, 10),
    ("should handle large replica counts", 1000, 10, 100),
]


@pytest.mark.parametrize(("it", "replicas", "percentage", "expected"), PERCENTAGE_TABLE,
                         ids=[row[0] for row in PERCENTAGE_TABLE])
def test_percentage_replicas(it: str, replicas: int, percentage: int, expected: int) -> None:
    """helpers_test.go Context("calculatePercentageReplicas"), each It by its text."""
    assert percentage_replicas(replicas, percentage) == expected


# -- helpers_test.go Context("SetCondition") ------------------------------------------------


def conditions(body: dict[str, Any]) -> list[dict[str, Any]]:
    return list((body.get("status") or {}).get("conditions") or [])


def test_set_condition_adds_a_new_condition() -> None:
    """helpers_test.go It("should add a new condition")."""
    body: dict[str, Any] = {"metadata": {}}
    set_condition(body, "TestCond", TRUE, NOW, "TestReason", "test message")
    (found,) = conditions(body)
    assert (found["type"], found["status"], found["reason"], found["message"]) == (
        "TestCond", "True", "TestReason", "test message")


def test_set_condition_updates_an_existing_condition() -> None:
    """helpers_test.go It("should update an existing condition")."""
    body: dict[str, Any] = {"metadata": {}}
    set_condition(body, "TestCond", FALSE, NOW, "FirstReason", "first")
    set_condition(body, "TestCond", TRUE, NOW, "SecondReason", "second")
    (found,) = conditions(body)
    assert (found["status"], found["reason"], found["message"]) == (
        "True", "SecondReason", "second")


def test_set_condition_keeps_several_types() -> None:
    """helpers_test.go It("should support multiple condition types")."""
    body: dict[str, Any] = {"metadata": {}}
    set_condition(body, "CondA", TRUE, NOW, "A", "a")
    set_condition(body, "CondB", FALSE, NOW, "B", "b")
    assert len(conditions(body)) == 2


def test_set_condition_stamps_the_observed_generation() -> None:
    """helpers_test.go It("should set observed generation")."""
    body: dict[str, Any] = {"metadata": {"generation": 7}}
    set_condition(body, "TestCond", TRUE, NOW, "R", "m")
    assert conditions(body)[0]["observedGeneration"] == 7
