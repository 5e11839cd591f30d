"""Running the NodePool and EC2NodeClass rules on manifests read from files.

This is what `nodewright policy check` does for teams that apply manifests
with kubectl or GitOps instead of Pulumi: the same rules as the pack, reported
as `FILE:LINE: Kind/name: field.path: message` problems.
"""

from __future__ import annotations

from collections.abc import Sequence

from nodewright.api.manifests import Document
from nodewright.api.problems import Problem
from nodewright.policy.config import PolicyConfig
from nodewright.policy.nodeclass_rules import NODECLASS_RULES
from nodewright.policy.nodepool_rules import NODEPOOL_RULES
from nodewright.policy.rule import Enforcement, Rule

MANIFEST_RULES: tuple[Rule, ...] = NODEPOOL_RULES + NODECLASS_RULES


def check_documents(
    documents: Sequence[Document],
    config: PolicyConfig | None = None,
    environment: str = "",
    rules: Sequence[Rule] = MANIFEST_RULES,
) -> list[Problem]:
    """Problems for every violation: errors for mandatory rules, warnings for advisory ones."""
    chosen = config or PolicyConfig()
    problems: list[Problem] = []
    for rule in rules:
        level = chosen.enforcement_of(rule)
        if level is Enforcement.DISABLED:
            continue
        context = rule.context(chosen.settings_of(rule), environment)
        for document in documents:
            if document.kind not in rule.kinds:
                continue
            for violation in rule.run(document.body, context):
                problems.append(
                    document.problem(
                        violation.path,
                        f"[{rule.name}, {level.value}] {rule.explain(violation)}",
                        "error" if level is Enforcement.MANDATORY else "warning",
                    )
                )
    return problems
