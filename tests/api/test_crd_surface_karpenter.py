"""What kubectl shows of the CRDs `nodewright crds` and `nodewright manifests` print, against
Karpenter v1.14.1's CRDs (kubernetes-sigs/karpenter pkg/apis/crds/karpenter.sh_*.yaml and
autoscaling.x-k8s.io_capacitybuffers.yaml, aws/karpenter-provider-aws
pkg/apis/crds/karpenter.k8s.aws_ec2nodeclasses.yaml): the columns of `kubectl get -o wide`,
the names and categories kubectl resolves, scope, versions, subresources, the defaults the
API server fills in and how status.conditions merge.

Karpenter's values are written out here (facts of its CRDs, not read at test time)."""

from __future__ import annotations

from typing import Any

import pytest

from nodewright.api.crds import generate_crds

READY = '.status.conditions[?(@.type=="Ready")].status'
AGE = {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}


def column(name: str, path: str, kind: str = "string", priority: int = 0) -> dict[str, Any]:
    found: dict[str, Any] = {"name": name, "type": kind, "jsonPath": path}
    if priority:
        found["priority"] = priority
    return found


# Karpenter v1.14.1's additionalPrinterColumns, kind by kind, in order.
KARPENTER_COLUMNS: dict[str, list[dict[str, Any]]] = {
    "NodePool": [
        column("NodeClass", ".spec.template.spec.nodeClassRef.name"),
        # The number of nodes (status.nodes, an integer the CRD prints as a string).
        column("Nodes", ".status.nodes"),
        column("Ready", READY),
        AGE,
        column("Weight", ".spec.weight", "integer", priority=1),
        column("CPU", ".status.resources.cpu", priority=1),
        column("Memory", ".status.resources.memory", priority=1),
    ],
    "NodeClaim": [
        column("Type", ".metadata.labels.node\\.kubernetes\\.io/instance-type"),
        column("Capacity", ".metadata.labels.karpenter\\.sh/capacity-type"),
        column("Zone", ".metadata.labels.topology\\.kubernetes\\.io/zone"),
        column("Node", ".status.nodeName"),
        column("Ready", READY),
        AGE,
        column("ImageID", ".status.imageID", priority=1),
        column("ID", ".status.providerID", priority=1),
        column("NodePool", ".metadata.labels.karpenter\\.sh/nodepool", priority=1),
        column("NodeClass", ".spec.nodeClassRef.name", priority=1),
        column("Drifted", '.status.conditions[?(@.type=="Drifted")].status', priority=1),
    ],
    "EC2NodeClass": [column("Ready", READY), AGE, column("Role", ".spec.role", priority=1)],
    "NodeOverlay": [column("Ready", READY), AGE,
                    column("Weight", ".spec.weight", "integer", priority=1)],
    # (Karpenter's also carry descriptions, which kubectl get does not print.)
    "CapacityBuffer": [
        column("Strategy", ".spec.provisioningStrategy"),
        column("PodTemplate", ".status.podTemplateRef.name"),
        column("Replicas", ".status.replicas", "integer"),
        column("ConditionsType", ".status.conditions[*].type"),
        column("ConditionsStatus", ".status.conditions[*].status"),
        column("ConditionsReason", ".status.conditions[*].reason"),
        AGE,
    ],
}


@pytest.fixture(scope="module")
def crds() -> dict[str, dict[str, Any]]:
    return {crd["spec"]["names"]["kind"]: crd for crd in generate_crds()}


def _version(crd: dict[str, Any]) -> dict[str, Any]:
    (version,) = crd["spec"]["versions"]
    return dict(version)


def _schema(crd: dict[str, Any], *path: str) -> dict[str, Any]:
    node: dict[str, Any] = _version(crd)["schema"]["openAPIV3Schema"]
    for part in path:
        node = node["items"] if part == "[]" else node["properties"][part]
    return node


@pytest.mark.parametrize("kind", sorted(KARPENTER_COLUMNS))
def test_kubectl_get_shows_karpenters_columns(crds: dict[str, dict[str, Any]],
                                              kind: str) -> None:
    """`kubectl get <kind>` and `-o wide` print what they print with Karpenter's CRDs: the
    same headers, from the same fields, typed and prioritised alike."""
    columns = [{key: value for key, value in c.items() if key != "description"}
               for c in _version(crds[kind])["additionalPrinterColumns"]]
    assert columns == KARPENTER_COLUMNS[kind]


def test_the_nodes_column_reads_the_node_count_the_scale_subresource_reads(
        crds: dict[str, dict[str, Any]]) -> None:
    """NodePool's Nodes column is status.nodes, the field `kubectl scale` and an HPA read as
    the current replicas, not the `nodes` entry of status.resources."""
    version = _version(crds["NodePool"])
    (nodes,) = [c for c in version["additionalPrinterColumns"] if c["name"] == "Nodes"]
    assert nodes["jsonPath"] == version["subresources"]["scale"]["statusReplicasPath"]


