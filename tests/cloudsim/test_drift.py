"""AMI drift: a new image published for a node class drifts the instances launched before."""

from __future__ import annotations

import pytest

from nodewright.api.nodeclaim import NodeClaim
from nodewright.cloud.sim import SimulatedEC2

from .conftest import node_class, nodeclaim


def with_provider_id(claim: NodeClaim, provider_id: str) -> NodeClaim:
    manifest = claim.to_manifest()
    manifest["status"] = {"providerID": provider_id}
    return NodeClaim.model_validate(manifest)


def test_publishing_a_new_ami_drifts_running_instances(ec2: SimulatedEC2) -> None:
    claim = nodeclaim(types=("m5.large",))
    old = ec2.create(claim, node_class())
    claim = with_provider_id(claim, old.provider_id)

    before = ec2.drift_reason(claim, node_class())
    ec2.set_image("al2023@latest", "amd64", "ami-0f00000000000new1")
    after = ec2.drift_reason(claim, node_class())
    replacement = ec2.create(nodeclaim("replacement", types=("m5.large",)), node_class())

    assert (before, after) == (None, "AMIDrift")
    assert replacement.image_id == "ami-0f00000000000new1"


def test_a_family_upgrade_reaches_latest_aliases_but_not_pinned_ones(ec2: SimulatedEC2) -> None:
    pinned_class = node_class(alias="al2023@v20250101")
    latest = with_provider_id(
        nodeclaim("latest", types=("m5.large",)),
        ec2.create(nodeclaim("latest", types=("m5.large",)), node_class()).provider_id,
    )
    pinned = with_provider_id(
        nodeclaim("pinned", types=("m5.large",)),
        ec2.create(nodeclaim("pinned", types=("m5.large",)), pinned_class).provider_id,
    )

    ec2.set_image("AL2023", "amd64", "ami-0f00000000000new2")

    assert ec2.drift_reason(latest, node_class()) == "AMIDrift"
    assert ec2.drift_reason(pinned, pinned_class) is None


def test_images_are_per_architecture(ec2: SimulatedEC2) -> None:
    arm = with_provider_id(
        nodeclaim("arm", types=("m6g.large",)),
        ec2.create(nodeclaim("arm", types=("m6g.large",)), node_class()).provider_id,
    )

    ec2.set_image("al2023@latest", "amd64", "ami-0f00000000000new3")

    assert ec2.drift_reason(arm, node_class()) is None


def test_a_changed_ami_id_term_is_drift_too(ec2: SimulatedEC2) -> None:
    pinned = node_class(amiFamily="AL2023", amiSelectorTerms=[{"id": "ami-0aaaaaaaaaaaaaaa1"}])
    moved = node_class(amiFamily="AL2023", amiSelectorTerms=[{"id": "ami-0bbbbbbbbbbbbbbb2"}])
    instance = ec2.create(nodeclaim(types=("m5.large",)), pinned)
    claim = with_provider_id(nodeclaim(types=("m5.large",)), instance.provider_id)

    assert instance.image_id == "ami-0aaaaaaaaaaaaaaa1"
    assert ec2.drift_reason(claim, pinned) is None
    assert ec2.drift_reason(claim, moved) == "AMIDrift"


def test_a_nodeclaim_without_an_instance_has_no_drift(ec2: SimulatedEC2) -> None:
    assert ec2.drift_reason(nodeclaim(), node_class()) is None


def test_set_image_refuses_what_is_not_an_image(ec2: SimulatedEC2) -> None:
    with pytest.raises(ValueError, match="arch 'x86'"):
        ec2.set_image("AL2023", "x86", "ami-0123")
    with pytest.raises(ValueError, match="ami_id 'latest'"):
        ec2.set_image("AL2023", "amd64", "latest")
