"""Karpenter's AMI provider suite (pkg/providers/amifamily/suite_test.go, v1.14.1): the Its
not ported in tests/aws/test_ssm_parameters.py, ported here: each test names its It/Entry.

Karpenter's AMIProvider.List is `resolve_amis` (its AMIs, one per image and requirement set,
are the status entries `Resolution.to_status()` writes); its DescribeImageQueries are the
DescribeImages requests `resolve_amis` sends, recorded by the `Images` stand-in of
tests/aws/test_nodeclass_amis_karpenter.py; its AMIResolver is the launch template data the
provider renders. The images are that file's (Karpenter's amifamily suite has the same four
standard and NVIDIA images under other names).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from nodewright.api.ec2nodeclass import AMISelectorTerm
from nodewright.api.nodeclaim import NodeClaim
from nodewright.cloud.aws.amis import AliasError, Image, resolve_amis
from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.launch_templates import metadata_options_of
from nodewright.cloud.aws.node_class_resolution import Resolution
from nodewright.cloud.aws.offerings import launchable
from nodewright.cloud.aws.provider import AwsCloudProvider
from nodewright.scheduling.requirements import Requirements
from tests.aws.fake_ec2 import FakeEC2
from tests.aws.test_nodeclass_amis_karpenter import Images, image, publish
from tests.aws.world import K8S_VERSION, World, node_class, nodeclaim

NOW = datetime(2026, 11, 28, 7, 0, tzinfo=UTC)
EKS = f"/aws/service/eks/optimized-ami/{K8S_VERSION}"
BOTTLEROCKET = f"/aws/service/bottlerocket/aws-k8s-{K8S_VERSION}"


class RecordedImages(Images):
    """The stand-in, keeping every DescribeImages request."""

    def __init__(self, clients: AwsClients) -> None:
        super().__init__(clients)
        self.requests: list[dict[str, Any]] = []

    def _remember(self, params: dict[str, Any], **kwargs: Any) -> None:
        super()._remember(params, **kwargs)
        self.requests.append(dict(params))


@pytest.fixture
def images(clients: AwsClients) -> Iterator[RecordedImages]:
    served = RecordedImages(clients)
    yield served
    served.detach()


def terms(*raw: dict[str, Any]) -> list[AMISelectorTerm]:
    return [AMISelectorTerm.model_validate(term) for term in raw]


def listed(clients: AwsClients, *raw: dict[str, Any], version: str = K8S_VERSION) -> list[Any]:
    """AMIProvider.List: the status AMIs (one per image and requirement set)."""
    found, _ = resolve_amis(clients.ec2, clients.ssm, terms(*raw), version, now=NOW)
    return list(Resolution(images=tuple(found)).to_status(NOW).amis or [])


# --- resolution per family ------------------------------------------------------------------


@pytest.mark.parametrize(("alias", "parameters", "count"), [
    pytest.param("al2@latest", {
        f"{EKS}/amazon-linux-2/recommended/image_id": "ami-amd64-standard",
        f"{EKS}/amazon-linux-2-gpu/recommended/image_id": "ami-amd64-nvidia",
        f"{EKS}/amazon-linux-2-arm64/recommended/image_id": "ami-arm64-standard"}, 4,
        id="should succeed to resolve AMIs (AL2)"),
    pytest.param("al2023@latest", {
        f"{EKS}/amazon-linux-2023/x86_64/standard/recommended/image_id": "ami-amd64-standard",
        f"{EKS}/amazon-linux-2023/arm64/standard/recommended/image_id": "ami-arm64-standard"},
        2, id="should succeed to resolve AMIs (AL2023)"),
    pytest.param("bottlerocket@latest", {
        f"{BOTTLEROCKET}/x86_64/latest/image_id": "ami-amd64-standard",
        f"{BOTTLEROCKET}-nvidia/x86_64/latest/image_id": "ami-amd64-nvidia",
        f"{BOTTLEROCKET}/arm64/latest/image_id": "ami-arm64-standard",
        f"{BOTTLEROCKET}-nvidia/arm64/latest/image_id": "ami-arm64-nvidia"}, 5,
        id="should succeed to resolve AMIs (Bottlerocket)"),
    pytest.param("al2@latest", {
        f"{EKS}/amazon-linux-2/recommended/image_id": "ami-amd64-standard",
        f"{EKS}/amazon-linux-2-arm64/recommended/image_id": "ami-arm64-standard"}, 2,
        id="should succeed to partially resolve AMIs if all SSM aliases don't exist (Al2)"),
    pytest.param("al2023@latest", {
        f"{EKS}/amazon-linux-2023/x86_64/standard/recommended/image_id": "ami-amd64-standard"},
        1, id="should succeed to partially resolve AMIs if all SSM aliases don't exist "
              "(AL2023)"),
    pytest.param("bottlerocket@latest", {
        f"{BOTTLEROCKET}/x86_64/latest/image_id": "ami-amd64-standard",
        f"{BOTTLEROCKET}-nvidia/x86_64/latest/image_id": "ami-amd64-nvidia",
        f"{BOTTLEROCKET}/arm64/latest/image_id": "ami-arm64-standard"}, 4,
        id="should succeed to partially resolve AMIs if all SSM aliases don't exist "
           "(Bottlerocket)"),
])
def test_an_alias_resolves_one_ami_per_requirement_set(
    clients: AwsClients, images: RecordedImages, alias: str, parameters: dict[str, str],
    count: int,
) -> None:
    """One It per test id (the last three: Context("SSM Alias Missing"))."""
    publish(clients, parameters)
    assert len(listed(clients, {"alias": alias})) == count


@pytest.mark.parametrize(("year", "version"), [
    pytest.param("2019", K8S_VERSION, id="should succeed to resolve AMIs (Windows2019)"),
    pytest.param("2022", K8S_VERSION, id="should succeed to resolve AMIs (Windows2022)"),
    pytest.param("2025", "1.35", id="should succeed to resolve AMIs (Windows2025)"),
])
def test_a_windows_alias_resolves_its_image(clients: AwsClients, images: RecordedImages,
                                            year: str, version: str) -> None:
    """One It per test id (Windows 2025 at Kubernetes 1.35, where Karpenter's test skips
    below it)."""
    publish(clients, {f"/aws/service/ami-windows-latest/Windows_Server-{year}-English-Core-"
                      f"EKS_Optimized-{version}/image_id": "ami-amd64-standard"})
    assert len(listed(clients, {"alias": f"windows{year}@latest"}, version=version)) == 1


def test_windows_2025_needs_kubernetes_1_35(clients: AwsClients, images: RecordedImages) -> None:
    """It("should fail to resolve AMIs for Windows2025 when EKS version is below 1.35")"""
    with pytest.raises(AliasError, match=r"Windows Server 2025 requires EKS version 1\.35 or "
                                         r"higher"):
        resolve_amis(clients.ec2, clients.ssm, terms({"alias": "windows2025@latest"}), "1.34.0")


def test_image_tags_are_not_requirements(clients: AwsClients, images: RecordedImages) -> None:
    """Context("AMI Tag Requirements") It("should succeed to not resolve tags as requirements
    for NodeClasses")"""
    tagged = image("amd64-standard", "ami-id-amd64", "x86_64", NOW)
    tagged["Tags"] += [{"Key": "node.kubernetes.io/instance-type", "Value": "m5.large"},
                       {"Key": "topology.kubernetes.io/zone", "Value": "us-west-2a"}]
    images.images = [tagged]
    [ami] = listed(clients, {"tags": {"*": "*"}})
    assert ami.id == "ami-id-amd64"
    assert [(r.key, r.operator, r.values) for r in ami.requirements] == [
        ("kubernetes.io/arch", "In", ["amd64"])]


# --- Provider Cache -------------------------------------------------------------------------


@pytest.mark.parametrize("term", [
    pytest.param({"id": "ami-0123456789abcdef0"},
                 id="should resolve AMIs from cache that are filtered by id"),
    pytest.param({"name": "amd64-standard"},
                 id="should resolve AMIs from cache that are filtered by name"),
    pytest.param({"tags": {"Name": "amd64-standard"}},
                 id="should resolve AMIs from cache that are filtered by tags"),
])
def test_amis_are_read_once_per_selector(provider: AwsCloudProvider, world: World,
                                         images: RecordedImages, term: dict[str, Any]) -> None:
    """Context("Provider Cache"), one It per test id: a second resolution of the same terms
    asks EC2 nothing."""
    images.images.append(image("amd64-standard", "ami-0123456789abcdef0", "x86_64", NOW))
    images.requests.clear()
    spec = node_class(amiFamily="AL2023", amiSelectorTerms=[term])
    first = provider.resolve(spec)
    asked = len(images.requests)
    provider._resolutions.clear()  # only the AMI cache (provider.lookups.images) is left
    again = provider.resolve(spec)

    assert first.images and asked >= 1 and len(images.requests) == asked
    assert [i.id for i in again.images] == [i.id for i in first.images]


def test_ami_tags_in_one_term_and_across_terms(provider: AwsCloudProvider, world: World,
                                               images: RecordedImages) -> None:
    """Context("Provider Cache") It("should correctly disambiguate AND vs OR semantics for
    tags"): each spec keeps its own answer."""
    both = image("both", "ami-both", "x86_64", NOW)
    both["Tags"] = [{"Key": "tag-key-1", "Value": "tag-value-1"},
                    {"Key": "tag-key-2", "Value": "tag-value-2"}]
    one = image("one", "ami-one", "arm64", NOW)
    one["Tags"] = [{"Key": "tag-key-1", "Value": "tag-value-1"}]
    two = image("two", "ami-two", "x86_64", NOW)
    two["Tags"] = [{"Key": "tag-key-2", "Value": "tag-value-2"}]
    images.images = [both, one, two]
    anded = node_class(amiFamily="AL2023", amiSelectorTerms=[
        {"tags": {"tag-key-1": "tag-value-1", "tag-key-2": "tag-value-2"}}])
    ored = node_class(amiFamily="AL2023", amiSelectorTerms=[
        {"tags": {"tag-key-1": "tag-value-1"}}, {"tags": {"tag-key-2": "tag-value-2"}}])

    assert {i.id for i in provider.resolve(anded).images} == {"ami-both"}
    # Newest per architecture: both amd64 images are as new, the greater name wins.
    assert {i.id for i in provider.resolve(ored).images} == {"ami-one", "ami-two"}
    assert {i.id for i in provider.resolve(anded).images} == {"ami-both"}


# --- AMI Selectors --------------------------------------------------------------------------


def queries(clients: AwsClients, images: RecordedImages, *raw: dict[str, Any]) -> list[Any]:
    """DescribeImageQueries: each request's owners and filters, less our state filter."""
    images.requests.clear()
    resolve_amis(clients.ec2, clients.ssm, terms(*raw), K8S_VERSION, now=NOW)
    return [(sorted(r.get("Owners", [])),
             [(f["Name"], f["Values"]) for f in r.get("Filters", []) if f["Name"] != "state"])
            for r in images.requests]


def test_tags_alone_ask_no_owner(clients: AwsClients, images: RecordedImages) -> None:
    """Context("AMI Selectors") It("should have empty owners and use tags when prefixes
    aren't set")"""
    assert queries(clients, images, {"tags": {"Name": "my-ami"}}) == [
        ([], [("tag:Name", ["my-ami"])])]


def test_a_name_asks_the_default_owners(clients: AwsClients, images: RecordedImages) -> None:
    """Context("AMI Selectors") It("should have default owners and use name when prefixed")"""
    assert queries(clients, images, {"name": "my-ami"}) == [
        (["amazon", "self"], [("name", ["my-ami"])])]


def test_ids_ask_no_owner(clients: AwsClients, images: RecordedImages) -> None:
    """Context("AMI Selectors") It("should not set owners when legacy ids are passed"): one
    query per id here (Karpenter puts both ids in one query's filter)."""
    found = queries(clients, images, {"id": "ami-abcd1234"}, {"id": "ami-cafeaced"})
    assert all(owners == [] for owners, _ in found)
    assert sorted(v for _, filters in found for name, values in filters
                  if name == "image-id" for v in values) == ["ami-abcd1234", "ami-cafeaced"]


def test_owners_alone(clients: AwsClients, images: RecordedImages) -> None:
    """Context("AMI Selectors") It("should allow only specifying owners")"""
    assert queries(clients, images, {"owner": "abcdef"}, {"owner": "123456789012"}) == [
        (["abcdef"], []), (["123456789012"], [])]


def test_a_name_with_an_owner(clients: AwsClients, images: RecordedImages) -> None:
    """Context("AMI Selectors") It("should allow prefixed name and prefixed owners")"""
    assert queries(clients, images, {"name": "my-name", "owner": "0123456789"},
                   {"name": "my-name", "owner": "self"}) == [
        (["0123456789"], [("name", ["my-name"])]), (["self"], [("name", ["my-name"])])]


def status_order(*found: Image) -> list[str]:
    return [ami.id for ami in Resolution(images=found).to_status(NOW).amis or []]


def test_amis_are_sorted_newest_first() -> None:
    """Context("AMI Selectors") It("should sort amis by creationDate"): no creation date
    last."""
    assert status_order(
        Image("test-ami-1-id", "test-ami-1", "amd64", "2021-08-31T00:10:42.000Z", False),
        Image("test-ami-2-id", "test-ami-2", "amd64", "2021-08-31T00:12:42.000Z", False),
        Image("test-ami-3-id", "test-ami-3", "amd64", "2021-08-31T00:08:42.000Z", False),
        Image("test-ami-4-id", "test-ami-4", "amd64", "", False),
    ) == ["test-ami-2-id", "test-ami-1-id", "test-ami-3-id", "test-ami-4-id"]


@pytest.mark.parametrize("deprecated", [
    pytest.param(False, id="should sort amis with the same name and creation date "
                           "consistently"),
    pytest.param(True, id="should sort deprecated amis with the same name and deprecation "
                          "time consistently"),
])
def test_equally_new_amis_are_sorted_by_id(deprecated: bool) -> None:
    """Context("AMI Selectors"), one It per test id."""
    created = "2021-08-31T00:10:42.000Z"
    assert status_order(*(Image(f"test-ami-{n}-id", "test-ami-1", "amd64", created, deprecated)
                          for n in (4, 3, 2, 1))) == [
        "test-ami-1-id", "test-ami-2-id", "test-ami-3-id", "test-ami-4-id"]


# --- Describe("AMIResolver") ----------------------------------------------------------------


@pytest.mark.parametrize(("region", "expected"), [
    pytest.param("us-west-2", "disabled", id="should be disabled for supported regions"),
    pytest.param("us-iso-east-1", None, id="should be nil for iso"),
    pytest.param("us-isob-east-1", None, id="should be nil for isob"),
    pytest.param("us-isof-south-1", None, id="should be nil for isof"),
])
def test_imds_ipv6_per_region(region: str, expected: str | None) -> None:
    """DescribeTable("should set launch template metadata options correctly per region"),
    one test per Entry."""
    options = metadata_options_of(node_class().spec.metadata_options, region)
    assert options.get("HttpProtocolIpv6") == expected


def enclave_flags(provider: AwsCloudProvider, ec2: FakeEC2,
                  requests: dict[str, str] | None) -> list[bool]:
    """The templates Karpenter's resolver would make for t3.medium and m5.large."""
    body = nodeclaim(requirements=[{"key": "node.kubernetes.io/instance-type",
                                    "operator": "In", "values": ["t3.medium", "m5.large"]}]
                     ).model_dump(by_alias=True, exclude_none=True, mode="json")
    if requests:
        body["spec"]["resources"] = {"requests": requests}
    claim = NodeClaim.model_validate(body)
    spec = node_class()
    resolution = provider.resolve(spec)
    choices = launchable(provider.get_instance_types(spec),
                         Requirements.from_node_selector(
                             [r.to_manifest() for r in claim.spec.requirements]),
                         sorted({s.zone for s in resolution.subnets}),
                         sorted({i.architecture for i in resolution.images}))
    provider._templates_for(claim, spec, resolution, choices)
    return [data["EnclaveOptions"]["Enabled"] for data in ec2.template_data()]


@pytest.mark.parametrize(("requests", "enabled"), [
    pytest.param(None, False, id="should set EnclaveEnabled to false by default when no "
                                 "resources are requested"),
    pytest.param({"eks.amazonaws.com/nip-slots": "1"}, True,
                 id="should set EnclaveEnabled to true when ResourceNIPSlots is in the "
                    "NodeClaim's resource requests"),
    pytest.param({"cpu": "2", "memory": "4Gi"}, False,
                 id="should set EnclaveEnabled to false when only other resources are "
                    "requested (not ResourceNIPSlots)"),
])
def test_enclaves_follow_the_nip_slots_request(provider: AwsCloudProvider, world: World,
                                               ec2: FakeEC2, requests: dict[str, str] | None,
                                               enabled: bool) -> None:
    """Context("EnclaveEnabled"), one It per test id."""
    flags = enclave_flags(provider, ec2, requests)
    assert flags and set(flags) == {enabled}
