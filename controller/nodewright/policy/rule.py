"""What a policy rule is: a named, documented check over one resource's properties.

The same `Rule` objects serve the CrossGuard pack (policies/) and the
`nodewright policy check` command, so a rule never knows who called it: it gets
the resource's properties as a plain mapping (camelCase, as Kubernetes and the
Pulumi engine carry them) and a `RuleContext`, and returns `Violation`s.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

FieldPath = tuple[str | int, ...]

# Environment names that count as production, besides names starting "prod-".
PRODUCTION_NAMES = frozenset({"prod", "production"})


class Enforcement(StrEnum):
    """What a violation does: mandatory blocks, advisory warns, disabled skips the rule."""

    MANDATORY = "mandatory"
    ADVISORY = "advisory"
    DISABLED = "disabled"


@dataclass(frozen=True)
class Violation:
    """One finding: what is wrong and where (a field path inside the resource).

    `subject` names another resource when a stack-wide rule blames one
    (its URN in the pack, its name in tests).
    """

    message: str
    path: FieldPath = ()
    subject: str | None = None


def is_production(environment: str) -> bool:
    name = environment.strip().lower()
    return name in PRODUCTION_NAMES or name.startswith(("prod-", "production-"))


@dataclass(frozen=True)
class RuleContext:
    """The rule's settings (schema defaults overlaid with configuration) and environment."""

    options: Mapping[str, Any] = field(default_factory=dict)
    environment: str = ""

    @property
    def production(self) -> bool:
        return is_production(self.environment)

    def option(self, name: str) -> Any:
        return self.options[name]


ResourceCheck = Callable[[Mapping[str, Any], RuleContext], Iterable[Violation]]

ENVIRONMENT_OPTION = "environment"
ENVIRONMENT_SCHEMA: Mapping[str, Any] = {
    "type": "string",
    "description": (
        "The environment this stack deploys (e.g. dev, staging, prod). When unset, the Pulumi "
        "stack name is used. prod, production and names starting prod- count as production."
    ),
}


Concern = Literal["safety", "convention"]
"""What a rule judges: safety (security, cost runaway, availability) or an organisation's
convention (how teams label, taint and tag). Convention rules are advisory by default; a
stack that wants them enforced says so in its policy-pack config."""


@dataclass(frozen=True, kw_only=True)
class RuleInfo:
    """What every rule has: its name, documentation, default enforcement and options.

    `options` maps each configuration property to its JSON schema, which must
    carry a "default"; every rule also accepts `environment`.
    """

    name: str
    description: str
    remediation: str
    enforcement: Enforcement
    options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    concern: Concern = "safety"

    def __post_init__(self) -> None:
        if self.concern == "convention" and self.enforcement is Enforcement.MANDATORY:
            raise ValueError(
                f"{self.name}: a rule that judges convention is advisory by default "
                "(a stack makes it mandatory through its policy-pack config)"
            )

    def config_schema(self) -> dict[str, dict[str, Any]]:
        """JSON schema properties for this rule's configuration (without enforcementLevel)."""
        properties = {name: dict(schema) for name, schema in self.options.items()}
        properties[ENVIRONMENT_OPTION] = dict(ENVIRONMENT_SCHEMA)
        return properties

    def defaults(self) -> dict[str, Any]:
        return {name: schema["default"] for name, schema in self.options.items()}

    def context(self, config: Mapping[str, Any] | None, environment: str = "") -> RuleContext:
        """The context for a run: configured values over defaults.

        A configured `environment` wins over the one the caller derived.
        """
        options = self.defaults()
        configured = dict(config or {})
        chosen_environment = str(configured.pop(ENVIRONMENT_OPTION, "") or environment)
        options.update(configured)
        return RuleContext(options=options, environment=chosen_environment)

    def explain(self, violation: Violation) -> str:
        """The violation's message followed by how to fix it."""
        return f"{violation.message} How to fix: {self.remediation}"


@dataclass(frozen=True, kw_only=True)
class Rule(RuleInfo):
    """A check over one resource.

    `kinds` are the Kubernetes kinds (for manifest rules) and `resource_types`
    the Pulumi resource types the rule applies to.
    """

    check: ResourceCheck
    resource_types: tuple[str, ...]
    kinds: tuple[str, ...] = ()

    def run(self, props: Mapping[str, Any], context: RuleContext) -> list[Violation]:
        return list(self.check(props, context))


@dataclass(frozen=True)
class StackResource:
    """One resource of a stack as a stack rule sees it (outputs in the engine, inputs in tests)."""

    resource_type: str
    name: str
    urn: str
    props: Mapping[str, Any]


StackCheck = Callable[[Sequence[StackResource], RuleContext], Iterable[Violation]]


@dataclass(frozen=True, kw_only=True)
class StackRule(RuleInfo):
    """A check over all the resources of a stack at once."""

    check: StackCheck

    def run(self, resources: Sequence[StackResource], context: RuleContext) -> list[Violation]:
        return list(self.check(resources, context))
