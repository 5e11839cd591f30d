"""Karpenter test/suites/integration/nodeclass_test.go (v1.14.1) on the moto account: the
node class's dry runs (the operator's default, DISABLE_DRY_RUN unset) under an IAM policy
that denies one EC2 action. moto enforces no IAM policy: `Deny` answers every call of the
denied actions as EC2 answers an identity whose policy denies them, UnauthorizedOperation."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from botocore.awsrequest import AWSResponse

from nodewright.cloud.aws.clients import AwsClients
from tests.aws_e2e.moto_world import node_class

from .moto_env import Env


class Deny:
    """An explicit Deny of the given EC2 actions in the controller's role policy."""

    def __init__(self, ec2: Any, *actions: str) -> None:
        self.ec2 = ec2
        self.actions = [action.removeprefix("ec2:") for action in actions]
        for action in self.actions:
            ec2.meta.events.register(f"before-call.ec2.{action}", self._deny)

    def _deny(self, model: Any, **_: Any) -> tuple[AWSResponse, dict[str, Any]]:
        parsed: dict[str, Any] = {
            "Error": {"Code": "UnauthorizedOperation", "Message": (
                f"You are not authorized to perform this operation. User: arn:aws:sts::"
                f"123456789012:assumed-role/KarpenterControllerRole-demo is not authorized "
                f"to perform: ec2:{model.name} with an explicit deny in an identity-based "
                f"policy")},
            "ResponseMetadata": {"HTTPStatusCode": 403}}
        return AWSResponse("https://moto", 403, {}, json.dumps(parsed).encode()), parsed

    def lift(self) -> None:
        for action in self.actions:
            self.ec2.meta.events.unregister(f"before-call.ec2.{action}", self._deny)


@pytest.fixture
def dry_running(env: Env) -> Iterator[Env]:
    """The controllers as the operator runs them by default: with dry runs."""
    env.cloud.dry_run = True
    yield env


def validation(env: Env) -> Mapping[str, Any]:
    found = (env.get("EC2NodeClass", "default").get("status") or {}).get("conditions") or []
    return next((c for c in found if c["type"] == "ValidationSucceeded"), {})


def validated(env: Env, status: str) -> bool:
    condition = validation(env)
    generation = env.get("EC2NodeClass", "default")["metadata"]["generation"]
    return condition.get("status") == status and condition.get("observedGeneration") == (
        generation)


@pytest.mark.parametrize(("action", "reason"), [
    pytest.param("ec2:CreateFleet", "CreateFleetAuthCheckFailed",
                 id="should fail when CreateFleet is denied"),
    pytest.param("ec2:CreateLaunchTemplate", "CreateLaunchTemplateAuthCheckFailed",
                 id="should fail when CreateLaunchTemplate is denied"),
    pytest.param("ec2:RunInstances", "RunInstancesAuthCheckFailed",
                 id="should fail when RunInstances is denied"),
])
def test_a_denied_launch_action_fails_validation(
        dry_running: Env, clients: AwsClients, action: str, reason: str) -> None:
    """Karpenter test/suites/integration/nodeclass_test.go DescribeTable("IAM Permission
    Failure Tests"): the Entry named by the case id."""
    env = dry_running
    Deny(clients.ec2, action)
    env.apply(node_class(metadataOptions={"httpPutResponseHopLimit": 1}))

    assert env.run_until(lambda: validated(env, "False"), timeout=120)
    assert validation(env)["reason"] == reason
    ready = env.conditions()["Ready"]
    assert ready == ("False", "ValidationSucceeded=False")


def test_with_every_permission_validation_succeeds(dry_running: Env) -> None:
    """Karpenter test/suites/integration/nodeclass_test.go It("should succeed with all
    required permissions")."""
    env = dry_running
    env.apply(node_class())

    assert env.run_until(lambda: validated(env, "True"), timeout=120)


def test_without_dry_runs_a_denied_launch_does_not_fail_validation(
        dry_running: Env, clients: AwsClients) -> None:
    """Karpenter test/suites/integration/nodeclass_test.go It("should succeed EC2NodeClass
    validation when dry run validation is disabled") — the settings change restarts the
    controller: the new process runs without dry runs and has no verdict cached."""
    env = dry_running
    Deny(clients.ec2, "ec2:CreateFleet", "ec2:CreateLaunchTemplate", "ec2:RunInstances")
    env.apply(node_class(metadataOptions={"httpPutResponseHopLimit": 1}))
    assert env.run_until(lambda: validated(env, "False"), timeout=120)

    env.cloud.dry_run = False  # DISABLE_DRY_RUN=true
    env.cloud.validations.clear()
    env.patch("EC2NodeClass", "default",
              {"spec": {"metadataOptions": {"httpPutResponseHopLimit": 2}}})

    assert env.run_until(lambda: validated(env, "True"), timeout=120)
