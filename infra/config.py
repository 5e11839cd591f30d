"""Stack configuration, read once into typed settings.

Every key lives in the project namespace (``nodewright:<key>``) and is documented in
Pulumi.yaml. Reading fails fast with a ``StackConfigError`` that names the key and the
field inside it (``nodewright:vpc.azCount: ...``); Pulumi reports it without a traceback.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import pulumi

PROJECT = "nodewright"

IdentityMode = Literal["irsa", "pod-identity"]
NatGatewayMode = Literal["single", "per-az"]

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_CLUSTER_NAME = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9_-]*$")
_KUBERNETES_VERSION = re.compile(r"^1\.\d{2}$")
_LOG_LEVELS = ("debug", "info", "warning", "error")
_CAPACITY_TYPES = ("spot", "on-demand", "reserved")
# IAM role names are at most 64 characters; we derive "NodewrightSystemNode-<cluster>".
_MAX_CLUSTER_NAME = 40


class StackConfigError(pulumi.RunError):
    """A stack config value is missing or invalid. Its text names the key and field path."""

    def __init__(self, key_path: str, message: str) -> None:
        self.key_path = key_path
        self.message = message
        # Keys under another namespace (aws:region) are given in full.
        key = key_path if ":" in key_path else f"{PROJECT}:{key_path}"
        super().__init__("\n".join(f"{key}: {line}" for line in message.splitlines()))


@dataclass(frozen=True)
class NewVpc:
    """Create a VPC with public and private subnets across `az_count` zones."""

    cidr: str
    az_count: int
    nat_gateways: NatGatewayMode


@dataclass(frozen=True)
class ExistingVpc:
    """Use a VPC that already exists; the private subnets get the discovery tag."""

    vpc_id: str
    private_subnet_ids: tuple[str, ...]
    public_subnet_ids: tuple[str, ...]


@dataclass(frozen=True)
class EndpointAccess:
    public: bool
    private: bool
    public_cidrs: tuple[str, ...]


@dataclass(frozen=True)
class ControllerSettings:
    image: str
    replicas: int
    namespace: str
    service_account: str
    log_level: str
    requests: dict[str, str]
    limits: dict[str, str]


@dataclass(frozen=True)
class SystemNodeGroupSettings:
    """The small managed node group that runs the controller and cluster add-ons."""

    instance_types: tuple[str, ...]
    min_size: int
    desired_size: int
    max_size: int


@dataclass(frozen=True)
class TeamSettings:
    """One team's NodePool: labelled and tainted team=<name>."""

    name: str
    limits: dict[str, str]
    instance_families: tuple[str, ...]
    capacity_types: tuple[str, ...]
    # Name of a shared EC2NodeClass, or None when the team has its own (own_node_class).
    shared_node_class: str | None
    own_node_class: dict[str, Any] | None
    weight: int | None


@dataclass(frozen=True)
class StackSettings:
    stack: str
    region: str
    cluster_name: str
    kubernetes_version: str
    vpc: NewVpc | ExistingVpc
    endpoint_access: EndpointAccess
    controller: ControllerSettings
    identity: IdentityMode
    interruption: bool
    system_node_group: SystemNodeGroupSettings
    admin_role_arns: tuple[str, ...]
    tags: dict[str, str]
    # Raw camelCase specs; the typed components validate them through nodewright.api.
    node_classes: dict[str, dict[str, Any]] = field(default_factory=dict)
    node_pools: dict[str, dict[str, Any]] = field(default_factory=dict)
    teams: tuple[TeamSettings, ...] = ()

    @property
    def partition(self) -> str:
        return partition_of(self.region)


def partition_of(region: str) -> str:
    """The AWS partition a region belongs to."""
    if region.startswith("cn-"):
        return "aws-cn"
    if region.startswith("us-gov-"):
        return "aws-us-gov"
    return "aws"


def load_settings() -> StackSettings:
    """Read the current stack's config (project namespace plus aws:region) once."""
    project = pulumi.Config(PROJECT)
    region = pulumi.Config("aws").get("region")
    if not region:
        raise StackConfigError("aws:region", "is required (pulumi config set aws:region <region>)")

    def read(key: str) -> Any:
        text = project.get(key)
        if text is None:
            return None
        # Objects and lists arrive as JSON; scalars as their plain text ("1.33" stays a string).
        if not text.lstrip().startswith(("{", "[")):
            return text
        try:
            return json.loads(text)
        except json.JSONDecodeError as error:
            raise StackConfigError(key, f"is not valid structured config: {error}") from None

    return parse_settings(read, stack=pulumi.get_stack(), region=region)


