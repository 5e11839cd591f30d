"""`nodewright validate` as a user meets it: files in, one line per problem out."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nodewright.api.manifests import parse_documents
from tests.api.helpers import run_cli, write
from tests.conftest import EXAMPLES, shared_path

SEED_WITH_MISTAKES = ("seeds", "001_6cb0740443c2222b.txt")
LINE = re.compile(r"^(?P<file>[^:]+):(?P<line>\d+)(:\d+)?: ")


def test_the_workshop_manifests_are_valid(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "validate", str(EXAMPLES / "workshop"))
    assert (code, out) == (0, "")
    assert "2 object(s) valid, 0 error(s), 0 warning(s)" in err


def test_every_example_is_valid(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "validate", str(EXAMPLES))
    assert (code, out) == (0, "")
    assert " valid, 0 error(s), 0 warning(s)" in err


def _seed_yaml_blocks(text: str) -> list[tuple[int, str]]:
    """Each ```yaml block of the seed, padded so its lines keep the seed's line numbers."""
    blocks: list[tuple[int, str]] = []
    lines = text.split("\n")
    start: int | None = None
    for number, line in enumerate(lines, start=1):
        if line.strip() == "```yaml":
            start = number
        elif line.strip() == "```" and start is not None:
            padding = "\n" * start
            blocks.append((start, padding + "\n".join(lines[start : number - 1])))
            start = None
    return blocks


def test_every_mistake_in_the_seed_examples_is_reported_on_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seed = shared_path(*SEED_WITH_MISTAKES)
    for start, block in _seed_yaml_blocks(seed.read_text()):
        (tmp_path / f"seed-block-{start:03d}.yaml").write_text(block)
    code, out, _ = run_cli(capsys, "validate", str(tmp_path))
    assert code == 1
    assert "Traceback" not in out
    reported = {
        (Path(m["file"]).name, int(m["line"])): line
        for line in out.splitlines()
        if (m := LINE.match(line))
    }
    seed_lines = seed.read_text().split("\n")
    expectations = {
        # the NodeClass example: securityGroupSelectorTerms indented 3 spaces
        71: "indented 3 spaces",
        # the NodePool example: a tab before nodeClassRef
        193: "tab character",
        # `key: key: example.com/special-taint`
        198: "the key 'key' is written twice",
        # `disruption:` indented 7 spaces inside the template
        214: "indented 7 spaces",
        # a tab before `nodes: "0"` in the budgets
        221: "tab character",
    }
    for line, fragment in expectations.items():
        hits = [text for (name, number), text in reported.items() if number == line]
        assert hits, f"seed line {line} ({seed_lines[line - 1]!r}) was not reported:\n{out}"
        assert fragment in hits[0], hits[0]
    # the v1alpha5 example is a Karpenter kind at an API version we do not serve
    assert "is not served; NodePool is karpenter.sh/v1" in out


def test_json_output_has_the_same_problems(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, """
        apiVersion: karpenter.sh/v1
        kind: NodePool
        metadata:
          name: broken
        spec:
          weight: 0
          template:
            spec:
              nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
        ---
        apiVersion: karpenter.sh/v1
        kind: NodePool
        metadata:
          name: dangling
        spec:
          template:
            spec:
              nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: missing}
    """)
    code, out, _ = run_cli(capsys, "validate", "--format", "json", str(path))
    assert code == 1
    problems = json.loads(out)
    assert {(p["line"], p["path"], p["severity"]) for p in problems} == {
        (6, "spec.weight", "error"),
        (18, "spec.template.spec.nodeClassRef.name", "warning"),
    }
    assert problems[0]["kind"] == "NodePool" and problems[0]["name"] == "broken"


def test_text_lines_name_file_line_object_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, """
        apiVersion: karpenter.k8s.aws/v1
        kind: EC2NodeClass
        metadata:
          name: web
        spec:
          role: NodeRole
          amiSelectorTerms:
            - alias: al2023@latest
          subnetSelectorTerms:
            - tags: {karpenter.sh/discovery: demo}
          securityGroupSelectorTerms:
            - tags: {karpenter.sh/discovery: demo}
          metadataOptions:
            httpTokens: maybe
    """)
    code, out, _ = run_cli(capsys, "validate", str(path))
    assert code == 1
    assert out.splitlines() == [
        f"{path}:14: EC2NodeClass/web: spec.metadataOptions.httpTokens: 'maybe' is not "
        "allowed: must be 'required' or 'optional'"
    ]


def test_a_second_efa_only_interface_on_one_card_is_reported_on_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, """
        apiVersion: karpenter.k8s.aws/v1
        kind: EC2NodeClass
        metadata:
          name: training
        spec:
          role: NodeRole
          amiSelectorTerms:
            - alias: al2023@latest
          subnetSelectorTerms:
            - tags: {karpenter.sh/discovery: demo}
          securityGroupSelectorTerms:
            - tags: {karpenter.sh/discovery: demo}
          networkInterfaces:
            - {networkCardIndex: 0, deviceIndex: 0, interfaceType: interface}
            - {networkCardIndex: 1, deviceIndex: 0, interfaceType: efa-only}
            - {networkCardIndex: 1, deviceIndex: 1, interfaceType: efa-only}
    """)
    code, out, _ = run_cli(capsys, "validate", str(path))
    assert code == 1
    assert out.splitlines() == [
        f"{path}:16: EC2NodeClass/training: spec.networkInterfaces[2]: networkInterfaces can "
        "have at most one efa device per network card (card 1 has two)"
    ]


