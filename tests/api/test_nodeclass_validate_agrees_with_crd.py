"""`nodewright validate` and the API server (our generated CRD) decide an EC2NodeClass the
same way, as Karpenter v1.14.1's CRD decides it
(aws/karpenter-provider-aws pkg/apis/crds/karpenter.k8s.aws_ec2nodeclasses.yaml), and one
fault gets one message naming the file, the field and what is wrong.

Each story writes a manifest, applies it to the in-memory API server and runs
`nodewright validate` on the file. Karpenter's own CEL cases are run through both in
test_ec2nodeclass_cel_karpenter.py; these are the inputs they do not spell out.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from nodewright.cluster.api import InvalidError
from nodewright.cluster.memory import InMemoryCluster
from nodewright.runtime.clock import VirtualClock
from tests.api.helpers import run_cli

NODE_CLASS: dict[str, Any] = {
    "apiVersion": "karpenter.k8s.aws/v1",
    "kind": "EC2NodeClass",
    "metadata": {"name": "web"},
    "spec": {
        "role": "NodeRole",
        "amiSelectorTerms": [{"alias": "al2023@latest"}],
        "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
        "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
    },
}


@pytest.fixture
def cluster() -> InMemoryCluster:
    return InMemoryCluster(VirtualClock())


def node_class(**spec: Any) -> dict[str, Any]:
    body = copy.deepcopy(NODE_CLASS)
    body["spec"].update(spec)
    return body


def refusal(cluster: InMemoryCluster, body: dict[str, Any]) -> str | None:
    """The API server's 422 message, or None when it stores the object."""
    try:
        cluster.create(copy.deepcopy(body))
    except InvalidError as refused:
        return str(refused)
    cluster.delete(body["kind"], body["metadata"]["name"])
    return None


def validate(tmp_path: Path, capsys: pytest.CaptureFixture[str],
             body: dict[str, Any]) -> tuple[int, list[str]]:
    """`nodewright validate` on the manifest: exit code and output lines, each without the
    file:line prefix (checked to name the file)."""
    path = tmp_path / "nodeclass.yaml"
    path.write_text(yaml.safe_dump(body, sort_keys=False))
    code, out, _ = run_cli(capsys, "validate", str(path))
    lines = out.splitlines()
    assert all(line.startswith(f"{path}:") for line in lines), lines
    return code, [line.split(": ", 1)[1] for line in lines]


@pytest.mark.parametrize(("field", "term", "what"), [
    ("subnetSelectorTerms", {"tags": {}}, "every subnet the controller can see"),
    ("securityGroupSelectorTerms", {"tags": {}}, "every security group the controller can see"),
    # Karpenter's QueriesFromSelectorTerms makes no query of a term without tags or criteria.
    ("capacityReservationSelectorTerms", {"tags": {}}, "no capacity reservation"),
    ("capacityReservationSelectorTerms", {"ownerID": "012345678901", "tags": {}},
     "no capacity reservation owned by 012345678901"),
    ("amiSelectorTerms", {"tags": {}}, "every image the controller can see"),
    ("amiSelectorTerms", {"owner": "self", "tags": {}},
     "every image owned by self the controller can see"),
])
def test_an_empty_tags_map_in_a_selector_term_is_taken_with_a_warning(
        cluster: InMemoryCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        field: str, term: dict[str, Any], what: str) -> None:
    # Karpenter's CRD admits `tags: {}` (has(x.tags) holds for an empty map; its rule on
    # the map checks keys and values, of which there are none), and its providers then
    # query with no tag filter (reservations: make no query). validate used to refuse it
    # ("tags must not be empty").
    extra = {"amiFamily": "AL2023"} if field == "amiSelectorTerms" else {}
    body = node_class(**{field: [term]}, **extra)
    assert refusal(cluster, body) is None
    code, lines = validate(tmp_path, capsys, body)
    assert code == 0
    assert lines == [
        f"EC2NodeClass/web: spec.{field}[0].tags: warning: tags is empty, so this term "
        f"selects {what} (as in Karpenter); give at least one tag ('*' matches any value) "
        "unless that is meant"]


