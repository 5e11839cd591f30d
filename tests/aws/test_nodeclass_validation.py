"""The EC2NodeClass ValidationSucceeded condition: dry-run authorization checks.

Ported from aws/karpenter-provider-aws v1.14.1 pkg/controllers/nodeclass/validation_test.go
(Describe "NodeClass Validation Status Controller"); each test names its It/Entry. EC2 is
moto, which answers DryRun with DryRunOperation; refusals are queued in front of it
(tests/aws/failing_calls.py), as the Go suite sets errors on its fake EC2.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any

import pytest

from nodewright.api.core import Condition
from nodewright.api.ec2nodeclass import EC2NodeClass
from nodewright.cloud.aws import validation
from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.provider import AwsCloudProvider
from nodewright.scheduling.pricing import OfflinePriceSource

from .failing_calls import FailingCalls, error, failing
from .world import (
    CLUSTER,
    K8S_VERSION,
    X86_IMAGE,
    FakeClock,
    World,
    node_class,
    seed_public_parameter,
)


@pytest.fixture
def checked(clients: AwsClients, world: World, clock: FakeClock) -> AwsCloudProvider:
    """The provider as the operator runs it: dry runs on (DISABLE_DRY_RUN=false)."""
    return AwsCloudProvider(clients, CLUSTER, clock=clock, prices=OfflinePriceSource(),
                            dry_run=True)


@pytest.fixture
def calls(clients: AwsClients) -> Any:
    with failing(clients.ec2) as queued:
        yield queued


def conditions(provider: AwsCloudProvider, node_class_: EC2NodeClass) -> dict[str, Condition]:
    """The node class's conditions as a fresh resolution writes them (past every cache but
    the validation cache, which is the subject)."""
    provider.clock.advance(61)  # type: ignore[attr-defined]
    return {c.type: c for c in provider.resolve(node_class_).conditions()}


def validation_of(provider: AwsCloudProvider, node_class_: EC2NodeClass) -> Condition:
    return conditions(provider, node_class_)["ValidationSucceeded"]


def count(calls: FailingCalls, operation: str) -> int:
    return len(calls.params.get(operation, []))


# --- Preconditions ---------------------------------------------------------------------


@pytest.mark.parametrize(("condition", "spec"), [
    ("AMIsReady", {"amiSelectorTerms": [{"id": "ami-00000000000000000"}]}),
    ("InstanceProfileReady", {"role": None, "instanceProfile": "missing-profile"}),
    ("SecurityGroupsReady", {"securityGroupSelectorTerms": [{"tags": {"none": "none"}}]}),
    ("SubnetsReady", {"subnetSelectorTerms": [{"tags": {"none": "none"}}]}),
])
def test_a_false_required_condition_fails_validation_as_dependencies_not_ready(
    checked: AwsCloudProvider, calls: FailingCalls, condition: str, spec: dict[str, Any],
) -> None:
    """DescribeTable("should set validated status condition to false when any required
    condition is false"), Entry per condition: AMIsReady, InstanceProfileReady,
    SecurityGroupsReady, SubnetsReady."""
    body = {key: value for key, value in spec.items() if value is not None}
    broken = node_class(**body)
    if "role" in spec:
        broken = EC2NodeClass.model_validate({
            **broken.to_manifest(),
            "spec": {k: v for k, v in broken.to_manifest()["spec"].items() if k != "role"}})
    found = conditions(checked, broken)
    assert found[condition].status == "False"
    assert found["ValidationSucceeded"].status == "False"
    assert found["ValidationSucceeded"].reason == "DependenciesNotReady"
    assert found["ValidationSucceeded"].message == (
        "Awaiting AMI, Instance Profile, Security Group, and Subnet resolution")
    assert count(calls, "CreateFleet") == count(calls, "RunInstances") == 0


# --- Tag Validation ----------------------------------------------------------------------


@pytest.mark.parametrize("illegal", [
    {"kubernetes.io/cluster/acluster": "owned"},
    {"karpenter.sh/nodepool": "testnodepool"},
    {"eks:eks-cluster-name": "acluster"},
    {"karpenter.k8s.aws/ec2nodeclass": "testnodeclass"},
    {"karpenter.sh/nodeclaim": "testnodeclaim"},
])
def test_restricted_tags_fail_validation_and_readiness(
    checked: AwsCloudProvider, illegal: dict[str, str],
) -> None:
    """DescribeTable("should update status condition on nodeClass as NotReady when tag
    validation fails"), Entries kubernetes.io/cluster*, karpenter.sh/nodepool,
    eks:eks-cluster-name, karpenter.k8s.aws/ec2nodeclass, karpenter.sh/nodeclaim."""
    found = conditions(checked, node_class(tags=illegal))
    assert found["ValidationSucceeded"].status == "False"
    assert found["ValidationSucceeded"].reason == "TagValidationFailed"
    assert found["Ready"].status == "False"
    assert found["Ready"].message == "ValidationSucceeded=False"


def test_valid_tags_validate_and_the_node_class_is_ready(checked: AwsCloudProvider) -> None:
    """It("should update status condition as Ready when tags are valid")."""
    found = conditions(checked, node_class(tags={}))
    assert found["ValidationSucceeded"].status == "True"
    assert found["Ready"].status == "True"


# --- UserData size ------------------------------------------------------------------------


def test_oversized_user_data_is_reported_as_user_data_size_limit_exceeded(
    checked: AwsCloudProvider, calls: FailingCalls,
) -> None:
    """It("should surface an oversized user data rejection as
    UserDataSizeLimitExceeded")."""
    calls.queue("CreateLaunchTemplate",
                error("InvalidUserData.Malformed", "User data is limited to 16384 bytes"))
    found = validation_of(checked, node_class())
    assert (found.status, found.reason) == ("False", "UserDataSizeLimitExceeded")
    assert found.message == ("ec2:CreateLaunchTemplate rejected the rendered user data as too "
                             "large: Rendered user data exceeds the EC2 user data size limit")


def test_malformed_user_data_that_is_not_too_large_is_not_called_too_large(
    checked: AwsCloudProvider, calls: FailingCalls,
) -> None:
    """It("should not surface a non-size InvalidUserData.Malformed rejection as
    UserDataSizeLimitExceeded") — an unexpected error: the check is tried again."""
    calls.queue("CreateLaunchTemplate",
                error("InvalidUserData.Malformed", "Invalid BASE64 encoding of user data."))
    found = validation_of(checked, node_class())
    assert found.reason != "UserDataSizeLimitExceeded"
    assert found.status == "Unknown"


# --- Authorization Validation -------------------------------------------------------------

UNAUTHORIZED = "UnauthorizedOperation"
NO_POLICY = ("User is not authorized to perform this operation because no identity-based "
             "policy allows it")


@pytest.mark.parametrize(("operation", "times", "message", "reason", "expected"), [
    pytest.param("CreateFleet", 1, "", "CreateFleetAuthCheckFailed",
                 f"Controller isn't authorized to call ec2:CreateFleet: {NO_POLICY}",
                 id="should update status condition as NotReady when CreateFleet unauthorized"),
    pytest.param("RunInstances", 3, "", "RunInstancesAuthCheckFailed",
                 f"Controller isn't authorized to call ec2:RunInstances: {NO_POLICY}",
                 id="should update status condition as NotReady when RunInstances "
                    "unauthorized"),
    pytest.param("CreateLaunchTemplate", 1, "", "CreateLaunchTemplateAuthCheckFailed",
                 f"Controller isn't authorized to call ec2:CreateLaunchTemplate: {NO_POLICY}",
                 id="should update status condition as NotReady when CreateLaunchTemplate "
                    "unauthorized"),
    pytest.param("CreateFleet", 1, "You are not authorized to perform this operation with an "
                 "explicit deny in a permissions boundary", "CreateFleetAuthCheckFailed",
                 "Controller isn't authorized to call ec2:CreateFleet: User is not authorized "
                 "to perform this operation due to a permission boundary",
                 id="should include permission boundary detail in condition message when "
                    "denied by permission boundary"),
    pytest.param("RunInstances", 3, "You are not authorized to perform this operation with an "
                 "explicit deny in a service control policy", "RunInstancesAuthCheckFailed",
                 "Controller isn't authorized to call ec2:RunInstances: User is not authorized "
                 "to perform this operation due to a service control policy",
                 id="should include SCP detail in condition message when denied by service "
                    "control policy"),
])
def test_an_unauthorized_call_fails_validation_until_the_cache_expires(
    checked: AwsCloudProvider, calls: FailingCalls, operation: str, times: int, message: str,
    reason: str, expected: str,
) -> None:
    """DescribeTable("NodeClass validation failure conditions"): the refusal is reported,
    the verdict is cached (a second look fails although the call would now pass), and once
    the cache is flushed the node class validates."""
    calls.queue(operation, error(UNAUTHORIZED, message), times=times)
    first = validation_of(checked, node_class())
    assert (first.status, first.reason, first.message) == ("False", reason, expected)
    assert len(checked.validations.live_keys()) == 1

    again = validation_of(checked, node_class())
    assert (again.status, again.reason, again.message) == ("False", reason, expected)

    checked.validations.clear()
    assert validation_of(checked, node_class()).status == "True"


LAUNCH_TAGS = [{"Key": "eks:eks-cluster-name", "Value": CLUSTER},
               {"Key": "karpenter.k8s.aws/ec2nodeclass", "Value": "default"},
               {"Key": "karpenter.sh/nodepool", "Value": ""},
               {"Key": f"kubernetes.io/cluster/{CLUSTER}", "Value": "owned"},
               {"Key": "team", "Value": "payments"}]


def test_the_checks_send_karpenters_requests_field_for_field(
    checked: AwsCloudProvider, calls: FailingCalls,
) -> None:
    """What validation.go sends, as sent: a real CreateLaunchTemplate, then the dry-run
    CreateFleet of getFleetLaunchTemplateConfig + CreateFleetInputBuilder(on-demand) (the
    template's one type in every subnet of the node class: no zone, image, priority,
    context or client token) and the dry-run RunInstances of getRunInstancesInput, all
    tagged as a NodeClaim of no NodePool (utils.GetTags)."""
    assert validation_of(checked, node_class()).status == "True"
    (template,) = calls.params["CreateLaunchTemplate"]
    name = template["LaunchTemplateName"]
    subnets = [subnet.id for subnet in checked.resolve(node_class()).subnets]
    assert len(subnets) > 1

    (fleet,) = calls.params["CreateFleet"]
    # The SDK's own idempotency token, as the Go SDK fills it for Karpenter's nil one.
    assert uuid.UUID(fleet.pop("ClientToken"))
    assert fleet == {
        "DryRun": True, "Type": "instant",
        "LaunchTemplateConfigs": [{
            "LaunchTemplateSpecification": {"LaunchTemplateName": name, "Version": "$Latest"},
            "Overrides": [{"InstanceType": "m5.large", "SubnetId": subnet}
                          for subnet in subnets]}],
        "TargetCapacitySpecification": {"DefaultTargetCapacityType": "on-demand",
                                        "TotalTargetCapacity": 1},
        "TagSpecifications": [{"ResourceType": kind, "Tags": LAUNCH_TAGS}
                              for kind in ("instance", "volume", "fleet")],
        "OnDemandOptions": {"AllocationStrategy": "lowest-price"},
    }
    (first_run,) = calls.params["RunInstances"]  # the first subnet passed: done
    assert uuid.UUID(first_run.pop("ClientToken"))
    assert first_run == {
        "DryRun": True, "MinCount": 1, "MaxCount": 1,
        "LaunchTemplate": {"LaunchTemplateName": name, "Version": "$Latest"},
        "InstanceType": "m5.large",
        "NetworkInterfaces": [{"DeviceIndex": 0, "SubnetId": subnets[0]}],
        "TagSpecifications": [{"ResourceType": kind, "Tags": LAUNCH_TAGS}
                              for kind in ("instance", "volume", "network-interface")],
    }
    assert template["LaunchTemplateData"]["TagSpecifications"] == [
        {"ResourceType": "network-interface", "Tags": LAUNCH_TAGS}]


def test_the_dry_run_instances_name_the_node_class_interfaces_in_each_subnet(
    checked: AwsCloudProvider, calls: FailingCalls,
) -> None:
    """validation.go getNetworkInterfacesInput: with spec.networkInterfaces, each one's
    card, device index and type, in the subnet being tried (here the first subnet is
    refused, so the second is tried too)."""
    interfaces = [{"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"},
                  {"networkCardIndex": 1, "deviceIndex": 1, "interfaceType": "efa-only"}]
    calls.queue("RunInstances", error("InternalError", "try again", status=500))
    efa = node_class(networkInterfaces=interfaces)
    assert validation_of(checked, efa).status == "True"
    subnets = [subnet.id for subnet in checked.resolve(efa).subnets]

    sent = [run["NetworkInterfaces"] for run in calls.params["RunInstances"]]
    assert sent == [[{"NetworkCardIndex": 0, "DeviceIndex": 0, "InterfaceType": "interface",
                      "SubnetId": subnet},
                     {"NetworkCardIndex": 1, "DeviceIndex": 1, "InterfaceType": "efa-only",
                      "SubnetId": subnet}] for subnet in subnets[:2]]


def test_a_server_error_on_the_first_subnet_does_not_fail_validation(
    checked: AwsCloudProvider, calls: FailingCalls,
) -> None:
    """It("should succeed RunInstances validation when first subnet returns 500 but
    another subnet succeeds")."""
    calls.queue("RunInstances", error("InternalError", "try again", status=500))
    assert validation_of(checked, node_class()).status == "True"
    assert count(calls, "RunInstances") == 2


def test_throttling_leaves_validation_unknown_and_uncached(
    checked: AwsCloudProvider, calls: FailingCalls,
) -> None:
    """validation.go: IsRateLimitedError ⇒ requeue, nothing cached."""
    calls.queue("CreateFleet", error("RequestLimitExceeded", "slow down"), times=5)
    found = validation_of(checked, node_class())
    assert found.status == "Unknown"
    assert checked.validations.live_keys() == []
    calls.queued.clear()
    assert validation_of(checked, node_class()).status == "True"


def test_efa_interfaces_validate_with_a_type_that_takes_them(
    checked: AwsCloudProvider, calls: FailingCalls,
) -> None:
    """It("should succeed validation using fallback instance types with no NodePools and
    NodeClass network interface configs") — not m5 / m6g, which take no EFA interface."""
    efa = node_class(networkInterfaces=[
        {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"},
        {"networkCardIndex": 0, "deviceIndex": 1, "interfaceType": "efa-only"},
        {"networkCardIndex": 1, "deviceIndex": 0, "interfaceType": "efa-only"},
    ])
    assert validation_of(checked, efa).status == "True"
    run = calls.params["RunInstances"][-1]
    assert not run["InstanceType"].startswith(("m5.", "m6g."))
    assert [i.get("InterfaceType") for i in run["NetworkInterfaces"]] == [
        "interface", "efa-only", "efa-only"]


def test_a_new_annotation_validates_again(checked: AwsCloudProvider,
                                          calls: FailingCalls) -> None:
    """It("should not skip validation when new annotation is added")."""
    assert validation_of(checked, node_class()).status == "True"
    assert len(checked.validations.live_keys()) == 1
    annotated = node_class()
    annotated.metadata.annotations = {"testing": "validation"}
    fleets, runs = count(calls, "CreateFleet"), count(calls, "RunInstances")
    assert validation_of(checked, annotated).status == "True"
    assert count(calls, "CreateFleet") == fleets + 1
    assert count(calls, "RunInstances") == runs + 1


def test_deleting_the_node_class_clears_its_validation_cache(
    checked: AwsCloudProvider,
) -> None:
    """It("should clear the validation cache when the nodeclass is deleted")."""
    found = conditions(checked, node_class(tags={}))
    assert found["ValidationSucceeded"].status == found["Ready"].status == "True"
    assert len(checked.validations.live_keys()) == 1
    checked.delete_node_class_resources("default")
    assert checked.validations.live_keys() == []


def test_with_dry_runs_disabled_validation_passes_without_calls(
    provider: AwsCloudProvider, calls: FailingCalls,
) -> None:
    """It("should pass validation when the validation controller is disabled")
    (DISABLE_DRY_RUN=true: the bare provider's default)."""
    found = conditions(provider, node_class())
    assert found["ValidationSucceeded"].status == found["Ready"].status == "True"
    assert len(provider.validations.live_keys()) == 1
    assert count(calls, "CreateFleet") == count(calls, "RunInstances") == 0
    assert count(calls, "CreateLaunchTemplate") == 0


def test_the_failure_message_names_the_refused_call() -> None:
    """validation.go updateCacheOnFailure: "<what was refused>: <why>"."""
    verdict = validation.failure("RunInstancesAuthCheckFailed",
                                 "UnauthorizedOperation: You are not authorized")
    assert verdict.message == f"Controller isn't authorized to call ec2:RunInstances: {NO_POLICY}"


@pytest.mark.parametrize(("year", "kubernetes"), [
    pytest.param("2019", K8S_VERSION, id="Windows2019 with m5.large"),
    pytest.param("2022", K8S_VERSION, id="Windows2022 with m5.large"),
    # Karpenter's Entry is named m6g.large but expects m5.large, as every Windows image is
    # amd64; Windows Server 2025 needs Kubernetes 1.35.
    pytest.param("2025", "1.35", id="Windows2025 with m6g.large"),
])
def test_windows_images_validate_with_the_static_fallback_type(
    checked: AwsCloudProvider, calls: FailingCalls, clients: AwsClients, year: str,
    kubernetes: str,
) -> None:
    """Context("Windows AMI Validation") DescribeTable("should fallback to static instance
    types when windows ami is used"): the dry runs use m5.large with the Windows image."""
    seed_public_parameter(
        clients.region, f"/aws/service/ami-windows-latest/Windows_Server-{year}-English-Core-"
        f"EKS_Optimized-{kubernetes}/image_id", X86_IMAGE)
    checked._cluster.put(CLUSTER, replace(checked.cluster(), kubernetes_version=kubernetes))
    windows = node_class(amiSelectorTerms=[{"alias": f"windows{year}@latest"}])

    assert validation_of(checked, windows).status == "True"
    run = calls.params["RunInstances"][-1]
    assert run["InstanceType"] == "m5.large"
    assert "LaunchTemplate" in run
