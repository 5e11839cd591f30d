"""Karpenter's EC2NodeClass AMI reconciler tests (pkg/controllers/nodeclass/ami_test.go,
v1.14.1), ported: each test names its It. Karpenter's reconcile is `resolve_amis` (what the
node class resolution reads), its status `Resolution.to_status().amis`. The Go suite's
images (ami-amd64-standard, ...) are served by `Images`, a DescribeImages stand-in at the
boto client that filters as EC2 does (moto cannot hold images of chosen ids); the alias
parameters are written into moto's SSM.

Requirements are compared as sets: Karpenter writes a standard image's two DoesNotExist
requirements GPU first, Nodewright accelerator first.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.awsrequest import AWSResponse

from nodewright.api.ec2nodeclass import AMISelectorTerm
from nodewright.cloud.aws.amis import resolve_amis
from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.node_class_resolution import Resolution
from nodewright.cloud.aws.provider import AwsCloudProvider
from nodewright.cluster.memory import InMemoryCluster
from nodewright.controllers.nodeclass.status import NodeClassStatus
from nodewright.runtime.clock import VirtualClock
from nodewright.scheduling.pricing import OfflinePriceSource
from tests.aws.fake_ec2 import FakeEC2
from tests.aws.world import (
    CLUSTER,
    K8S_VERSION,
    FakeClock,
    World,
    node_class,
    seed_public_parameter,
)

NOW = datetime(2026, 11, 28, 7, 0, tzinfo=UTC)
ARCH = "kubernetes.io/arch"
GPU = "karpenter.k8s.aws/instance-gpu-count"
ACCELERATOR = "karpenter.k8s.aws/instance-accelerator-count"
OS = "kubernetes.io/os"
BUILD = "node.kubernetes.io/windows-build"


def image(name: str, image_id: str, architecture: str, created: datetime,
          deprecation: datetime | None = None) -> dict[str, Any]:
    raw: dict[str, Any] = {
        "Name": name, "ImageId": image_id, "Architecture": architecture, "State": "available",
        "CreationDate": created.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
        "Tags": [{"Key": "Name", "Value": name.removesuffix("-new")},
                 {"Key": "foo", "Value": "bar"}]}
    if deprecation is not None:
        raw["DeprecationTime"] = deprecation.strftime("%Y-%m-%dT%H:%M:%S.000Z")
    return raw


def karpenters_images() -> list[dict[str, Any]]:
    return [
        image("amd64-standard", "ami-amd64-standard", "x86_64", NOW),
        image("amd64-standard-new", "ami-amd64-standard-new", "x86_64",
              NOW + timedelta(minutes=1)),
        image("amd64-nvidia", "ami-amd64-nvidia", "x86_64", NOW),
        image("amd64-neuron", "ami-amd64-neuron", "x86_64", NOW),
        image("arm64-standard", "ami-arm64-standard", "arm64", NOW),
        image("arm64-nvidia", "ami-arm64-nvidia", "arm64", NOW),
    ]


class Images:
    """DescribeImages over `images`, with EC2's image-id, name, tag:K, tag-key and state
    filters."""

    def __init__(self, clients: AwsClients) -> None:
        self.images = karpenters_images()
        self.client = clients.ec2
        self._asked: dict[str, Any] = {}
        self.client.meta.events.register("provide-client-params.ec2.DescribeImages",
                                         self._remember)
        self.client.meta.events.register("before-call.ec2.DescribeImages", self._answer)

    def detach(self) -> None:
        self.client.meta.events.unregister("provide-client-params.ec2.DescribeImages",
                                           self._remember)
        self.client.meta.events.unregister("before-call.ec2.DescribeImages", self._answer)

    def _remember(self, params: dict[str, Any], **_: Any) -> None:
        self._asked = dict(params)

    @staticmethod
    def _matches(raw: dict[str, Any], name: str, values: list[str]) -> bool:
        tags = {t["Key"]: t["Value"] for t in raw.get("Tags", [])}
        if name == "image-id":
            return raw["ImageId"] in values
        if name == "name":
            return raw["Name"] in values
        if name == "state":
            return raw["State"] in values
        if name == "tag-key":  # EC2's wildcard: "*" is any key
            return any(key in tags or (key == "*" and tags) for key in values)
        if name.startswith("tag:"):
            return tags.get(name[4:]) in values
        raise AssertionError(f"the stand-in does not know the filter {name}")

    def _answer(self, **_: Any) -> tuple[AWSResponse, dict[str, Any]]:
        found = [raw for raw in self.images
                 if all(self._matches(raw, f["Name"], f["Values"])
                        for f in self._asked.get("Filters", []))]
        return AWSResponse("https://ec2.amazonaws.com", 200, {}, None), {  # type: ignore[arg-type]
            "Images": found}


@pytest.fixture
def images(clients: AwsClients) -> Iterator[Images]:
    served = Images(clients)
    yield served
    served.detach()


def publish(clients: AwsClients, parameters: dict[str, str]) -> None:
    for name, value in parameters.items():
        seed_public_parameter(clients.region, name, value)


def amis(clients: AwsClients, *terms: dict[str, Any], version: str = K8S_VERSION,
         now: datetime = NOW) -> list[tuple[str, str, bool, frozenset[Any]]]:
    """The status AMIs: (name, id, deprecated, requirements as a set), in status order."""
    found, _ = resolve_amis(clients.ec2, clients.ssm,
                            [AMISelectorTerm.model_validate(t) for t in terms], version, now=now)
    status = Resolution(images=tuple(found)).to_status(now).amis or []
    return [(ami.name or "", ami.id, bool(ami.deprecated),
             frozenset((r.key, r.operator, tuple(r.values or ())) for r in ami.requirements))
            for ami in status]


def reqs(arch: str, *extra: tuple[str, str]) -> frozenset[Any]:
    return frozenset({(ARCH, "In", (arch,)), *((key, op, ()) for key, op in extra)})


STANDARD = ((GPU, "DoesNotExist"), (ACCELERATOR, "DoesNotExist"))
NVIDIA = ((GPU, "Exists"),)
NEURON = ((ACCELERATOR, "Exists"),)


def as_set(found: list[tuple[str, str, bool, frozenset[Any]]]) -> set[Any]:
    return {(name, image_id, requirements) for name, image_id, _, requirements in found}


def test_al2023_images_with_their_requirements(clients: AwsClients, images: Images) -> None:
    """Context("Aliases") It("Should resolve all AMIs with correct requirements for
    AL2023")"""
    base = f"/aws/service/eks/optimized-ami/{K8S_VERSION}/amazon-linux-2023"
    publish(clients, {
        f"{base}/x86_64/standard/recommended/image_id": "ami-amd64-standard",
        f"{base}/x86_64/nvidia/recommended/image_id": "ami-amd64-nvidia",
        f"{base}/x86_64/neuron/recommended/image_id": "ami-amd64-neuron",
        f"{base}/arm64/standard/recommended/image_id": "ami-arm64-standard",
        f"{base}/arm64/nvidia/recommended/image_id": "ami-arm64-nvidia",
    })
    found = amis(clients, {"alias": "al2023@latest"})
    assert len(found) == 5
    assert as_set(found) == {
        ("amd64-standard", "ami-amd64-standard", reqs("amd64", *STANDARD)),
        ("amd64-nvidia", "ami-amd64-nvidia", reqs("amd64", *NVIDIA)),
        ("amd64-neuron", "ami-amd64-neuron", reqs("amd64", *NEURON)),
        ("arm64-standard", "ami-arm64-standard", reqs("arm64", *STANDARD)),
        ("arm64-nvidia", "ami-arm64-nvidia", reqs("arm64", *NVIDIA)),
    }


def test_al2_images_with_their_requirements(clients: AwsClients, images: Images) -> None:
    """Context("Aliases") It("Should resolve all AMIs with correct requirements for AL2"): the
    GPU image serves NVIDIA and Neuron types."""
    base = f"/aws/service/eks/optimized-ami/{K8S_VERSION}"
    publish(clients, {
        f"{base}/amazon-linux-2/recommended/image_id": "ami-amd64-standard",
        f"{base}/amazon-linux-2-gpu/recommended/image_id": "ami-amd64-nvidia",
        f"{base}/amazon-linux-2-arm64/recommended/image_id": "ami-arm64-standard",
    })
    found = amis(clients, {"alias": "al2@latest"})
    assert len(found) == 4
    assert as_set(found) == {
        ("amd64-standard", "ami-amd64-standard", reqs("amd64", *STANDARD)),
        ("amd64-nvidia", "ami-amd64-nvidia", reqs("amd64", *NVIDIA)),
        ("amd64-nvidia", "ami-amd64-nvidia", reqs("amd64", *NEURON)),
        ("arm64-standard", "ami-arm64-standard", reqs("arm64", *STANDARD)),
    }


BOTTLEROCKET = f"/aws/service/bottlerocket/aws-k8s-{K8S_VERSION}"


def test_bottlerocket_images_with_their_requirements(clients: AwsClients,
                                                     images: Images) -> None:
    """Context("Aliases") It("Should resolve all AMIs with correct requirements for
    Bottlerocket"): the standard x86_64 image also serves Neuron types."""
    publish(clients, {
        f"{BOTTLEROCKET}/x86_64/latest/image_id": "ami-amd64-standard",
        f"{BOTTLEROCKET}/arm64/latest/image_id": "ami-arm64-standard",
        f"{BOTTLEROCKET}-nvidia/x86_64/latest/image_id": "ami-amd64-nvidia",
        f"{BOTTLEROCKET}-nvidia/arm64/latest/image_id": "ami-arm64-nvidia",
    })
    found = amis(clients, {"alias": "bottlerocket@latest"})
    assert len(found) == 5
    assert as_set(found) == {
        ("amd64-standard", "ami-amd64-standard", reqs("amd64", *STANDARD)),
        ("arm64-standard", "ami-arm64-standard", reqs("arm64", *STANDARD)),
        ("amd64-standard", "ami-amd64-standard", reqs("amd64", *NEURON)),
        ("amd64-nvidia", "ami-amd64-nvidia", reqs("amd64", *NVIDIA)),
        ("arm64-nvidia", "ami-arm64-nvidia", reqs("arm64", *NVIDIA)),
    }


@pytest.mark.parametrize(("year", "build", "version"), [
    pytest.param("2019", "10.0.17763", K8S_VERSION,
                 id="Should resolve all AMIs with correct requirements for Windows2019"),
    pytest.param("2022", "10.0.20348", K8S_VERSION,
                 id="Should resolve all AMIs with correct requirements for Windows2022"),
    pytest.param("2025", "10.0.26100", "1.35",
                 id="Should resolve all AMIs with correct requirements for Windows2025"),
])
def test_windows_images_with_their_requirements(clients: AwsClients, images: Images, year: str,
                                                build: str, version: str) -> None:
    """Context("Aliases"), one It per test id (Windows 2025 from Kubernetes 1.35, where
    Karpenter's test skips below it)."""
    publish(clients, {f"/aws/service/ami-windows-latest/Windows_Server-{year}-English-Core-"
                      f"EKS_Optimized-{version}/image_id": "ami-amd64-standard"})
    found = amis(clients, {"alias": f"windows{year}@latest"}, version=version)
    assert as_set(found) == {("amd64-standard", "ami-amd64-standard", frozenset({
        (OS, "In", ("windows",)), (ARCH, "In", ("amd64",)), (BUILD, "In", (build,))}))}


def test_alias_parameters_that_do_not_resolve_are_left_out(clients: AwsClients,
                                                           images: Images) -> None:
    """It("should resolve amiSelector AMIs and requirements into status when all SSM
    parameters don't resolve")"""
    publish(clients, {f"{BOTTLEROCKET}/x86_64/latest/image_id": "ami-amd64-standard",
                      f"{BOTTLEROCKET}/arm64/latest/image_id": "ami-arm64-standard"})
    found = amis(clients, {"alias": "bottlerocket@latest"})
    assert len(found) == 3
    assert {("arm64-standard", "ami-arm64-standard", reqs("arm64", *STANDARD)),
            ("amd64-standard", "ami-amd64-standard", reqs("amd64", *STANDARD))} <= as_set(found)


def test_a_tag_selector_takes_the_newest_image(clients: AwsClients, images: Images) -> None:
    """It("should resolve a valid AMI selector")"""
    assert amis(clients, {"tags": {"Name": "amd64-standard"}}) == [
        ("amd64-standard-new", "ami-amd64-standard-new", False, reqs("amd64"))]


@pytest.fixture
def deprecating(images: Images) -> Images:
    """Context("NodeClass AMI Status"): one image deprecated in 30 minutes."""
    created = datetime(2021, 8, 31, 0, 12, 42, tzinfo=UTC)
    images.images = [
        image("test-ami-3", "ami-id-789", "x86_64", created, NOW + timedelta(minutes=30)),
        image("test-ami-2", "ami-id-456", "arm64", created),
    ]
    return images


def test_the_status_marks_an_image_deprecated_once_it_is(clients: AwsClients,
                                                         deprecating: Images) -> None:
    """Context("NodeClass AMI Status") It("should update nodeclass AMI status with correct
    deprecation value and conditions"): newest first, then by id."""
    assert amis(clients, {"tags": {"*": "*"}}) == [
        ("test-ami-2", "ami-id-456", False, reqs("arm64")),
        ("test-ami-3", "ami-id-789", False, reqs("amd64"))]

    later = NOW + timedelta(minutes=40)
    assert amis(clients, {"tags": {"*": "*"}}, now=later) == [
        ("test-ami-2", "ami-id-456", False, reqs("arm64")),
        ("test-ami-3", "ami-id-789", True, reqs("amd64"))]


def test_a_new_image_replaces_the_deprecated_one(clients: AwsClients,
                                                 deprecating: Images) -> None:
    """Context("NodeClass AMI Status") It("should remove AMIDeprecated status condition when
    non deprecated AMIs are discovered")"""
    later = NOW + timedelta(minutes=40)
    assert amis(clients, {"tags": {"*": "*"}}, now=later)[1][:3] == (
        "test-ami-3", "ami-id-789", True)

    created = datetime(2021, 8, 31, 0, 12, 42, tzinfo=UTC)
    deprecating.images = [
        image("test-ami-4", "ami-id-123", "x86_64", created, later + timedelta(minutes=30)),
        image("test-ami-2", "ami-id-456", "arm64", created),
    ]
    assert amis(clients, {"tags": {"*": "*"}}, now=later) == [
        ("test-ami-4", "ami-id-123", False, reqs("amd64")),
        ("test-ami-2", "ami-id-456", False, reqs("arm64"))]


def test_a_failed_image_lookup_leaves_amis_ready_not_true(
    clients: AwsClients, world: World, clock: FakeClock,
) -> None:
    """It("should get error when resolving AMIs and have status condition set to false"): the
    reconcile fails (it is retried) and writes no AMIsReady=True; as in Karpenter, whose AMI
    reconciler returns the error and leaves the condition as it was."""
    cluster = InMemoryCluster(VirtualClock())
    cluster.create(node_class().to_manifest())
    provider = AwsCloudProvider(clients, CLUSTER, clock=clock, prices=OfflinePriceSource())
    status = NodeClassStatus(cluster, provider, VirtualClock())
    ec2 = FakeEC2.attach(clients.ec2)
    try:
        ec2.fail("DescribeImages", "InternalError", "unable to resolve AMI")
        result = status.reconcile("default")
    finally:
        ec2.detach()

    assert result.requeue_after is not None  # tried again
    conditions = {c["type"]: c["status"] for c in
                  (cluster.get("EC2NodeClass", "default").get("status") or {}).get(
                      "conditions", [])}
    assert conditions.get("AMIsReady") != "True"

    status.reconcile("default")  # EC2 answers again
    conditions = {c["type"]: c["status"] for c in
                  cluster.get("EC2NodeClass", "default")["status"]["conditions"]}
    assert conditions["AMIsReady"] == "True"
