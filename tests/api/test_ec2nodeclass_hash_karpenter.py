"""The EC2NodeClass drift hash, ported from Karpenter's AWS provider
`pkg/apis/v1/ec2nodeclass_hash_test.go` (v1.14.1, Describe "Hash").

Karpenter pins Go hashstructure values; ours are our own digest (see
`nodewright.api.hashes`), so the pinned numbers below are Nodewright's. They play the same
part as Karpenter's: a change that moves one of them changes the hash of an unchanged node
class, and must come with a bump of the hash version. Both hashes also cover the cluster's
CA bundle: Karpenter's tests pass `testCABundle` ("test-ca-bundle"), and so do these.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from nodewright.api.ec2nodeclass import EC2NodeClass
from nodewright.api.hashes import node_class_hash

# Karpenter's BeforeEach node class, with the selector terms our model requires (they are
# not hashed, as in Karpenter).
BASE: dict[str, Any] = {
    "apiVersion": "karpenter.k8s.aws/v1",
    "kind": "EC2NodeClass",
    "metadata": {"name": "default"},
    "spec": {
        "subnetSelectorTerms": [{"tags": {"*": "*"}}],
        "securityGroupSelectorTerms": [{"tags": {"*": "*"}}],
        "amiSelectorTerms": [{"id": "ami-0123456789abcdef0"}],
        "role": "role-1",
        "tags": {"keyTag-1": "valueTag-1", "keyTag-2": "valueTag-2"},
        "context": "fake-context",
        "detailedMonitoring": False,
        "associatePublicIPAddress": False,
        "metadataOptions": {
            "httpEndpoint": "disabled",
            "httpProtocolIPv6": "disabled",
            "httpPutResponseHopLimit": 1,
            "httpTokens": "optional",
        },
        "blockDeviceMappings": [
            {
                "deviceName": "map-device-1",
                "rootVolume": False,
                "ebs": {
                    "deleteOnTermination": False,
                    "encrypted": False,
                    "iops": 0,
                    "kmsKeyID": "fakeKMSKeyID",
                    "snapshotID": "fakeSnapshot",
                    "throughput": 0,
                    "volumeSize": "2G",
                    "volumeType": "standard",
                },
            },
            {"deviceName": "map-device-2"},
        ],
        "userData": "userdata-test-1",
    },
}

CA_BUNDLE = "test-ca-bundle"  # Karpenter's testCABundle
STATIC_HASH = "10148570191621343906"


def spec_of(body: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = body["spec"]
    return spec


def node_class(change: dict[str, Any] | None = None) -> EC2NodeClass:
    """The base node class with `change` merged into its spec the way Karpenter's
    mergo.Merge(WithOverride) does: maps merge key by key, a block device mapping's fields
    override the first mapping's."""
    body = copy.deepcopy(BASE)
    _merge(spec_of(body), change or {})
    return EC2NodeClass.model_validate(body)


def _merge(into: dict[str, Any], change: dict[str, Any]) -> None:
    for key, value in change.items():
        current = into.get(key)
        if isinstance(value, dict) and isinstance(current, dict):
            _merge(current, value)
        elif isinstance(value, list) and isinstance(current, list) and key == "blockDeviceMappings":
            for index, item in enumerate(value):
                _merge(current[index], item)
        else:
            into[key] = value


def hash_of(change: dict[str, Any] | None = None) -> str:
    return node_class_hash(node_class(change), CA_BUNDLE)