def test_a_missing_nodeclass_is_a_warning_not_an_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run_cli(capsys, "validate", str(EXAMPLES / "workshop" / "nodepool.yaml"))
    assert code == 0
    assert "warning: EC2NodeClass 'default' is not among the validated manifests" in out


def test_other_kinds_are_ignored_and_multi_document_files_are_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, (EXAMPLES / "workshop" / "inflate.yaml").read_text()
                 + "\n---\n" + (EXAMPLES / "workshop" / "nodepool.yaml").read_text()
                 + "\n---\n" + (EXAMPLES / "workshop" / "ec2nodeclass.yaml").read_text())
    code, out, err = run_cli(capsys, "validate", str(path))
    assert (code, out) == (0, "")
    assert "2 object(s) valid" in err


def test_missing_and_unreadable_files_are_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    code, out, _ = run_cli(capsys, "validate", str(tmp_path / "nope.yaml"), str(binary))
    assert code == 1
    assert "nope.yaml:0: (document): no such file or directory" in out
    assert "binary.yaml:0: (document): cannot read file" in out


def test_a_document_that_is_not_a_mapping_is_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "- just\n- a list\n")
    code, out, _ = run_cli(capsys, "validate", str(path))
    assert code == 1 and "document is not a mapping of fields" in out


_NODEPOOL = (EXAMPLES / "workshop" / "nodepool.yaml").read_text()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    cut=st.integers(min_value=0, max_value=len(_NODEPOOL)),
    length=st.integers(min_value=0, max_value=40),
    insert=st.text(alphabet=" \t:-[]{}\"'#|>&*!%@`\n", max_size=6),
)
def test_no_broken_input_raises(cut: int, length: int, insert: str) -> None:
    text = _NODEPOOL[:cut] + insert + _NODEPOOL[cut + length :]
    documents, problems = parse_documents(text, "fuzz.yaml")
    from nodewright.api.validation import validate_documents

    validate_documents(documents)
    for problem in problems:
        assert problem.format().startswith("fuzz.yaml:")


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=200))
def test_no_arbitrary_text_raises(text: str) -> None:
    documents, problems = parse_documents(text, "any.yaml")
    from nodewright.api.validation import validate_documents

    validate_documents(documents)
    assert all(problem.file == "any.yaml" for problem in problems)


def test_self_referring_and_absurdly_deep_yaml_is_reported_not_crashed_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "alias.yaml").write_text("a: &x [*x]\n")
    (tmp_path / "deep.yaml").write_text("a: " + "[" * 5000 + "]" * 5000 + "\n")
    (tmp_path / "ok.yaml").write_text((EXAMPLES / "workshop" / "ec2nodeclass.yaml").read_text())
    code, out, err = run_cli(capsys, "validate", str(tmp_path))
    assert code == 1
    assert "alias.yaml:1: (document): YAML anchors and aliases make this document contain " \
        "itself" in out
    assert "deep.yaml:0: (document): YAML is nested too deeply to read" in out
    assert "1 object(s) valid" in err


def test_one_run_reports_type_errors_and_karpenters_rules_together(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, """
        apiVersion: karpenter.sh/v1
        kind: NodePool
        metadata:
          name: two-kinds
        spec:
          weight: "5"
          template:
            spec:
              nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
              requirements:
                - key: karpenter.k8s.aws/instance-cpu
                  operator: Gt
                  values: ["1", "2"]
          disruption:
            budgets:
              - nodes: "1"
                schedule: "@daily"
    """)
    code, out, _ = run_cli(capsys, "validate", str(path))
    assert code == 1
    assert [line.split(": ", 3)[2] for line in out.splitlines()] == [
        "spec.weight",
        "spec.template.spec.requirements[0].values",
        "spec.disruption.budgets[0].duration",
    ]


def test_a_misspelled_field_is_named_with_the_field_it_looks_like(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, """
        apiVersion: karpenter.sh/v1
        kind: NodePool
        metadata: {name: a}
        spec:
          template:
            spec:
              nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
              requirments: []
          limitz: {cpu: 10}
          weigth: 3
          zzz: 1
        """)
    code, out, _ = run_cli(capsys, "validate", str(path))
    assert code == 1
    assert out.splitlines() == [
        f"{path}:8: NodePool/a: spec.template.spec.requirments: unknown field (not part of "
        "the v1 API); did you mean 'requirements'?",
        f"{path}:9: NodePool/a: spec.limitz: unknown field (not part of the v1 API); did you "
        "mean 'limits'?",
        f"{path}:10: NodePool/a: spec.weigth: unknown field (not part of the v1 API); did you "
        "mean 'weight'?",
        f"{path}:11: NodePool/a: spec.zzz: unknown field (not part of the v1 API)",
    ]
