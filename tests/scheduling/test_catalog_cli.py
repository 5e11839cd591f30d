"""`nodewright catalog`: the offline catalog on the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nodewright.cli import main
from nodewright.cli.catalog import ESTIMATED

NODE_CLASS = """\
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata:
  name: dense
spec:
  role: KarpenterNodeRole-demo
  amiSelectorTerms:
    - alias: al2023@latest
  subnetSelectorTerms:
    - tags: {karpenter.sh/discovery: demo}
  securityGroupSelectorTerms:
    - tags: {karpenter.sh/discovery: demo}
  kubelet:
    maxPods: 110
    kubeReserved: {cpu: 250m}
    evictionHard: {memory.available: "{eviction}"}
"""


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["catalog", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def write_node_class(tmp_path: Path, eviction: str = "200Mi") -> str:
    path = tmp_path / "nodeclass.yaml"
    path.write_text(NODE_CLASS.replace("{eviction}", eviction))
    return str(path)


def test_the_table_lists_every_type_with_allocatable_and_prices(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run(capsys)
    assert code == 0
    header, *rows = out.splitlines()
    assert header.split()[:3] == ["NAME", "ARCH", "CPU"]
    m5 = next(row for row in rows if row.startswith("m5.large "))
    assert m5.split() == ["m5.large", "amd64", "2", "7577Mi", "1930m", "6903Mi", "29", "-",
                          "0.0960", "0.0384*"]
    assert rows[-1].endswith(ESTIMATED)
    assert ESTIMATED.startswith("* estimated price: ")


def test_named_types_are_shown_in_full(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--region", "us-west-2", "--zones", "a,b", "g5.x*")
    assert code == 0
    assert out.startswith("g5.xlarge\n")
    assert "karpenter.k8s.aws/instance-gpu-name=a10g" in out
    assert "nvidia.com/gpu" in out
    assert "us-west-2b" in out
    assert "us-west-2c" not in out


def test_json_output_with_a_node_class(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, _ = run(
        capsys, "--format", "json", "--nodeclass", write_node_class(tmp_path), "m5.large"
    )
    assert code == 0
    document = json.loads(out)
    assert document["nodeClass"] == "dense"
    (m5,) = document["instanceTypes"]
    assert m5["allocatable"] == {
        "cpu": "1750m", "memory": f"{7577 - 574 - 200}Mi", "ephemeral-storage": "17Gi",
        "pods": "110", "vpc.amazonaws.com/pod-eni": "9",
    }
    assert {o["capacityType"] for o in m5["offerings"]} == {"on-demand", "spot"}
    assert m5["offerings"][0] == {
        "zone": "us-east-1a", "zoneID": "use1-az6", "capacityType": "on-demand",
        "price": 0.096, "priceEstimated": False, "available": True,
    }


def test_a_broken_node_class_is_reported_in_the_standard_format(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write_node_class(tmp_path, eviction="lots%")
    code, out, _ = run(capsys, "--nodeclass", path, "m5.large")
    assert code == 1
    assert out.startswith(f"{path}:")
    assert "EC2NodeClass/dense:" in out
    assert "evictionHard" in out


def test_a_file_without_a_node_class_says_so(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "empty.yaml"
    path.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    code, out, _ = run(capsys, "--nodeclass", str(path))
    assert code == 1
    assert "expected exactly one EC2NodeClass in the file, found none" in out


def test_unknown_names_zones_and_regions_are_clear_errors(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert run(capsys, "x9.large")[2] == (
        "nodewright catalog: no instance type in us-east-1 matches x9.large\n"
    )
    code, _, err = run(capsys, "--zones", "q")
    assert code == 1
    assert "zone 'q' is not a zone of us-east-1" in err
    code, _, err = run(capsys, "--region", "mars-1")
    assert code == 1
    assert "region 'mars-1' is not in the offline data" in err


def test_a_type_in_full_explains_its_estimated_prices(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "m5.large")
    assert code == 0
    assert "0.0384*" in out
    assert out.rstrip("\n").splitlines()[-1].strip() == ESTIMATED
