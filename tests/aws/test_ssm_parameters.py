"""AMI aliases read through Karpenter's SSM parameter cache, and the AMI choice.

Ports from aws/karpenter-provider-aws v1.14.1:
- pkg/controllers/providers/ssm/invalidation/suite_test.go (Describe "SSM Invalidation
  Controller"),
- pkg/providers/amifamily/suite_test.go (Describe "AMIProvider": the AL2 1.33 table, the
  ssmParameter Its, "AMI List requirements").
pkg/providers/ssm has no test file at v1.14.1; its cache durations (types.go
GetCacheDuration) are the stories below.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from nodewright.cloud.aws.amis import AliasError, alias_parameter_list, resolve_amis
from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.node_class_resolution import resolve_node_class
from nodewright.cloud.aws.provider import AwsCloudProvider
from nodewright.cloud.aws.ssm_parameters import ParameterCache
from nodewright.cloud.provider import CloudProviderError

from .failing_calls import answer, error, failing
from .world import (
    CLUSTER,
    K8S_VERSION,
    X86_IMAGE,
    World,
    node_class,
    nodeclaim,
    seed_public_parameter,
)

AL2023_X86 = (f"/aws/service/eks/optimized-ami/{K8S_VERSION}/amazon-linux-2023/x86_64/"
              "standard/recommended/image_id")
DAY = 24 * 3600.0


def images_of(provider: AwsCloudProvider, spec: Mapping[str, Any] | None = None) -> set[str]:
    return {image.id for image in provider.resolve(node_class(**(spec or {}))).images}


def another_x86_image(clients: AwsClients) -> str:
    """A second x86_64 image of those moto ships."""
    found = clients.ec2.describe_images(
        Owners=["amazon"], Filters=[{"Name": "architecture", "Values": ["x86_64"]}])["Images"]
    return sorted(i["ImageId"] for i in found if i["ImageId"] != X86_IMAGE)[0]


def get_parameter_calls(calls: Any) -> list[str]:
    return [p["Name"] for p in calls.params.get("GetParameter", [])]


# --- the cache ---------------------------------------------------------------------------


def test_a_newly_published_latest_ami_is_adopted_only_when_the_day_is_over(
    provider: AwsCloudProvider, clients: AwsClients, world: World,
) -> None:
    """pkg/providers/ssm/types.go: alias parameters are cached 24 h, so a new `latest`
    AMI does not drift the fleet at once (the issue's story)."""
    instance = provider.create(nodeclaim(), node_class())
    assert instance.image_id == X86_IMAGE
    newer = another_x86_image(clients)
    seed_public_parameter(clients.region, AL2023_X86, newer)

    provider.clock.advance(3600)  # type: ignore[attr-defined]
    # The launched image is still the node class's: no AMI drift.
    assert X86_IMAGE in images_of(provider) and newer not in images_of(provider)

    provider.clock.advance(DAY)  # type: ignore[attr-defined]
    assert newer in images_of(provider) and X86_IMAGE not in images_of(provider)


def test_an_ssm_parameter_term_is_read_again_after_five_minutes(
    provider: AwsCloudProvider, clients: AwsClients, world: World,
) -> None:
    """It("should succeed to resolve AMIs that use a custom SSM parameter"), and types.go's
    five minutes for CustomParameterType."""
    clients.ssm.put_parameter(Name="/team/node-ami", Value=X86_IMAGE, Type="String")
    term = {"amiFamily": "AL2023", "amiSelectorTerms": [{"ssmParameter": "/team/node-ami"}]}
    assert images_of(provider, term) == {X86_IMAGE}
    newer = another_x86_image(clients)
    clients.ssm.put_parameter(Name="/team/node-ami", Value=newer, Type="String",
                              Overwrite=True)
    provider.clock.advance(61)  # type: ignore[attr-defined]
    assert images_of(provider, term) == {X86_IMAGE}
    provider.clock.advance(5 * 60)  # type: ignore[attr-defined]
    assert images_of(provider, term) == {newer}


def test_the_alias_parameters_resolve_amis(provider: AwsCloudProvider, world: World) -> None:
    """It("should succeed to resolve AMIs that use an SSM parameter") (an alias)."""
    assert images_of(provider) == {X86_IMAGE, world.arm_image}


def test_a_missing_ssm_parameter_matches_nothing(provider: AwsCloudProvider,
                                                 world: World) -> None:
    """It("should not throw an error if SSM parameter is not found")."""
    resolution = provider.resolve(node_class(
        amiFamily="AL2023", amiSelectorTerms=[{"ssmParameter": "/team/missing"}]))
    assert resolution.images == ()
    assert "AMIsReady" in resolution.problems


def test_other_ssm_errors_fail_the_resolution(provider: AwsCloudProvider, world: World) -> None:
    """It("should throw an error if SSM parameter returns a different error")."""
    with failing(provider.clients.ssm) as calls:
        calls.queue("GetParameter", error("AccessDeniedException", "no"))
        with pytest.raises(CloudProviderError, match="AccessDeniedException"):
            provider.resolve(node_class(
                amiFamily="AL2023", amiSelectorTerms=[{"ssmParameter": "/team/denied"}]))


def test_an_ssm_parameter_that_holds_no_ami_id_is_skipped(
    provider: AwsCloudProvider, clients: AwsClients, world: World,
) -> None:
    """ami.go DescribeImageQueries: "parameter value is an invalid AMI ID" ⇒ skipped."""
    clients.ssm.put_parameter(Name="/team/not-an-ami", Value="hello", Type="String")
    with failing(clients.ec2) as calls:
        resolution = provider.resolve(node_class(
            amiFamily="AL2023", amiSelectorTerms=[{"ssmParameter": "/team/not-an-ami"}]))
    assert resolution.images == () and "AMIsReady" in resolution.problems
    assert "DescribeImages" not in calls.params


# --- invalidation -----------------------------------------------------------------------


def deprecated(*image_ids: str) -> Any:
    hour_ago = (datetime.now(UTC) - timedelta(hours=12)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return answer({"Images": [{"ImageId": i, "Name": i, "Architecture": "x86_64",
                               "CreationDate": "2024-01-01T00:00:00.000Z",
                               "DeprecationTime": hour_ago, "State": "available"}
                              for i in image_ids]})


def test_entries_of_images_not_deprecated_are_kept(provider: AwsCloudProvider,
                                                  world: World) -> None:
    """It("shouldn't invalidate cache entries for non-deprecated AMIs")."""
    provider.resolve(node_class())
    before = {n: e.value for n, e in provider.lookups.parameters.entries().items()}
    assert before == {AL2023_X86: X86_IMAGE, AL2023_X86.replace("x86_64", "arm64"):
                      world.arm_image}
    assert provider.invalidate_deprecated_parameters() == []
    with failing(provider.clients.ssm) as calls:
        provider.clock.advance(61)  # type: ignore[attr-defined]
        provider.resolve(node_class())
    after = {n: e.value for n, e in provider.lookups.parameters.entries().items()}
    assert after == before
    assert AL2023_X86 not in get_parameter_calls(calls)


def test_a_pinned_alias_keeps_its_entries_even_when_deprecated(
    provider: AwsCloudProvider, clients: AwsClients, world: World,
) -> None:
    """It("shouldn't invalidate cache entries for deprecated AMIs when the SSM parameter is
    immutable")."""
    pinned = (f"/aws/service/eks/optimized-ami/{K8S_VERSION}/amazon-linux-2023/x86_64/"
              f"standard/amazon-eks-node-al2023-x86_64-standard-{K8S_VERSION}-v20241024/"
              "image_id")
    seed_public_parameter(clients.region, pinned, X86_IMAGE)
    provider.resolve(node_class(amiSelectorTerms=[{"alias": "al2023@v20241024"}]))
    assert {n: e.mutable for n, e in provider.lookups.parameters.entries().items()} == {
        pinned: False}
    with failing(clients.ec2) as calls:
        calls.queue("DescribeImages", deprecated(X86_IMAGE))
        assert provider.invalidate_deprecated_parameters() == []
    assert pinned in provider.lookups.parameters.entries()


def test_a_latest_alias_whose_image_is_deprecated_is_read_again(
    provider: AwsCloudProvider, clients: AwsClients, world: World,
) -> None:
    """It("should invalidate cache entries for deprecated AMIs when the SSM parameter is
    mutable") — AWS deprecated the AMI a `latest` parameter pointed at and published a
    fixed one: within the invalidation period, not the day."""
    provider.resolve(node_class())
    fixed = another_x86_image(clients)
    seed_public_parameter(clients.region, AL2023_X86, fixed)
    with failing(clients.ec2) as calls:
        calls.queue("DescribeImages", deprecated(X86_IMAGE))
        assert provider.invalidate_deprecated_parameters() == [AL2023_X86]
        (query,) = calls.params["DescribeImages"]
        assert query["IncludeDeprecated"] is True
    assert provider.lookups.parameters.entries()[AL2023_X86.replace("x86_64", "arm64")]
    assert fixed in images_of(provider)


# --- AL2 on 1.33+ (amifamily suite_test.go DescribeTable) ---------------------------------


@pytest.mark.parametrize(("version", "alias", "fails"), [
    pytest.param("1.33.0", "al2@latest", True, id="should fail for AL2 on 1.33.0"),
    pytest.param("1.34.2", "al2@latest", True, id="should fail for AL2 on 1.34.2"),
    pytest.param("1.32.0", "al2@latest", False, id="should succeed for AL2 on 1.32.0"),
    pytest.param("1.33.0", "al2023@latest", False, id="should succeed for AL2023 on 1.33.0"),
])
def test_al2_aliases_end_with_kubernetes_1_32(version: str, alias: str, fails: bool) -> None:
    """DescribeTable("should fail when AL2 is used with Kubernetes version 1.33 or
    greater")."""
    if fails:
        with pytest.raises(AliasError) as raised:
            alias_parameter_list(alias, version)
        assert raised.value.reason == "UnsupportedAlias"
    else:
        assert alias_parameter_list(alias, version)


def test_an_al2_alias_on_1_33_is_an_unsupported_alias(clients: AwsClients, world: World) -> None:
    """nodeclass/ami.go: AMIsReady=False, reason UnsupportedAlias."""
    resolution = resolve_node_class(clients, node_class(amiSelectorTerms=[{"alias": "al2@latest"}]),
                                    cluster=CLUSTER, kubernetes_version="1.33")
    (amis,) = [c for c in resolution.conditions() if c.type == "AMIsReady"]
    assert (amis.status, amis.reason) == ("False", "UnsupportedAlias")
    assert "AL2 aliases are no longer supported on EKS 1.33+" in str(amis.message)


# --- AMI List requirements (amifamily suite_test.go Context) --------------------------------

NOW = datetime.now(UTC)


def image(image_id: str, created: str, deprecation: timedelta | None = None,
          name: str = "amd64-ami") -> dict[str, Any]:
    raw = {"ImageId": image_id, "Name": name, "Architecture": "x86_64", "CreationDate": created,
           "State": "available"}
    if deprecation is not None:
        raw["DeprecationTime"] = (NOW + deprecation).strftime("%Y-%m-%dT%H:%M:%SZ")
    return raw


@pytest.mark.parametrize(("images", "chosen"), [
    pytest.param([image("ami-5678", "2021-08-31T00:12:42.000Z", timedelta(hours=-1)),
                  image("ami-1234", "2020-08-31T00:08:42.000Z")], "ami-1234",
                 id="should prioritize the older non-deprecated ami without deprecation time"),
    pytest.param([image("ami-5678", "2021-08-31T00:12:42.000Z", timedelta(minutes=-10)),
                  image("ami-1234", "2021-08-31T00:12:42.000Z", timedelta(minutes=10))],
                 "ami-1234", id="should prioritize the non-deprecated ami with deprecation "
                                "time when both have same creation time"),
    pytest.param([image("ami-5678", "2021-08-31T00:12:42.000Z", timedelta(minutes=-10),
                        "test-ami-2"),
                  image("ami-1234", "2021-08-31T00:12:42.000Z", timedelta(minutes=10),
                        "test-ami-1")], "ami-1234",
                 id="should prioritize the non-deprecated ami with deprecation time when both "
                    "have same creation time and different name"),
    pytest.param([image("ami-5678", "2021-08-31T00:12:42.000Z", timedelta(minutes=-10)),
                  image("ami-1234", "2020-08-31T00:12:42.000Z", timedelta(minutes=-10))],
                 "ami-5678", id="should prioritize the newer ami if both are deprecated"),
    pytest.param([image("ami-5678", "2021-08-31T00:12:42.000Z", name="test-ami-1"),
                  image("ami-1234", "2021-08-31T00:12:42.000Z", name="test-ami-2")],
                 "ami-1234", id="the greater name wins a creation-date tie (compareAMI)"),
])
def test_the_image_chosen_per_architecture(clients: AwsClients, images: list[dict[str, Any]],
                                           chosen: str) -> None:
    """Context("AMI List requirements"): non-deprecated first, then newest, then name."""
    from nodewright.api.ec2nodeclass import AMISelectorTerm

    with failing(clients.ec2) as calls:
        calls.queue("DescribeImages", answer({"Images": images}))
        found, _ = resolve_amis(clients.ec2, clients.ssm,
                                [AMISelectorTerm.model_validate({"tags": {"*": "*"}})],
                                K8S_VERSION, now=NOW, parameters=ParameterCache(clients.ssm))
    assert [i.id for i in found] == [chosen]


@pytest.mark.parametrize("state", ["pending", "invalid", "deregistered", "transient", "failed",
                                   "error", "disabled"])
def test_images_that_are_not_available_are_ignored(clients: AwsClients, state: str) -> None:
    """DescribeTable("should ignore images when image.state != available") — one Entry per
    EC2 image state but available."""
    from nodewright.api.ec2nodeclass import AMISelectorTerm

    images = [{**image("ami-123", "2022-08-15T12:00:00Z"), "State": "available"},
              {**image("ami-456", "2022-08-15T12:00:00Z"), "Architecture": "arm64",
               "State": state}]
    with failing(clients.ec2) as calls:
        calls.queue("DescribeImages", answer({"Images": images}))
        found, _ = resolve_amis(clients.ec2, clients.ssm,
                                [AMISelectorTerm.model_validate({"tags": {"test": "test"}})],
                                K8S_VERSION, now=NOW, parameters=ParameterCache(clients.ssm))
        (query,) = calls.params["DescribeImages"]
    assert [i.id for i in found] == ["ami-123"]
    assert {"Name": "state", "Values": ["available"]} in query["Filters"]


def test_a_term_with_an_id_and_an_ssm_parameter_resolves_by_the_id(
    provider: AwsCloudProvider, clients: AwsClients, world: World,
) -> None:
    """Karpenter's CRD admits ssmParameter next to an id, and its DescribeImageQueries
    (pkg/providers/amifamily/ami.go) takes the id: the parameter is not read."""
    clients.ssm.put_parameter(Name="/team/node-ami", Value=another_x86_image(clients),
                              Type="String")
    term = {"amiFamily": "AL2023",
            "amiSelectorTerms": [{"id": X86_IMAGE, "ssmParameter": "/team/node-ami"}]}
    assert images_of(provider, term) == {X86_IMAGE}
