"""Pod specs the API server would refuse are refused here too, at their field.

A negative request (`cpu: "-100"`) would make room on a node for other pods and
over-pack it; a preference weight that is not an integer from 1 to 100 has no meaning.
`nodewright plan` reports either at its file, line and field; the controller's state
cache refuses to parse such a pod (SpecError naming the field), so the provisioner skips
it with an event and never packs it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nodewright.cli import main
from nodewright.scheduling.pods import SpecError, parse_pod_spec
from nodewright.state.pods import PodStore

WORKSHOP = Path(__file__).resolve().parents[2] / "examples" / "workshop"
Capsys = pytest.CaptureFixture[str]

GREEDY = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: greedy}
spec:
  replicas: 2
  selector: {matchLabels: {app: greedy}}
  template:
    metadata: {labels: {app: greedy}}
    spec:
      containers:
        - name: c
          resources:
            requests:
              memory: 1Gi
              cpu: "-100"
"""


def plan(tmp_path: Path, capsys: Capsys, manifest: str) -> tuple[int, str]:
    (tmp_path / "workload.yaml").write_text(manifest)
    code = main(["plan", str(WORKSHOP), str(tmp_path / "workload.yaml")])
    return code, capsys.readouterr().out


def test_a_negative_request_is_refused_at_its_line(tmp_path: Path, capsys: Capsys) -> None:
    code, output = plan(tmp_path, capsys, GREEDY)

    assert code == 1
    assert (
        f"{tmp_path / 'workload.yaml'}:15: Deployment/greedy: "
        "spec.template.spec.containers[0].resources.requests.cpu: "
        "must be greater than or equal to 0, got '-100'"
    ) in output
    assert "New nodes" not in output


@pytest.mark.parametrize("where", ["limits", "requests"])
def test_negative_limits_and_overhead_are_refused_too(where: str) -> None:
    spec = {"containers": [{"name": "c", "resources": {where: {"memory": "-1Gi"}}}]}
    with pytest.raises(SpecError) as refused:
        parse_pod_spec("default", "p", {}, spec, "spec")
    assert refused.value.path == f"spec.containers[0].resources.{where}.memory"
    with pytest.raises(SpecError) as overhead:
        parse_pod_spec("default", "p", {}, {"containers": [], "overhead": {"cpu": "-1"}}, "spec")
    assert overhead.value.path == "spec.overhead.cpu"


def test_the_state_cache_refuses_to_parse_a_pod_with_a_negative_request() -> None:
    store = PodStore()
    store.update({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "greedy-0", "namespace": "default", "uid": "u1"},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "-100"}}}]},
        "status": {"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]},
    })

    with pytest.raises(SpecError) as refused:
        store.model("default/greedy-0")
    assert refused.value.path == "spec.containers[0].resources.requests.cpu"
    # What it counts for on a node is one pod slot, never a negative amount of cpu.
    assert store.requests("default/greedy-0") == {"pods": 1000}


PREFERRING = """\
apiVersion: v1
kind: Pod
metadata: {name: choosy}
spec:
  affinity:
    nodeAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
        - weight: WEIGHT
          preference:
            matchExpressions: [{key: karpenter.sh/capacity-type, operator: In, values: [spot]}]
  containers: [{name: c, resources: {requests: {cpu: 100m}}}]
"""


@pytest.mark.parametrize(
    ("weight", "message"),
    [
        ("null", "required: an integer from 1 to 100"),
        ("heavy", "must be an integer from 1 to 100, got 'heavy'"),
        ("2.5", "must be an integer from 1 to 100, got 2.5"),
        ("0", "must be in the range 1-100, got 0"),
        ("101", "must be in the range 1-100, got 101"),
    ],
)
def test_a_preference_weight_must_be_an_integer_from_1_to_100(
    tmp_path: Path, capsys: Capsys, weight: str, message: str
) -> None:
    code, output = plan(tmp_path, capsys, PREFERRING.replace("WEIGHT", weight))

    assert code == 1
    assert (
        f"{tmp_path / 'workload.yaml'}:8: Pod/choosy: spec.affinity.nodeAffinity."
        f"preferredDuringSchedulingIgnoredDuringExecution[0].weight: {message}"
    ) in output
    assert "Traceback" not in output


def test_a_pod_affinity_preference_weight_is_checked_the_same_way() -> None:
    spec = {
        "containers": [],
        "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": None, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname"}},
        ]}},
    }
    with pytest.raises(SpecError) as refused:
        parse_pod_spec("default", "p", {}, spec, "spec")
    assert refused.value.path == (
        "spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight"
    )
