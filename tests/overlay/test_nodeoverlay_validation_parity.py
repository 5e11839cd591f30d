"""What Karpenter's NodeOverlay runtime validation refuses and lets through, beyond the
ported suite: kubernetes-sigs/karpenter v1.14.1 pkg/apis/v1alpha1/nodeoverlay_validation.go
(RuntimeValidate: validateRequirements lines 37-47, validateCapacity lines 49-56), which
calls pkg/apis/v1/nodeclaim_validation.go ValidateRequirement (lines 117-165) and
validateWellKnownValues (lines 172-199), with the AWS provider's additions of
aws/karpenter-provider-aws v1.14.1 pkg/apis/v1/labels.go init (lines 31-77).

The controller writes what it finds on the overlay as ValidationSucceeded=False, reason
RuntimeValidation (pkg/controllers/nodeoverlay/controller.go lines 106-110, 271-280), and a
refused overlay changes no instance type.
"""

from __future__ import annotations

import pytest

from tests.overlay.karpenter_fixture import (
    CAPACITY_TYPE,
    INSTANCE_TYPE,
    Env,
    instance_type,
    nodepool,
    offering,
    overlay,
)

TENANCY = "karpenter.k8s.aws/instance-tenancy"


@pytest.fixture
def env() -> Env:
    world = Env()
    world.cloud.instance_types = [
        instance_type("default-instance-type", offering("spot", "test-zone-1", 1.020))
    ]
    world.apply(nodepool())
    return world


def message(env: Env, name: str) -> str:
    found = [
        c
        for c in env.cluster.get("NodeOverlay", name)["status"]["conditions"]
        if c["type"] == "ValidationSucceeded"
    ]
    return str(found[0]["message"])


@pytest.mark.parametrize(
    "resource",
    [
        "nvidia.com/gpu",
        "amd.com/gpu",
        "aws.amazon.com/neuron",
        "aws.amazon.com/neuroncore",
        "habana.ai/gaudi",
        "vpc.amazonaws.com/pod-eni",
    ],
)
def test_an_overlay_may_not_add_a_resource_the_aws_provider_knows(env: Env, resource: str) -> None:
    """The AWS provider adds its devices and pod ENIs to Karpenter's WellKnownResources, so
    validateCapacity refuses an overlay that would add them: the instance types keep what
    EC2 says they have."""
    env.apply(
        overlay("gpus", (INSTANCE_TYPE, "In", ["default-instance-type"]), capacity={resource: "8"})
    )
    env.reconcile()

    assert env.condition("gpus") == ("False", "RuntimeValidation")
    assert f"invalid capacity: {resource} in resource, restricted" in message(env, "gpus")
    assert resource not in env.one().capacity


def test_an_extended_resource_of_the_users_own_is_still_added(env: Env) -> None:
    """The counterpart: a resource no provider knows (a device plugin's) is what capacity
    overlays are for."""
    env.apply(
        overlay(
            "fuse",
            (INSTANCE_TYPE, "In", ["default-instance-type"]),
            capacity={"smarter-devices/fuse": "2"},
        )
    )
    env.reconcile()

    assert env.condition("fuse") == ("True", "ValidationSucceeded")
    assert env.one().capacity["smarter-devices/fuse"] == 2000


@pytest.mark.parametrize(
    ("key", "typo", "known"),
    [
        (CAPACITY_TYPE, "ondemand", "[on-demand reserved spot]"),
        (TENANCY, "shared", "[dedicated default]"),
    ],
)
def test_an_overlay_naming_only_unknown_values_of_a_well_known_label_is_refused(
    env: Env, key: str, typo: str, known: str
) -> None:
    """validateWellKnownValues: `In` on a label with known values (capacity types; the AWS
    provider adds tenancies) must name one of them, else the overlay could never apply."""
    env.apply(overlay("typo", (key, "In", [typo]), price="0.5"))
    env.reconcile()

    assert env.condition("typo") == ("False", "RuntimeValidation")
    assert (
        f"invalid value: no valid values found in [{typo}] for {key}, expected one of: "
        f"{known}, got: [{typo}] in requirements, restricted"
    ) in message(env, "typo")


def test_one_known_value_among_typos_is_enough(env: Env) -> None:
    """validateWellKnownValues fails only when no value is known (it logs the others)."""
    env.apply(overlay("mixed", (CAPACITY_TYPE, "In", ["ondemand", "spot"]), price="0.5"))
    env.reconcile()

    assert env.condition("mixed") == ("True", "ValidationSucceeded")
    assert [o.price for o in env.one().offerings] == [0.5]


@pytest.mark.parametrize("operator", ["Exists", "DoesNotExist"])
def test_values_next_to_exists_are_ignored_not_refused(env: Env, operator: str) -> None:
    """Neither ValidateRequirement nor the NodeOverlay CRD looks at the values of Exists
    and DoesNotExist; the requirement means what its operator says."""
    env.apply(overlay("loose", (CAPACITY_TYPE, operator, ["spot"]), price="0.5"))
    env.reconcile()

    assert env.condition("loose") == ("True", "ValidationSucceeded")
    expected = [0.5] if operator == "Exists" else [1.020]
    assert [o.price for o in env.one().offerings] == expected


def test_an_overlay_on_the_node_class_label_is_refused(env: Env) -> None:
    """IsRestrictedLabel (pkg/apis/v1/labels.go lines 138-153): karpenter.k8s.aws is a
    restricted domain and its node class label is not one of the well-known labels, so
    an overlay may not select on it (the NodeOverlay CRD only restricts karpenter.sh)."""
    env.apply(
        overlay("by-class", ("karpenter.k8s.aws/ec2nodeclass", "In", ["default"]), price="0.5")
    )
    env.reconcile()

    assert env.condition("by-class") == ("False", "RuntimeValidation")
    assert (
        "invalid value: using label karpenter.k8s.aws/ec2nodeclass is not allowed as it "
        "might interfere with the internal provisioning logic"
    ) in message(env, "by-class")
