"""`nodewright policy check`: the pack's NodePool and EC2NodeClass rules on YAML manifests.

Each story writes manifests, runs the command and expects FILE:LINE messages that say
how to fix the problem, with exit 1 for mandatory violations and 0 for advisory ones.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, REPO_ROOT
from tests.policies.manifests import NODECLASS, NODEPOOL, line_of, policy_check, write

Capsys = pytest.CaptureFixture[str]


def test_compliant_manifests_pass_silently(tmp_path: Path, capsys: Capsys) -> None:
    write(tmp_path, NODEPOOL, "nodepool.yaml")
    write(tmp_path, NODECLASS, "ec2nodeclass.yaml")

    code, lines, err = policy_check(capsys, str(tmp_path))

    assert (code, lines) == (0, [])
    assert "2 NodePool/EC2NodeClass object(s) checked, 0 mandatory" in err


def test_the_workshop_passes_with_an_advisory_about_budgets(capsys: Capsys) -> None:
    code, lines, _ = policy_check(capsys, str(EXAMPLES / "workshop"))

    assert code == 0
    assert len(lines) == 1
    assert "NodePool/default: spec.disruption: warning: [nodepool-disruption-budgets" in lines[0]


def test_every_example_meets_the_mandatory_policies(capsys: Capsys) -> None:
    code, lines, err = policy_check(capsys, str(EXAMPLES))

    assert code == 0, "\n".join(lines)
    assert " 0 mandatory violation(s) or error(s)" in err
    assert all("warning:" in line for line in lines)


def test_a_nodepool_without_limits_is_reported_at_its_spec(tmp_path: Path, capsys: Capsys) -> None:
    without_limits = NODEPOOL.replace('  limits:\n    cpu: "100"\n    memory: 400Gi\n', "")
    manifest = write(tmp_path, without_limits)

    code, lines, _ = policy_check(capsys, str(manifest))

    spec_line = line_of(manifest, "spec:")
    assert code == 1
    assert [line.split(" [")[0] for line in lines] == [
        f"{manifest}:{spec_line}: NodePool/general: spec:",
        f"{manifest}:{spec_line}: NodePool/general: spec:",
    ]
    assert "spec.limits.cpu is not set" in lines[0]
    assert "spec.limits.memory is not set" in lines[1]
    assert all("How to fix: add spec.limits with cpu and memory" in line for line in lines)


def test_limits_above_the_configured_maximum(tmp_path: Path, capsys: Capsys) -> None:
    manifest = write(tmp_path, NODEPOOL.replace('cpu: "100"', 'cpu: "5000"'))
    config = write(tmp_path, '{"nodepool-limits": {"maxMemory": "100Gi"}}', "policy.json")

    code, lines, _ = policy_check(capsys, str(manifest), "--config", str(config))

    assert code == 1
    assert [line.split(": [")[0] for line in lines] == [
        f"{manifest}:{line_of(manifest, 'cpu:')}: NodePool/general: spec.limits.cpu",
        f"{manifest}:{line_of(manifest, 'memory:')}: NodePool/general: spec.limits.memory",
    ]
    assert "spec.limits.cpu is 5000, above the allowed maximum 1000." in lines[0]
    assert "spec.limits.memory is 400Gi, above the allowed maximum 100Gi." in lines[1]


def test_an_ec2nodeclass_with_http_tokens_optional(tmp_path: Path, capsys: Capsys) -> None:
    manifest = write(tmp_path, NODECLASS.replace("httpTokens: required", "httpTokens: optional"))

    code, lines, _ = policy_check(capsys, str(manifest))

    assert code == 1
    assert lines == [
        f"{manifest}:{line_of(manifest, 'httpTokens')}: EC2NodeClass/general: "
        "spec.metadataOptions.httpTokens: [ec2nodeclass-imdsv2-required, mandatory] "
        "metadataOptions.httpTokens is 'optional': pods could read the node role's credentials "
        "through IMDSv1. How to fix: set spec.metadataOptions.httpTokens: required and "
        "spec.metadataOptions.httpPutResponseHopLimit: 1 (or remove metadataOptions to get "
        "Karpenter's defaults, which are exactly these)."
    ]


def test_a_hop_limit_of_two_needs_configuration(tmp_path: Path, capsys: Capsys) -> None:
    manifest = write(tmp_path, NODECLASS.replace("HopLimit: 1", "HopLimit: 2"))
    config = write(tmp_path, "ec2nodeclass-imdsv2-required:\n  maxHopLimit: 2\n", "policy.yaml")

    code, lines, _ = policy_check(capsys, str(manifest))
    assert code == 1
    assert "httpPutResponseHopLimit is 2, above the allowed 1" in lines[0]
    assert lines[0].startswith(f"{manifest}:{line_of(manifest, 'HopLimit')}: ")

    assert policy_check(capsys, str(manifest), "--config", str(config))[:2] == (0, [])


def test_an_unencrypted_block_device(tmp_path: Path, capsys: Capsys) -> None:
    second_volume = "    - deviceName: /dev/xvdb\n      ebs:\n        volumeSize: 100Gi\n"
    manifest = write(
        tmp_path,
        NODECLASS.replace("encrypted: true", "encrypted: false").replace(
            "  tags:\n", second_volume + "  tags:\n"
        ),
    )

    code, lines, _ = policy_check(capsys, str(manifest))

    assert code == 1
    assert [line.split(": [")[0] for line in lines] == [
        f"{manifest}:{line_of(manifest, 'encrypted: false')}: EC2NodeClass/general: "
        "spec.blockDeviceMappings[0].ebs.encrypted",
        f"{manifest}:{line_of(manifest, 'xvdb') + 1}: EC2NodeClass/general: "
        "spec.blockDeviceMappings[1].ebs.encrypted",
    ]
    assert "block device /dev/xvda is not encrypted (ebs.encrypted is False)." in lines[0]
    assert "block device /dev/xvdb is not encrypted (ebs.encrypted is not set)." in lines[1]
    assert all("How to fix: set ebs.encrypted: true" in line for line in lines)


def test_a_public_ip_address(tmp_path: Path, capsys: Capsys) -> None:
    manifest = write(tmp_path, NODECLASS + "  associatePublicIPAddress: true\n")

    code, lines, _ = policy_check(capsys, str(manifest))

    assert code == 1
    assert lines == [
        f"{manifest}:{line_of(manifest, 'associatePublicIPAddress')}: EC2NodeClass/general: "
        "spec.associatePublicIPAddress: [ec2nodeclass-no-public-ip, mandatory] "
        "associatePublicIPAddress is true: nodes would get public IP addresses. How to fix: "
        "remove spec.associatePublicIPAddress or set it to false, and launch nodes in private "
        "subnets (reach the internet through a NAT gateway)."
    ]


def test_missing_required_tags(tmp_path: Path, capsys: Capsys) -> None:
    manifest = write(tmp_path, NODECLASS.replace('    cost-center: "1234"\n', ""))
    advised = write(
        tmp_path,
        '{"ec2nodeclass-required-tags": {"requiredTags": ["team", "cost-center", "owner"]}}',
        "policy.json",
    )
    enforced = write(
        tmp_path,
        '{"ec2nodeclass-required-tags": {"enforcementLevel": "mandatory", '
        '"requiredTags": ["team", "cost-center", "owner"]}}',
        "enforced.json",
    )
    where = f"{manifest}:{line_of(manifest, '  tags:')}: EC2NodeClass/general: "

    # Tagging is a convention: advisory unless the configuration makes it mandatory.
    code, lines, _ = policy_check(capsys, str(manifest), "--config", str(advised))
    assert code == 0
    assert lines[0].startswith(where)
    assert "warning: [ec2nodeclass-required-tags, advisory]" in lines[0]
    code, lines, _ = policy_check(capsys, str(manifest), "--config", str(enforced))
    assert code == 1
    assert "[ec2nodeclass-required-tags, mandatory]" in lines[0]
    assert "spec.tags lacks the required tag(s) cost-center, owner;" in lines[0]


def test_a_latest_ami_alias_is_refused_only_in_production(tmp_path: Path, capsys: Capsys) -> None:
    manifest = write(tmp_path, NODECLASS.replace("al2023@v20240807", "al2023@latest"))

    assert policy_check(capsys, str(manifest))[:2] == (0, [])
    code, lines, _ = policy_check(capsys, str(manifest), "--environment", "prod")

    assert code == 1
    assert lines[0].startswith(
        f"{manifest}:{line_of(manifest, 'alias')}: EC2NodeClass/general: "
        "spec.amiSelectorTerms[0].alias: [ec2nodeclass-ami-pinned-in-production, mandatory] "
        "amiSelectorTerms alias 'al2023@latest' follows the newest AMI"
    )


@pytest.mark.parametrize(
    ("expire_after", "message"),
    [
        ("Never", "expireAfter is Never: nodes would never be replaced"),
        ("2160h", "expireAfter is 2160h, longer than the allowed 720h."),
    ],
)
def test_node_lifetime_is_bounded(
    tmp_path: Path, capsys: Capsys, expire_after: str, message: str
) -> None:
    lifetime = f"expireAfter: {expire_after}"
    manifest = write(tmp_path, NODEPOOL.replace("expireAfter: 720h", lifetime))

    code, lines, _ = policy_check(capsys, str(manifest))

    assert code == 1
    assert lines[0].startswith(f"{manifest}:{line_of(manifest, 'expireAfter')}: ")
    assert message in lines[0]


def test_missing_budgets_get_an_advisory_and_an_empty_list_is_refused(
    tmp_path: Path, capsys: Capsys
) -> None:
    missing = write(tmp_path, NODEPOOL.replace('    budgets:\n      - nodes: "10%"\n', ""),
                    "missing.yaml")
    null = write(tmp_path, NODEPOOL.replace('    budgets:\n      - nodes: "10%"\n',
                                            "    budgets:\n"), "null.yaml")
    empty = write(tmp_path, NODEPOOL.replace('    budgets:\n      - nodes: "10%"\n',
                                             "    budgets: []\n"), "empty.yaml")
    stated = write(tmp_path, NODEPOOL, "stated.yaml")

    assert policy_check(capsys, str(stated), "--environment", "prod")[:2] == (0, [])
    for defaulted in (missing, null):
        code, lines, _ = policy_check(capsys, str(defaulted))
        assert code == 0
        [advisory] = lines
        assert advisory.startswith(
            f"{defaulted}:{line_of(defaulted, 'disruption:')}: NodePool/general: "
            "spec.disruption: warning: [nodepool-disruption-budgets, advisory] "
            "spec.disruption.budgets is not set: how many nodes may be disrupted at once is "
            "left to the default (10%)."
        )

    code, lines, _ = policy_check(capsys, str(empty))

    assert code == 1
    assert lines == [
        f"{empty}:{line_of(empty, 'budgets: []')}: NodePool/general: spec.disruption.budgets: "
        "[nodepool-disruption-budgets-not-empty, mandatory] spec.disruption.budgets is an empty "
        "list: Karpenter then applies no disruption budget at all, so every node of this "
        "NodePool may be disrupted at once (the 10% default only applies when the field is left "
        "out). How to fix: put at least one budget in spec.disruption.budgets, e.g. "
        '[{nodes: "10%"}], or remove the field to get Karpenter\'s default of 10%; to block '
        'disruption in a window, add {nodes: "0", schedule: ..., duration: ...}.'
    ]


def test_disabled_consolidation_is_an_advisory_outside_production(
    tmp_path: Path, capsys: Capsys
) -> None:
    manifest = write(
        tmp_path,
        NODEPOOL.replace("consolidateAfter: 30s", "consolidateAfter: Never").replace(
            '- nodes: "10%"', '- nodes: "0"\n        reasons: ["Underutilized"]'
        ),
    )

    code, lines, _ = policy_check(capsys, str(manifest), "--environment", "dev")

    assert code == 0
    assert [line.split(": [")[0] for line in lines] == [
        f"{manifest}:{line_of(manifest, 'consolidateAfter')}: NodePool/general: "
        "spec.disruption.consolidateAfter: warning",
        f"{manifest}:{line_of(manifest, 'nodes: ')}: NodePool/general: "
        "spec.disruption.budgets[0].nodes: warning",
    ]
    assert "budget #0 allows 0 nodes at all times for Underutilized" in lines[1]
    assert policy_check(capsys, str(manifest), "--environment", "production")[:2] == (0, [])


def test_instance_allow_list_depends_on_the_environment(tmp_path: Path, capsys: Capsys) -> None:
    manifest = write(
        tmp_path,
        NODEPOOL.replace('values: ["c", "m", "r"]', 'values: ["g", "p"]').replace(
            '["spot", "on-demand"]', '["reserved", "on-demand"]'
        ),
    )

    code, lines, _ = policy_check(capsys, str(manifest), "--environment", "dev")

    assert code == 1
    assert [line.split(": [")[0] for line in lines] == [
        f"{manifest}:{line_of(manifest, 'capacity-type')}: NodePool/general: "
        "spec.template.spec.requirements[0]",
        f"{manifest}:{line_of(manifest, 'instance-category')}: NodePool/general: "
        "spec.template.spec.requirements[1]",
    ]
    assert "capacity type(s) reserved are not allowed in the dev environment" in lines[0]
    assert "instance categories are not limited to those allowed in the dev" in lines[1]
    code, lines, _ = policy_check(capsys, str(manifest), "--environment", "prod")
    assert code == 1  # reserved capacity is allowed in production, g and p are not
    assert [line.split(": [")[0] for line in lines] == [
        f"{manifest}:{line_of(manifest, 'instance-category')}: NodePool/general: "
        "spec.template.spec.requirements[1]",
    ]
    assert "instance categories are not limited to those allowed in the prod environment " \
        "(c, m, r, t)." in lines[0]


@pytest.mark.parametrize("environment", ["dev", "prod", "production", "prod-eu"])
def test_production_is_at_least_as_strict_as_dev_about_instance_categories(
    tmp_path: Path, capsys: Capsys, environment: str
) -> None:
    compliant = write(tmp_path, NODEPOOL, "general.yaml")
    accelerated = write(
        tmp_path, NODEPOOL.replace('values: ["c", "m", "r"]', 'values: ["p", "x"]'), "gpu.yaml"
    )
    families = write(
        tmp_path,
        NODEPOOL.replace("instance-category", "instance-family").replace(
            '["c", "m", "r"]', '["p5", "x2idn"]'
        ),
        "families.yaml",
    )

    assert policy_check(capsys, str(compliant), "--environment", environment)[:2] == (0, [])
    for manifest in (accelerated, families):
        code, lines, _ = policy_check(capsys, str(manifest), "--environment", environment)
        assert code == 1
        [line] = lines
        assert "[nodepool-instance-allow-list, mandatory] instance categories are not limited " \
            f"to those allowed in the {environment} environment (c, m, r, t)." in line
        assert "How to fix: add requirements limiting" in line


def test_a_configured_production_allow_list_is_used_as_written(
    tmp_path: Path, capsys: Capsys
) -> None:
    manifest = write(tmp_path, NODEPOOL.replace('values: ["c", "m", "r"]', 'values: ["p"]'))
    gpu_prod = write(
        tmp_path,
        '{"nodepool-instance-allow-list": {"allowList": {"prod": {"instanceCategories": '
        '["c", "m", "r", "p"]}}}}',
        "policy.json",
    )

    assert policy_check(capsys, str(manifest), "--environment", "prod")[0] == 1
    assert policy_check(
        capsys, str(manifest), "--environment", "prod", "--config", str(gpu_prod)
    )[:2] == (0, [])


def test_instance_families_count_as_their_category(tmp_path: Path, capsys: Capsys) -> None:
    manifest = write(
        tmp_path,
        NODEPOOL.replace("instance-category", "instance-family").replace(
            '["c", "m", "r"]', '["c7g", "m7i", "r6gd"]'
        ),
    )

    assert policy_check(capsys, str(manifest))[:2] == (0, [])


def test_a_team_nodepool_without_a_taint_is_advised_and_refused_where_configured(
    tmp_path: Path, capsys: Capsys
) -> None:
    team_pool = NODEPOOL.replace(
        "  template:\n    spec:\n", "  template:\n    metadata:\n      labels:\n        team: "
        "payments\n    spec:\n"
    )
    manifest = write(tmp_path, team_pool)
    where = f"{manifest}:{line_of(manifest, '    spec:')}: NodePool/general: spec.template.spec: "

    # A team label may be there for cost allocation only: a convention, so a warning.
    code, lines, _ = policy_check(capsys, str(manifest))
    assert code == 0
    assert lines[0].startswith(
        f"{where}warning: [nodepool-team-taint, advisory] this NodePool belongs to team "
        "'payments'"
    )
    # The prod stack's pack config makes it mandatory.
    prod = str(REPO_ROOT / "policies" / "config.prod.json")
    code, lines, _ = policy_check(capsys, str(manifest), "--config", prod)
    assert code == 1
    assert lines[0].startswith(
        f"{where}[nodepool-team-taint, mandatory] this NodePool belongs to team 'payments'"
    )
    tainted = team_pool.replace(
        "      expireAfter: 720h\n",
        "      expireAfter: 720h\n      taints:\n        - {key: team, value: payments, "
        "effect: NoSchedule}\n",
    )
    write(tmp_path, tainted)
    assert policy_check(capsys, str(manifest), "--config", prod)[:2] == (0, [])


def test_json_output_lists_every_violation(tmp_path: Path, capsys: Capsys) -> None:
    manifest = write(tmp_path, NODECLASS + "  associatePublicIPAddress: true\n")

    code, lines, _ = policy_check(capsys, str(manifest), "--format", "json")

    assert code == 1
    [problem] = json.loads("\n".join(lines))
    assert problem["file"] == str(manifest)
    assert problem["line"] == line_of(manifest, "associatePublicIPAddress")
    assert problem["kind"] == "EC2NodeClass"
    assert problem["path"] == "spec.associatePublicIPAddress"
    assert problem["severity"] == "error"
    assert "How to fix:" in problem["message"]


def test_configured_enforcement_levels(tmp_path: Path, capsys: Capsys) -> None:
    manifest = write(tmp_path, NODECLASS + "  associatePublicIPAddress: true\n")
    advisory = write(tmp_path, '{"all": "advisory"}', "advisory.json")
    disabled = write(tmp_path, '{"ec2nodeclass-no-public-ip": "disabled"}', "disabled.json")

    code, lines, _ = policy_check(capsys, str(manifest), "--config", str(advisory))
    assert code == 0
    assert ": warning: [ec2nodeclass-no-public-ip, advisory]" in lines[0]

    assert policy_check(capsys, str(manifest), "--config", str(disabled))[:2] == (0, [])


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ('{"nodepool-limits": {"maxCpu": "lots"}}', "maxCpu: 'lots' does not match"),
        ('{"nodepool-limits": {"maxGpu": 4}}', "nodepool-limits.maxGpu: unknown setting"),
        ('{"all": "strict"}', "all: 'strict' is not an enforcement level"),
        ('{"ec2nodeclass-imdsv2-required": {"maxHopLimit": 3}}', "3 is above the maximum 2"),
        ("[1, 2]", "expected a mapping of policy name to settings"),
        ("{not json: [", "not valid JSON or YAML"),
    ],
)
def test_a_bad_configuration_is_explained(
    tmp_path: Path, capsys: Capsys, config: str, message: str
) -> None:
    manifest = write(tmp_path, NODEPOOL)
    config_file = write(tmp_path, config, "policy.json")

    code, lines, err = policy_check(capsys, str(manifest), "--config", str(config_file))

    assert (code, lines) == (2, [])
    assert err.startswith(f"nodewright policy check: {config_file}")
    assert message in err


def test_pack_only_policies_in_a_shared_config_are_noted(tmp_path: Path, capsys: Capsys) -> None:
    manifest = write(tmp_path, NODEPOOL)
    config = write(tmp_path, '{"sqs-queue-encrypted": "advisory"}', "policy.json")

    code, lines, err = policy_check(capsys, str(manifest), "--config", str(config))

    assert (code, lines) == (0, [])
    assert "'sqs-queue-encrypted' is not a NodePool/EC2NodeClass rule" in err


def test_unreadable_input_fails_with_its_location(tmp_path: Path, capsys: Capsys) -> None:
    broken = write(tmp_path, "kind: NodePool\nspec: [\n")

    code, lines, _ = policy_check(capsys, str(broken), str(tmp_path / "missing.yaml"))

    assert code == 1
    assert any(line.startswith(f"{broken}:") and "YAML syntax error" in line for line in lines)
    assert any("missing.yaml:0" in line and "no such file" in line for line in lines)
