"""Pure pieces of the controllers: the batching window, status conditions, merge
patches, NodeClaim requirements, pod predicates and the event recorder's dedupe."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from nodewright.cluster import objects
from nodewright.cluster.conditions import NODECLAIM
from nodewright.cluster.events import Event, EventRecorder
from nodewright.cluster.memory import InMemoryCluster
from nodewright.cluster.merge_patch import apply_merge_patch, merge_patch_between
from nodewright.controllers.provisioning.batcher import Batcher
from nodewright.controllers.provisioning.nodeclaims import render_requirements
from nodewright.runtime import VirtualClock
from nodewright.runtime.ratelimit import TokenBucket, clock_seconds
from nodewright.scheduling.requirements import Requirement, Requirements
from nodewright.state import podutil

START = datetime(2026, 1, 5, tzinfo=UTC)


def test_a_batch_closes_one_idle_second_after_the_last_new_pod() -> None:
    clock = VirtualClock(START)
    batcher = Batcher(clock)
    batcher.trigger("a")
    clock.advance(0.6)
    batcher.trigger("b")
    assert batcher.seconds_left() == 1.0
    clock.advance(0.5)
    batcher.trigger("b")  # already in the window: no extension
    assert batcher.seconds_left() == 0.5


def test_a_batch_never_stays_open_longer_than_ten_seconds() -> None:
    clock = VirtualClock(START)
    batcher = Batcher(clock)
    for n in range(40):
        batcher.trigger(n)
        clock.advance(0.5)
    assert batcher.due() == START + timedelta(seconds=10)
    assert batcher.seconds_left() == 0.0
    batcher.close()
    assert not batcher.open and batcher.due() is None


def test_nodeclaim_ready_follows_its_dependents() -> None:
    claim: dict[str, Any] = {"metadata": {"name": "c", "generation": 1}}
    NODECLAIM.initialize(claim, START)
    ready = objects.condition(claim, "Ready")
    assert ready is not None and ready["status"] == "Unknown"
    assert ready["reason"] == "ReconcilingDependents"
    for condition in ("Launched", "Registered"):
        NODECLAIM.set_true(claim, condition, START)
    assert not objects.condition_is_true(claim, "Ready")
    NODECLAIM.set_true(claim, "Initialized", START + timedelta(seconds=5))
    assert objects.condition_is_true(claim, "Ready")
    # operatorpkg's order: by last transition, the root last.
    assert [c["type"] for c in claim["status"]["conditions"]] == [
        "Launched", "Registered", "Initialized", "Ready"]
    NODECLAIM.set_false(claim, "Registered", START, "Broken", "it broke")
    ready = objects.condition(claim, "Ready")
    assert ready is not None and ready["status"] == "False"
    assert ready["reason"] == "UnhealthyDependents"


def test_a_condition_keeps_its_transition_time_while_its_status_holds() -> None:
    claim: dict[str, Any] = {"metadata": {"name": "c"}}
    NODECLAIM.set_unknown(claim, "Registered", START, "NodeNotFound")
    NODECLAIM.set_unknown(claim, "Registered", START + timedelta(minutes=3), "Other")
    registered = objects.condition(claim, "Registered")
    assert registered is not None
    assert registered["lastTransitionTime"] == "2026-01-05T00:00:00Z"
    assert registered["reason"] == "Other"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.text(max_size=2), inner, max_size=3),
    max_leaves=10,
)


@given(st.dictionaries(st.text(max_size=2), json_values, max_size=4),
       st.dictionaries(st.text(max_size=2), json_values, max_size=4))
def test_the_merge_patch_turns_before_into_after(before: dict[str, Any],
                                                 after: dict[str, Any]) -> None:
    def has_null(value: Any) -> bool:
        if isinstance(value, dict):
            return any(v is None or has_null(v) for v in value.values())
        return False

    if has_null(after):  # RFC 7386 cannot set a member to null
        return
    assert apply_merge_patch(before, merge_patch_between(before, after)) == after


def test_requirements_render_as_node_selector_entries() -> None:
    requirements = Requirements([
        Requirement.build("karpenter.k8s.aws/instance-generation", "Gt", ["2"]),
        Requirement.build("node.kubernetes.io/instance-type", "In", ["m5.large", "c5.large"],
                          min_values=2),
        Requirement.build("team", "NotIn", ["b"]),
        Requirement.build("gpu", "DoesNotExist"),
    ])
    assert render_requirements(requirements) == [
        {"key": "gpu", "operator": "DoesNotExist"},
        {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gte", "values": ["3"]},
        {"key": "node.kubernetes.io/instance-type", "operator": "In",
         "values": ["c5.large", "m5.large"], "minValues": 2},
        {"key": "team", "operator": "NotIn", "values": ["b"]},
    ]


def test_bounds_render_inclusive_as_karpenter_writes_them() -> None:
    """Karpenter v1.14.1 canonicalises Gt N to Gte N+1 and Lt N to Lte N-1 and writes two
    entries for a range, each with the minValues; an excluded value inside the range stays
    (Karpenter would drop it); Lt 0 stays Lt 0, since the CRD refuses a negative Lte."""
    ranged = Requirements([
        Requirement.build("karpenter.k8s.aws/instance-cpu", "Gt", ["3"]),
        Requirement.build("karpenter.k8s.aws/instance-cpu", "Lt", ["17"], min_values=3),
        Requirement.build("karpenter.k8s.aws/instance-cpu", "NotIn", ["8"]),
    ])
    assert render_requirements(ranged) == [
        {"key": "karpenter.k8s.aws/instance-cpu", "operator": "NotIn", "values": ["8"],
         "minValues": 3},
        {"key": "karpenter.k8s.aws/instance-cpu", "operator": "Gte", "values": ["4"],
         "minValues": 3},
        {"key": "karpenter.k8s.aws/instance-cpu", "operator": "Lte", "values": ["16"],
         "minValues": 3},
    ]
    read_back = Requirements([Requirement.build(e["key"], e["operator"], e["values"])
                              for e in render_requirements(ranged)])
    key = "karpenter.k8s.aws/instance-cpu"
    assert [v for v in range(-2, 30) if read_back[key].has(str(v))] == [
        4, 5, 6, 7, 9, 10, 11, 12, 13, 14, 15, 16]
    assert render_requirements(Requirements([Requirement.build("rank", "Lt", ["0"])])) == [
        {"key": "rank", "operator": "Lt", "values": ["0"]}]


def pod(**changes: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "metadata": {"name": "p", "namespace": "default", "uid": "u"},
        "spec": {"containers": [{"name": "c"}]},
        "status": {"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]},
    }
    for path, value in changes.items():
        section, field = path.split("__")
        body[section][field] = value
    return body


def test_only_pods_kube_scheduler_gave_up_on_are_provisionable() -> None:
    assert podutil.is_provisionable(pod())
    assert not podutil.is_provisionable(pod(spec__nodeName="n1"))
    assert not podutil.is_provisionable(pod(status__conditions=[]))
    assert not podutil.is_provisionable(pod(status__nominatedNodeName="n2"))
    assert not podutil.is_provisionable(pod(status__phase="Succeeded"))
    assert not podutil.is_provisionable(pod(metadata__deletionTimestamp="2026-01-05T00:00:00Z"))
    daemon = [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "d", "uid": "1",
               "controller": True}]
    assert not podutil.is_provisionable(pod(metadata__ownerReferences=daemon))
    mirror = [{"apiVersion": "v1", "kind": "Node", "name": "n", "uid": "1"}]
    assert not podutil.is_provisionable(pod(metadata__ownerReferences=mirror))


def test_do_not_disrupt_holds_for_its_duration_from_the_pod_start() -> None:
    annotated = pod(metadata__annotations={"karpenter.sh/do-not-disrupt": "10m"},
                    status__startTime="2026-01-05T00:00:00Z")
    assert podutil.do_not_disrupt_active(annotated, START + timedelta(minutes=9))
    assert not podutil.do_not_disrupt_active(annotated, START + timedelta(minutes=11))
    assert podutil.do_not_disrupt_active(
        pod(metadata__annotations={"karpenter.sh/do-not-disrupt": "true"}), START)
    assert not podutil.do_not_disrupt_active(
        pod(metadata__annotations={"karpenter.sh/do-not-disrupt": "soon"}), START)


def test_pods_tolerating_the_disrupted_taint_are_not_drained() -> None:
    tolerant = pod(spec__tolerations=[{"operator": "Exists"}], spec__nodeName="n")
    assert podutil.tolerates_disrupted_taint(tolerant)
    assert not podutil.is_drainable(tolerant, START)
    assert podutil.is_drainable(pod(spec__nodeName="n"), START)


def test_repeated_events_are_written_once_per_window() -> None:
    clock = VirtualClock(START)
    cluster = InMemoryCluster(clock)
    recorder = EventRecorder(cluster, clock)
    subject = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "uid": "1"}}
    event = Event(subject, "Warning", "FailedDraining", "still draining", dedupe_values=("n1",))
    recorder.publish(event, event)
    clock.advance(119)
    recorder.publish(event)
    clock.advance(2)
    recorder.publish(event)
    written = cluster.list("Event")
    assert len(written) == 2
    first = written[0]
    assert first["regarding"] == {"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": "1"}
    assert first["reportingController"] == "karpenter"
    assert first["metadata"]["namespace"] == "default"
    assert (first["type"], first["reason"], first["note"]) == (
        "Warning", "FailedDraining", "still draining")


def test_the_token_bucket_allows_bursts_then_its_rate() -> None:
    clock = VirtualClock(START)
    bucket = TokenBucket(5.0, 10, now=clock_seconds(clock))
    assert sum(bucket.try_accept() for _ in range(20)) == 10
    clock.advance(1)
    assert sum(bucket.try_accept() for _ in range(20)) == 5
