"""`nodewright plan` from the command line: the workshop, JSON shape, and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nodewright.cli import main

WORKSHOP = str(Path(__file__).resolve().parents[2] / "examples" / "workshop")


def test_the_workshop_at_five_replicas_prints_one_m5_large(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["plan", WORKSHOP, "--replicas", "inflate=5"])

    output = capsys.readouterr().out
    assert code == 0
    assert "New nodes (1):" in output
    assert "m5.large" in output.splitlines()[2]
    assert "Hourly cost of new nodes: $0.0960" in output


def test_json_output_has_the_documented_shape(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["plan", WORKSHOP, "--replicas", "inflate=12", "--format", "json"])

    plan = json.loads(capsys.readouterr().out)
    assert code == 0
    assert set(plan) == {"nodeclaims", "existing", "unschedulable", "cost"}
    claims = plan["nodeclaims"]
    for claim in claims:
        assert set(claim) == {
            "nodepool", "instanceType", "instanceTypes", "capacityType", "zone", "price", "pods",
            "priceEstimated", "why",
        }
    # The workshop NodePool allows c5 and m5 only: two m5.large, six replicas each.
    assert [(c["instanceType"], c["instanceTypes"][0]) for c in claims] == [
        ("m5.large", "m5.large"), ("m5.large", "m5.large")
    ]
    assert claims[0]["pods"][0].startswith("default/inflate-")
    assert claims[0]["why"]
    assert plan["cost"] == {"hourly": 0.192}


def test_a_malformed_replicas_option_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["plan", WORKSHOP, "--replicas", "inflate=many"])

    assert code == 2
    assert "expected NAME=N" in capsys.readouterr().out


def test_a_bad_pod_field_is_reported_with_file_line_and_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text(
        "apiVersion: v1\n"
        "kind: Pod\n"
        "metadata: {name: broken}\n"
        "spec:\n"
        "  containers:\n"
        "    - name: c\n"
        "      resources:\n"
        "        requests: {cpu: lots}\n"
    )

    code = main(["plan", WORKSHOP, str(broken)])

    output = capsys.readouterr().out
    assert code == 1
    assert f"{broken}:8: Pod/broken: spec.containers[0].resources.requests:" in output
    assert "'lots' is not a quantity" in output


def test_an_absurd_replica_count_is_refused_not_planned(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workload = (Path(WORKSHOP) / "inflate.yaml").read_text().replace(
        "replicas: 0", "replicas: 100000000"
    )
    (tmp_path / "inflate.yaml").write_text(workload)
    for name in ("nodepool.yaml", "ec2nodeclass.yaml"):
        (tmp_path / name).write_text((Path(WORKSHOP) / name).read_text())
    assert main(["plan", str(tmp_path)]) == 1
    assert "spec.replicas: 100000000 is more than the 200000 pods a plan can take" in (
        capsys.readouterr().out
    )
    assert main(["plan", WORKSHOP, "--replicas", "inflate=999999999"]) == 2
    assert "more than the 200000 pods" in capsys.readouterr().out


CLUSTER = """\
apiVersion: v1
kind: Namespace
metadata: {name: ledger, labels: {team: payments}}
---
apiVersion: v1
kind: Node
metadata:
  name: node-1
  labels: {type: karpenter, topology.kubernetes.io/zone: us-east-1a}
status:
  allocatable: {cpu: "2", memory: 8Gi, pods: "29"}
---
apiVersion: v1
kind: Node
metadata:
  name: node-2
  labels: {type: karpenter, topology.kubernetes.io/zone: us-east-1b}
spec: {unschedulable: true}
status:
  allocatable: {cpu: "2", memory: 8Gi, pods: "29"}
---
apiVersion: v1
kind: Pod
metadata: {name: db-0, namespace: ledger, labels: {app: db}}
spec:
  nodeName: node-2
  containers: [{name: c, resources: {requests: {cpu: 100m}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: db-1, namespace: sandbox, labels: {app: db}}
spec:
  nodeName: node-1
  containers: [{name: c, resources: {requests: {cpu: 100m}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: reporter, namespace: default}
spec:
  nodeSelector: {type: karpenter}
  affinity:
    podAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        - topologyKey: topology.kubernetes.io/zone
          labelSelector: {matchLabels: {app: db}}
          namespaceSelector: {matchLabels: {team: payments}}
  containers: [{name: c, resources: {requests: {cpu: 100m}}}]
"""


def test_namespace_labels_and_cordoned_nodes_shape_the_plan(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The reporter wants to be near the payments team's db, which runs on node-2 in
    # us-east-1b. node-2 is cordoned, so its db still counts but the reporter cannot join
    # it there, and node-1 (us-east-1a) holds only the sandbox team's db: a new node is
    # launched in us-east-1b.
    (tmp_path / "cluster.yaml").write_text(CLUSTER)

    code = main(["plan", WORKSHOP, str(tmp_path), "--format", "json"])

    plan = json.loads(capsys.readouterr().out)
    assert code == 0
    assert plan["existing"] == []
    assert plan["unschedulable"] == []
    (claim,) = plan["nodeclaims"]
    assert (claim["zone"], claim["pods"]) == ("us-east-1b", ["default/reporter"])


def test_a_workload_at_zero_replicas_is_named_with_how_to_plan_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["plan", WORKSHOP])

    output = capsys.readouterr().out
    assert code == 0
    assert output.splitlines() == [
        "No pending pods: nothing to place.",
        "Deployment/inflate has 0 replicas; plan with --replicas inflate=N to see their nodes.",
    ]


def test_a_folder_without_kubernetes_objects_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    (tmp_path / "values.yaml").write_text("replicaCount: 3\nimage: {tag: latest}\n")

    code = main(["plan", str(tmp_path)])

    captured = capsys.readouterr()
    assert code == 1
    assert captured.out == ""
    assert "no Kubernetes objects" in captured.err and str(tmp_path) in captured.err
