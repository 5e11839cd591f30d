"""Rules for NodePool (karpenter.sh/v1): spending limits, node lifetime, disruption, allow-lists.

Each check takes the object as Kubernetes carries it (camelCase) and reports
the field path of what is wrong, or of the nearest parent that exists when the
field is missing.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from nodewright.api.formats import DURATION_PATTERN, QUANTITY_PATTERN, parse_duration_or_never
from nodewright.api.quantity import format_quantity, parse_quantity
from nodewright.policy.fields import dig, is_list, items_of, mapping_of, strings_of
from nodewright.policy.rule import Enforcement, FieldPath, Rule, RuleContext, Violation

KIND = "NodePool"
PULUMI_TYPE = "kubernetes:karpenter.sh/v1:NodePool"

CAPACITY_TYPE = "karpenter.sh/capacity-type"
INSTANCE_CATEGORY = "karpenter.k8s.aws/instance-category"
INSTANCE_FAMILY = "karpenter.k8s.aws/instance-family"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
ALL_CAPACITY_TYPES = frozenset({"on-demand", "spot", "reserved"})
# A NodePool without a capacity-type requirement launches on-demand capacity only.
UNCONSTRAINED_CAPACITY_TYPES = frozenset({"on-demand"})
CONSOLIDATION_REASONS = frozenset({"Empty", "Underutilized"})

TEMPLATE_SPEC = ("spec", "template", "spec")


def nearest_existing(body: Mapping[str, Any], path: FieldPath) -> FieldPath:
    """`path` if it exists in `body`, else its longest existing prefix (for line numbers)."""
    for length in range(len(path), 0, -1):
        if dig(body, *path[:length]) is not None:
            return path[:length]
    return ()


def check_limits(body: Mapping[str, Any], context: RuleContext) -> Iterator[Violation]:
    limits_path = ("spec", "limits")
    limits = mapping_of(dig(body, *limits_path))
    if dig(body, "spec", "replicas") is not None:
        # A static NodePool is bounded by its replicas; Karpenter allows it no limit but
        # limits.nodes.
        return
    maxima = {"cpu": context.option("maxCpu"), "memory": context.option("maxMemory")}
    for resource, maximum in maxima.items():
        value = limits.get(resource)
        if value is None:
            yield Violation(
                f"spec.limits.{resource} is not set: this NodePool could launch nodes without "
                "bound.",
                nearest_existing(body, (*limits_path, resource)),
            )
            continue
        try:
            amount = parse_quantity(value)
        except ValueError as error:
            yield Violation(f"spec.limits.{resource}: {error}.", (*limits_path, resource))
            continue
        ceiling = parse_quantity(maximum)
        if amount > ceiling:
            yield Violation(
                f"spec.limits.{resource} is {value}, above the allowed maximum "
                f"{format_quantity(ceiling, resource)}.",
                (*limits_path, resource),
            )


def check_expire_after(body: Mapping[str, Any], context: RuleContext) -> Iterator[Violation]:
    path = (*TEMPLATE_SPEC, "expireAfter")
    value = dig(body, *path)
    maximum_text = str(context.option("maxExpireAfter"))
    maximum = parse_duration_or_never(maximum_text)
    if value is None:
        yield Violation(
            "spec.template.spec.expireAfter is not set: state how long nodes may live.",
            nearest_existing(body, path),
        )
        return
    try:
        seconds = parse_duration_or_never(str(value))
    except ValueError as error:
        yield Violation(f"spec.template.spec.expireAfter: {error}.", path)
        return
    if seconds is None:
        yield Violation(
            "spec.template.spec.expireAfter is Never: nodes would never be replaced with "
            "patched AMIs.",
            path,
        )
    elif maximum is not None and seconds > maximum:
        yield Violation(
            f"spec.template.spec.expireAfter is {value}, longer than the allowed {maximum_text}.",
            path,
        )


BUDGETS_PATH = ("spec", "disruption", "budgets")


def check_budgets(body: Mapping[str, Any], context: RuleContext) -> Iterator[Violation]:
    """A missing (or null) budgets field: Karpenter's API server defaults it to 10%.

    An explicit empty list is not defaulted; `check_budgets_not_empty` reports it.
    """
    if dig(body, *BUDGETS_PATH) is None:
        yield Violation(
            "spec.disruption.budgets is not set: how many nodes may be disrupted at once is "
            "left to the default (10%).",
            nearest_existing(body, BUDGETS_PATH),
        )


def check_budgets_not_empty(body: Mapping[str, Any], context: RuleContext) -> Iterator[Violation]:
    """`budgets: []` is kept as written (defaulting only fills missing fields), and
    Karpenter reads an empty list as no budget at all: no limit on disruptions."""
    budgets = dig(body, *BUDGETS_PATH)
    if is_list(budgets) and not budgets:
        yield Violation(
            "spec.disruption.budgets is an empty list: Karpenter then applies no disruption "
            "budget at all, so every node of this NodePool may be disrupted at once (the 10% "
            "default only applies when the field is left out).",
            BUDGETS_PATH,
        )


def check_consolidation(body: Mapping[str, Any], context: RuleContext) -> Iterator[Violation]:
    if context.production:
        return
    disruption_path = ("spec", "disruption")
    if dig(body, *disruption_path, "consolidateAfter") == "Never":
        yield Violation(
            "spec.disruption.consolidateAfter is Never: consolidation is disabled and idle "
            "nodes keep costing money.",
            (*disruption_path, "consolidateAfter"),
        )
    for index, budget in items_of(dig(body, *disruption_path, "budgets")):
        if str(dig(budget, "nodes")).strip() not in {"0", "0%"} or dig(budget, "schedule"):
            continue
        reasons = set(strings_of(dig(budget, "reasons"))) or set(CONSOLIDATION_REASONS)
        blocked = sorted(reasons & CONSOLIDATION_REASONS)
        if blocked:
            yield Violation(
                f"disruption budget #{index} allows 0 nodes at all times for "
                f"{', '.join(blocked)}: consolidation is disabled.",
                (*disruption_path, "budgets", index, "nodes"),
            )


def _requirements(body: Mapping[str, Any], key: str) -> list[tuple[int, Mapping[str, Any]]]:
    return [
        (index, requirement)
        for index, requirement in items_of(dig(body, *TEMPLATE_SPEC, "requirements"))
        if isinstance(requirement, Mapping) and requirement.get("key") == key
    ]


def _constrained_within(
    body: Mapping[str, Any], key: str, allowed: set[str], value_of: Any = None
) -> bool:
    """True when some `In` requirement on `key` only admits values in `allowed`.

    `value_of` maps a requirement value to what is compared (a family's category).
    """
    for _, requirement in _requirements(body, key):
        if requirement.get("operator") != "In":
            continue
        values = strings_of(requirement.get("values"))
        mapped = {value_of(value) if value_of else value for value in values}
        if values and mapped <= allowed:
            return True
    return False


def family_category(family: str) -> str:
    """The instance category of a family or type name: m5 -> m, c7gn.xlarge -> c, inf2 -> inf."""
    match = re.match(r"[a-z]+", family)
    return match.group(0) if match else family


def instance_family(instance_type: str) -> str:
    return instance_type.split(".", 1)[0]


def effective_capacity_types(body: Mapping[str, Any]) -> set[str]:
    requirements = _requirements(body, CAPACITY_TYPE)
    if not requirements:
        return set(UNCONSTRAINED_CAPACITY_TYPES)
    admitted = set(ALL_CAPACITY_TYPES)
    for _, requirement in requirements:
        values = set(strings_of(requirement.get("values")))
        operator = requirement.get("operator")
        if operator == "In":
            admitted &= values
        elif operator == "NotIn":
            admitted -= values
        elif operator == "DoesNotExist":
            admitted = set()
    return admitted


def allow_list_for(context: RuleContext) -> Mapping[str, Any]:
    lists = mapping_of(context.option("allowList"))
    environment = context.environment.strip().lower()
    if environment in lists:
        return mapping_of(lists[environment])
    if context.production and "prod" in lists:
        return mapping_of(lists["prod"])
    return mapping_of(lists.get("default"))


def check_allow_list(body: Mapping[str, Any], context: RuleContext) -> Iterator[Violation]:
    allowed = allow_list_for(context)
    environment = context.environment or "default"
    requirements_path = nearest_existing(body, (*TEMPLATE_SPEC, "requirements"))

    capacity_types = set(strings_of(allowed.get("capacityTypes")))
    if capacity_types:
        outside = sorted(effective_capacity_types(body) - capacity_types)
        if outside:
            found = _requirements(body, CAPACITY_TYPE)
            yield Violation(
                f"capacity type(s) {', '.join(outside)} are not allowed in the {environment} "
                f"environment (allowed: {', '.join(sorted(capacity_types))}).",
                (*TEMPLATE_SPEC, "requirements", found[0][0]) if found else requirements_path,
            )

    categories = set(strings_of(allowed.get("instanceCategories")))
    if categories and not (
        _constrained_within(body, INSTANCE_CATEGORY, categories)
        or _constrained_within(body, INSTANCE_FAMILY, categories, family_category)
        or _constrained_within(body, INSTANCE_TYPE, categories, family_category)
    ):
        yield Violation(
            "instance categories are not limited to those allowed in the "
            f"{environment} environment ({', '.join(sorted(categories))}).",
            _first_requirement_path(body, INSTANCE_CATEGORY) or requirements_path,
        )

    families = set(strings_of(allowed.get("instanceFamilies")))
    if families and not (
        _constrained_within(body, INSTANCE_FAMILY, families)
        or _constrained_within(body, INSTANCE_TYPE, families, instance_family)
    ):
        yield Violation(
            "instance families are not limited to those allowed in the "
            f"{environment} environment ({', '.join(sorted(families))}).",
            _first_requirement_path(body, INSTANCE_FAMILY) or requirements_path,
        )


def _first_requirement_path(body: Mapping[str, Any], key: str) -> FieldPath | None:
    found = _requirements(body, key)
    return (*TEMPLATE_SPEC, "requirements", found[0][0]) if found else None


def check_team_taint(body: Mapping[str, Any], context: RuleContext) -> Iterator[Violation]:
    label = str(context.option("teamLabel"))
    labels = {
        **mapping_of(dig(body, "metadata", "labels")),
        **mapping_of(dig(body, "spec", "template", "metadata", "labels")),
    }
    if label not in labels:
        return
    taints = [
        taint
        for _, taint in items_of(dig(body, *TEMPLATE_SPEC, "taints"))
        if dig(taint, "effect") in {"NoSchedule", "NoExecute"}
    ]
    if not taints:
        yield Violation(
            f"this NodePool belongs to team {labels[label]!r} ({label} label) but has no "
            "NoSchedule/NoExecute taint: any team's pods could land on its nodes.",
            nearest_existing(body, (*TEMPLATE_SPEC, "taints")),
        )


LIMITS = Rule(
    name="nodepool-limits",
    description=(
        "NodePool sets spec.limits for cpu and memory, each no higher than the configured maximum "
        "(a static NodePool, bounded by spec.replicas, is exempt)."
    ),
    remediation=(
        "add spec.limits with cpu and memory sized for the workload, e.g. limits: {cpu: \"100\", "
        "memory: 400Gi}, within the configured maxima (maxCpu, maxMemory)."
    ),
    enforcement=Enforcement.MANDATORY,
    check=check_limits,
    resource_types=(PULUMI_TYPE,),
    kinds=(KIND,),
    options={
        "maxCpu": {
            "type": ["string", "integer"],
            "pattern": QUANTITY_PATTERN,
            "default": "1000",
            "description": "The highest spec.limits.cpu allowed (a Kubernetes quantity).",
        },
        "maxMemory": {
            "type": "string",
            "pattern": QUANTITY_PATTERN,
            "default": "4000Gi",
            "description": "The highest spec.limits.memory allowed (a Kubernetes quantity).",
        },
    },
)

EXPIRE_AFTER = Rule(
    name="nodepool-expire-after",
    description=(
        "NodePool sets spec.template.spec.expireAfter, not Never and no longer than the "
        "configured maximum, so nodes are replaced with patched AMIs."
    ),
    remediation=(
        "set spec.template.spec.expireAfter to a duration such as 720h (30 days), no longer "
        "than maxExpireAfter."
    ),
    enforcement=Enforcement.MANDATORY,
    check=check_expire_after,
    resource_types=(PULUMI_TYPE,),
    kinds=(KIND,),
    options={
        "maxExpireAfter": {
            "type": "string",
            "pattern": DURATION_PATTERN,
            "default": "720h",
            "description": "The longest expireAfter allowed (a duration such as 720h).",
        }
    },
)

BUDGETS = Rule(
    name="nodepool-disruption-budgets",
    description=(
        "NodePool states its disruption budgets explicitly (spec.disruption.budgets) instead of "
        "leaving the field out and getting Karpenter's default (10%)."
    ),
    remediation=(
        "add spec.disruption.budgets, e.g. [{nodes: \"10%\"}], plus a budget with a schedule "
        "and duration for windows when no node may be disrupted."
    ),
    enforcement=Enforcement.ADVISORY,
    concern="convention",
    check=check_budgets,
    resource_types=(PULUMI_TYPE,),
    kinds=(KIND,),
)

BUDGETS_NOT_EMPTY = Rule(
    name="nodepool-disruption-budgets-not-empty",
    description=(
        "NodePool does not set spec.disruption.budgets to an empty list, which Karpenter reads "
        "as no budget at all (unlimited disruption), unlike a missing field (10% by default)."
    ),
    remediation=(
        "put at least one budget in spec.disruption.budgets, e.g. [{nodes: \"10%\"}], or remove "
        "the field to get Karpenter's default of 10%; to block disruption in a window, add "
        "{nodes: \"0\", schedule: ..., duration: ...}."
    ),
    enforcement=Enforcement.MANDATORY,
    check=check_budgets_not_empty,
    resource_types=(PULUMI_TYPE,),
    kinds=(KIND,),
)

CONSOLIDATION = Rule(
    name="nodepool-consolidation-enabled",
    description=(
        "Outside production, NodePool consolidation is not disabled (consolidateAfter: Never, "
        "or an always-on budget of 0 nodes for the Empty/Underutilized reasons)."
    ),
    remediation=(
        "set spec.disruption.consolidateAfter to a duration (e.g. 30s) and give zero-node "
        "budgets a schedule and duration instead of blocking consolidation permanently."
    ),
    enforcement=Enforcement.ADVISORY,
    concern="convention",
    check=check_consolidation,
    resource_types=(PULUMI_TYPE,),
    kinds=(KIND,),
)

ALLOW_LIST = Rule(
    name="nodepool-instance-allow-list",
    description=(
        "NodePool requirements keep capacity types and instance categories/families within the "
        "environment's allow-list."
    ),
    remediation=(
        "add requirements limiting karpenter.sh/capacity-type and "
        "karpenter.k8s.aws/instance-category (or instance-family) to allowed values, e.g. "
        "{key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r]}."
    ),
    enforcement=Enforcement.MANDATORY,
    check=check_allow_list,
    resource_types=(PULUMI_TYPE,),
    kinds=(KIND,),
    options={
        "allowList": {
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "properties": {
                    "capacityTypes": {"type": "array", "items": {"type": "string"}},
                    "instanceCategories": {"type": "array", "items": {"type": "string"}},
                    "instanceFamilies": {"type": "array", "items": {"type": "string"}},
                },
                "additionalProperties": False,
            },
            "default": {
                "default": {
                    "capacityTypes": ["on-demand", "spot"],
                    "instanceCategories": ["c", "m", "r", "t"],
                },
                "prod": {
                    "capacityTypes": ["on-demand", "spot", "reserved"],
                    "instanceCategories": ["c", "m", "r", "t"],
                },
            },
            "description": (
                "Per environment name (\"default\" for any other, \"prod\" for every production "
                "environment not listed by name): the allowed capacityTypes, instanceCategories "
                "and instanceFamilies. An empty or missing list allows everything. By default "
                "production allows the same instance categories as other environments (c, m, r, "
                "t) plus reserved capacity; a configured allowList replaces the whole default, "
                "so give its production entry instanceCategories too."
            ),
        }
    },
)

TEAM_TAINT = Rule(
    name="nodepool-team-taint",
    description=(
        "A team NodePool (one labelled with the team label) carries a NoSchedule or NoExecute "
        "taint, so only that team's pods, which tolerate it, run on its nodes."
    ),
    remediation=(
        "add a taint under spec.template.spec.taints, e.g. {key: team, value: <team>, "
        "effect: NoSchedule}, and the matching toleration to the team's pods."
    ),
    enforcement=Enforcement.ADVISORY,
    concern="convention",
    check=check_team_taint,
    resource_types=(PULUMI_TYPE,),
    kinds=(KIND,),
    options={
        "teamLabel": {
            "type": "string",
            "minLength": 1,
            "default": "team",
            "description": "The label (on the NodePool or its template) that marks a team "
            "NodePool.",
        }
    },
)

NODEPOOL_RULES: tuple[Rule, ...] = (
    LIMITS,
    EXPIRE_AFTER,
    BUDGETS,
    BUDGETS_NOT_EMPTY,
    CONSOLIDATION,
    ALLOW_LIST,
    TEAM_TAINT,
)