def parse_settings(read: Callable[[str], Any], *, stack: str, region: str) -> StackSettings:
    """Build settings from a key reader (key -> decoded value or None). Pure, for tests too."""
    cluster_name = _cluster_name(read("clusterName"))
    version = _string(read("kubernetesVersion"), "kubernetesVersion", default="1.33")
    if not _KUBERNETES_VERSION.match(version):
        raise StackConfigError("kubernetesVersion", f"must look like '1.33', got {version!r}")
    node_classes = _specs(read("nodeClasses"), "nodeClasses")
    teams = _teams(read("teams"), node_classes)
    return StackSettings(
        stack=stack,
        region=region,
        cluster_name=cluster_name,
        kubernetes_version=version,
        vpc=_vpc(read("vpc")),
        endpoint_access=_endpoint_access(read("endpointAccess")),
        controller=_controller(read("controller")),
        identity=_identity(read("identity")),
        interruption=_boolean(read("interruption"), "interruption", default=True),
        system_node_group=_system_node_group(read("systemNodeGroup")),
        admin_role_arns=_strings(read("adminRoleArns"), "adminRoleArns", default=()),
        tags=_string_map(read("tags"), "tags"),
        node_classes=node_classes,
        node_pools=_specs(read("nodePools"), "nodePools"),
        teams=teams,
    )


# -- field readers ---------------------------------------------------------------------------


def _cluster_name(value: Any) -> str:
    if value is None:
        raise StackConfigError(
            "clusterName", "is required (pulumi config set nodewright:clusterName <name>)"
        )
    name = _string(value, "clusterName")
    if len(name) > _MAX_CLUSTER_NAME or not _CLUSTER_NAME.match(name):
        raise StackConfigError(
            "clusterName",
            f"must be 1-{_MAX_CLUSTER_NAME} letters, digits, '-' or '_', starting with a letter "
            f"or digit, got {name!r}",
        )
    return name


def _vpc(value: Any) -> NewVpc | ExistingVpc:
    body = _object(value, "vpc", allowed=(
        "cidr", "azCount", "natGateways", "vpcId", "privateSubnetIds", "publicSubnetIds"
    ))
    if "vpcId" in body:
        for key in ("cidr", "azCount", "natGateways"):
            if key in body:
                raise StackConfigError(f"vpc.{key}", "cannot be combined with vpc.vpcId")
        private = _strings(body.get("privateSubnetIds"), "vpc.privateSubnetIds")
        if len(private) < 2:
            raise StackConfigError(
                "vpc.privateSubnetIds", "needs at least two subnets in different zones"
            )
        return ExistingVpc(
            vpc_id=_string(body["vpcId"], "vpc.vpcId"),
            private_subnet_ids=private,
            public_subnet_ids=_strings(body.get("publicSubnetIds"), "vpc.publicSubnetIds", ()),
        )
    for key in ("privateSubnetIds", "publicSubnetIds"):
        if key in body:
            raise StackConfigError(f"vpc.{key}", "needs vpc.vpcId (bring your own VPC)")
    cidr = _string(body.get("cidr"), "vpc.cidr", default="10.0.0.0/16")
    try:
        network = ipaddress.IPv4Network(cidr)
    except ValueError as error:
        raise StackConfigError("vpc.cidr", f"is not an IPv4 CIDR block: {error}") from None
    if not 16 <= network.prefixlen <= 20:
        raise StackConfigError("vpc.cidr", f"must be a /16 to /20 block, got {cidr}")
    az_count = _integer(body.get("azCount"), "vpc.azCount", default=3, low=2, high=6)
    nat = _choice(body.get("natGateways"), "vpc.natGateways", ("single", "per-az"), "per-az")
    mode: NatGatewayMode = "single" if nat == "single" else "per-az"
    return NewVpc(cidr=cidr, az_count=az_count, nat_gateways=mode)


