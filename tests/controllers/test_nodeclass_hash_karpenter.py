"""Karpenter's EC2NodeClass hash controller suite, ported: aws/karpenter-provider-aws v1.14.1
pkg/controllers/nodeclass/hash/suite_test.go (Describe "NodeClass Hash Controller"). Each
story names its It or Entry.

Karpenter's nodeclass.hash controller is the EC2NodeClass half of our HashController
(controller/nodewright/controllers/nodepool/hash_annotations.py), reconciled alone as
Karpenter's suite does: the in-memory API server holds the objects, the cluster state is fed
their events. The hash is our own digest and the version "nodewright-v2"
(docs/karpenter-differences.md, "Drift hashes"), so where Karpenter compares with
`nodeClass.Hash(caBundle)` and `EC2NodeClassHashVersion` these compare with
`hashes.node_class_hash` and `NODECLASS_HASH_VERSION_VALUE`. The NodeClaims are built as
Karpenter's suite builds them: a NodePool label and a nodeClassRef, no
karpenter.k8s.aws/ec2nodeclass label (Karpenter finds them by their nodeClassRef)."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import pytest

from nodewright.api import hashes
from nodewright.api.ec2nodeclass import EC2NodeClass
from nodewright.cluster import objects
from nodewright.cluster.api import Object
from nodewright.cluster.memory import InMemoryCluster
from nodewright.controllers.nodepool.hash_annotations import HashController
from nodewright.runtime.clock import VirtualClock
from nodewright.runtime.reconciler import WatchEvent
from nodewright.state import ClusterState

CA_BUNDLE = "test-ca-bundle"  # Karpenter's suite: hash.NewController(env.Client, caBundle)
NODE_CLASS_KEY = "EC2NodeClass/default"
REF = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}

# Karpenter's BeforeEach node class: the Custom family, every selector a wildcard tag.
NODE_CLASS: dict[str, Any] = {
    "apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass",
    "metadata": {"name": "default"},
    "spec": {
        "role": "KarpenterNodeRole",
        "amiFamily": "Custom",
        "amiSelectorTerms": [{"tags": {"*": "*"}}],
        "subnetSelectorTerms": [{"tags": {"*": "*"}}],
        "securityGroupSelectorTerms": [{"tags": {"*": "*"}}],
    },
}
NODE_POOL: dict[str, Any] = {
    "apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "default"},
    "spec": {"template": {"spec": {"nodeClassRef": REF, "requirements": []}}},
}


@dataclass
class Bench:
    """The API server, the cluster state following it, and the hash controller."""

    ca_bundle: str = CA_BUNDLE
    clock: VirtualClock = field(default_factory=VirtualClock)
    cluster: InMemoryCluster = field(init=False)
    state: ClusterState = field(init=False)

    def __post_init__(self) -> None:
        self.cluster = InMemoryCluster(self.clock)
        self.state = ClusterState(self.clock)
        self.state.ca_bundle = self.ca_bundle

    def seen(self, obj: Object, kind: str = "MODIFIED") -> Object:
        self.state.observe(WatchEvent(kind, obj))  # type: ignore[arg-type]
        return obj

    def create(self, body: dict[str, Any]) -> Object:
        return self.seen(self.cluster.create(copy.deepcopy(body)), "ADDED")

    def update_spec(self, **changes: Any) -> None:
        current = copy.deepcopy(self.node_class())
        current["spec"].update(changes)
        self.seen(self.cluster.update(current))

    def reconcile(self) -> None:
        HashController(self.cluster, self.state).reconcile(NODE_CLASS_KEY)
        self.seen(self.node_class())
        for claim in self.cluster.list("NodeClaim"):
            self.seen(claim)

    def node_class(self) -> Object:
        return self.cluster.get("EC2NodeClass", "default")

    def annotations(self, kind: str = "EC2NodeClass", name: str = "default") -> dict[str, str]:
        return dict(objects.annotations(self.cluster.get(kind, name)))

    def expected_hash(self) -> str:
        """Karpenter's nodeClass.Hash(caBundle), as ours computes it."""
        model = EC2NodeClass.model_validate(self.node_class())
        return hashes.node_class_hash(model, self.ca_bundle)