# (Karpenter Entry name, change to the spec, our pinned hash)
STATIC_FIELDS: list[tuple[str, dict[str, Any], str]] = [
    ("UserData", {"userData": "userdata-test-2"}, "8240735375164836902"),
    ("Tags", {"tags": {"keyTag-test-3": "valueTag-test-3"}}, "6317357765514285099"),
    ("Context", {"context": "context-2"}, "12666543509734469937"),
    ("DetailedMonitoring", {"detailedMonitoring": True}, "9082043593017100005"),
    ("InstanceStorePolicy", {"instanceStorePolicy": "RAID0"}, "11583023290042590917"),
    ("AssociatePublicIPAddress", {"associatePublicIPAddress": True}, "2993462210339542649"),
    ("MetadataOptions HTTPEndpoint",
     {"metadataOptions": {"httpEndpoint": "enabled"}}, "6826766516782525004"),
    ("MetadataOptions HTTPProtocolIPv6", {"metadataOptions": {"httpProtocolIPv6": "enabled"}},
     "10369017665256274819"),
    ("MetadataOptions HTTPPutResponseHopLimit",
     {"metadataOptions": {"httpPutResponseHopLimit": 10}}, "10946008327390048939"),
    ("MetadataOptions HTTPTokens",
     {"metadataOptions": {"httpTokens": "required"}}, "6246108253399841314"),
    ("BlockDeviceMapping DeviceName",
     {"blockDeviceMappings": [{"deviceName": "map-device-test-3"}]}, "5272285010927017874"),
    ("BlockDeviceMapping RootVolume",
     {"blockDeviceMappings": [{"rootVolume": True}]}, "12153828071602196238"),
    ("BlockDeviceMapping DeleteOnTermination",
     {"blockDeviceMappings": [{"ebs": {"deleteOnTermination": True}}]}, "16323478082918941985"),
    ("BlockDeviceMapping Encrypted",
     {"blockDeviceMappings": [{"ebs": {"encrypted": True}}]}, "10540762472594645374"),
    ("BlockDeviceMapping IOPS",
     {"blockDeviceMappings": [{"ebs": {"iops": 10}}]}, "5568158641360952567"),
    ("BlockDeviceMapping KMSKeyID",
     {"blockDeviceMappings": [{"ebs": {"kmsKeyID": "test"}}]}, "1013140024835819828"),
    ("BlockDeviceMapping SnapshotID",
     {"blockDeviceMappings": [{"ebs": {"snapshotID": "test"}}]}, "16394463562575987447"),
    ("BlockDeviceMapping Throughput",
     {"blockDeviceMappings": [{"ebs": {"throughput": 10}}]}, "12931386777270861992"),
    ("BlockDeviceMapping VolumeType",
     {"blockDeviceMappings": [{"ebs": {"volumeType": "io1"}}]}, "932746864813909998"),
    ("ConnectionTracking TCPEstablishedTimeout",
     {"connectionTracking": {"tcpEstablishedTimeout": 300}}, "6607862603923895165"),
    ("ConnectionTracking UDPStreamTimeout", {"connectionTracking": {"udpStreamTimeout": 120}},
     "40128648746848775"),
    ("ConnectionTracking UDPTimeout",
     {"connectionTracking": {"udpTimeout": 45}}, "16610276548288257013"),
    ("CPUOptions NestedVirtualization", {"cpuOptions": {"nestedVirtualization": "enabled"}},
     "5774899507763266727"),
]

# Behavior / dynamic fields: Karpenter's entries expect the base hash.
DYNAMIC_FIELDS: list[tuple[str, dict[str, Any]]] = [
    ("Modified AMISelector", {"amiSelectorTerms": [{"tags": {"ami-test-key": "ami-test-value"}}]}),
    ("Modified SubnetSelector",
     {"subnetSelectorTerms": [{"tags": {"subnet-test-key": "subnet-test-value"}}]}),
    ("Modified SecurityGroupSelector",
     {"securityGroupSelectorTerms": [
         {"tags": {"security-group-test-key": "security-group-test-value"}}]}),
]


def test_the_base_node_class_has_the_pinned_hash() -> None:
    """Karpenter: "should match static hash on field value change", Entry "Base EC2NodeClass"."""
    assert hash_of() == STATIC_HASH


@pytest.mark.parametrize(("entry", "change", "pinned"), STATIC_FIELDS,
                         ids=[entry for entry, _, _ in STATIC_FIELDS])
def test_a_static_field_change_has_its_own_pinned_hash(
        entry: str, change: dict[str, Any], pinned: str) -> None:
    # Karpenter: "should match static hash on field value change", Entry <entry>.
    assert hash_of(change) == pinned
    assert pinned != STATIC_HASH


@pytest.mark.parametrize(("entry", "change"), DYNAMIC_FIELDS,
                         ids=[entry for entry, _ in DYNAMIC_FIELDS])
def test_a_selector_change_keeps_the_base_hash(entry: str, change: dict[str, Any]) -> None:
    # Karpenter: "should match static hash on field value change", Entry <entry>.
    assert hash_of(change) == STATIC_HASH


