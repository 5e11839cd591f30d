"""Policy configuration in the Pulumi policy-pack config format, for the CLI.

The file is the one `pulumi preview --policy-pack-config FILE` takes (JSON, or
YAML with the same shape):

    {"all": "advisory",
     "nodepool-limits": {"enforcementLevel": "mandatory", "maxCpu": "200"},
     "ec2nodeclass-imdsv2-required": "advisory"}

"all" sets every rule's enforcement level; a rule's own entry wins over it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from nodewright.policy.rule import Enforcement, RuleInfo
from nodewright.policy.schema_check import schema_errors

ALL = "all"
ENFORCEMENT_KEY = "enforcementLevel"
LEVELS = ", ".join(level.value for level in Enforcement)


class PolicyConfigError(ValueError):
    """The configuration cannot be used; the message names the file and the setting."""


@dataclass(frozen=True)
class PolicyConfig:
    """Enforcement levels and settings chosen per rule (rule defaults apply otherwise)."""

    levels: Mapping[str, Enforcement] = field(default_factory=dict)
    settings: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    default_level: Enforcement | None = None
    ignored: tuple[str, ...] = ()

    def enforcement_of(self, rule: RuleInfo) -> Enforcement:
        return self.levels.get(rule.name) or self.default_level or rule.enforcement

    def settings_of(self, rule: RuleInfo) -> dict[str, Any]:
        return dict(self.settings.get(rule.name, {}))


def _level(value: Any, where: str) -> Enforcement:
    try:
        return Enforcement(value)
    except ValueError:
        raise PolicyConfigError(
            f"{where}: {value!r} is not an enforcement level (use one of {LEVELS})"
        ) from None


def parse_policy_config(data: Any, rules: Sequence[RuleInfo], source: str) -> PolicyConfig:
    """Check `data` against the rules' schemas; unknown policy names are listed in `ignored`.

    Names of rules this caller does not run (the pack's AWS rules, when the CLI
    reads a file shared with the pack) are not errors, so one file serves both.
    """
    if data is None:
        return PolicyConfig()
    if not isinstance(data, Mapping):
        raise PolicyConfigError(
            f"{source}: expected a mapping of policy name to settings, got {type(data).__name__}"
        )
    by_name = {rule.name: rule for rule in rules}
    levels: dict[str, Enforcement] = {}
    settings: dict[str, dict[str, Any]] = {}
    default_level: Enforcement | None = None
    ignored: list[str] = []
    for name, entry in data.items():
        where = f"{source}: {name}"
        if name == ALL:
            default_level = _level(entry, where)
            continue
        rule = by_name.get(str(name))
        if rule is None:
            ignored.append(str(name))
            continue
        if isinstance(entry, str):
            levels[rule.name] = _level(entry, where)
            continue
        if not isinstance(entry, Mapping):
            raise PolicyConfigError(
                f"{where}: expected an enforcement level ({LEVELS}) or a mapping of settings"
            )
        values = dict(entry)
        if ENFORCEMENT_KEY in values:
            levels[rule.name] = _level(values.pop(ENFORCEMENT_KEY), f"{where}.{ENFORCEMENT_KEY}")
        schema = {
            "type": "object",
            "properties": rule.config_schema(),
            "additionalProperties": False,
        }
        problems = list(schema_errors(values, schema, str(name)))
        if problems:
            raise PolicyConfigError(f"{source}: " + "; ".join(problems))
        settings[rule.name] = values
    return PolicyConfig(levels, settings, default_level, tuple(ignored))


def load_policy_config(path: Path, rules: Sequence[RuleInfo]) -> PolicyConfig:
    """Read a JSON or YAML policy configuration file."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise PolicyConfigError(f"{path}: cannot read: {error.strerror or error}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        raise PolicyConfigError(f"{path}{line}: not valid JSON or YAML") from None
    return parse_policy_config(data, rules, str(path))