def test_an_empty_tags_map_next_to_an_id_is_taken_without_a_warning(
        cluster: InMemoryCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The id selects; Karpenter's exclusivity rule refuses id with tags only when every term
    # of the list combines them, so one plain term next to it keeps the list valid.
    body = node_class(subnetSelectorTerms=[{"id": "subnet-0123", "tags": {}},
                                           {"tags": {"karpenter.sh/discovery": "demo"}}])
    assert refusal(cluster, body) is None
    assert validate(tmp_path, capsys, body) == (0, [])


@pytest.mark.parametrize(("field", "selectors"), [
    ("subnetSelectorTerms", "['tags', 'id']"),
    ("securityGroupSelectorTerms", "['tags', 'id', 'name']"),
])
def test_an_empty_selector_term_list_gets_one_message(
        cluster: InMemoryCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        field: str, selectors: str) -> None:
    # Karpenter's CRD has no minItems on these lists: its rule `self.size() != 0` says
    # "<field> cannot be empty". Ours had both, so the API server reported the one fault
    # twice ("should have at least 1 items" as well).
    body = node_class(**{field: []})
    refused = refusal(cluster, body)
    assert refused is not None
    assert f"{field} cannot be empty" in refused
    assert "at least 1 items" not in refused
    assert validate(tmp_path, capsys, body) == (1, [
        f"EC2NodeClass/web: spec.{field}: {field} cannot be empty (give at least one term, "
        f"selecting by {selectors})"])


def test_each_empty_list_is_named_by_its_own_rule_on_the_api_server(
        cluster: InMemoryCluster) -> None:
    # Both lists carry the rule text `self.size() != 0`, with different messages; the
    # in-memory API server remembered verdicts by rule text alone and answered the
    # security group list with the subnet list's message.
    subnets = refusal(cluster, node_class(subnetSelectorTerms=[]))
    groups = refusal(cluster, node_class(securityGroupSelectorTerms=[]))
    assert subnets is not None and groups is not None
    assert "subnetSelectorTerms cannot be empty" in subnets
    assert "securityGroupSelectorTerms cannot be empty" in groups
    assert "subnetSelectorTerms cannot be empty" not in groups


def test_an_ami_term_with_only_an_owner_is_refused_by_both(
        cluster: InMemoryCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Karpenter's CRD: "expected at least one, got none, ['tags', 'id', 'name', 'alias',
    # 'ssmParameter']" (an owner narrows a name or tags query, it selects nothing alone).
    # validate used to take the term.
    body = node_class(amiFamily="AL2023", amiSelectorTerms=[{"owner": "self"}])
    message = "expected at least one, got none, ['tags', 'id', 'name', 'alias', 'ssmParameter']"
    refused = refusal(cluster, body)
    assert refused is not None and message in refused
    assert validate(tmp_path, capsys, body) == (1, [
        "EC2NodeClass/web: spec.amiSelectorTerms[0]: each of amiSelectorTerms must set at "
        f"least one selector field: {message}"])


@pytest.mark.parametrize("tags", [{"": "ami-team"}, {"team": ""}])
def test_an_empty_tag_key_or_value_in_an_ami_term_is_refused_by_both(
        cluster: InMemoryCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        tags: dict[str, str]) -> None:
    # Karpenter: ec2nodeclass_validation_cel_test.go, "should fail when a ami selector term
    # has a tag map key that is empty" / "... value that is empty"; validate used to take
    # them (it checked only the subnet, security group and reservation terms).
    body = node_class(amiFamily="AL2023", amiSelectorTerms=[{"tags": tags}])
    refused = refusal(cluster, body)
    assert refused is not None and "empty tag keys or values aren't supported" in refused
    key = next(iter(tags))
    where = f"[{key}]" if not key else f".{key}"
    assert validate(tmp_path, capsys, body) == (1, [
        f"EC2NodeClass/web: spec.amiSelectorTerms[0].tags{where}: empty tag keys or values "
        "aren't supported"])


def test_a_1g_volume_is_taken_by_both(
        cluster: InMemoryCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Karpenter's volumeSize pattern takes 1G (10^9 bytes; EC2 gets 1 GiB); validate used to
    # refuse anything under 1Gi.
    body = node_class(blockDeviceMappings=[
        {"deviceName": "/dev/xvda", "ebs": {"volumeSize": "1G"}}])
    assert refusal(cluster, body) is None
    assert validate(tmp_path, capsys, body) == (0, [])


@pytest.mark.parametrize("size", ["Ti", "T"])
def test_a_volume_size_without_a_number_is_reported_not_crashed_on(
        cluster: InMemoryCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        size: str) -> None:
    # Karpenter's pattern admits a bare "Ti" or "T" (its alternatives allow an empty
    # number), which no controller can read as a quantity: validate says so
    # (docs/karpenter-differences.md, "Stricter input checks"); it used to raise.
    body = node_class(blockDeviceMappings=[
        {"deviceName": "/dev/xvda", "ebs": {"volumeSize": size}}])
    assert refusal(cluster, body) is None
    code, lines = validate(tmp_path, capsys, body)
    assert code == 1
    assert lines == [
        f"EC2NodeClass/web: spec.blockDeviceMappings[0].ebs.volumeSize: {size!r} is not a "
        "quantity: expected a number with an optional suffix (m, k, M, G, T, P, E, Ki, Mi, "
        "Gi, Ti, Pi, Ei) or exponent (1e3), e.g. '500m' or '2Gi'"]


@pytest.mark.parametrize(("key", "matching"), [
    ("kubernetes.io/cluster/demo", "kubernetes.io/cluster/"),
    ("karpenter.sh/nodepool", "karpenter.sh/nodepool"),
    ("eks:eks-cluster-name", "eks:eks-cluster-name"),
    ("karpenter.k8s.aws/ec2nodeclass", "karpenter.k8s.aws/ec2nodeclass"),
    ("karpenter.sh/nodeclaim", "karpenter.sh/nodeclaim"),
])
def test_a_restricted_tag_stays_refused_by_both_in_karpenters_words(
        cluster: InMemoryCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        key: str, matching: str) -> None:
    # Karpenter: ec2nodeclass_validation_cel_test.go, "should fail if tags contain a
    # restricted domain key"; the message is its CRD's rule on spec.tags.
    body = node_class(tags={key: "value"})
    message = f"tag contains a restricted tag matching {matching}"
    refused = refusal(cluster, body)
    assert refused is not None and message in refused
    code, lines = validate(tmp_path, capsys, body)
    assert code == 1
    assert len(lines) == 1 and f": {message} (Nodewright sets it itself)" in lines[0]