def test_a_new_volume_size_has_its_own_pinned_hash() -> None:
    """Karpenter: "should match static hash when updating blockDeviceMapping volumeSize"."""
    pinned = "13919915694482403910"
    assert hash_of({"blockDeviceMappings": [{"ebs": {"volumeSize": "10G"}}]}) == pinned


def test_an_instance_profile_in_place_of_the_role_has_its_own_pinned_hash() -> None:
    """Karpenter: "should match static hash for instanceProfile"."""
    body = copy.deepcopy(BASE)
    del spec_of(body)["role"]
    spec_of(body)["instanceProfile"] = "test-instance-profile"
    assert node_class_hash(EC2NodeClass.model_validate(body), CA_BUNDLE) == "16493472393423128327"


def test_reordered_tags_keep_the_pinned_hash() -> None:
    """Karpenter: "should match static hash when reordering tags"."""
    assert hash_of({"tags": {"keyTag-2": "valueTag-2", "keyTag-1": "valueTag-1"}}) == STATIC_HASH


def test_reordered_block_device_mappings_keep_the_pinned_hash() -> None:
    """Karpenter: "should match static hash when reordering blockDeviceMappings"."""
    body = copy.deepcopy(BASE)
    spec_of(body)["blockDeviceMappings"].reverse()
    assert node_class_hash(EC2NodeClass.model_validate(body), CA_BUNDLE) == STATIC_HASH


@pytest.mark.parametrize(("entry", "change"), [(e, c) for e, c, _ in STATIC_FIELDS],
                         ids=[entry for entry, _, _ in STATIC_FIELDS])
def test_updating_a_static_field_changes_the_hash(entry: str, change: dict[str, Any]) -> None:
    # Karpenter: "should change hash when static fields are updated", Entry <entry>.
    assert hash_of(change) != hash_of()


def test_updating_the_volume_size_changes_the_hash() -> None:
    """Karpenter: "should change hash blockDeviceMapping volumeSize is updated"."""
    assert hash_of({"blockDeviceMappings": [{"ebs": {"volumeSize": "10G"}}]}) != hash_of()


def test_updating_the_instance_profile_changes_the_hash() -> None:
    """Karpenter: "should change hash when instanceProfile is updated"."""
    body = copy.deepcopy(BASE)
    del spec_of(body)["role"]
    spec_of(body)["instanceProfile"] = "test-instance-profile"
    before = node_class_hash(EC2NodeClass.model_validate(body), CA_BUNDLE)
    spec_of(body)["instanceProfile"] = "other-instance-profile"
    assert node_class_hash(EC2NodeClass.model_validate(body), CA_BUNDLE) != before


def test_reordering_tags_does_not_change_the_hash() -> None:
    """Karpenter: "should not change hash when tags are re-ordered"."""
    before = hash_of()
    assert hash_of({"tags": {"keyTag-2": "valueTag-2", "keyTag-1": "valueTag-1"}}) == before


def test_reordering_block_device_mappings_does_not_change_the_hash() -> None:
    """Karpenter: "should not change hash when blockDeviceMappings are re-ordered"."""
    before = hash_of()
    body = copy.deepcopy(BASE)
    spec_of(body)["blockDeviceMappings"].reverse()
    assert node_class_hash(EC2NodeClass.model_validate(body), CA_BUNDLE) == before


def test_updating_every_selector_does_not_change_the_hash() -> None:
    """Karpenter: "should not change hash when behavior/dynamic fields are updated"."""
    before = hash_of()
    after = hash_of({
        "subnetSelectorTerms": [{"tags": {"subnet-test-key": "subnet-test-value"}}],
        "securityGroupSelectorTerms": [{"tags": {"sg-test-key": "sg-test-value"}}],
        "amiSelectorTerms": [{"tags": {"ami-test-key": "ami-test-value"}}],
        "capacityReservationSelectorTerms": [{"tags": {"cr-test-key": "cr-test-value"}}],
    })
    assert after == before


def test_two_node_classes_with_the_same_spec_have_the_same_hash() -> None:
    """Karpenter: "should expect two EC2NodeClasses with the same spec to have the same hash"."""
    other = copy.deepcopy(BASE)
    other["metadata"] = {"name": "other"}
    assert node_class_hash(EC2NodeClass.model_validate(other), CA_BUNDLE) == hash_of()
