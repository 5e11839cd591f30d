"""Run the real infra/ Pulumi program under Pulumi mocks and record what it declares.

Usage (from any test; put this directory on sys.path first if you are outside tests/infra):

    from infra_harness import run_program, run_program_with_outputs

    resources = run_program("dev")                        # Pulumi.dev.yaml as the stack config
    resources = run_program("prod", {"identity": "irsa"}) # with one key replaced
    run = run_program_with_outputs("dev")                 # resources plus the stack outputs
    queue = run.one("aws:sqs/queue:Queue")
    queue.inputs["messageRetentionSeconds"]               # camelCase, as the engine sees them

`run_program(stack, overrides=None) -> list[RecordedResource]`: each RecordedResource has
`type` (e.g. "aws:iam/role:Role", "kubernetes:apps/v1:Deployment", "nodewright:index:NodePool"),
`name` (the Pulumi resource name), `inputs` (dict, camelCase keys, JSON-like values; values
computed by other resources are filled from the mocks) and `custom` (False for components).

`overrides` maps config keys to values: a bare key means the project namespace
("teams" -> "nodewright:teams"), a key with a colon is taken as is ("aws:region"); objects and
lists are given as Python values; None removes the key. Program errors (for example a
StackConfigError for an invalid NodePool) propagate as the exception the program raised.

Each call sets up fresh mocks; runs are sequential within a process (the Pulumi runtime is
global state), and one run takes a second or two, so share runs with module-scoped fixtures.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
import yaml
from pulumi.runtime import settings as pulumi_settings
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

REPO_ROOT = Path(__file__).resolve().parents[2]
PROJECT = "nodewright"
ACCOUNT_ID = "123456789012"

if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))


@dataclass(frozen=True)
class RecordedResource:
    type: str
    name: str
    inputs: dict[str, Any]
    custom: bool = True
    provider: str | None = None


@dataclass
class ProgramRun:
    """Everything one run of the program declared, and its resolved stack outputs."""

    resources: list[RecordedResource]
    outputs: dict[str, Any] = field(default_factory=dict)
    secret_outputs: set[str] = field(default_factory=set)

    def of_type(self, type_: str) -> list[RecordedResource]:
        return [resource for resource in self.resources if resource.type == type_]

    def one(self, type_: str, name: str | None = None) -> RecordedResource:
        found = [r for r in self.of_type(type_) if name is None or r.name == name]
        if len(found) != 1:
            names = [r.name for r in self.of_type(type_)]
            raise AssertionError(f"expected one {type_} named {name!r}, found {names}")
        return found[0]

    def named(self, name: str) -> list[RecordedResource]:
        return [resource for resource in self.resources if resource.name == name]


def stack_config(stack: str, overrides: Mapping[str, Any] | None = None) -> dict[str, str]:
    """Pulumi.<stack>.yaml's config as the engine passes it (every value a string)."""
    path = REPO_ROOT / f"Pulumi.{stack}.yaml"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such stack file")
    document = yaml.safe_load(path.read_text()) or {}
    values: dict[str, Any] = dict(document.get("config") or {})
    for key, value in (overrides or {}).items():
        full = key if ":" in key else f"{PROJECT}:{key}"
        if value is None:
            values.pop(full, None)
        else:
            values[full] = value
    return {key: value if isinstance(value, str) else json.dumps(value)
            for key, value in values.items()}


def run_program(stack: str, overrides: Mapping[str, Any] | None = None) -> list[RecordedResource]:
    """Run infra/ for Pulumi.<stack>.yaml (plus overrides); return every declared resource."""
    return run_program_with_outputs(stack, overrides).resources


def run_failing_program(
    stack: str, overrides: Mapping[str, Any] | None = None
) -> tuple[Exception, list[RecordedResource]]:
    """Run a program that is expected to fail: the exception it raised, and every resource
    it had declared by then. AssertionError when it does not fail."""
    declared: list[RecordedResource] = []
    try:
        run_program_with_outputs(stack, overrides, record=declared)
    except Exception as error:  # the program's own error, whatever its type
        return error, list(declared)
    raise AssertionError(f"the {stack} program was expected to fail and did not")


