"""EC2NodeClass admission, ported from Karpenter's AWS provider
`pkg/apis/v1/ec2nodeclass_validation_cel_test.go` (v1.14.1, Describe "CEL/Validation").

Karpenter creates each node class against a test API server that runs its CRD; we create it
against the in-memory cluster, which enforces our generated CRD's schema and CEL rules the
same way. Each case names the Karpenter It (or DescribeTable Entry) it comes from.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from nodewright.api.crds import render_crds_yaml
from nodewright.api.manifests import Document
from nodewright.api.validation import parse_document
from nodewright.cluster.api import InvalidError
from nodewright.cluster.memory import InMemoryCluster
from nodewright.runtime.clock import VirtualClock

FAMILIES = ["AL2", "AL2023", "Bottlerocket", "Windows2019", "Windows2022", "Windows2025"]
DELETE = object()

# Karpenter's BeforeEach node class.
BASE: dict[str, Any] = {
    "apiVersion": "karpenter.k8s.aws/v1",
    "kind": "EC2NodeClass",
    "metadata": {"name": "default"},
    "spec": {
        "amiFamily": "AL2023",
        "amiSelectorTerms": [{"alias": "al2023@latest"}],
        "role": "role-1",
        "securityGroupSelectorTerms": [{"tags": {"*": "*"}}],
        "subnetSelectorTerms": [{"tags": {"*": "*"}}],
    },
}


@pytest.fixture
def cluster() -> InMemoryCluster:
    return InMemoryCluster(VirtualClock())


def node_class(**changes: Any) -> dict[str, Any]:
    """The base node class with spec fields replaced (DELETE leaves one out)."""
    body = copy.deepcopy(BASE)
    spec: dict[str, Any] = body["spec"]
    for key, value in changes.items():
        if value is DELETE:
            spec.pop(key, None)
        else:
            spec[key] = value
    return body


def accepted(cluster: InMemoryCluster, body: dict[str, Any]) -> bool:
    try:
        cluster.create(body)
    except InvalidError as refusal:
        assert refusal.status == 422
        return False
    return True


def volume(size: str, **ebs: Any) -> list[dict[str, Any]]:
    return [{"deviceName": "map-device-1", "ebs": {"volumeSize": size, **ebs},
             "rootVolume": False}]


def nic(card: int, device: int, kind: str) -> dict[str, Any]:
    return {"networkCardIndex": card, "deviceIndex": device, "interfaceType": kind}


def tag_terms(last: dict[str, str]) -> list[dict[str, Any]]:
    return [{"tags": {"test": "testvalue"}}, {"tags": {"test2": "testvalue2"}},
            {"tags": {"test3": "testvalue3"}}, {"tags": last}]


def alias_of(family: str) -> str:
    return f"{family.lower()}@latest"


# (Karpenter It / Entry, spec changes, accepted by the API server)
CASES: list[tuple[str, dict[str, Any], bool]] = [
    ("should succeed if just specifying role", {}, True),
    ("should succeed if just specifying instance profile",
     {"instanceProfile": "test-instance-profile", "role": DELETE}, True),
    ("should fail if specifying both instance profile and role",
     {"instanceProfile": "test-instance-profile"}, False),
    ("should fail if not specifying one of instance profile and role", {"role": DELETE}, False),
    ("UserData: should succeed if user data is empty", {}, True),
    # AMIFamily
    *[(f"AMIFamily: should succeed with valid families, Entry {family}",
       {"amiSelectorTerms": [{"id": "ami-0123456789abcdef"}], "amiFamily": family}, True)
      for family in [*FAMILIES, "Custom"]],
    ("AMIFamily: should fail with the ubuntu family",
     {"amiSelectorTerms": [{"id": "ami-0123456789abcdef"}], "amiFamily": "Ubuntu"}, False),
    *[(f"AMIFamily: should succeed when the amiFamily matches amiSelectorTerms[].alias, "
       f"Entry family {family!r} with alias {alias_of(family)!r}",
       {"amiSelectorTerms": [{"alias": alias_of(family)}], "amiFamily": family}, True)
      for family in FAMILIES],
    *[(f"AMIFamily: should succeed when the amiFamily is custom with amiSelectorTerms[].alias, "
       f"Entry family 'Custom' with alias {alias_of(family)!r}",
       {"amiSelectorTerms": [{"alias": alias_of(family)}], "amiFamily": "Custom"}, True)
      for family in FAMILIES],
    *[(f"AMIFamily: should fail when then amiFamily does not match amiSelectorTerms[].alias, "
       f"Entry family {family!r} with alias {alias_of(other)!r}",
       {"amiSelectorTerms": [{"alias": alias_of(other)}], "amiFamily": family}, False)
      for family in FAMILIES for other in FAMILIES if other != family],
    ("AMIFamily: should fail when neither amiFamily nor an alias are specified",
     {"amiSelectorTerms": [{"id": "ami-01234567890abcdef"}], "amiFamily": DELETE}, False),
    # Tags
    ("Tags: should succeed when tags are empty", {"tags": {}}, True),
    ("Tags: should succeed if tags aren't in restricted tag keys",
     {"tags": {"karpenter.sh/custom-key": "value", "karpenter.sh/managed": "true",
               "kubernetes.io/role/key": "value"}}, True),
    *[(f"Tags: should fail if tags contain a restricted domain key ({key})",
       {"tags": {key: "value"}}, False)
      for key in ["karpenter.sh/nodepool", "kubernetes.io/cluster/test", "eks:eks-cluster-name",
                  "karpenter.k8s.aws/ec2nodeclass", "karpenter.sh/nodeclaim"]],
]

# Subnet and security group selector terms share most of Karpenter's cases.
for field, context, id_value in [
    ("subnetSelectorTerms", "SubnetSelectorTerms", "subnet-12345749"),
    ("securityGroupSelectorTerms", "SecurityGroupSelectorTerms", "sg-12345749"),
]:
    what = "subnet" if field == "subnetSelectorTerms" else "security group"
    CASES += [
        (f"{context}: should succeed with a valid {what} selector on tags",
         {field: [{"tags": {"test": "testvalue"}}]}, True),
        (f"{context}: should succeed with a valid {what} selector on id",
         {field: [{"id": id_value}]}, True),
        (f"{context}: should fail when {what} selector terms is set to nil",
         {field: DELETE}, False),
        (f"{context}: should fail when no {what} selector terms exist", {field: []}, False),
        (f"{context}: should fail when a {what} selector term has no values",
         {field: [{}]}, False),
        # Go's client drops the empty map (omitempty): the server sees a term with no values.
        (f"{context}: should fail when a {what} selector term has no tag map values",
         {field: [{}]}, False),
        (f"{context}: should fail when a {what} selector term has a tag map key that is empty",
         {field: [{"tags": {"test": ""}}]}, False),
        (f"{context}: should fail when a {what} selector term has a tag map value that is "
         "empty", {field: [{"tags": {"": "testvalue"}}]}, False),
        (f"{context}: should fail when the last {what} selector is invalid",
         {field: tag_terms({"": "testvalue4"})}, False),
        (f"{context}: should fail when specifying id with tags",
         {field: [{"id": id_value, "tags": {"test": "testvalue"}}]}, False),
    ]
CASES += [
    ("SecurityGroupSelectorTerms: should succeed with a valid security group selector on name",
     {"securityGroupSelectorTerms": [{"name": "testname"}]}, True),
    ("SecurityGroupSelectorTerms: should fail when specifying id with name",
     {"securityGroupSelectorTerms": [{"id": "sg-12345749", "name": "my-security-group"}]},
     False),
    ("SecurityGroupSelectorTerms: should fail when specifying name with tags",
     {"securityGroupSelectorTerms": [{"name": "my-security-group",
                                      "tags": {"test": "testvalue"}}]}, False),
]

CR = "capacityReservationSelectorTerms"
CASES += [
    ("CapacityReservationSelectorTerms: should succeed with a valid capacity reservation "
     "selector on tags", {CR: [{"tags": {"test": "testvalue"}}]}, True),
    ("CapacityReservationSelectorTerms: should succeed with a valid capacity reservation "
     "selector on id", {CR: [{"id": "cr-12345749"}]}, True),
    ("CapacityReservationSelectorTerms: should succeed for a valid ownerID",
     {CR: [{"ownerID": "012345678901", "tags": {"test": "testvalue"}}]}, True),
    ("CapacityReservationSelectorTerms: should fail with a capacity reservation selector on a "
     "malformed id", {CR: [{"id": "r-12345749"}]}, False),
    ("CapacityReservationSelectorTerms: should succeed when capacity group selector terms is "
     "set to nil", {CR: DELETE}, True),
    ("CapacityReservationSelectorTerms: should fail when a capacity reservation selector term "
     "has no values", {CR: [{}]}, False),
    ("CapacityReservationSelectorTerms: should fail when a capacity reservation selector term "
     "has no tag map values", {CR: [{}]}, False),  # Go drops the empty map (omitempty)
    ("CapacityReservationSelectorTerms: should fail when a capacity reservation selector term "
     "has a tag map key that is empty", {CR: [{"tags": {"test": ""}}]}, False),
    ("CapacityReservationSelectorTerms: should fail when a capacity reservation selector term "
     "has a tag map value that is empty", {CR: [{"tags": {"": "testvalue"}}]}, False),
    ("CapacityReservationSelectorTerms: should fail when the last capacity reservation "
     "selector is invalid", {CR: tag_terms({"": "testvalue4"})}, False),
    ("CapacityReservationSelectorTerms: should fail when specifying id with tags in a single "
     "term", {CR: [{"id": "cr-12345749", "tags": {"test": "testvalue"}}]}, False),
    ("CapacityReservationSelectorTerms: should fail when specifying id with ownerID in a "
     "single term", {CR: [{"ownerID": "012345678901", "id": "cr-12345749"}]}, False),
    ("CapacityReservationSelectorTerms: should fail when the ownerID is malformed",
     {CR: [{"ownerID": "01234567890", "tags": {"test": "testvalue"}}]}, False),
    ("CapacityReservationSelectorTerms: should fail when the ownerID is set by itself",
     {CR: [{"ownerID": "012345678901"}]}, False),
    ("CapacityReservationSelectorTerms: should succeed with a valid instanceMatchCriteria "
     "'open'", {CR: [{"instanceMatchCriteria": "open"}]}, True),
    ("CapacityReservationSelectorTerms: should succeed with a valid instanceMatchCriteria "
     "'targeted'", {CR: [{"instanceMatchCriteria": "targeted"}]}, True),
    ("CapacityReservationSelectorTerms: should succeed with instanceMatchCriteria combined "
     "with tags", {CR: [{"instanceMatchCriteria": "open", "tags": {"test": "testvalue"}}]},
     True),
    ("CapacityReservationSelectorTerms: should succeed with instanceMatchCriteria combined "
     "with ownerID and tags",
     {CR: [{"instanceMatchCriteria": "targeted", "ownerID": "012345678901",
            "tags": {"test": "testvalue"}}]}, True),
    ("CapacityReservationSelectorTerms: should fail with invalid instanceMatchCriteria value",
     {CR: [{"instanceMatchCriteria": "invalid"}]}, False),
    ("CapacityReservationSelectorTerms: should fail when specifying id with "
     "instanceMatchCriteria", {CR: [{"id": "cr-12345749", "instanceMatchCriteria": "open"}]},
     False),
]

# (ours) Karpenter's exclusivity rules on these lists quantify over the list
# (`!self.all(x, has(x.id) && ...)`): they refuse a combination only when every term has it.
# Ours are the same rules, so the same verdicts on lists Karpenter's tests do not try.
SELECTOR_LIST_CASES: list[tuple[str, dict[str, Any], bool]] = [
    ("SubnetSelectorTerms: (ours) id with tags next to a tags term is admitted",
     {"subnetSelectorTerms": [{"id": "subnet-12345749", "tags": {"test": "testvalue"}},
                              {"tags": {"test": "testvalue"}}]}, True),
    ("SubnetSelectorTerms: (ours) id with tags in every term is refused",
     {"subnetSelectorTerms": [{"id": "subnet-12345749", "tags": {"test": "testvalue"}},
                              {"id": "subnet-22345749", "tags": {"test": "other"}}]}, False),
    ("SecurityGroupSelectorTerms: (ours) id with name next to an id term is admitted",
     {"securityGroupSelectorTerms": [{"id": "sg-12345749", "name": "my-security-group"},
                                     {"id": "sg-22345749"}]}, True),
    ("SecurityGroupSelectorTerms: (ours) name with tags next to a name term is admitted",
     {"securityGroupSelectorTerms": [{"name": "a", "tags": {"test": "testvalue"}},
                                     {"name": "b"}]}, True),
    ("SecurityGroupSelectorTerms: (ours) name combined in every term is refused",
     {"securityGroupSelectorTerms": [{"name": "a", "tags": {"test": "testvalue"}},
                                     {"name": "b", "id": "sg-12345749"}]}, False),
    ("CapacityReservationSelectorTerms: (ours) id with tags next to a tags term is admitted",
     {CR: [{"id": "cr-12345749", "tags": {"test": "testvalue"}},
           {"tags": {"test": "testvalue"}}]}, True),
    ("CapacityReservationSelectorTerms: (ours) id with an owner in every term is refused",
     {CR: [{"id": "cr-12345749", "ownerID": "012345678901"},
           {"id": "cr-22345749", "instanceMatchCriteria": "open"}]}, False),
    ("CapacityReservationSelectorTerms: (ours) an empty list is refused, as `!self.all` over "
     "no terms is false in Karpenter's CRD", {CR: []}, False),
]
CASES += SELECTOR_LIST_CASES

AMI = "amiSelectorTerms"
OTHER_AMI_FIELDS: list[tuple[str, dict[str, Any]]] = [
    ("tags", {"tags": {"test": "testvalue"}}), ("name", {"name": "my-custom-ami"}),
                    ("owner", {"owner": "123456789"})]
CASES += [
    ("AMISelectorTerms: should succeed with a valid ami selector on alias",
     {AMI: [{"alias": "al2023@latest"}]}, True),
    ("AMISelectorTerms: should succeed with a valid ami selector on tags",
     {AMI: [{"tags": {"test": "testvalue"}}]}, True),
    ("AMISelectorTerms: should succeed with a valid ami selector on id",
     {AMI: [{"id": "ami-12345749"}]}, True),
    ("AMISelectorTerms: should succeed with a valid ami selector on name",
     {AMI: [{"name": "testname"}]}, True),
    ("AMISelectorTerms: should succeed with a valid ami selector on name and owner",
     {AMI: [{"name": "testname", "owner": "testowner"}]}, True),
    ("AMISelectorTerms: should succeed when an ami selector term has an owner key with tags",
     {AMI: [{"owner": "testowner", "tags": {"test": "testvalue"}}]}, True),
    ("AMISelectorTerms: should fail when a ami selector term has no values", {AMI: [{}]}, False),
    # Go's client drops the empty map (omitempty): the server sees a term with no values.
    ("AMISelectorTerms: should fail when a ami selector term has no tag map values",
     {AMI: [{}]}, False),
    ("AMISelectorTerms: should fail when a ami selector term has a tag map key that is empty",
     {AMI: [{"tags": {"test": ""}}]}, False),
    ("AMISelectorTerms: should fail when a ami selector term has a tag map value that is empty",
     {AMI: [{"tags": {"": "testvalue"}}]}, False),
    ("AMISelectorTerms: should fail when the last ami selector is invalid",
     {AMI: tag_terms({"": "testvalue4"})}, False),
    *[(f"AMISelectorTerms: should fail when specifying id with other fields, Entry {entry}",
       {AMI: [{"id": "ami-1234749", **extra}]}, False)
      for entry, extra in [("alias", {"alias": "al2023@latest"}), *OTHER_AMI_FIELDS]],
    *[(f"AMISelectorTerms: should fail when specifying alias with other fields, Entry {entry}",
       {AMI: [{"alias": "al2023@latest", **extra}]}, False)
      for entry, extra in [("id", {"id": "ami-1234749"}), *OTHER_AMI_FIELDS]],
    ("AMISelectorTerms: should fail when specifying alias with other terms",
     {AMI: [{"alias": "al2023@latest"}, {"id": "ami-1234749"}]}, False),
    *[(f"AMISelectorTerms: should succeed for valid aliases, Entry {entry}",
       {AMI: [{"alias": alias}], "amiFamily": family}, True)
      for entry, alias, family in [
          ("al2 (latest)", "al2@latest", "AL2"),
          ("al2 (pinned)", "al2@v20240625", "AL2"),
          ("al2023 (latest)", "al2023@latest", "AL2023"),
          ("al2023 (pinned)", "al2023@v20240625", "AL2023"),
          ("bottlerocket (latest)", "bottlerocket@latest", "Bottlerocket"),
          ("bottlerocket (pinned)", "bottlerocket@1.10.0", "Bottlerocket"),
          ("windows2019 (latest)", "windows2019@latest", "Windows2019"),
          ("windows2022 (latest)", "windows2022@latest", "Windows2022"),
          ("windows2025 (latest)", "windows2025@latest", "Windows2025"),
      ]],
    *[(f"AMISelectorTerms: should fail for incorrectly formatted aliases, Entry {entry} "
       f"({alias!r})", {AMI: [{"alias": alias}]}, False)
      for entry, alias in [("missing family", "@latest"), ("missing version", "al2023"),
                           ("missing version", "al2023@"),
                           ("invalid separator", "al2023-latest")]],
    ("AMISelectorTerms: should fail for an alias with an invalid family",
     {AMI: [{"alias": "ubuntu@latest"}]}, False),
    *[(f"AMISelectorTerms: should fail when specifying non-latest versions with Windows "
       f"aliases, Entry {family}", {AMI: [{"alias": f"{family.lower()}@v1.0.0"}]}, False)
      for family in ["Windows2019", "Windows2022", "Windows2025"]],
]

MO = "metadataOptions"
CASES += [
    ("MetadataOptions: should succeed for valid inputs",
     {MO: {"httpEndpoint": "disabled", "httpProtocolIPv6": "enabled",
           "httpPutResponseHopLimit": 34, "httpTokens": "optional"}}, True),
    ("MetadataOptions: should fail for invalid for HTTPEndpoint", {MO: {"httpEndpoint": "test"}},
     False),
    ("MetadataOptions: should fail for invalid for HTTPProtocolIPv6",
     {MO: {"httpProtocolIPv6": "test"}}, False),
    ("MetadataOptions: should fail for invalid for HTTPPutResponseHopLimit",
     {MO: {"httpPutResponseHopLimit": -5}}, False),
    ("MetadataOptions: should fail for invalid for HTTPTokens", {MO: {"httpTokens": "test"}},
     False),
]

BDM = "blockDeviceMappings"
CASES += [
    ("BlockDeviceMappings: should succeed if more than one root volume is specified",
     {BDM: [{"deviceName": "map-device-1", "ebs": {"volumeSize": "500G"}, "rootVolume": True},
            {"deviceName": "map-device-2", "ebs": {"volumeSize": "50T"},
             "rootVolume": False}]}, True),
    ("BlockDeviceMappings: should succeed for valid VolumeSize in G", {BDM: volume("58G")}, True),
    ("BlockDeviceMappings: should succeed for valid VolumeSize in T", {BDM: volume("45T")}, True),
    ("BlockDeviceMappings: should fail if more than one root volume is specified",
     {BDM: [{"deviceName": "map-device-1", "ebs": {"volumeSize": "50G"}, "rootVolume": True},
            {"deviceName": "map-device-2", "ebs": {"volumeSize": "50G"},
             "rootVolume": True}]}, False),
    ("BlockDeviceMappings: should fail VolumeSize is less then 1Gi/1G", {BDM: volume("1m")},
     False),
    ("BlockDeviceMappings: should fail VolumeSize is greater then 64T", {BDM: volume("100T")},
     False),
    # Go's empty Quantity, as its client sends it.
    ("BlockDeviceMappings: should fail for VolumeSize that do not parse into quantity values",
     {BDM: volume("0")}, False),
    # Karpenter's three send the empty Quantity ("0") too, which its volumeSize pattern
    # refuses whatever the rate; a valid size here keeps each case about its rate rule.
    ("BlockDeviceMappings: should fail if VolumeInitializationRate set but SnapshotID not "
     "specified", {BDM: volume("20Gi", volumeInitializationRate=100)}, False),
    ("BlockDeviceMappings: should fail if VolumeInitializationRate too low",
     {BDM: volume("20Gi", snapshotID="snap-1", volumeInitializationRate=99)}, False),
    ("BlockDeviceMappings: should fail if VolumeInitializationRate too high",
     {BDM: volume("20Gi", snapshotID="snap-1", volumeInitializationRate=888)}, False),
    ("AMISelectorTerms: (ours, the CRD rule Karpenter's has) a windows alias other than "
     "latest is refused", {"amiFamily": "Windows2022",
                           "amiSelectorTerms": [{"alias": "windows2022@v20240807"}]}, False),
    ("AMISelectorTerms: (ours) windows2022@latest is admitted",
     {"amiFamily": "Windows2022", "amiSelectorTerms": [{"alias": "windows2022@latest"}]},
     True),
    ("Tags: (ours, the CRD rule Karpenter's has) an empty tag key is refused",
     {"tags": {"": "value"}}, False),
    ("Tags: (ours) an empty tag value is admitted", {"tags": {"team": ""}}, True),
    ("AMISelectorTerms: (ours, Karpenter's exclusivity rules do not name ssmParameter) an "
     "ssmParameter next to an id is admitted",
     {"amiSelectorTerms": [{"id": "ami-12345678", "ssmParameter": "/team/ami"}]}, True),
    ("AMISelectorTerms: (ours, as above) an ssmParameter next to an alias is admitted",
     {"amiSelectorTerms": [{"alias": "al2023@latest", "ssmParameter": "/team/ami"}]}, True),
    ("AMISelectorTerms: (ours) an ssmParameter with tags is admitted",
     {"amiSelectorTerms": [{"ssmParameter": "/team/ami", "tags": {"team": "a"}}]}, True),
    ("BlockDeviceMappings: (ours) a valid rate with its snapshot is admitted",
     {BDM: volume("20Gi", snapshotID="snap-1", volumeInitializationRate=200)}, True),
]

NI = "networkInterfaces"
CASES += [
    ("NetworkInterfaces: should succeed with valid multiple network interfaces",
     {NI: [nic(0, 0, "interface"), nic(0, 1, "efa-only"), nic(1, 0, "efa-only"),
           nic(1, 1, "interface")]}, True),
    ("NetworkInterfaces: should succeed when network interfaces is empty", {NI: []}, True),
    ("NetworkInterfaces: should fail with an invalid interface type", {NI: [nic(0, 0, "efa")]},
     False),
    ("NetworkInterfaces: should fail with a negative NetworkCardIndex",
     {NI: [nic(0, 0, "interface"), nic(-1, 0, "interface")]}, False),
    ("NetworkInterfaces: should fail with a negative DeviceIndex",
     {NI: [nic(-1, 0, "interface"), nic(0, -1, "interface")]}, False),
    ("NetworkInterfaces: should fail with duplicate Network Interface and Device Index fields",
     {NI: [nic(0, 0, "interface"), nic(0, 1, "efa-only"), nic(1, 0, "interface"),
           nic(1, 0, "efa-only")]}, False),
    ("NetworkInterfaces: should fail with no primary network interface",
     {NI: [nic(0, 1, "interface")]}, False),
    ("NetworkInterfaces: should fail when primary network interface is not ENA",
     {NI: [nic(0, 0, "efa-only")]}, False),
    ("NetworkInterfaces: should fail when multiple EFA devices on one network card",
     {NI: [nic(0, 0, "interface"), nic(1, 0, "efa-only"), nic(1, 1, "efa-only")]}, False),
]

CT = "connectionTracking"
CASES += [
    ("ConnectionTracking: should fail when connectionTracking is specified with no fields set",
     {CT: {}}, False),
    ("ConnectionTracking: should succeed with valid tcpEstablishedTimeout",
     {CT: {"tcpEstablishedTimeout": 60}}, True),
    ("ConnectionTracking: should succeed with valid udpStreamTimeout",
     {CT: {"udpStreamTimeout": 120}}, True),
    ("ConnectionTracking: should succeed with valid udpTimeout", {CT: {"udpTimeout": 45}}, True),
    ("ConnectionTracking: should succeed with all valid connection tracking settings",
     {CT: {"tcpEstablishedTimeout": 432000, "udpStreamTimeout": 180, "udpTimeout": 60}}, True),
    ("ConnectionTracking: should fail when tcpEstablishedTimeout is below minimum (60s)",
     {CT: {"tcpEstablishedTimeout": 59}}, False),
    ("ConnectionTracking: should fail when tcpEstablishedTimeout is above maximum (432000s)",
     {CT: {"tcpEstablishedTimeout": 432001}}, False),
    ("ConnectionTracking: should fail when udpStreamTimeout is below minimum (60s)",
     {CT: {"udpStreamTimeout": 59}}, False),
    ("ConnectionTracking: should fail when udpStreamTimeout is above maximum (180s)",
     {CT: {"udpStreamTimeout": 181}}, False),
    ("ConnectionTracking: should fail when udpTimeout is below minimum (30s)",
     {CT: {"udpTimeout": 29}}, False),
    ("ConnectionTracking: should fail when udpTimeout is above maximum (60s)",
     {CT: {"udpTimeout": 61}}, False),
    ("Role Immutability: should fail if role is not defined", {"role": DELETE}, False),
    ("CPUOptions: should succeed with nestedVirtualization enabled",
     {"cpuOptions": {"nestedVirtualization": "enabled"}}, True),
    ("CPUOptions: should succeed with nestedVirtualization disabled",
     {"cpuOptions": {"nestedVirtualization": "disabled"}}, True),
    ("CPUOptions: should fail with invalid nestedVirtualization value",
     {"cpuOptions": {"nestedVirtualization": "invalid"}}, False),
    ("CPUOptions: should succeed with empty CPUOptions", {"cpuOptions": {}}, True),
]


# Context "Kubelet": spec.kubelet is v1.14.1's typed struct; Go's metav1.Duration writes
# time.Minute as "1m0s".
ALL_SIGNALS = ["memory.available", "nodefs.available", "nodefs.inodesFree",
               "imagefs.available", "imagefs.inodesFree", "pid.available"]
VALID_THRESHOLDS = dict(zip(ALL_SIGNALS, ["5%", "10%", "15%", "5%", "5%", "5%"], strict=True))
VALID_GRACE = dict(zip(ALL_SIGNALS, ["1m0s", "1m30s", "5m0s", "1h0m0s", "24h0m0s", "1m0s"],
                       strict=True))


def soft(threshold: str, signal: str = "memory.available") -> dict[str, Any]:
    return {"kubelet": {"evictionSoft": {signal: threshold},
                        "evictionSoftGracePeriod": {signal: "1m0s"}}}


CASES += [
    ("Kubelet: should fail on kubeReserved with invalid keys",
     {"kubelet": {"kubeReserved": {"pods": "2"}}}, False),
    ("Kubelet: should fail on systemReserved with invalid keys",
     {"kubelet": {"systemReserved": {"pods": "2"}}}, False),
    ("Kubelet: Eviction Signals: Eviction Hard: should succeed on evictionHard with valid keys",
     {"kubelet": {"evictionHard": VALID_THRESHOLDS}}, True),
    ("Kubelet: Eviction Signals: Eviction Hard: should fail on evictionHard with invalid keys",
     {"kubelet": {"evictionHard": {"memory": "5%"}}}, False),
    ("Kubelet: Eviction Signals: Eviction Hard: should fail on invalid formatted percentage "
     "value in evictionHard", {"kubelet": {"evictionHard": {"memory.available": "5%3"}}}, False),
    ("Kubelet: Eviction Signals: Eviction Hard: should fail on invalid percentage value (too "
     "large) in evictionHard", {"kubelet": {"evictionHard": {"memory.available": "110%"}}},
     False),
    ("Kubelet: Eviction Signals: Eviction Hard: should fail on invalid quantity value in "
     "evictionHard", {"kubelet": {"evictionHard": {"memory.available": "110GB"}}}, False),
    ("Kubelet: Eviction Soft: should succeed on evictionSoft with valid keys",
     {"kubelet": {"evictionSoft": VALID_THRESHOLDS, "evictionSoftGracePeriod": VALID_GRACE}},
     True),
    ("Kubelet: Eviction Soft: should fail on evictionSoft with invalid keys",
     soft("5%", signal="memory"), False),
    ("Kubelet: Eviction Soft: should fail on invalid formatted percentage value in evictionSoft",
     soft("5%3"), False),
    ("Kubelet: Eviction Soft: should fail on invalid percentage value (too large) in "
     "evictionSoft", soft("110%"), False),
    ("Kubelet: Eviction Soft: should fail on invalid quantity value in evictionSoft",
     soft("110GB"), False),
    ("Kubelet: Eviction Soft: should fail when eviction soft doesn't have matching grace period",
     {"kubelet": {"evictionSoft": {"memory.available": "200Mi"}}}, False),
    ("Kubelet: GCThresholdPercent: should succeed on a valid imageGCHighThresholdPercent",
     {"kubelet": {"imageGCHighThresholdPercent": 10}}, True),
    ("Kubelet: GCThresholdPercent: should fail when imageGCHighThresholdPercent is less than "
     "imageGCLowThresholdPercent",
     {"kubelet": {"imageGCHighThresholdPercent": 50, "imageGCLowThresholdPercent": 60}}, False),
    ("Kubelet: GCThresholdPercent: should fail when imageGCLowThresholdPercent is greather than "
     "imageGCHighThresheldPercent",
     {"kubelet": {"imageGCHighThresholdPercent": 50, "imageGCLowThresholdPercent": 60}}, False),
    ("Kubelet: Eviction Soft Grace Period: should succeed on evictionSoftGracePeriod with valid "
     "keys",
     {"kubelet": {"evictionSoft": VALID_THRESHOLDS, "evictionSoftGracePeriod": VALID_GRACE}},
     True),
    ("Kubelet: Eviction Soft Grace Period: should fail on evictionSoftGracePeriod with invalid "
     "keys", {"kubelet": {"evictionSoftGracePeriod": {"memory": "1m0s"}}}, False),
    ("Kubelet: Eviction Soft Grace Period: should fail when eviction soft grace period doesn't "
     "have matching threshold",
     {"kubelet": {"evictionSoftGracePeriod": {"memory.available": "1m0s"}}}, False),
    # (ours) the pattern's other limits and the rules Karpenter's Its do not reach
    ("(ours) Kubelet: a negative kubeReserved quantity",
     {"kubelet": {"kubeReserved": {"cpu": "-100m"}}}, False),
    ("(ours) Kubelet: a negative maxPods", {"kubelet": {"maxPods": -1}}, False),
    ("(ours) Kubelet: imageGCHighThresholdPercent above 100",
     {"kubelet": {"imageGCHighThresholdPercent": 101}}, False),
    ("(ours) Kubelet: every field at once",
     {"kubelet": {"clusterDNS": ["10.100.0.10"], "maxPods": 58, "podsPerCore": 4,
                  "systemReserved": {"cpu": "100m", "pid": "1000"},
                  "kubeReserved": {"memory": "1Gi", "ephemeral-storage": "1Gi"},
                  "evictionHard": {"memory.available": "100Mi"},
                  "evictionSoft": {"nodefs.available": "15%"},
                  "evictionSoftGracePeriod": {"nodefs.available": "2m"},
                  "evictionMaxPodGracePeriod": 60, "imageGCHighThresholdPercent": 85,
                  "imageGCLowThresholdPercent": 80, "cpuCFSQuota": True}}, True),
]


@pytest.mark.parametrize(("karpenter", "changes", "expected"), CASES,
                         ids=[karpenter for karpenter, _, _ in CASES])
def test_the_api_server_decides_as_karpenter_does(
        cluster: InMemoryCluster, karpenter: str, changes: dict[str, Any],
        expected: bool) -> None:
    # Karpenter: Describe "CEL/Validation", the It / Entry named by `karpenter`.
    body = node_class(**changes)
    assert accepted(cluster, body) is expected, f"{karpenter}: {body['spec']}"


@pytest.mark.parametrize(("karpenter", "first", "then"), [
    ("Role Immutability: should succeed when updating the role",
     {"role": "test-role"}, {"role": "test-role2"}),
    ("Role Immutability: should succeed to switch between an unmanaged and managed instance "
     "profile", {"role": DELETE, "instanceProfile": "test-instance-profile"},
     {"role": "test-role", "instanceProfile": DELETE}),
    ("Role Immutability: should succeed to switch between a managed and unmanaged instance "
     "profile", {"role": "test-role"},
     {"role": DELETE, "instanceProfile": "test-instance-profile"}),
], ids=lambda value: value if isinstance(value, str) else "")
def test_the_role_and_instance_profile_may_change_on_update(
        cluster: InMemoryCluster, karpenter: str, first: dict[str, Any],
        then: dict[str, Any]) -> None:
    # Karpenter: Describe "CEL/Validation", Context "Role Immutability", It `karpenter`.
    stored = cluster.create(node_class(**first))
    updated = node_class(**first)
    for key, value in then.items():
        if value is DELETE:
            updated["spec"].pop(key, None)
        else:
            updated["spec"][key] = value
    updated["metadata"] = stored["metadata"]
    cluster.update(updated)
    spec = cluster.get("EC2NodeClass", "default")["spec"]
    assert (spec.get("role"), spec.get("instanceProfile")) == (
        updated["spec"].get("role"), updated["spec"].get("instanceProfile"))


@pytest.mark.parametrize("key", ["eks:eks-cluster-name", "kubernetes.io/cluster/test",
                                 "karpenter.sh/nodepool", "karpenter.sh/nodeclaim",
                                 "karpenter.k8s.aws/ec2nodeclass"])
def test_a_restricted_tag_is_refused_with_karpenters_message(
        cluster: InMemoryCluster, key: str) -> None:
    # Karpenter's CRD (pkg/apis/v1/ec2nodeclass.go, spec.tags): one rule per restricted key,
    # "tag contains a restricted tag matching <key>" (kubernetes.io/cluster/ as a prefix).
    matching = "kubernetes.io/cluster/" if key.startswith("kubernetes.io/cluster") else key
    with pytest.raises(InvalidError) as refusal:
        cluster.create(node_class(tags={key: "value"}))
    assert f"tag contains a restricted tag matching {matching}" in str(refusal.value)


# Karpenter v1.14.1 pkg/apis/crds/karpenter.k8s.aws_ec2nodeclasses.yaml, the
# x-kubernetes-validations of each selector term list, in its order.
KARPENTER_SELECTOR_LIST_RULES: dict[str, list[tuple[str, str]]] = {
    "subnetSelectorTerms": [
        ("subnetSelectorTerms cannot be empty", "self.size() != 0"),
        ("expected at least one, got none, ['tags', 'id']",
         "self.all(x, has(x.tags) || has(x.id))"),
        ("'id' is mutually exclusive, cannot be set with a combination of other fields in a "
         "subnet selector term", "!self.all(x, has(x.id) && has(x.tags))"),
    ],
    "securityGroupSelectorTerms": [
        ("securityGroupSelectorTerms cannot be empty", "self.size() != 0"),
        ("expected at least one, got none, ['tags', 'id', 'name']",
         "self.all(x, has(x.tags) || has(x.id) || has(x.name))"),
        ("'id' is mutually exclusive, cannot be set with a combination of other fields in a "
         "security group selector term", "!self.all(x, has(x.id) && (has(x.tags) || "
         "has(x.name)))"),
        ("'name' is mutually exclusive, cannot be set with a combination of other fields in a "
         "security group selector term", "!self.all(x, has(x.name) && (has(x.tags) || "
         "has(x.id)))"),
    ],
    "capacityReservationSelectorTerms": [
        ("expected at least one, got none, ['tags', 'id', 'instanceMatchCriteria']",
         "self.all(x, has(x.tags) || has(x.id) || has(x.instanceMatchCriteria))"),
        ("'id' is mutually exclusive, cannot be set along with other fields in a capacity "
         "reservation selector term", "!self.all(x, has(x.id) && (has(x.tags) || "
         "has(x.ownerID) || has(x.instanceMatchCriteria)))"),
    ],
}


@pytest.mark.parametrize("field", sorted(KARPENTER_SELECTOR_LIST_RULES))
def test_the_selector_term_lists_carry_karpenters_rules(field: str) -> None:
    """Our generated CRD has Karpenter's rules and messages on each selector term list, and
    no exclusivity rule of its own on the terms."""
    (crd,) = [doc for doc in yaml.safe_load_all(render_crds_yaml())
              if doc["spec"]["names"]["kind"] == "EC2NodeClass"]
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    terms = schema["properties"]["spec"]["properties"][field]
    assert [(r["message"], r["rule"]) for r in terms["x-kubernetes-validations"]] == (
        KARPENTER_SELECTOR_LIST_RULES[field])
    assert [r["message"] for r in terms["items"]["x-kubernetes-validations"]] == [
        "empty tag keys or values aren't supported"]


def _karpenter_message(field: str, key: str) -> str:
    """The message of Karpenter's rule that `key` is exclusive in `field`'s terms."""
    (message,) = [m for m, rule in KARPENTER_SELECTOR_LIST_RULES[field]
                  if rule.startswith(f"!self.all(x, has(x.{key}) &&")]
    return message


@pytest.mark.parametrize(("karpenter", "changes", "key"), [
    ("SubnetSelectorTerms: should fail when specifying id with tags",
     {"subnetSelectorTerms": [{"id": "subnet-12345749", "tags": {"test": "testvalue"}}]}, "id"),
    ("SecurityGroupSelectorTerms: should fail when specifying id with tags",
     {"securityGroupSelectorTerms": [{"id": "sg-12345749", "tags": {"test": "testvalue"}}]},
     "id"),
    ("SecurityGroupSelectorTerms: should fail when specifying name with tags",
     {"securityGroupSelectorTerms": [{"name": "my-security-group",
                                      "tags": {"test": "testvalue"}}]}, "name"),
    ("CapacityReservationSelectorTerms: should fail when specifying id with ownerID in a "
     "single term", {CR: [{"ownerID": "012345678901", "id": "cr-12345749"}]}, "id"),
], ids=lambda value: value if isinstance(value, str) and ":" in value else "")
def test_a_combined_selector_term_is_refused_with_karpenters_message(
        cluster: InMemoryCluster, karpenter: str, changes: dict[str, Any], key: str) -> None:
    # Karpenter: Describe "CEL/Validation", the It named by `karpenter`; the message is its
    # CRD's, and `nodewright validate` gives the same one at the list.
    field = next(iter(changes))
    body = node_class(**changes)
    message = _karpenter_message(field, key)
    with pytest.raises(InvalidError) as refusal:
        cluster.create(body)
    assert message in str(refusal.value)
    assert [m.split(" (", 1)[0] for path, m in problems_of(body)
            if path == f"spec.{field}"] == [message]


@pytest.mark.parametrize(("karpenter", "changes", "expected"), CASES,
                         ids=[karpenter for karpenter, _, _ in CASES])
def test_nodewright_validate_decides_every_case_as_the_api_server(
        cluster: InMemoryCluster, karpenter: str, changes: dict[str, Any],
        expected: bool) -> None:
    # Karpenter: Describe "CEL/Validation", the It named by `karpenter` (or ours). (The
    # AMI selector term cases were once taken by validate and refused by the CRD.)
    body = node_class(**changes)
    assert accepted(cluster, body) is expected
    assert (problems_of(body) == []) is expected, problems_of(body)


def problems_of(body: dict[str, Any]) -> list[tuple[str, str]]:
    """What `nodewright validate` finds in the node class: (field path, message)."""
    _, problems = parse_document(Document("nodeclass.yaml", 1, copy.deepcopy(body)))
    return [(problem.path, problem.message) for problem in problems]
