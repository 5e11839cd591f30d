"""Karpenter's EC2 batching (pkg/batcher), ported: calls made together go out as one, and every
caller still gets its own answer. Each test names the Karpenter test it comes from.

The EC2 here is a recording stand-in in the manner of Karpenter's fake.EC2API (calls kept as
sent, outputs and errors set per test). The windows close on their item count (the number
of callers), not on a timer, so which calls share a batch never depends on timing.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import pytest
from botocore.exceptions import ClientError

from nodewright.cloud.aws.batcher import Batcher, Result, Window
from nodewright.cloud.aws.ec2_batcher import BatchWindows, EC2Batcher
from tests.controllers.metric_samples import sample_value

T = TypeVar("T")
SLOW = 30.0  # a window that only its item count closes


def window(items: int, workers: int = 100) -> Window:
    return Window(idle_seconds=SLOW, max_seconds=SLOW, max_items=items, max_workers=workers)


def windows(items: int) -> BatchWindows:
    return BatchWindows(window(items), window(items), window(items))


def together(calls: list[Callable[[], T]]) -> list[T | BaseException]:
    """Run the calls side by side; each one's result or error."""
    with ThreadPoolExecutor(max_workers=len(calls)) as pool:
        futures = [pool.submit(call) for call in calls]
        return [future.exception() or future.result() for future in futures]


def client_error(operation: str, code: str = "InternalError") -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": "error"}}, operation)


class FakeEC2:
    """Records CreateFleet, DescribeInstances, TerminateInstances and CreateTags as sent."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.calls: dict[str, list[dict[str, Any]]] = {}
        self.instances: set[str] = set()
        self.fleet_output: dict[str, Any] | None = None
        # The first DescribeInstances / TerminateInstances answers for these ids only
        # (EC2's eventual consistency); later calls answer for every known instance.
        self.first_answer_only: set[str] | None = None
        self.errors: dict[str, int] = {}  # operation -> calls left to fail (-1: all)
        self.launched = 0

    def _record(self, operation: str, request: dict[str, Any]) -> int:
        with self.lock:
            self.calls.setdefault(operation, []).append(request)
            left = self.errors.get(operation, 0)
            if left:
                self.errors[operation] = left - 1 if left > 0 else left
                raise client_error(operation)
            return len(self.calls[operation])

    def create_fleet(self, **request: Any) -> dict[str, Any]:
        self._record("CreateFleet", request)
        if self.fleet_output is not None:
            return self.fleet_output
        wanted = request["TargetCapacitySpecification"]["TotalTargetCapacity"]
        with self.lock:
            ids = [f"i-{self.launched + n}" for n in range(wanted)]
            self.launched += wanted
        return {"FleetId": "fleet-1", "Errors": [], "Instances": [{"InstanceIds": ids}]}

    def create_tags(self, **request: Any) -> None:
        self._record("CreateTags", request)

    def get_paginator(self, name: str) -> FakeEC2:
        assert name == "describe_instances"
        return self

    def paginate(self, **request: Any) -> Iterator[dict[str, Any]]:
        count = self._record("DescribeInstances", request)
        known = self.instances
        if count == 1 and self.first_answer_only is not None:
            known = self.first_answer_only
        yield {"Reservations": [{"Instances": [{"InstanceId": i} for i in request[
            "InstanceIds"] if i in known]}]}

    def terminate_instances(self, **request: Any) -> dict[str, Any]:
        count = self._record("TerminateInstances", request)
        known = self.instances
        if count == 1 and self.first_answer_only is not None:
            known = self.first_answer_only
        return {"TerminatingInstances": [
            {"InstanceId": i, "PreviousState": {"Name": "running"},
             "CurrentState": {"Name": "shutting-down"}}
            for i in request["InstanceIds"] if i in known]}

    def sent(self, operation: str) -> list[dict[str, Any]]:
        return self.calls.get(operation, [])


@pytest.fixture
def ec2() -> FakeEC2:
    return FakeEC2()


def fleet_request(zone: str = "us-east-1", nodeclaim: str = "", token: str = "") -> dict[
        str, Any]:
    tags = [{"Key": "karpenter.sh/nodepool", "Value": "default"}]
    if nodeclaim:
        tags += [{"Key": "Name", "Value": f"default/{nodeclaim}"},
                 {"Key": "karpenter.sh/nodeclaim", "Value": nodeclaim}]
    request: dict[str, Any] = {
        "Type": "instant",
        "LaunchTemplateConfigs": [{
            "LaunchTemplateSpecification": {"LaunchTemplateName": "my-template"},
            "Overrides": [{"AvailabilityZone": zone}]}],
        "TargetCapacitySpecification": {"TotalTargetCapacity": 1},
        "TagSpecifications": [{"ResourceType": "instance", "Tags": tags}],
    }
    if token:
        request["ClientToken"] = token
    return request


def instance_ids(response: Mapping[str, Any]) -> list[str]:
    return [i for instance in response["Instances"] for i in instance["InstanceIds"]]


def fleet_errors() -> list[dict[str, Any]]:
    return [{"ErrorCode": code, "ErrorMessage": code, "LaunchTemplateAndOverrides": {
        "LaunchTemplateSpecification": {"LaunchTemplateName": "my-template"},
        "Overrides": {"AvailabilityZone": "us-east-1"}}}
        for code in ("some-error", "some-other-error")]


# --- pkg/batcher/suite_test.go ----------------------------------------------------------


class Executions:
    """An executor that holds every group until released, counting how many run at once."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.active = 0
        self.peak = 0
        self.completed = 0
        self.release = threading.Event()

    def __call__(self, items: list[str]) -> list[Result[str]]:
        with self.lock:
            self.active += 1
            self.peak = max(self.peak, self.active)
        self.release.wait(SLOW)
        with self.lock:
            self.active -= 1
            self.completed += 1
        return [Result(output="") for _ in items]

    def wait_for(self, active: int) -> None:
        deadline = time.monotonic() + SLOW
        while self.active < active and time.monotonic() < deadline:
            time.sleep(0.01)


