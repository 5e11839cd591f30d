"""Each of Karpenter's validation rules, once with a valid and once with an invalid input.

A case names a change to a known-good manifest, the field path we expect the
problem at, and a fragment of the message. `None` as the expected path means
the change is valid.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from nodewright.api.manifests import Document
from nodewright.api.validation import parse_document

MANIFESTS = Path(__file__).parent / "manifests"
DELETE = object()


def _base(kind: str) -> dict[str, Any]:
    name = {"NodePool": "nodepool-full.yaml", "EC2NodeClass": "ec2nodeclass-full.yaml"}[kind]
    body = yaml.safe_load((MANIFESTS / name).read_text())
    assert isinstance(body, dict)
    return body


def _set(body: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    changed = copy.deepcopy(body)
    target: Any = changed
    parts = [int(p) if p.isdigit() else p for p in path.split("|")]
    for part in parts[:-1]:
        target = target[part]
    if value is DELETE:
        del target[parts[-1]]
    else:
        target[parts[-1]] = value
    return changed


def _problems(body: dict[str, Any]) -> list[tuple[str, str]]:
    _, problems = parse_document(Document("case.yaml", 1, body))
    return [(p.path, p.message) for p in problems]


REQ = "spec|template|spec|requirements"
LABELS = "spec|template|metadata|labels"
BUDGETS = "spec|disruption|budgets"

NODEPOOL_CASES: list[tuple[str, str, Any, str | None, str]] = [
    # (case id, path to change, new value, expected problem path or None, message fragment)
    ("custom label allowed", LABELS, {"team": "a"}, None, ""),
    ("well-known kubernetes label allowed", LABELS,
     {"topology.kubernetes.io/zone": "us-east-1a"}, None, ""),
    ("karpenter.sh label restricted", LABELS, {"karpenter.sh/foo": "x"},
     "spec.template.metadata.labels[karpenter.sh/foo]", 'domain "karpenter.sh" is restricted'),
    ("karpenter.k8s.aws label restricted", LABELS, {"karpenter.k8s.aws/foo": "x"},
     "spec.template.metadata.labels[karpenter.k8s.aws/foo]", '"karpenter.k8s.aws" is restricted'),
    ("hostname label restricted", LABELS, {"kubernetes.io/hostname": "x"},
     "spec.template.metadata.labels[kubernetes.io/hostname]", "kubernetes.io/hostname"),
    ("nodepool label restricted", LABELS, {"karpenter.sh/nodepool": "x"},
     "spec.template.metadata.labels[karpenter.sh/nodepool]", "karpenter.sh/nodepool"),
    ("well-known aws requirement allowed", f"{REQ}|0|key", "karpenter.k8s.aws/instance-size",
     None, ""),
    ("restricted requirement key", f"{REQ}|0|key", "karpenter.k8s.aws/nonsense",
     "spec.template.spec.requirements[0].key", "restricted"),
    ("nodepool requirement restricted in a NodePool", f"{REQ}|0|key", "karpenter.sh/nodepool",
     "spec.template.spec.requirements[0].key", 'label "karpenter.sh/nodepool" is restricted'),
    ("label value too long", LABELS, {"team": "x" * 64},
     "spec.template.metadata.labels.team", "at most 63 characters"),
    ("label value with a space", LABELS, {"team": "a b"},
     "spec.template.metadata.labels.team", "label value"),
    ("Gt with a non-ASCII digit", f"{REQ}|4|values", ["\u0663"],
     "spec.template.spec.requirements[4].values", "non-negative integer"),
    ("budget nodes unquoted", f"{BUDGETS}|0|nodes", 5,
     "spec.disruption.budgets[0].nodes", 'write nodes: "5" (quoted)'),
    ("weight as a string", "spec|weight", "5", "spec.weight", "valid integer"),
    ("minValues as a string", f"{REQ}|0|minValues", "2",
     "spec.template.spec.requirements[0].minValues", "valid integer"),
    ("hostname requirement restricted", f"{REQ}|0|key", "kubernetes.io/hostname",
     "spec.template.spec.requirements[0].key", "kubernetes.io/hostname"),
    ("Gt with one integer", f"{REQ}|4|values", ["5"], None, ""),
    ("Gt with two values", f"{REQ}|4|values", ["1", "2"],
     "spec.template.spec.requirements[4].values", "exactly one non-negative integer"),
    ("Lt with a word", f"{REQ}|5|values", ["many"],
     "spec.template.spec.requirements[5].values", "exactly one non-negative integer"),
    ("Gte negative", f"{REQ}|6|values", ["-1"],
     "spec.template.spec.requirements[6].values", "non-negative integer"),
    ("Lte with none", f"{REQ}|7|values", [],
     "spec.template.spec.requirements[7].values", "non-negative integer"),
    ("unknown operator", f"{REQ}|0|operator", "Contains",
     "spec.template.spec.requirements[0].operator", "'Contains' is not allowed"),
    ("In without values", f"{REQ}|8|values", [],
     "spec.template.spec.requirements[8].values", "must have a value defined"),
    ("minValues met", f"{REQ}|0|minValues", 3, None, ""),
    ("minValues above the values", f"{REQ}|0|minValues", 4,
     "spec.template.spec.requirements[0].minValues", "at least that many values"),
    ("schedule with duration", f"{BUDGETS}|1|duration", "10h", None, ""),
    ("schedule without duration", f"{BUDGETS}|1|duration", DELETE,
     "spec.disruption.budgets[1].duration", "'schedule' must be set with 'duration'"),
    ("duration without schedule", f"{BUDGETS}|2|duration", "1h",
     "spec.disruption.budgets[2].schedule", "'schedule' must be set with 'duration'"),
    ("cron shorthand", f"{BUDGETS}|1|schedule", "@daily", None, ""),
    ("cron does not parse", f"{BUDGETS}|1|schedule", "0 25 * * *",
     "spec.disruption.budgets[1].schedule", "not a cron expression"),
    ("cron with six fields", f"{BUDGETS}|1|schedule", "0 0 9 * * mon",
     "spec.disruption.budgets[1].schedule", "not a cron expression"),
    ("budget nodes percent", f"{BUDGETS}|0|nodes", "25%", None, ""),
    ("budget nodes bad percent", f"{BUDGETS}|0|nodes", "250%",
     "spec.disruption.budgets[0].nodes", "node count"),
    ("budget reason unknown", f"{BUDGETS}|2|reasons", ["Expired"],
     "spec.disruption.budgets[2].reasons[0]", "'Expired' is not allowed"),
    ("budget duration minutes", f"{BUDGETS}|1|duration", "1h30m", None, ""),
    ("budget duration seconds", f"{BUDGETS}|1|duration", "90s",
     "spec.disruption.budgets[1].duration", "hours and minutes"),
    ("expireAfter Never", "spec|template|spec|expireAfter", "Never", None, ""),
    ("expireAfter days", "spec|template|spec|expireAfter", "30d",
     "spec.template.spec.expireAfter", "duration such as 30s, 5m or 720h, or Never"),
    ("consolidateAfter Never", "spec|disruption|consolidateAfter", "Never", None, ""),
    ("consolidateAfter word", "spec|disruption|consolidateAfter", "soon",
     "spec.disruption.consolidateAfter", "duration"),
    ("terminationGracePeriod bad", "spec|template|spec|terminationGracePeriod", "2 days",
     "spec.template.spec.terminationGracePeriod", "duration"),
    ("consolidationPolicy unknown", "spec|disruption|consolidationPolicy", "Always",
     "spec.disruption.consolidationPolicy", "'Always' is not allowed"),
    ("weight 100", "spec|weight", 100, None, ""),
    ("weight 0", "spec|weight", 0, "spec.weight", "greater than or equal to 1"),
    ("weight 101", "spec|weight", 101, "spec.weight", "less than or equal to 100"),
    ("limit quantity", "spec|limits|cpu", 64, None, ""),
    ("limit not a quantity", "spec|limits|memory", "lots",
     "spec.limits.memory", "Kubernetes quantity"),
    ("taint effect unknown", "spec|template|spec|taints|0|effect", "NoWay",
     "spec.template.spec.taints[0].effect", "'NoWay' is not allowed"),
    ("unknown field", "spec|template|spec|kubelet", {"maxPods": 10},
     "spec.template.spec.kubelet", "unknown field"),
    ("consolidationPolicy Balanced", "spec|disruption|consolidationPolicy", "Balanced",
     None, ""),
    ("replicas with other limits", "spec|replicas", 3,
     "spec.limits.cpu", "only 'limits.nodes' is supported on static NodePools"),
    ("replicas with weight", "spec|replicas", 3,
     "spec.weight", "'weight' is not supported on static NodePools"),
    ("replicas negative", "spec|replicas", -1, "spec.replicas", "greater than or equal to 0"),
    ("replicas as a string", "spec|replicas", "3", "spec.replicas", "valid integer"),
    ("missing nodeClassRef", "spec|template|spec|nodeClassRef", DELETE,
     "spec.template.spec.nodeClassRef", "required field is missing"),
]


def test_static_nodepool_with_only_a_node_limit_and_no_weight_is_valid() -> None:
    body = _set(_set(_base("NodePool"), "spec|limits", {"nodes": "5"}), "spec|weight", DELETE)
    assert _problems(_set(body, "spec|replicas", 0)) == []
    assert _problems(_set(body, "spec|replicas", 1000)) == []


@pytest.mark.parametrize(
    ("path", "value", "expected_path", "fragment"),
    [case[1:] for case in NODEPOOL_CASES],
    ids=[case[0] for case in NODEPOOL_CASES],
)
def test_nodepool_rule(path: str, value: Any, expected_path: str | None, fragment: str) -> None:
    problems = _problems(_set(_base("NodePool"), path, value))
    if expected_path is None:
        assert problems == []
    else:
        assert any(p == expected_path and fragment in m for p, m in problems), problems


NODECLASS_CASES: list[tuple[str, str, Any, str | None, str]] = [
    ("role only", "spec|role", "NodeRole", None, ""),
    ("role and instanceProfile", "spec|instanceProfile", "profile",
     "spec.instanceProfile", "exactly one of ['role', 'instanceProfile']"),
    ("neither role nor instanceProfile", "spec|role", DELETE,
     "spec", "exactly one of ['role', 'instanceProfile']"),
    ("alias alone", "spec|amiSelectorTerms", [{"alias": "al2023@latest"}], None, ""),
    ("alias pinned", "spec|amiSelectorTerms", [{"alias": "al2023@v20240807"}], None, ""),
    ("al2023 alias without v", "spec|amiSelectorTerms", [{"alias": "al2023@20240807"}],
     "spec.amiSelectorTerms[0].alias", "must be 'latest' or a pinned version such as v2024"),
    ("boolean as a string", "spec|kubelet|cpuCFSQuota", "true",
     "spec.kubelet.cpuCFSQuota", "must be a valid boolean"),
    ("maxPods as a string", "spec|kubelet|maxPods", "10",
     "spec.kubelet.maxPods", "must be a valid integer"),
    # v1.14.1's struct has eleven fields; Karpenter's main branch opens it to every upstream
    # KubeletConfiguration field, v1.14.1 does not.
    ("upstream kubelet field outside the struct", "spec|kubelet|cpuManagerPolicy", "static",
     "spec.kubelet.cpuManagerPolicy", "unknown field"),
    ("not a kubelet field", "spec|kubelet|cpuManager", "static",
     "spec.kubelet.cpuManager", "unknown field"),
    ("soft grace not a duration", "spec|kubelet|evictionSoftGracePeriod",
     {"memory.available": "soon", "nodefs.available": "1m", "nodefs.inodesFree": "1m"},
     "spec.kubelet.evictionSoftGracePeriod[memory.available]", "is not a duration"),
    ("reserved not a quantity", "spec|kubelet|kubeReserved", {"cpu": "vcpus * 10"},
     "spec.kubelet.kubeReserved.cpu", "a Kubernetes quantity"),
    ("soft grace negative", "spec|kubelet|evictionSoftGracePeriod",
     {"memory.available": "-1m", "nodefs.available": "1m", "nodefs.inodesFree": "1m"},
     "spec.kubelet.evictionSoftGracePeriod[memory.available]", "negative duration"),
    ("alias with another term", "spec|amiSelectorTerms",
     [{"alias": "al2023@latest"}, {"id": "ami-0123"}],
     "spec.amiSelectorTerms", "'alias' is mutually exclusive"),
    ("alias with another field", "spec|amiSelectorTerms",
     [{"alias": "al2023@latest", "owner": "amazon"}],
     "spec.amiSelectorTerms[0].alias", "'alias' is mutually exclusive"),
    ("alias unknown family", "spec|amiSelectorTerms", [{"alias": "ubuntu@latest"}],
     "spec.amiSelectorTerms[0].alias", "not supported"),
    ("alias without version", "spec|amiSelectorTerms", [{"alias": "al2023"}],
     "spec.amiSelectorTerms[0].alias", "alias"),
    ("windows alias pinned", "spec|amiSelectorTerms", [{"alias": "windows2022@v1"}],
     "spec.amiSelectorTerms[0].alias", "only specify version 'latest'"),
    ("amiFamily required without alias", "spec|amiFamily", DELETE,
     "spec.amiFamily", "must specify amiFamily"),
    ("ami id with name", "spec|amiSelectorTerms|0|name", "x",
     "spec.amiSelectorTerms[0].id", "'id' is mutually exclusive"),
    ("empty ami term", "spec|amiSelectorTerms|0", {},
     "spec.amiSelectorTerms[0]", "at least one selector field"),
    ("no ami terms", "spec|amiSelectorTerms", [],
     "spec.amiSelectorTerms", "must not be empty"),
    ("no subnet terms", "spec|subnetSelectorTerms", [],
     "spec.subnetSelectorTerms", "subnetSelectorTerms cannot be empty"),
    ("empty subnet term", "spec|subnetSelectorTerms|0", {},
     "spec.subnetSelectorTerms[0]", "at least one selector field"),
    # Karpenter's exclusivity rules quantify over the list (v1.14.1 CRD, `!self.all(...)`):
    # a combined term next to a plain one passes, every term combined (or none) fails.
    ("subnet id with tags next to a plain term", "spec|subnetSelectorTerms|1|tags",
     {"a": "b"}, None, ""),
    ("subnet id with tags in every term", "spec|subnetSelectorTerms",
     [{"id": "subnet-0123", "tags": {"a": "b"}}], "spec.subnetSelectorTerms",
     "'id' is mutually exclusive, cannot be set with a combination of other fields in a "
     "subnet selector term"),
    ("empty tag value in selector", "spec|subnetSelectorTerms|0|tags", {"a": ""},
     "spec.subnetSelectorTerms[0].tags.a", "empty tag keys or values"),
    ("security group name with tags next to plain terms",
     "spec|securityGroupSelectorTerms|2|tags", {"a": "b"}, None, ""),
    ("security group name with tags or id in every term", "spec|securityGroupSelectorTerms",
     [{"name": "a", "tags": {"a": "b"}}, {"name": "b", "id": "sg-0123"}],
     "spec.securityGroupSelectorTerms", "'name' is mutually exclusive, cannot be set with a "
     "combination of other fields in a security group selector term"),
    ("capacity reservation id with an owner in every term",
     "spec|capacityReservationSelectorTerms|0|ownerID", "012345678901",
     "spec.capacityReservationSelectorTerms", "'id' is mutually exclusive, cannot be set "
     "along with other fields in a capacity reservation selector term"),
    ("empty capacity reservation terms", "spec|capacityReservationSelectorTerms", [],
     "spec.capacityReservationSelectorTerms",
     "an empty capacityReservationSelectorTerms fails this rule too"),
    ("no capacity reservation terms", "spec|capacityReservationSelectorTerms", DELETE,
     None, ""),
    ("bad subnet id", "spec|subnetSelectorTerms|1|id", "sn-123",
     "spec.subnetSelectorTerms[1].id", "subnet-"),
    ("restricted tag cluster", "spec|tags", {"kubernetes.io/cluster/foo": "owned"},
     "spec.tags[kubernetes.io/cluster/foo]", "restricted"),
    ("restricted tag nodepool", "spec|tags", {"karpenter.sh/nodepool": "x"},
     "spec.tags[karpenter.sh/nodepool]", "restricted"),
    ("restricted tag eks", "spec|tags", {"eks:eks-cluster-name": "x"},
     "spec.tags.eks:eks-cluster-name", "restricted"),
    ("restricted tag nodeclass", "spec|tags", {"karpenter.k8s.aws/ec2nodeclass": "x"},
     "spec.tags[karpenter.k8s.aws/ec2nodeclass]", "restricted"),
    ("restricted tag nodeclaim", "spec|tags", {"karpenter.sh/nodeclaim": "x"},
     "spec.tags[karpenter.sh/nodeclaim]", "restricted"),
    ("restricted tag cluster prefix without the slash", "spec|tags",
     {"kubernetes.io/clusterfoo": "x"}, "spec.tags[kubernetes.io/clusterfoo]",
     "tag contains a restricted tag matching kubernetes.io/cluster/"),
    # As Karpenter's CRD: an empty tag value is taken, and ssmParameter may sit next to an id.
    ("empty tag value", "spec|tags", {"team": ""}, None, ""),
    ("ami id with an ssm parameter", "spec|amiSelectorTerms|0|ssmParameter", "/team/ami",
     None, ""),
    ("image GC high below low", "spec|kubelet|imageGCHighThresholdPercent", 70,
     "spec.kubelet", "must be greater than imageGCLowThresholdPercent"),
    ("evictionSoft without grace", "spec|kubelet|evictionSoftGracePeriod",
     {"memory.available": "1m", "nodefs.available": "1m"},
     "spec.kubelet", "evictionSoft OwnerKey does not have a matching evictionSoftGracePeriod"),
    ("eviction signal unknown", "spec|kubelet|evictionHard", {"disk.available": "10%"},
     "spec.kubelet.evictionHard[disk.available]", "key 'disk.available' is not allowed"),
    ("eviction percent", "spec|kubelet|evictionHard", {"memory.available": "7.5%"}, None, ""),
    ("eviction bad quantity", "spec|kubelet|evictionHard", {"memory.available": "big"},
     "spec.kubelet.evictionHard[memory.available]", "percentage"),
    ("reserved unknown resource", "spec|kubelet|kubeReserved", {"gpu": "1"},
     "spec.kubelet.kubeReserved.gpu", "key 'gpu' is not allowed"),
    ("reserved negative", "spec|kubelet|kubeReserved", {"cpu": "-100m"},
     "spec.kubelet.kubeReserved.cpu", "negative"),
    ("maxPods negative", "spec|kubelet|maxPods", -1,
     "spec.kubelet.maxPods", "greater than or equal to 0"),
    ("volume initialization rate without a snapshot",
     "spec|blockDeviceMappings|0|ebs|volumeInitializationRate", 200,
     "spec.blockDeviceMappings[0].ebs", "snapshotID must be set when volumeInitializationRate"),
    ("two root volumes", "spec|blockDeviceMappings|1|rootVolume", True,
     "spec.blockDeviceMappings[1].rootVolume", "only one blockDeviceMappings with rootVolume"),
    ("ebs without size or snapshot", "spec|blockDeviceMappings|1|ebs|snapshotID", DELETE,
     "spec.blockDeviceMappings[1].ebs", "snapshotID or volumeSize must be defined"),
    ("volume size not a quantity", "spec|blockDeviceMappings|0|ebs|volumeSize", "100GB",
     "spec.blockDeviceMappings[0].ebs.volumeSize", "an EBS volume size in Gi, G, Ti or T"),
    ("volume size too large", "spec|blockDeviceMappings|0|ebs|volumeSize", "65Ti",
     "spec.blockDeviceMappings[0].ebs.volumeSize", "between 1Gi and 64T"),
    ("volume type unknown", "spec|blockDeviceMappings|0|ebs|volumeType", "gp4",
     "spec.blockDeviceMappings[0].ebs.volumeType", "'gp4' is not allowed"),
    ("hop limit 2", "spec|metadataOptions|httpPutResponseHopLimit", 2, None, ""),
    ("hop limit 0", "spec|metadataOptions|httpPutResponseHopLimit", 0,
     "spec.metadataOptions.httpPutResponseHopLimit", "greater than or equal to 1"),
    ("httpTokens unknown", "spec|metadataOptions|httpTokens", "sometimes",
     "spec.metadataOptions.httpTokens", "'sometimes' is not allowed"),
    ("instanceStorePolicy unknown", "spec|instanceStorePolicy", "RAID5",
     "spec.instanceStorePolicy", "'RAID5' is not allowed"),
    ("removed amiFamily", "spec|amiFamily", "Ubuntu", "spec.amiFamily",
     "amiFamily Ubuntu was removed in Karpenter v1: use amiFamily: AL2023"),
    ("unknown amiFamily", "spec|amiFamily", "Gentoo", "spec.amiFamily", "'Gentoo' is not allowed"),
    ("unknown field", "spec|launchTemplate", "lt-1", "spec.launchTemplate", "unknown field"),
    ("connection tracking empty", "spec|connectionTracking", {}, "spec.connectionTracking",
     "at least one of tcpEstablishedTimeout, udpStreamTimeout, or udpTimeout"),
    ("tcp timeout too short", "spec|connectionTracking", {"tcpEstablishedTimeout": 59},
     "spec.connectionTracking.tcpEstablishedTimeout", "greater than or equal to 60"),
    ("udp timeout too long", "spec|connectionTracking", {"udpTimeout": 61},
     "spec.connectionTracking.udpTimeout", "less than or equal to 60"),
    ("connection tracking", "spec|connectionTracking", {"udpStreamTimeout": 120}, None, ""),
    ("negative prefix count", "spec|ipPrefixCount", -1, "spec.ipPrefixCount",
     "greater than or equal to 0"),
    ("nested virtualization unknown", "spec|cpuOptions", {"nestedVirtualization": "on"},
     "spec.cpuOptions.nestedVirtualization", "'on' is not allowed"),
    ("cpu options", "spec|cpuOptions", {"nestedVirtualization": "disabled"}, None, ""),
    ("network interfaces", "spec|networkInterfaces", [
        {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"},
        {"networkCardIndex": 0, "deviceIndex": 1, "interfaceType": "efa-only"},
        {"networkCardIndex": 1, "deviceIndex": 0, "interfaceType": "efa-only"}], None, ""),
    ("network interfaces empty", "spec|networkInterfaces", [], None, ""),
    ("placement group by name", "spec|placementGroupSelector", {"name": "training"}, None, ""),
    ("placement group by id", "spec|placementGroupSelector", {"id": "pg-0123abc"}, None, ""),
    ("placement group empty selector", "spec|placementGroupSelector", {},
     "spec.placementGroupSelector", "expected at least one, got none, ['name', 'id']"),
    ("placement group name and id", "spec|placementGroupSelector",
     {"name": "training", "id": "pg-0123abc"}, "spec.placementGroupSelector",
     "'name' and 'id' are mutually exclusive"),
    ("placement group bad id", "spec|placementGroupSelector", {"id": "training"},
     "spec.placementGroupSelector.id", "pg-"),
    ("placement group empty name", "spec|placementGroupSelector", {"name": ""},
     "spec.placementGroupSelector.name", ""),
    ("network interfaces without a primary", "spec|networkInterfaces", [
        {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "efa-only"}],
     "spec.networkInterfaces", "must include a primary interface with interfaceType='interface'"),
    ("network interfaces twice at one slot", "spec|networkInterfaces", [
        {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"},
        {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"}],
     "spec.networkInterfaces[1]", "must not have duplicate networkCardIndex and deviceIndex"),
    ("two efa-only on one card", "spec|networkInterfaces", [
        {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"},
        {"networkCardIndex": 1, "deviceIndex": 0, "interfaceType": "efa-only"},
        {"networkCardIndex": 1, "deviceIndex": 1, "interfaceType": "efa-only"}],
     "spec.networkInterfaces[2]", "at most one efa device per network card"),
    ("network interface type unknown", "spec|networkInterfaces", [
        {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "efa"}],
     "spec.networkInterfaces[0].interfaceType", "'efa' is not allowed"),
    ("network card index negative", "spec|networkInterfaces", [
        {"networkCardIndex": -1, "deviceIndex": 0, "interfaceType": "interface"}],
     "spec.networkInterfaces[0].networkCardIndex", "greater than or equal to 0"),
    ("network interface without a device index", "spec|networkInterfaces", [
        {"networkCardIndex": 0, "interfaceType": "interface"}],
     "spec.networkInterfaces[0].deviceIndex", ""),
]


@pytest.mark.parametrize(
    ("path", "value", "expected_path", "fragment"),
    [case[1:] for case in NODECLASS_CASES],
    ids=[case[0] for case in NODECLASS_CASES],
)
def test_ec2nodeclass_rule(path: str, value: Any, expected_path: str | None, fragment: str) -> None:
    problems = _problems(_set(_base("EC2NodeClass"), path, value))
    if expected_path is None:
        assert problems == []
    else:
        assert any(p == expected_path and fragment in m for p, m in problems), problems


def test_an_old_api_version_is_refused_with_the_served_one_named() -> None:
    body = _set(_base("NodePool"), "apiVersion", "karpenter.sh/v1beta1")
    assert _problems(body) == [
        ("apiVersion",
         "apiVersion 'karpenter.sh/v1beta1' is not served; NodePool is karpenter.sh/v1"),
    ]


@pytest.mark.parametrize("version", ["1.20.4", "v1.20.4", "latest"])
def test_a_bottlerocket_version_is_taken_with_or_without_its_v(version: str) -> None:
    # Bottlerocket releases are written with a v on GitHub and without one in SSM.
    body = _set(_base("EC2NodeClass"), "spec|amiSelectorTerms",
                [{"alias": f"bottlerocket@{version}"}])
    body = _set(body, "spec|amiFamily", DELETE)

    assert _problems(body) == []


@pytest.mark.parametrize("alias", ["al2023@latest", "al2@latest", "bottlerocket@latest"])
def test_a_kubelet_field_outside_v1_14_1s_struct_is_refused_for_every_family(alias: str) -> None:
    """Karpenter v1.14.1's CRD types spec.kubelet (its main branch, unreleased, takes any
    upstream field): another field is not part of the API, whatever the family."""
    body = _set(_base("EC2NodeClass"), "spec|amiSelectorTerms", [{"alias": alias}])
    body = _set(body, "spec|amiFamily", DELETE)
    body = _set(body, "spec|kubelet|cpuManagerPolicy", "static")

    assert [(p, m.split(" (")[0]) for p, m in _problems(body)] == [
        ("spec.kubelet.cpuManagerPolicy", "unknown field")]


def test_a_custom_family_takes_several_cluster_dns_addresses() -> None:
    body = _set(_base("EC2NodeClass"), "spec|amiFamily", "Custom")
    body = _set(body, "spec|amiSelectorTerms", [{"id": "ami-0123"}])
    body = _set(body, "spec|kubelet|clusterDNS", ["10.0.0.10", "10.0.0.11"])
    assert _problems(body) == []


def test_a_single_address_family_takes_several_cluster_dns_addresses_and_uses_the_first() -> None:
    """As Karpenter v1.14.1: AL2's bootstrap takes one --dns-cluster-ip, the first entry
    (the user data tests check what is rendered); the node class is valid."""
    body = _set(_base("EC2NodeClass"), "spec|amiSelectorTerms", [{"alias": "al2@latest"}])
    body = _set(body, "spec|amiFamily", DELETE)
    body = _set(body, "spec|kubelet|clusterDNS", ["10.0.0.10", "10.0.0.11"])
    assert _problems(body) == []


@pytest.mark.parametrize(
    ("family", "problem"),
    [
        ("Custom", None),
        ("AL2023", None),
        ("AL2", "amiFamily AL2 does not match the alias family al2023"),
    ],
)
def test_an_alias_goes_with_its_own_family_or_custom(family: str, problem: str | None) -> None:
    body = _set(_base("EC2NodeClass"), "spec|amiSelectorTerms", [{"alias": "al2023@latest"}])
    body = _set(body, "spec|amiFamily", family)
    found = _problems(body)
    if problem is None:
        assert found == []
    else:
        assert [p for p, m in found if problem in m] == ["spec.amiFamily"]


def test_a_nodeclaim_may_name_its_nodepool() -> None:
    body = yaml.safe_load((MANIFESTS / "nodeclaim-full.yaml").read_text())
    assert body["spec"]["requirements"][1]["key"] == "karpenter.sh/nodepool"
    assert _problems(body) == []
