"""Teams get their NodePools; invalid NodePools and config stop the program with the field."""

from __future__ import annotations

from typing import Any

import pytest
from infra_harness import (
    ProgramRun,
    run_failing_program,
    run_program,
    run_program_with_outputs,
)

from infra.components import InvalidResourceError, NodePool, NodePoolArgs
from infra.config import StackConfigError


def node_pool(run: ProgramRun, name: str) -> dict[str, Any]:
    spec: dict[str, Any] = run.one("kubernetes:karpenter.sh/v1:NodePool", name).inputs["spec"]
    return spec


def test_a_team_in_config_gets_a_nodepool_labelled_and_tainted_for_it(dev: ProgramRun) -> None:
    spec = node_pool(dev, "team-data")
    template = spec["template"]
    assert template["metadata"]["labels"] == {"team": "data"}
    assert template["spec"]["taints"] == [
        {"key": "team", "value": "data", "effect": "NoSchedule"}
    ]
    requirements = {r["key"]: r["values"] for r in template["spec"]["requirements"]}
    assert requirements["karpenter.k8s.aws/instance-family"] == ["r6i", "r7i"]
    assert requirements["karpenter.sh/capacity-type"] == ["spot", "on-demand"]
    assert spec["limits"] == {"cpu": "64", "memory": "256Gi"}
    assert template["spec"]["nodeClassRef"] == {
        "group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"
    }


def test_a_team_can_have_its_own_node_class(prod: ProgramRun) -> None:
    assert node_pool(prod, "team-payments")["template"]["spec"]["nodeClassRef"]["name"] == (
        "team-payments"
    )
    own = prod.one("kubernetes:karpenter.k8s.aws/v1:EC2NodeClass", "team-payments").inputs["spec"]
    assert own["role"] == "NodewrightNode-nodewright-prod"
    assert own["tags"] == {"team": "payments", "cost-center": "5678"}
    assert own["subnetSelectorTerms"] == [{"tags": {"karpenter.sh/discovery": "nodewright-prod"}}]
    assert own["blockDeviceMappings"][0]["ebs"]["volumeSize"] == "100Gi"
    search = node_pool(prod, "team-search")
    assert search["template"]["spec"]["nodeClassRef"]["name"] == "default"


def test_adding_a_team_through_config_adds_its_nodepool() -> None:
    teams = {"ml": {"limits": {"cpu": "32"}, "instanceFamilies": ["g5"],
                    "capacityTypes": ["spot"]}}
    run = run_program_with_outputs("dev", {"teams": teams})
    assert run.outputs["nodePoolNames"] == ["general", "team-ml"]
    labels = node_pool(run, "team-ml")["template"]["metadata"]["labels"]
    assert labels == {"team": "ml"}


def test_an_invalid_nodepool_in_config_stops_the_program_naming_the_field() -> None:
    broken = {"general": {"template": {"spec": {"requirements": [
        {"key": "karpenter.sh/capacity-type", "operator": "Among", "values": ["spot"]}
    ]}}}}
    with pytest.raises(StackConfigError) as caught:
        run_program("dev", {"nodePools": broken})
    message = str(caught.value)
    assert message.startswith("nodewright:nodePools.general: NodePool/general: ")
    assert "spec.template.spec.requirements[0].operator" in message
    assert "Traceback" not in message


def test_an_invalid_team_limit_names_the_team_and_the_field() -> None:
    with pytest.raises(StackConfigError) as caught:
        run_program("dev", {"teams": {"data": {"limits": {"cpu": "lots"}}}})
    assert str(caught.value).startswith("nodewright:teams.data: NodePool/team-data: spec.limits")


def test_nothing_is_declared_before_the_nodepools_are_checked() -> None:
    broken = {"general": {"limits": {"cpu": "lots"}}}
    error, declared = run_failing_program("prod", {"nodePools": broken})
    assert isinstance(error, StackConfigError)
    assert "nodewright:nodePools.general" in str(error)
    assert [(r.type, r.name) for r in declared] == []


def test_a_failure_after_the_checks_leaves_what_was_declared_visible(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The harness sees what a failed run declared, so the test above can fail: here the
    program breaks at its last step, after the network, the cluster and the rest."""
    from infra import program

    def broken(*_args: object, **_kwargs: object) -> object:
        raise StackConfigError("nodePools", "broken at the last step")

    monkeypatch.setattr(program, "build_node_resources", broken)
    error, declared = run_failing_program("prod")
    assert isinstance(error, StackConfigError)
    types = {resource.type for resource in declared}
    assert "aws:iam/role:Role" in types
    assert any(t.startswith("kubernetes:apiextensions.k8s.io") for t in types)


def test_a_missing_required_key_names_the_key() -> None:
    with pytest.raises(StackConfigError, match=r"^nodewright:clusterName: is required"):
        run_program("dev", {"clusterName": None})


def test_an_existing_vpc_is_tagged_not_created() -> None:
    vpc = {"vpcId": "vpc-0abc", "privateSubnetIds": ["subnet-a", "subnet-b"]}
    run = run_program_with_outputs("dev", {"vpc": vpc})
    assert not run.of_type("aws:ec2/vpc:Vpc")
    assert not run.of_type("aws:ec2/natGateway:NatGateway")
    tags = [t.inputs for t in run.of_type("aws:ec2/tag:Tag")]
    tagged = {t["resourceId"] for t in tags if t["key"] == "karpenter.sh/discovery"}
    assert tagged == {"subnet-a", "subnet-b", "sg-0eksclustersg"}
    assert run.outputs["vpcId"] == "vpc-0abc"


def test_without_interruption_there_is_no_queue_and_no_queue_permission() -> None:
    run = run_program_with_outputs("dev", {"interruption": False})
    assert not run.of_type("aws:sqs/queue:Queue")
    assert not run.of_type("aws:cloudwatch/eventRule:EventRule")
    assert not any("sqs:" in policy.inputs["policy"]
                   for policy in run.of_type("aws:iam/policy:Policy"))
    assert run.outputs["interruptionQueueName"] == ""


def test_the_typed_component_refuses_an_invalid_spec_before_registering() -> None:
    spec = {
        "template": {"spec": {
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                             "name": "default"},
            "requirements": [],
            "expireAfter": "forever",
        }},
    }
    with pytest.raises(InvalidResourceError) as caught:
        NodePool("web", NodePoolArgs(spec=spec))
    (line,) = str(caught.value).splitlines()
    assert line.startswith("NodePool/web: spec.template.spec.expireAfter: 'forever' is not")