def fake_batcher(executions: Executions, workers: int, items: int) -> Batcher[str, str]:
    # Every item its own group (the default hasher over distinct names).
    return Batcher("fake", Window(idle_seconds=0.1, max_seconds=1.0, max_items=items,
                                  max_workers=workers), executions, key=lambda item: item)


def add_all(batcher: Batcher[str, str], count: int) -> list[threading.Thread]:
    threads = [threading.Thread(target=batcher.add, args=(f"item-{n}",), daemon=True)
               for n in range(count)]
    for thread in threads:
        thread.start()
    return threads


def test_no_more_groups_run_at_once_than_the_batcher_has_workers() -> None:
    """suite_test.go: It("should limit the number of threads that run concurrently from the
    batcher")."""
    executions = Executions()
    threads = add_all(fake_batcher(executions, workers=100, items=300), 300)
    executions.wait_for(100)
    time.sleep(0.2)  # room for a 101st to start, were the limit not kept

    assert executions.active == 100
    executions.release.set()
    for thread in threads:
        thread.join(SLOW)
    assert executions.peak == 100
    assert executions.completed == 300


def test_three_hundred_groups_run_side_by_side_with_three_hundred_workers() -> None:
    """suite_test.go: It("should process 300 items in parallel to get quicker batching")."""
    executions = Executions()
    threads = add_all(fake_batcher(executions, workers=300, items=300), 300)
    executions.wait_for(300)

    assert executions.active == 300
    executions.release.set()
    for thread in threads:
        thread.join(SLOW)
    assert executions.completed == 300


def sample(name: str, batcher: str) -> float:
    return sample_value(name, {"batcher": batcher}) or 0.0


def test_each_group_run_is_counted_in_the_batch_size_histogram() -> None:
    """suite_test.go: It("should create a batch_size metric when a batch is run")."""
    before = sample("karpenter_cloudprovider_batcher_batch_size_count", "fake")
    executions = Executions()
    executions.release.set()
    for thread in add_all(fake_batcher(executions, workers=100, items=100), 100):
        thread.join(SLOW)

    assert sample("karpenter_cloudprovider_batcher_batch_size_count", "fake") - before >= 100


def test_each_window_is_timed_in_the_batch_time_histogram() -> None:
    """suite_test.go: It("should create a batch_window_duration metric when a batch is
    run")."""
    before = sample("karpenter_cloudprovider_batcher_batch_time_seconds_count", "fake")
    executions = Executions()
    executions.release.set()
    for thread in add_all(fake_batcher(executions, workers=100, items=100), 100):
        thread.join(SLOW)

    assert sample("karpenter_cloudprovider_batcher_batch_time_seconds_count", "fake") > before