def with_annotations(body: dict[str, Any], annotations: dict[str, str]) -> dict[str, Any]:
    body = copy.deepcopy(body)
    body["metadata"]["annotations"] = dict(annotations)
    return body


def nodeclaim(name: str, annotations: dict[str, str], *, drifted: bool = False
              ) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
        "metadata": {"name": name, "labels": {"karpenter.sh/nodepool": "default"},
                     "annotations": dict(annotations)},
        "spec": {"nodeClassRef": REF, "requirements": []},
    }
    if drifted:
        body["status"] = {"conditions": [
            {"type": "Drifted", "status": "True", "reason": "Drifted", "message": "",
             "lastTransitionTime": "2026-01-05T00:00:00Z"}]}
    return body


def create_claim(bench: Bench, body: dict[str, Any]) -> None:
    status = body.pop("status", None)
    created = bench.cluster.create(body)
    if status is not None:
        created = bench.cluster.patch("NodeClaim", body["metadata"]["name"],
                                      {"status": status}, subresource="status")
    bench.seen(created, "ADDED")


OLD = {hashes.NODECLASS_HASH: "abceduefed", hashes.NODECLASS_HASH_VERSION: "test"}


@pytest.mark.parametrize("changes", [
    pytest.param({"userData": "userdata-test-2"}, id="UserData Drift"),
    pytest.param({"tags": {"keyTag-test-3": "valueTag-test-3"}}, id="Tags Drift"),
    pytest.param({"blockDeviceMappings": [{"deviceName": "map-device-test-3"}]},
                 id="BlockDeviceMappings Drift"),
    pytest.param({"detailedMonitoring": True}, id="DetailedMonitoring Drift"),
    pytest.param({"metadataOptions": {"httpEndpoint": "disabled"}},
                 id="MetadataOptions Drift"),
    pytest.param({"context": "context-2"}, id="Context Drift"),
    pytest.param({"cpuOptions": {"nestedVirtualization": "enabled"}}, id="CPUOptions Drift"),
])
def test_a_static_field_change_changes_the_stamped_hash(changes: dict[str, Any]) -> None:
    """hash/suite_test.go DescribeTable("should update the drift hash when static field is
    updated"), one case per Entry (the ids)."""
    bench = Bench()
    bench.create(NODE_CLASS)
    bench.reconcile()
    first = bench.annotations()[hashes.NODECLASS_HASH]
    assert first == bench.expected_hash()

    bench.update_spec(**changes)
    bench.reconcile()

    second = bench.annotations()[hashes.NODECLASS_HASH]
    assert second == bench.expected_hash()
    assert second != first


def test_a_new_cluster_ca_bundle_changes_the_stamped_hash() -> None:
    """hash/suite_test.go It("should update the drift hash when the CA bundle changes"):
    Karpenter builds a second controller with "new-ca-bundle"; ours reads the bundle the
    controller runs with from the cluster state."""
    bench = Bench()
    bench.create(NODE_CLASS)
    bench.reconcile()
    original = bench.annotations()[hashes.NODECLASS_HASH]
    assert original == bench.expected_hash()

    bench.ca_bundle = bench.state.ca_bundle = "new-ca-bundle"
    bench.reconcile()

    renewed = bench.annotations()[hashes.NODECLASS_HASH]
    assert renewed == bench.expected_hash()
    assert renewed != original


def test_a_dynamic_field_change_keeps_the_stamped_hash() -> None:
    """hash/suite_test.go It("should not update the drift hash when dynamic field is
    updated"): the subnet, security group and AMI selector terms."""
    bench = Bench()
    bench.create(NODE_CLASS)
    bench.reconcile()
    first = bench.annotations()[hashes.NODECLASS_HASH]
    assert first == bench.expected_hash()

    bench.update_spec(subnetSelectorTerms=[{"id": "subnet-test1"}],
                      securityGroupSelectorTerms=[{"id": "sg-test1"}],
                      amiSelectorTerms=[{"tags": {"ami-test-key": "ami-test-value"}}])
    bench.reconcile()

    assert bench.node_class()["metadata"]["generation"] == 2
    assert bench.annotations()[hashes.NODECLASS_HASH] == first