def run_program_with_outputs(
    stack: str,
    overrides: Mapping[str, Any] | None = None,
    *,
    record: list[RecordedResource] | None = None,
) -> ProgramRun:
    """As run_program, with the stack outputs; `record` (a list) receives each resource as it
    is declared, so a caller sees what a run that raised had declared."""
    config = stack_config(stack, overrides)
    region = config.get("aws:region", "us-west-2")
    mocks = RecordingMocks(region, record if record is not None else [])
    pulumi_settings.reset_options(project=PROJECT, stack=stack)
    pulumi.runtime.set_mocks(mocks, project=PROJECT, stack=stack, preview=False)
    pulumi.runtime.set_all_config(config)

    from infra import program  # imported late: the repo root is put on sys.path above

    run = ProgramRun(resources=mocks.resources)

    async def resolve(outputs: dict[str, Any]) -> None:
        for name, value in outputs.items():
            output = pulumi.Output.from_input(value)
            run.outputs[name] = await output.future()
            if await output.is_secret():
                run.secret_outputs.add(name)

    _sync_await(run_pulumi_func(lambda: resolve(program.build())))
    return run


class RecordingMocks(pulumi.runtime.Mocks):
    """Records every resource and answers with plausible AWS/EKS values."""

    def __init__(self, region: str, resources: list[RecordedResource]) -> None:
        self.region = region
        self.resources = resources

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        self.resources.append(RecordedResource(
            type=args.typ, name=args.name, inputs=dict(args.inputs),
            custom=bool(args.custom) if args.custom is not None else True,
            provider=args.provider or None,
        ))
        physical = args.inputs.get("name") if isinstance(args.inputs.get("name"), str) else None
        physical = physical or args.name
        state = dict(args.inputs)
        state.update(self._computed(args.typ, physical))
        return f"{physical}-id", state

    def _computed(self, type_: str, name: str) -> dict[str, Any]:
        region, account = self.region, ACCOUNT_ID
        if type_ == "eks:index:Cluster":
            endpoint = f"https://EXAMPLE.gr7.{region}.eks.amazonaws.com"
            issuer = f"oidc.eks.{region}.amazonaws.com/id/EXAMPLE"
            kubeconfig = {
                "apiVersion": "v1",
                "clusters": [{"name": name, "cluster": {"server": endpoint}}],
            }
            return {
                "kubeconfig": kubeconfig,
                "kubeconfigJson": json.dumps(kubeconfig),
                "oidcProviderArn": f"arn:aws:iam::{account}:oidc-provider/{issuer}",
                "oidcProviderUrl": f"https://{issuer}",
                "oidcIssuer": issuer,
                "clusterSecurityGroupId": "sg-0eksclustersg",
                "core": {"endpoint": endpoint},
            }
        if type_ == "aws:iam/role:Role":
            return {"arn": f"arn:aws:iam::{account}:role/{name}"}
        if type_ == "aws:iam/policy:Policy":
            return {"arn": f"arn:aws:iam::{account}:policy/{name}"}
        if type_ == "aws:sqs/queue:Queue":
            return {
                "arn": f"arn:aws:sqs:{region}:{account}:{name}",
                "url": f"https://sqs.{region}.amazonaws.com/{account}/{name}",
            }
        if type_ == "aws:kms/key:Key":
            return {"arn": f"arn:aws:kms:{region}:{account}:key/{name}", "keyId": name}
        if type_.startswith("aws:"):
            service = type_.split(":")[1].split("/")[0]
            return {"arn": f"arn:aws:{service}:{region}:{account}:{name}"}
        return {}

    def call(
        self, args: pulumi.runtime.MockCallArgs
    ) -> tuple[dict[str, Any], list[tuple[str, str]] | None]:
        if args.token == "aws:index/getAvailabilityZones:getAvailabilityZones":
            zones = [f"{self.region}{letter}" for letter in "abcd"]
            return {
                "id": self.region,
                "names": zones,
                "zoneIds": [f"usw2-az{index}" for index in range(1, 5)],
                "groupNames": [self.region] * 4,
            }, []
        if args.token == "aws:index/getCallerIdentity:getCallerIdentity":
            return {
                "id": ACCOUNT_ID,
                "accountId": ACCOUNT_ID,
                "arn": f"arn:aws:iam::{ACCOUNT_ID}:user/deployer",
                "userId": "AIDEXAMPLE",
            }, []
        raise NotImplementedError(f"the infra mocks do not answer {args.token}")