def test_an_executor_that_answers_too_few_calls_fails_the_rest() -> None:
    """batcher.go runCalls: a caller left without a result gets an error, never a hang."""
    batcher: Batcher[str, str] = Batcher(
        "short", window(3), lambda items: [Result(output="only one")])

    answers = together([lambda n=n: batcher.add(f"item-{n}") for n in range(3)])

    assert [a for a in answers if not isinstance(a, RuntimeError)] == ["only one"]
    assert sum(isinstance(a, RuntimeError) for a in answers) == 2


# --- pkg/batcher/createfleet_test.go ----------------------------------------------------


def test_the_same_fleet_requests_go_out_as_one_fleet(ec2: FakeEC2) -> None:
    """createfleet_test.go: It("should batch the same inputs into a single call")."""
    batch = EC2Batcher(ec2, windows(5))  # type: ignore[arg-type]

    answers = together([lambda: batch.create_fleet(fleet_request()) for _ in range(5)])

    assert [len(instance_ids(a)) for a in answers] == [1] * 5  # type: ignore[arg-type]
    assert len({instance_ids(a)[0] for a in answers}) == 5  # type: ignore[arg-type]
    (call,) = ec2.sent("CreateFleet")
    assert call["TargetCapacitySpecification"]["TotalTargetCapacity"] == 5


def test_different_fleet_requests_go_out_as_one_fleet_each(ec2: FakeEC2) -> None:
    """createfleet_test.go: It("should batch different inputs into multiple calls")."""
    batch = EC2Batcher(ec2, windows(5))  # type: ignore[arg-type]
    zones = ["us-east-1", "us-east-1", "us-east-1", "us-east-2", "us-east-1"]

    answers = together([lambda zone=zone: batch.create_fleet(fleet_request(zone))
                         for zone in zones])

    assert [len(instance_ids(a)) for a in answers] == [1] * 5  # type: ignore[arg-type]
    sent = {call["LaunchTemplateConfigs"][0]["Overrides"][0]["AvailabilityZone"]:
            call["TargetCapacitySpecification"]["TotalTargetCapacity"]
            for call in ec2.sent("CreateFleet")}
    assert sent == {"us-east-1": 4, "us-east-2": 1}


def test_a_fleets_errors_reach_every_caller(ec2: FakeEC2) -> None:
    """createfleet_test.go: It("should return any errors to callers")."""
    ec2.fleet_output = {"FleetId": "some-id", "Errors": fleet_errors(), "Instances": [
        {"InstanceIds": ["id-1", "id-2", "id-3", "id-4", "id-5"]}]}
    batch = EC2Batcher(ec2, windows(5))  # type: ignore[arg-type]

    answers = together([lambda: batch.create_fleet(fleet_request()) for _ in range(5)])

    assert all(len(instance_ids(a)) == 1 for a in answers)  # type: ignore[arg-type]
    assert all(len(a["Errors"]) == 2 for a in answers)  # type: ignore[index]
    (call,) = ec2.sent("CreateFleet")
    assert call["TargetCapacitySpecification"]["TotalTargetCapacity"] == 5


def test_a_partly_fulfilled_fleet_gives_its_instances_out_and_its_errors_to_all(
        ec2: FakeEC2) -> None:
    """createfleet_test.go: It("should handle partial fulfillment")."""
    ec2.fleet_output = {"FleetId": "some-id", "Errors": fleet_errors(), "Instances": [
        {"InstanceIds": ["id-1", "id-2", "id-3"]}]}
    batch = EC2Batcher(ec2, windows(5))  # type: ignore[arg-type]

    answers = together([lambda: batch.create_fleet(fleet_request()) for _ in range(5)])

    assert sorted(len(instance_ids(a)) for a in answers) == [0, 0, 1, 1, 1]  # type: ignore
    assert all(len(a["Errors"]) == 2 for a in answers)  # type: ignore[index]
    (call,) = ec2.sent("CreateFleet")
    assert call["TargetCapacitySpecification"]["TotalTargetCapacity"] == 5


