"""`nodewright validate` says what is wrong, where, and everything at once: quantities
Nodewright cannot compute with, names the API server would refuse, several mistakes in
one document, a `kind: List`, a folder with nothing to check, a removed amiFamily."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.api.helpers import run_cli, write

Capsys = pytest.CaptureFixture[str]
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "workshop"

NODEPOOL = """\
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: NAME
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - key: karpenter.sh/capacity-type
          operator: OPERATOR
          values: ["spot"]
        - key: kubernetes.io/hostname
          operator: In
          values: ["node-1"]
    metadata:
      labels:
        karpenter.sh/nodepool: mine
  limits:
    cpu: CPU
"""


def nodepool(name: str = "general", operator: str = "In", cpu: str = '"100"') -> str:
    return NODEPOOL.replace("NAME", name).replace("OPERATOR", operator).replace("CPU", cpu)


def valid_nodepool(**changes: str) -> str:
    text = nodepool(**changes)
    return text.replace(
        "        - key: kubernetes.io/hostname\n          operator: In\n"
        '          values: ["node-1"]\n', ""
    ).replace("    metadata:\n      labels:\n        karpenter.sh/nodepool: mine\n", "")


def test_a_limit_too_large_to_compute_with_is_refused_by_validate_and_plan(
    tmp_path: Path, capsys: Capsys
) -> None:
    manifest = write(tmp_path, valid_nodepool(cpu="1e31"))

    line = manifest.read_text().split("\n").index("  cpu: 1e31".replace("  ", "    ", 1)) + 1
    code, out, _ = run_cli(capsys, "validate", str(manifest))
    assert code == 1
    assert f"{manifest}:{line}: NodePool/general: spec.limits.cpu: '1e31' is out of range" in out

    code, out, err = run_cli(capsys, "plan", str(manifest), str(EXAMPLES / "ec2nodeclass.yaml"))
    assert code == 1
    assert "spec.limits.cpu: '1e31' is out of range" in out
    assert "Traceback" not in out + err


@pytest.mark.parametrize(
    ("kind", "name", "message"),
    [
        ("NodePool", "General_Pool", "'General_Pool' is not a valid name: a DNS subdomain"),
        ("NodePool", "team." * 13 + "x", f"{'team.' * 13 + 'x'!r} cannot be a NodePool name: "
         "nodes carry it as the karpenter.sh/nodepool label, whose values have at most 63 "
         "characters"),
        ("EC2NodeClass", "-default", "'-default' is not a valid name"),
    ],
)
def test_names_the_api_server_or_the_nodepool_label_would_refuse(
    tmp_path: Path, capsys: Capsys, kind: str, name: str, message: str
) -> None:
    source = (
        valid_nodepool(name=name) if kind == "NodePool"
        else (EXAMPLES / "ec2nodeclass.yaml").read_text().replace(
            "name: default", f"name: {name}", 1)
    )
    manifest = write(tmp_path, source)

    code, out, _ = run_cli(capsys, "validate", str(manifest))

    assert code == 1
    assert f"{kind}/{name}: metadata.name: {message}" in out


def test_a_long_ec2nodeclass_name_is_fine_it_is_no_label(tmp_path: Path, capsys: Capsys) -> None:
    name = "team." * 13 + "x"
    source = (EXAMPLES / "ec2nodeclass.yaml").read_text().replace("name: default", f"name: {name}")
    code, _, _ = run_cli(capsys, "validate", str(write(tmp_path, source)))
    assert code == 0


def test_one_bad_operator_does_not_hide_the_other_problems(tmp_path: Path, capsys: Capsys) -> None:
    manifest = write(tmp_path, nodepool(operator="Among"))

    code, out, _ = run_cli(capsys, "validate", str(manifest))

    assert code == 1
    reported = [line.split(": ", 3)[2:] for line in out.splitlines()]
    paths = [path for path, _ in reported]
    assert "spec.template.spec.requirements[0].operator" in paths
    # The item after the bad one keeps its own index.
    assert "spec.template.spec.requirements[1].key" in paths
    assert "spec.template.metadata.labels[karpenter.sh/nodepool]" in paths
    assert any('label "kubernetes.io/hostname" is restricted' in m for _, m in reported)


def test_the_items_of_a_list_are_read_each_at_its_line(tmp_path: Path, capsys: Capsys) -> None:
    manifest = write(tmp_path, """
        apiVersion: v1
        kind: List
        items:
          - apiVersion: karpenter.sh/v1
            kind: NodePool
            metadata: {name: listed}
            spec:
              template:
                spec:
                  nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
              weight: 0
          - apiVersion: v1
            kind: ConfigMap
            metadata: {name: ignored}
    """)

    code, out, err = run_cli(capsys, "validate", str(manifest))

    assert code == 1
    assert f"{manifest}:11: NodePool/listed: spec.weight:" in out
    assert "1 error(s)" in err


def test_a_folder_without_manifests_is_reported(tmp_path: Path, capsys: Capsys) -> None:
    (tmp_path / "notes.txt").write_text("nothing here")

    code, out, _ = run_cli(capsys, "validate", str(tmp_path))

    assert code == 1
    assert f"{tmp_path}:0: (document): no manifests in this directory" in out


def test_manifests_without_any_karpenter_kind_are_reported(
    tmp_path: Path, capsys: Capsys
) -> None:
    write(tmp_path, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n")

    code, out, _ = run_cli(capsys, "validate", str(tmp_path))

    assert code == 1
    assert ("nothing to validate: no NodePool, NodeClaim, EC2NodeClass, NodeOverlay or "
            "CapacityBuffer found") in out


def test_the_ubuntu_family_says_it_was_removed_and_what_to_use(
    tmp_path: Path, capsys: Capsys
) -> None:
    source = (EXAMPLES / "ec2nodeclass.yaml").read_text()
    assert "amiSelectorTerms" in source
    manifest = write(tmp_path, source.replace("spec:\n", "spec:\n  amiFamily: Ubuntu\n", 1))

    code, out, _ = run_cli(capsys, "validate", str(manifest))

    assert code == 1
    assert "spec.amiFamily: amiFamily Ubuntu was removed in Karpenter v1: use amiFamily: " in out
    assert "Custom" in out