def _endpoint_access(value: Any) -> EndpointAccess:
    body = _object(value, "endpointAccess", allowed=("public", "private", "publicCidrs"))
    public = _boolean(body.get("public"), "endpointAccess.public", default=True)
    private = _boolean(body.get("private"), "endpointAccess.private", default=True)
    if not public and not private:
        raise StackConfigError("endpointAccess", "public and private cannot both be false")
    cidrs = _strings(body.get("publicCidrs"), "endpointAccess.publicCidrs", ("0.0.0.0/0",))
    for index, cidr in enumerate(cidrs):
        try:
            ipaddress.IPv4Network(cidr)
        except ValueError as error:
            raise StackConfigError(
                f"endpointAccess.publicCidrs[{index}]", f"is not an IPv4 CIDR block: {error}"
            ) from None
    if cidrs != ("0.0.0.0/0",) and not public:
        raise StackConfigError("endpointAccess.publicCidrs", "needs endpointAccess.public: true")
    return EndpointAccess(public=public, private=private, public_cidrs=cidrs)


def _controller(value: Any) -> ControllerSettings:
    body = _object(value, "controller", allowed=(
        "image", "replicas", "namespace", "serviceAccount", "logLevel", "resources"
    ))
    image = body.get("image")
    if image is None:
        raise StackConfigError("controller.image", "is required (the controller's image)")
    resources = _object(body.get("resources"), "controller.resources", ("requests", "limits"))
    requests = _string_map(resources.get("requests"), "controller.resources.requests") or {
        "cpu": "250m",
        "memory": "512Mi",
    }
    limits = _string_map(resources.get("limits"), "controller.resources.limits") or {
        "memory": "512Mi",
    }
    for key, values in (("requests", requests), ("limits", limits)):
        for resource in values:
            if resource not in ("cpu", "memory"):
                raise StackConfigError(
                    f"controller.resources.{key}.{resource}", "only cpu and memory are allowed"
                )
    namespace = _string(body.get("namespace"), "controller.namespace", default="nodewright")
    account = _string(body.get("serviceAccount"), "controller.serviceAccount", "nodewright")
    for key, name in (("namespace", namespace), ("serviceAccount", account)):
        if not _DNS_LABEL.match(name) or len(name) > 63:
            raise StackConfigError(f"controller.{key}", f"must be a DNS label, got {name!r}")
    return ControllerSettings(
        image=_string(image, "controller.image"),
        replicas=_integer(body.get("replicas"), "controller.replicas", default=2, low=1, high=5),
        namespace=namespace,
        service_account=account,
        log_level=_choice(body.get("logLevel"), "controller.logLevel", _LOG_LEVELS, "info"),
        requests=requests,
        limits=limits,
    )


def _identity(value: Any) -> IdentityMode:
    mode = _choice(value, "identity", ("irsa", "pod-identity"), "pod-identity")
    return "irsa" if mode == "irsa" else "pod-identity"


def _system_node_group(value: Any) -> SystemNodeGroupSettings:
    key = "systemNodeGroup"
    body = _object(value, key, ("instanceTypes", "minSize", "desiredSize", "maxSize"))
    types = _strings(body.get("instanceTypes"), f"{key}.instanceTypes", ("m6i.large",))
    min_size = _integer(body.get("minSize"), f"{key}.minSize", default=2, low=1, high=10)
    max_size = _integer(body.get("maxSize"), f"{key}.maxSize", default=3, low=1, high=10)
    desired = _integer(body.get("desiredSize"), f"{key}.desiredSize", default=min_size, low=1,
                       high=10)
    if not min_size <= desired <= max_size:
        raise StackConfigError(
            key, f"needs minSize <= desiredSize <= maxSize, got {min_size}, {desired}, {max_size}"
        )
    return SystemNodeGroupSettings(types, min_size, desired, max_size)


def _specs(value: Any, key: str) -> dict[str, dict[str, Any]]:
    """A map of resource name -> camelCase spec; the specs are validated by the components."""
    body = _object(value, key, allowed=None)
    specs: dict[str, dict[str, Any]] = {}
    for name, spec in body.items():
        _resource_name(name, f"{key}.{name}")
        specs[name] = _object(spec, f"{key}.{name}", allowed=None)
    return specs


