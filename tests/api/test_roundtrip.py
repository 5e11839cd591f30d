"""Every field of the three kinds survives YAML -> model -> YAML, and defaults apply."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from nodewright.api import EC2NodeClass, NodeClaim, NodePool, parse_manifest
from tests.conftest import EXAMPLES

MANIFESTS = Path(__file__).parent / "manifests"


def _load(path: Path) -> dict[str, Any]:
    body = yaml.safe_load(path.read_text())
    assert isinstance(body, dict)
    return body


def _normalise(value: Any) -> Any:
    """YAML numbers where the API keeps strings (limits, budgets) compare as strings."""
    if isinstance(value, dict):
        return {k: _normalise(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_normalise(v) for v in value]
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return value


def _contains(full: Any, part: Any) -> bool:
    if isinstance(part, dict):
        return isinstance(full, dict) and all(
            k in full and _contains(full[k], v) for k, v in part.items()
        )
    if isinstance(part, list):
        return isinstance(full, list) and len(full) == len(part) and all(
            _contains(f, p) for f, p in zip(full, part, strict=True)
        )
    return bool(full == part)


@pytest.mark.parametrize(
    "filename", ["nodepool-full.yaml", "ec2nodeclass-full.yaml", "nodeclaim-full.yaml"]
)
def test_every_field_round_trips_without_loss(filename: str) -> None:
    original = _load(MANIFESTS / filename)
    model = parse_manifest(original, filename)
    rendered = model.to_manifest()
    assert _contains(_normalise(rendered), _normalise(original)), (
        "a field was lost or changed on the way through the model"
    )
    again = type(model).model_validate(yaml.safe_load(yaml.safe_dump(rendered)))
    assert again == model


@pytest.mark.parametrize("filename", ["nodepool.yaml", "ec2nodeclass.yaml"])
def test_workshop_manifests_round_trip(filename: str) -> None:
    original = _load(EXAMPLES / "workshop" / filename)
    rendered = parse_manifest(original).to_manifest()
    assert _contains(_normalise(rendered), _normalise(original))


def test_a_minimal_nodepool_gets_karpenters_defaults() -> None:
    nodepool = parse_manifest(
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodePool",
            "metadata": {"name": "minimal"},
            "spec": {
                "template": {
                    "spec": {
                        "nodeClassRef": {
                            "group": "karpenter.k8s.aws",
                            "kind": "EC2NodeClass",
                            "name": "default",
                        }
                    }
                }
            },
        }
    )
    assert isinstance(nodepool, NodePool)
    rendered = nodepool.to_manifest()["spec"]
    assert rendered["template"]["spec"]["expireAfter"] == "720h"
    assert rendered["disruption"] == {
        "consolidationPolicy": "WhenEmptyOrUnderutilized",
        "consolidateAfter": "0s",
        "budgets": [{"nodes": "10%"}],
    }
    assert "weight" not in rendered and "limits" not in rendered


def test_a_minimal_ec2nodeclass_gets_secure_metadata_options() -> None:
    nodeclass = parse_manifest(_load(EXAMPLES / "workshop" / "ec2nodeclass.yaml"))
    assert isinstance(nodeclass, EC2NodeClass)
    assert nodeclass.to_manifest()["spec"]["metadataOptions"] == {
        "httpEndpoint": "enabled",
        "httpProtocolIPv6": "disabled",
        "httpPutResponseHopLimit": 1,
        "httpTokens": "required",
    }
    assert nodeclass.resolved_ami_family() == "AL2023"


def test_wire_names_that_are_not_plain_camel_case() -> None:
    nodeclass = parse_manifest(_load(MANIFESTS / "ec2nodeclass-full.yaml"))
    assert isinstance(nodeclass, EC2NodeClass)
    spec = nodeclass.spec
    kubelet = spec.kubelet
    assert kubelet is not None
    assert kubelet.cluster_dns == ["10.100.0.10"]
    assert kubelet.cpu_cfs_quota is True
    assert kubelet.image_gc_high_threshold_percent == 85
    assert spec.associate_public_ip_address is False
    assert spec.block_device_mappings is not None
    assert spec.block_device_mappings[0].ebs is not None
    assert spec.block_device_mappings[0].ebs.kms_key_id is not None
    assert spec.block_device_mappings[1].ebs is not None
    assert spec.block_device_mappings[1].ebs.snapshot_id == "snap-0123456789abcdef0"
    claim = parse_manifest(_load(MANIFESTS / "nodeclaim-full.yaml"))
    assert isinstance(claim, NodeClaim)
    assert claim.status is not None
    assert claim.status.provider_id == "aws:///us-east-1a/i-0123456789abcdef0"
    assert claim.status.image_id == "ami-0123456789abcdef0"