def test_a_node_class_of_another_hash_version_is_stamped_with_ours() -> None:
    """hash/suite_test.go It("should update ec2nodeclass-hash-version annotation when the
    ec2nodeclass-hash-version on the NodeClass does not match with the controller hash
    version")."""
    bench = Bench()
    bench.create(with_annotations(NODE_CLASS, OLD))

    bench.reconcile()

    annotations = bench.annotations()
    assert annotations[hashes.NODECLASS_HASH] == bench.expected_hash()
    assert annotations[hashes.NODECLASS_HASH_VERSION] == hashes.NODECLASS_HASH_VERSION_VALUE


def test_nodeclaims_of_another_hash_version_are_restamped() -> None:
    """hash/suite_test.go It("should update ec2nodeclass-hash-versions on all NodeClaims
    when the ec2nodeclass-hash-version does not match with the controller hash version"):
    both NodeClaims get the node class's current hash and our version."""
    bench = Bench()
    bench.create(with_annotations(NODE_CLASS, OLD))
    bench.create(NODE_POOL)
    stale = {hashes.NODECLASS_HASH: "123456", hashes.NODECLASS_HASH_VERSION: "test"}
    for name in ("claim-one", "claim-two"):
        create_claim(bench, nodeclaim(name, stale))

    bench.reconcile()

    for name in ("claim-one", "claim-two"):
        annotations = bench.annotations("NodeClaim", name)
        assert annotations[hashes.NODECLASS_HASH] == bench.expected_hash()
        assert annotations[hashes.NODECLASS_HASH_VERSION] == (
            hashes.NODECLASS_HASH_VERSION_VALUE)


def test_nodeclaims_of_our_hash_version_keep_their_hash() -> None:
    """hash/suite_test.go It("should not update ec2nodeclass-hash on all NodeClaims when the
    ec2nodeclass-hash-version matches the controller hash version"): the node class is
    stamped, the NodeClaim already of our version keeps the hash it has."""
    bench = Bench()
    bench.create(with_annotations(NODE_CLASS, {hashes.NODECLASS_HASH: "abceduefed",
                                               hashes.NODECLASS_HASH_VERSION: "test-version"}))
    bench.create(NODE_POOL)
    ours = {hashes.NODECLASS_HASH: "1234564654",
            hashes.NODECLASS_HASH_VERSION: hashes.NODECLASS_HASH_VERSION_VALUE}
    create_claim(bench, nodeclaim("claim", ours))

    bench.reconcile()

    annotations = bench.annotations()
    assert annotations[hashes.NODECLASS_HASH] == bench.expected_hash()
    assert annotations[hashes.NODECLASS_HASH_VERSION] == hashes.NODECLASS_HASH_VERSION_VALUE
    assert bench.annotations("NodeClaim", "claim") == ours


def test_a_drifted_nodeclaim_gets_our_version_but_keeps_its_hash() -> None:
    """hash/suite_test.go It("should not update ec2nodeclass-hash on the NodeClaim if it's
    drifted and the ec2nodeclass-hash-version does not match the controller hash version"):
    a new way of hashing cannot judge a NodeClaim already Drifted."""
    bench = Bench()
    bench.create(with_annotations(NODE_CLASS, OLD))
    bench.create(NODE_POOL)
    create_claim(bench, nodeclaim("drifted", {hashes.NODECLASS_HASH: "123456",
                                              hashes.NODECLASS_HASH_VERSION: "test"},
                                  drifted=True))

    bench.reconcile()

    annotations = bench.annotations("NodeClaim", "drifted")
    assert annotations[hashes.NODECLASS_HASH] == "123456"
    assert annotations[hashes.NODECLASS_HASH_VERSION] == hashes.NODECLASS_HASH_VERSION_VALUE