def _teams(value: Any, node_classes: Mapping[str, Any]) -> tuple[TeamSettings, ...]:
    body = _object(value, "teams", allowed=None)
    teams = []
    for name, raw in body.items():
        key = f"teams.{name}"
        _resource_name(name, key)
        team = _object(raw, key, (
            "limits", "instanceFamilies", "capacityTypes", "nodeClass", "weight"
        ))
        capacity_types = _strings(team.get("capacityTypes"), f"{key}.capacityTypes",
                                  ("on-demand",))
        for index, capacity_type in enumerate(capacity_types):
            if capacity_type not in _CAPACITY_TYPES:
                raise StackConfigError(
                    f"{key}.capacityTypes[{index}]",
                    f"must be one of {', '.join(_CAPACITY_TYPES)}, got {capacity_type!r}",
                )
        node_class = team.get("nodeClass", "default")
        shared: str | None = None
        own: dict[str, Any] | None = None
        if isinstance(node_class, str):
            if node_class != "default" and node_class not in node_classes:
                raise StackConfigError(
                    f"{key}.nodeClass",
                    f"names no EC2NodeClass in nodewright:nodeClasses: {node_class!r}",
                )
            shared = node_class
        else:
            own = _object(node_class, f"{key}.nodeClass", allowed=None)
        weight = team.get("weight")
        teams.append(
            TeamSettings(
                name=name,
                limits=_string_map(team.get("limits"), f"{key}.limits"),
                instance_families=_strings(team.get("instanceFamilies"),
                                           f"{key}.instanceFamilies", ()),
                capacity_types=capacity_types,
                shared_node_class=shared,
                own_node_class=own,
                weight=None if weight is None else _integer(weight, f"{key}.weight", 0, 1, 100),
            )
        )
    return tuple(teams)


# -- primitive readers -----------------------------------------------------------------------


def _resource_name(name: str, key: str) -> None:
    if len(name) > 63 or not _DNS_LABEL.match(name):
        raise StackConfigError(
            key, "the name must be a DNS label (lower-case letters, digits and '-')"
        )


def _object(value: Any, key: str, allowed: tuple[str, ...] | None) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise StackConfigError(key, f"must be an object, got {_describe(value)}")
    if allowed is not None:
        for name in value:
            if name not in allowed:
                raise StackConfigError(
                    f"{key}.{name}", f"unknown key; expected one of {', '.join(allowed)}"
                )
    return value


def _string(value: Any, key: str, default: str | None = None) -> str:
    if value is None and default is not None:
        return default
    if not isinstance(value, str) or not value:
        raise StackConfigError(key, f"must be a non-empty string, got {_describe(value)}")
    return value


def _strings(value: Any, key: str, default: tuple[str, ...] | None = None) -> tuple[str, ...]:
    if value is None and default is not None:
        return default
    if not isinstance(value, list):
        raise StackConfigError(key, f"must be a list of strings, got {_describe(value)}")
    for index, item in enumerate(value):
        _string(item, f"{key}[{index}]")
    return tuple(value)


def _string_map(value: Any, key: str) -> dict[str, str]:
    body = _object(value, key, allowed=None)
    result: dict[str, str] = {}
    for name, item in body.items():
        if isinstance(item, bool) or not isinstance(item, str | int):
            raise StackConfigError(f"{key}.{name}", f"must be a string, got {_describe(item)}")
        result[name] = str(item)
    return result


def _integer(value: Any, key: str, default: int, low: int, high: int) -> int:
    if value is None:
        return default
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise StackConfigError(
            key, f"must be an integer from {low} to {high}, got {_describe(value)}"
        )
    return value


def _boolean(value: Any, key: str, default: bool) -> bool:
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise StackConfigError(key, f"must be true or false, got {_describe(value)}")


def _choice(value: Any, key: str, choices: tuple[str, ...], default: str) -> str:
    if value is None:
        return default
    if value not in choices:
        raise StackConfigError(
            key, f"must be one of {', '.join(choices)}, got {_describe(value)}"
        )
    return str(value)


def _describe(value: Any) -> str:
    if value is None:
        return "nothing"
    return f"{type(value).__name__} {json.dumps(value, default=str)}"