# kind -> (plural, group, version, scope, shortNames Karpenter registers, its categories)
KARPENTER_NAMES = {
    "NodePool": ("nodepools", "karpenter.sh", "v1", "Cluster", [], ["karpenter"]),
    "NodeClaim": ("nodeclaims", "karpenter.sh", "v1", "Cluster", [], ["karpenter"]),
    "EC2NodeClass": ("ec2nodeclasses", "karpenter.k8s.aws", "v1", "Cluster",
                     ["ec2nc", "ec2ncs"], ["karpenter"]),
    "NodeOverlay": ("nodeoverlays", "karpenter.sh", "v1alpha1", "Cluster", ["overlays"],
                    ["karpenter"]),
    "CapacityBuffer": ("capacitybuffers", "autoscaling.x-k8s.io", "v1beta1", "Namespaced",
                       ["cb"], ["autoscaling"]),
}


@pytest.mark.parametrize("kind", sorted(KARPENTER_NAMES))
def test_every_name_kubectl_resolves_with_karpenters_crds_resolves_here(
        crds: dict[str, dict[str, Any]], kind: str) -> None:
    """`kubectl get nodepools`, `kubectl get ec2nc`, `kubectl get overlays`, `kubectl get cb`
    and `kubectl get karpenter` (the category: NodePools, NodeClaims, EC2NodeClasses and
    NodeOverlays, not CapacityBuffers) work as with Karpenter; our extra short names (np, nc)
    and the `nodewright` category only add to them."""
    plural, group, version, scope, short_names, categories = KARPENTER_NAMES[kind]
    names = crds[kind]["spec"]["names"]
    assert (names["plural"], names["singular"], names["listKind"]) == (
        plural, kind.lower(), f"{kind}List")
    assert (crds[kind]["spec"]["group"], crds[kind]["spec"]["scope"]) == (group, scope)
    served = _version(crds[kind])
    assert (served["name"], served["served"], served["storage"]) == (version, True, True)
    assert set(short_names) <= set(names.get("shortNames", []))
    assert set(categories) <= set(names["categories"])
    assert ("karpenter" in names["categories"]) == (kind != "CapacityBuffer")


@pytest.mark.parametrize("kind", ["NodePool", "NodeClaim", "NodeOverlay", "CapacityBuffer"])
def test_status_conditions_merge_by_type_as_in_karpenters_crds(
        crds: dict[str, dict[str, Any]], kind: str) -> None:
    """A map list keyed by type: the API server refuses two conditions of one type and
    server-side apply merges a condition into its namesake."""
    conditions = _schema(crds[kind], "status", "conditions")
    assert conditions["x-kubernetes-list-type"] == "map"
    assert conditions["x-kubernetes-list-map-keys"] == ["type"]
    # A map key must be required (or defaulted) for the API server to take the CRD.
    assert "type" in conditions["items"]["required"]


def test_ec2nodeclass_status_conditions_stay_a_plain_list_as_in_karpenters_crd(
        crds: dict[str, dict[str, Any]]) -> None:
    conditions = _schema(crds["EC2NodeClass"], "status", "conditions")
    assert "x-kubernetes-list-type" not in conditions


# (kind, schema path, the default Karpenter's CRD gives there)
KARPENTER_DEFAULTS = [
    ("NodePool", ("spec", "template", "spec", "expireAfter"), "720h"),
    ("NodePool", ("spec", "disruption", "consolidationPolicy"), "WhenEmptyOrUnderutilized"),
    ("NodePool", ("spec", "disruption", "budgets"), [{"nodes": "10%"}]),
    ("NodePool", ("spec", "disruption", "budgets", "[]", "nodes"), "10%"),
    ("NodeClaim", ("spec", "expireAfter"), "720h"),
    ("EC2NodeClass", ("spec", "metadataOptions"),
     {"httpEndpoint": "enabled", "httpProtocolIPv6": "disabled",
      "httpPutResponseHopLimit": 1, "httpTokens": "required"}),
    ("EC2NodeClass", ("spec", "metadataOptions", "httpEndpoint"), "enabled"),
    ("EC2NodeClass", ("spec", "metadataOptions", "httpProtocolIPv6"), "disabled"),
    ("EC2NodeClass", ("spec", "metadataOptions", "httpPutResponseHopLimit"), 1),
    ("EC2NodeClass", ("spec", "metadataOptions", "httpTokens"), "required"),
    ("CapacityBuffer", ("spec", "provisioningStrategy"), "buffer.x-k8s.io/active-capacity"),
]


@pytest.mark.parametrize(("kind", "path", "default"), KARPENTER_DEFAULTS,
                         ids=lambda value: ".".join(value) if isinstance(value, tuple)
                         else None)
def test_the_api_server_fills_in_karpenters_defaults(
        crds: dict[str, dict[str, Any]], kind: str, path: tuple[str, ...],
        default: Any) -> None:
    assert _schema(crds[kind], *path)["default"] == default


def test_an_empty_disruption_block_ends_up_as_karpenters_defaults(
        crds: dict[str, dict[str, Any]]) -> None:
    """Karpenter's CRD defaults `disruption` to {consolidateAfter: 0s} and then each field
    within; ours writes the whole result at once: a NodePool without `disruption` is stored
    the same way by both."""
    disruption = _schema(crds["NodePool"], "spec", "disruption")
    assert disruption["default"] == {"consolidationPolicy": "WhenEmptyOrUnderutilized",
                                     "consolidateAfter": "0s", "budgets": [{"nodes": "10%"}]}
