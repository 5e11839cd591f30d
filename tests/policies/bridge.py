"""The bridge from the infra program run under Pulumi mocks to what the policy pack sees.

tests/infra/infra_harness.py runs the real infra/ program with Pulumi mocks and records each
resource's inputs. The engine hands a policy pack the provider's property names, which are
camelCase (assumeRolePolicy, sqsManagedSseEnabled); the Python SDK's resource args are
snake_case, so the bridge turns any snake_case input name into camelCase. The recorded inputs
are already camelCase today (the SDK translates names before the mock monitor sees them), in
which case the conversion leaves them unchanged. Nested keys of Kubernetes objects and of
tag maps are data, not property names, and are never converted.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from functools import cache
from typing import Any

from tests.conftest import REPO_ROOT
from tests.policies.engine import PackResource

HARNESS_DIR = REPO_ROOT / "tests" / "infra"
if str(HARNESS_DIR) not in sys.path:
    sys.path.insert(0, str(HARNESS_DIR))

from infra_harness import RecordedResource, run_program  # noqa: E402

# Properties whose keys are user data (tag keys, label keys), not provider property names.
DATA_KEYS = frozenset({"tags", "tagsAll", "labels", "annotations", "data", "stringData"})


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def camel_props(value: Any) -> Any:
    """Provider property names in camelCase, recursively (data maps left as they are)."""
    if isinstance(value, Mapping):
        return {
            camel(key): value[key] if camel(key) in DATA_KEYS else camel_props(value[key])
            for key in value
        }
    if isinstance(value, list):
        return [camel_props(item) for item in value]
    return value


def pack_view(resource: RecordedResource) -> PackResource:
    props = resource.inputs
    if not resource.type.startswith("kubernetes:"):
        props = camel_props(props)
    return PackResource(resource.type, resource.name, props)


@cache
def infra_resources(stack: str) -> tuple[PackResource, ...]:
    """The real infra program's resources for Pulumi.<stack>.yaml, as the pack sees them."""
    return tuple(pack_view(resource) for resource in run_program(stack))


def of_type(resources: tuple[PackResource, ...], resource_type: str) -> list[PackResource]:
    found = [resource for resource in resources if resource.resource_type == resource_type]
    if not found:
        raise AssertionError(f"the infra program declares no {resource_type}")
    return found