def test_nodeclaims_asking_the_same_share_a_fleet_and_each_instance_gets_its_own_tags(
        ec2: FakeEC2) -> None:
    """Ours: a NodeClaim's name and client token do not keep equal requests apart; the
    merged fleet carries only the shared tags, and each instance is tagged with the Name and
    karpenter.sh/nodeclaim of the NodeClaim it went to."""
    batch = EC2Batcher(ec2, windows(3))  # type: ignore[arg-type]
    claims = ["alpha", "bravo", "charlie"]

    answers = together([lambda c=c: batch.create_fleet(fleet_request(nodeclaim=c, token=c))
                        for c in claims])

    (call,) = ec2.sent("CreateFleet")
    assert call["TargetCapacitySpecification"]["TotalTargetCapacity"] == 3
    assert {t["Key"] for t in call["TagSpecifications"][0]["Tags"]} == {"karpenter.sh/nodepool"}
    assert call["ClientToken"] not in claims
    tagged = {c["Resources"][0]: {t["Key"]: t["Value"] for t in c["Tags"]}
              for c in ec2.sent("CreateTags")}
    for claim, answer in zip(claims, answers, strict=True):
        (instance,) = instance_ids(answer)  # type: ignore[arg-type]
        assert tagged[instance] == {"Name": f"default/{claim}",
                                    "karpenter.sh/nodeclaim": claim}


def test_a_lone_fleet_request_is_sent_exactly_as_made(ec2: FakeEC2) -> None:
    """Ours: with no one to share a fleet with, the request keeps its client token and its
    NodeClaim's tags, and no tagging call follows."""
    batch = EC2Batcher(ec2, windows(1))  # type: ignore[arg-type]
    request = fleet_request(nodeclaim="alpha", token="alpha-token")

    batch.create_fleet(request)

    assert ec2.sent("CreateFleet") == [request]
    assert ec2.sent("CreateTags") == []


def test_an_instance_beyond_the_number_asked_for_is_terminated(ec2: FakeEC2) -> None:
    """createfleet.go logs and ignores an instance more than requested; we terminate it, so
    a batch never leaves an instance no NodeClaim owns."""
    ec2.fleet_output = {"FleetId": "some-id", "Errors": [], "Instances": [
        {"InstanceIds": ["id-1", "id-2", "id-3"]}]}
    batch = EC2Batcher(ec2, windows(2))  # type: ignore[arg-type]

    answers = together([lambda: batch.create_fleet(fleet_request()) for _ in range(2)])

    assert sorted(instance_ids(a)[0] for a in answers) == ["id-1", "id-2"]  # type: ignore
    assert ec2.sent("TerminateInstances") == [{"InstanceIds": ["id-3"]}]


def test_a_fleet_request_for_more_than_one_instance_is_refused(ec2: FakeEC2) -> None:
    """createfleet.go CreateFleet: "expected to receive a single instance only"."""
    request = fleet_request()
    request["TargetCapacitySpecification"]["TotalTargetCapacity"] = 2

    with pytest.raises(ValueError, match="one instance"):
        EC2Batcher(ec2, windows(1)).create_fleet(request)  # type: ignore[arg-type]
    assert ec2.sent("CreateFleet") == []


# --- pkg/batcher/describeinstances_test.go -----------------------------------------------


def test_describes_of_several_instances_go_out_as_one_call(ec2: FakeEC2) -> None:
    """describeinstances_test.go: It("should batch input into a single call")."""
    ids = ["i-1", "i-2", "i-3", "i-4", "i-5"]
    ec2.instances.update(ids)
    batch = EC2Batcher(ec2, windows(5))  # type: ignore[arg-type]

    answers = together([lambda i=i: batch.describe_instance(i) for i in ids])

    assert [[raw["InstanceId"] for raw in a] for a in answers] == [[i] for i in ids]  # type: ignore
    (call,) = ec2.sent("DescribeInstances")
    assert sorted(call["InstanceIds"]) == ids


def test_describes_of_the_same_instance_share_one_call(ec2: FakeEC2) -> None:
    """describeinstances_test.go: It("should batch input correctly when receiving multiple
    calls with the same instance id"). We send each id once (Karpenter repeats it)."""
    ids = ["i-1", "i-1", "i-1", "i-2", "i-2"]
    ec2.instances.update(ids)
    batch = EC2Batcher(ec2, windows(5))  # type: ignore[arg-type]

    answers = together([lambda i=i: batch.describe_instance(i) for i in ids])

    assert [[raw["InstanceId"] for raw in a] for a in answers] == [[i] for i in ids]  # type: ignore
    (call,) = ec2.sent("DescribeInstances")
    assert sorted(call["InstanceIds"]) == ["i-1", "i-2"]


