"""What Karpenter tells a pod about its karpenter.sh/do-not-disrupt annotation when it
checks it (pkg/utils/pod/events.go, published from IsDoNotDisruptActive): when a
duration's protection ends, that it has ended, and that an unreadable value is ignored."""

from __future__ import annotations

from datetime import timedelta

from nodewright.controllers.common.podrules import do_not_disrupt_event
from nodewright.runtime.clock import format_time, parse_time
from tests.controllers.conftest import WORKSHOP
from tests.controllers.expectations import expect_no_controller_errors
from tests.harness import World

GUARD = """
apiVersion: v1
kind: Pod
metadata:
  name: guard
  namespace: default
  annotations: {karpenter.sh/do-not-disrupt: "%s"}
spec:
  nodeSelector: {type: karpenter}
  containers: [{name: app, resources: {requests: {cpu: 100m}}}]
"""
NOW = parse_time("2026-01-01T12:00:00Z")


def pod(value: str, started: str | None = "2026-01-01T11:50:00Z") -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "default", "uid": "u1",
                         "annotations": {"karpenter.sh/do-not-disrupt": value}},
            "status": {"phase": "Running", **({"startTime": started} if started else {})}}


def test_a_duration_still_running_says_when_it_elapses() -> None:
    event = do_not_disrupt_event(pod("30m"), NOW)
    assert event is not None
    assert (event.type, event.reason, event.note) == (
        "Normal", "DoNotDisruptUntil",
        "The karpenter.sh/do-not-disrupt grace period will elapse at 2026-01-01T12:20:00Z")


def test_an_elapsed_duration_says_the_pod_is_disruptable() -> None:
    event = do_not_disrupt_event(pod("5m"), NOW)
    assert event is not None
    assert (event.reason, event.note) == (
        "DoNotDisruptGracePeriodElapsed",
        "The karpenter.sh/do-not-disrupt grace period has elapsed, pod is now disruptable")


def test_an_unreadable_value_is_ignored_with_a_warning_in_karpenters_words() -> None:
    cases = {
        "soon": 'failed to parse "soon" as a duration: time: invalid duration "soon"',
        "10": 'failed to parse "10" as a duration: time: missing unit in duration "10"',
        "0s": 'duration "0s" must be positive',
        # Go reads a negative duration; Karpenter then finds it not positive.
        "-5m": 'duration "-5m" must be positive',
        "1d": 'failed to parse "1d" as a duration: time: unknown unit "d" in duration "1d"',
    }
    for value, problem in cases.items():
        event = do_not_disrupt_event(pod(value), NOW)
        assert event is not None
        assert (event.type, event.reason, event.note) == (
            "Warning", "InvalidDoNotDisruptAnnotation",
            f"Invalid karpenter.sh/do-not-disrupt annotation: {problem}, ignoring annotation"
        ), value


def test_true_and_a_pod_not_started_yet_say_nothing() -> None:
    assert do_not_disrupt_event(pod("true"), NOW) is None
    assert do_not_disrupt_event(pod("30m", started=None), NOW) is None


def test_consolidation_tells_the_pod_its_protection_ends_then_ended(world: World) -> None:
    world.apply(WORKSHOP)
    world.scale("inflate", 5)
    assert world.settle()
    world.apply(GUARD % "20m")
    assert world.settle()
    world.scale("inflate", 1)
    assert world.settle()
    (until,) = {e["note"] for e in world.events("DoNotDisruptUntil", kind="Pod")}
    started = parse_time(world.cluster.get("Pod", "guard", "default")["status"]["startTime"])
    assert until.endswith(format_time(started + timedelta(minutes=20)))
    world.advance(20 * 60)
    assert world.settle()
    assert world.events("DoNotDisruptGracePeriodElapsed", kind="Pod")
    expect_no_controller_errors(world)


def test_a_bad_annotation_is_reported_on_the_pod(world: World) -> None:
    world.apply(WORKSHOP)
    world.scale("inflate", 5)
    assert world.settle()
    world.apply(GUARD % "forever")
    assert world.settle()
    world.scale("inflate", 1)
    assert world.settle()
    (event, *_) = world.events("InvalidDoNotDisruptAnnotation", kind="Pod")
    assert event["regarding"]["name"] == "guard"
    expect_no_controller_errors(world)
