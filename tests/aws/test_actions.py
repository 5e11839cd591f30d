"""The action list infra/ builds the controller's IAM policy from."""

from __future__ import annotations

import botocore.session

from nodewright.cloud.aws.actions import ACTION_SCOPES, AWS_ACTIONS, ActionScope

# Permissions that are not API operations of their own.
PERMISSION_ONLY = {"iam:PassRole"}


def actions_in_scope(scope: ActionScope) -> tuple[str, ...]:
    """The IAM action names of one scope, in declaration order."""
    return tuple(use.action for use in AWS_ACTIONS if use.scope == scope)


def test_every_action_is_a_real_operation_listed_once_with_a_known_scope() -> None:
    session = botocore.session.get_session()
    names = [use.action for use in AWS_ACTIONS]
    assert len(names) == len(set(names))
    for use in AWS_ACTIONS:
        assert use.scope in ACTION_SCOPES
        assert use.why
        if use.action in PERMISSION_ONLY:
            continue
        model = session.get_service_model(use.service)
        assert use.action.split(":", 1)[1] in model.operation_names, use.action


def test_launching_requires_tagged_creation_and_passing_the_node_role() -> None:
    assert set(actions_in_scope("create-tagged")) == {
        "ec2:CreateFleet",
        "ec2:RunInstances",
        "ec2:CreateLaunchTemplate",
        "ec2:CreateTags",
    }
    assert actions_in_scope("pass-role") == ("iam:PassRole",)
    assert set(actions_in_scope("queue")) == {
        "sqs:GetQueueUrl",
        "sqs:ReceiveMessage",
        "sqs:DeleteMessage",
    }
