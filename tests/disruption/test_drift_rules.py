"""Static drift: the NodePool template hash (requirements excluded), the requirements
against the node's labels, the EC2NodeClass hash (selector terms excluded), offerings."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

from nodewright.api import hashes
from nodewright.api.ec2nodeclass import EC2NodeClass
from nodewright.api.nodepool import NodePool
from nodewright.controllers.nodeclaim.drift import (
    INSTANCE_TYPE_NOT_FOUND,
    NODECLASS_DRIFTED,
    NODEPOOL_DRIFTED,
    REQUIREMENTS_DRIFTED,
    drift_of,
)
from nodewright.scheduling.catalog import InstanceType, offline_catalog

WORKSHOP = Path(__file__).resolve().parents[2] / "examples" / "workshop"
NOW = datetime(2026, 1, 5, 12, tzinfo=UTC)
M5_LABELS = {
    "node.kubernetes.io/instance-type": "m5.large",
    "topology.kubernetes.io/zone": "us-west-2a",
    "karpenter.sh/capacity-type": "on-demand",
    "kubernetes.io/arch": "amd64",
    "kubernetes.io/os": "linux",
    "karpenter.k8s.aws/instance-category": "m",
    "karpenter.k8s.aws/instance-family": "m5",
    "karpenter.k8s.aws/instance-generation": "5",
    "type": "karpenter",
}


def manifest(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((WORKSHOP / name).read_text())
    return loaded


def nodepool(change: dict[str, Any] | None = None) -> NodePool:
    body = manifest("nodepool.yaml")
    for path, value in (change or {}).items():
        target = body
        *parents, last = path.split(".")
        for part in parents:
            target = target.setdefault(part, {})
        target[last] = value
    return NodePool.model_validate(body)


def node_class(**spec: Any) -> EC2NodeClass:
    body = manifest("ec2nodeclass.yaml")
    body["spec"].update(spec)
    return EC2NodeClass.model_validate(body)


def catalog() -> list[InstanceType]:
    return list(offline_catalog("us-west-2"))


def drift(pool: NodePool, annotations: dict[str, str], labels: dict[str, str] = M5_LABELS,
          klass: EC2NodeClass | None = None, created: datetime = NOW) -> str | None:
    found = drift_of(nodepool=pool, annotations=annotations, labels=labels, node_class=klass,
                     instance_types=catalog(), created=created, now=NOW)
    return None if found is None else found.reason


def test_a_template_change_drifts_a_requirement_change_alone_does_not_hash() -> None:
    launched = hashes.nodepool_hash_annotations(nodepool())
    assert drift(nodepool(), launched) is None
    relabelled = nodepool({"spec.template.metadata.labels": {"type": "karpenter", "team": "a"}})
    assert drift(relabelled, launched) == NODEPOOL_DRIFTED
    expiring = nodepool({"spec.template.spec.expireAfter": "24h"})
    assert drift(expiring, launched) == NODEPOOL_DRIFTED
    # Requirements are not hashed: one that still admits the node is no drift at all.
    widened = nodepool()
    widened.spec.template.spec.requirements[3].values = ["c", "m", "r"]
    assert hashes.nodepool_hash(widened) == hashes.nodepool_hash(nodepool())
    assert drift(widened, launched) is None


def test_disruption_settings_and_limits_are_not_part_of_the_template() -> None:
    launched = hashes.nodepool_hash_annotations(nodepool())
    assert drift(nodepool({"spec.disruption.consolidateAfter": "5m"}), launched) is None
    assert drift(nodepool({"spec.limits": {"cpu": "100"}}), launched) is None


def test_a_requirement_the_node_no_longer_satisfies_drifts_it() -> None:
    launched = hashes.nodepool_hash_annotations(nodepool())
    narrowed = nodepool()
    narrowed.spec.template.spec.requirements[3].values = ["c"]
    assert drift(narrowed, launched) == REQUIREMENTS_DRIFTED


def test_a_hash_of_another_version_is_not_compared() -> None:
    relabelled = nodepool({"spec.template.metadata.labels": {"type": "other"}})
    karpenters = {hashes.NODEPOOL_HASH: "123", hashes.NODEPOOL_HASH_VERSION: "v3"}
    assert drift(relabelled, karpenters, labels={**M5_LABELS, "type": "other"}) is None


def test_reordering_lists_or_spelling_out_empty_values_is_no_change() -> None:
    base = nodepool({"spec.template.spec.taints": [
        {"key": "a", "effect": "NoSchedule"}, {"key": "b", "effect": "NoSchedule"}]})
    reordered = nodepool({"spec.template.spec.taints": [
        {"key": "b", "effect": "NoSchedule"}, {"key": "a", "effect": "NoSchedule"}]})
    assert hashes.nodepool_hash(base) == hashes.nodepool_hash(reordered)
    assert hashes.nodepool_hash(nodepool()) == hashes.nodepool_hash(
        nodepool({"spec.template.spec.startupTaints": []}))


def test_the_node_class_hash_ignores_selectors_and_an_implied_ami_family() -> None:
    klass = node_class()
    launched = {**hashes.nodepool_hash_annotations(nodepool()),
                **hashes.node_class_hash_annotations(klass)}
    other_subnets = node_class(subnetSelectorTerms=[{"id": "subnet-123"}])
    assert drift(nodepool(), launched, klass=other_subnets) is None
    spelled_out = node_class(amiFamily="AL2023")
    assert drift(nodepool(), launched, klass=spelled_out) is None
    retagged = node_class(tags={"team": "platform", "cost-center": "9999"})
    assert drift(nodepool(), launched, klass=retagged) == NODECLASS_DRIFTED


def test_an_instance_type_no_longer_offered_drifts_only_after_an_hour() -> None:
    launched = hashes.nodepool_hash_annotations(nodepool())
    gone = {**M5_LABELS, "node.kubernetes.io/instance-type": "m4.nonexistent"}
    assert drift(nodepool(), launched, labels=gone, created=NOW - timedelta(minutes=30)) is None
    assert drift(nodepool(), launched, labels=gone, created=NOW - timedelta(hours=2)) == (
        INSTANCE_TYPE_NOT_FOUND)
    assert drift(nodepool(), launched, created=NOW - timedelta(hours=2)) is None


def test_the_cloud_provider_is_asked_last() -> None:
    asked: list[bool] = []

    def cloud() -> str | None:
        asked.append(True)
        return "AMIDrift"

    launched = hashes.nodepool_hash_annotations(nodepool())
    found = drift_of(nodepool=nodepool(), annotations=launched, labels=M5_LABELS,
                     node_class=None, instance_types=None, created=NOW, now=NOW, cloud=cloud)
    assert found is not None and found.reason == "AMIDrift"
    relabelled = nodepool({"spec.template.metadata.labels": {"type": "x"}})
    found = drift_of(nodepool=relabelled, annotations=launched, labels=M5_LABELS,
                     node_class=None, instance_types=None, created=NOW, now=NOW, cloud=cloud)
    assert found is not None and found.reason == NODEPOOL_DRIFTED
    assert len(asked) == 1