def test_instances_the_batched_describe_missed_are_asked_about_alone(ec2: FakeEC2) -> None:
    """describeinstances_test.go: It("should handle partial terminations on batched call and
    recover with individual requests")."""
    ids = ["i-1", "i-2", "i-3"]
    ec2.instances.update(ids)
    ec2.first_answer_only = {"i-1"}
    running = [{"Name": "instance-state-name", "Values": ["running"]}]
    batch = EC2Batcher(ec2, windows(3))  # type: ignore[arg-type]

    answers = together([lambda i=i: batch.describe_instance(i, running) for i in ids])

    assert [[raw["InstanceId"] for raw in a] for a in answers] == [[i] for i in ids]  # type: ignore
    first, *alone = ec2.sent("DescribeInstances")
    assert len(first["InstanceIds"]) == 3
    assert sorted(c["InstanceIds"][0] for c in alone) == ["i-2", "i-3"]
    assert all(c["Filters"] == running for c in [first, *alone])


def test_a_failed_batched_describe_is_retried_per_instance_and_fails_every_caller(
        ec2: FakeEC2) -> None:
    """describeinstances_test.go: It("should return errors to all callers when erroring on
    the batched call")."""
    ec2.errors["DescribeInstances"] = 6
    ids = ["i-1", "i-2", "i-3", "i-4", "i-5"]
    batch = EC2Batcher(ec2, windows(5))  # type: ignore[arg-type]

    answers = together([lambda i=i: batch.describe_instance(i) for i in ids])

    assert all(isinstance(a, ClientError) for a in answers)
    assert len(ec2.sent("DescribeInstances")) == 6


# --- pkg/batcher/terminateinstances_test.go ----------------------------------------------


def test_terminations_of_several_instances_go_out_as_one_call(ec2: FakeEC2) -> None:
    """terminateinstances_test.go: It("should batch input into a single call")."""
    ids = ["i-1", "i-2", "i-3", "i-4", "i-5"]
    ec2.instances.update(ids)
    batch = EC2Batcher(ec2, windows(5))  # type: ignore[arg-type]

    answers = together([lambda i=i: batch.terminate_instance(i) for i in ids])

    assert [a["InstanceId"] for a in answers] == ids  # type: ignore[index]
    (call,) = ec2.sent("TerminateInstances")
    assert sorted(call["InstanceIds"]) == ids


def test_terminations_of_the_same_instance_share_one_call(ec2: FakeEC2) -> None:
    """terminateinstances_test.go: It("should batch input correctly when receiving multiple
    calls with the same instance id"). We send each id once."""
    ids = ["i-1", "i-1", "i-1", "i-2", "i-2"]
    ec2.instances.update(ids)
    batch = EC2Batcher(ec2, windows(5))  # type: ignore[arg-type]

    answers = together([lambda i=i: batch.terminate_instance(i) for i in ids])

    assert [a["InstanceId"] for a in answers] == ids  # type: ignore[index]
    (call,) = ec2.sent("TerminateInstances")
    assert sorted(call["InstanceIds"]) == ["i-1", "i-2"]


def test_instances_the_batched_termination_missed_are_terminated_alone(ec2: FakeEC2) -> None:
    """terminateinstances_test.go: It("should handle partial terminations on batched call and
    recover with individual requests")."""
    ids = ["i-1", "i-2", "i-3"]
    ec2.instances.update(ids)
    ec2.first_answer_only = {"i-1"}
    batch = EC2Batcher(ec2, windows(3))  # type: ignore[arg-type]

    answers = together([lambda i=i: batch.terminate_instance(i) for i in ids])

    assert [a["InstanceId"] for a in answers] == ids  # type: ignore[index]
    first, *alone = ec2.sent("TerminateInstances")
    assert len(first["InstanceIds"]) == 3
    assert sorted(c["InstanceIds"][0] for c in alone) == ["i-2", "i-3"]


def test_a_failed_batched_termination_is_retried_per_instance_and_fails_every_caller(
        ec2: FakeEC2) -> None:
    """terminateinstances_test.go: It("should return errors to all callers when erroring on
    the batched call")."""
    ec2.errors["TerminateInstances"] = 6
    ids = ["i-1", "i-2", "i-3", "i-4", "i-5"]
    batch = EC2Batcher(ec2, windows(5))  # type: ignore[arg-type]

    answers = together([lambda i=i: batch.terminate_instance(i) for i in ids])

    assert all(isinstance(a, ClientError) for a in answers)
    assert len(ec2.sent("TerminateInstances")) == 6
