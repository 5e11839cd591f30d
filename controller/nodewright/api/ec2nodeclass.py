"""EC2NodeClass (karpenter.k8s.aws/v1): how nodes are launched on EC2."""

from __future__ import annotations

from typing import Annotated, Final, Literal

from pydantic import Field, StringConstraints

from nodewright.api.base import CelRule, KubeModel, cel_extra
from nodewright.api.core import Condition, NodeSelectorRequirement, ObjectMeta
from nodewright.api.kubelet import KubeletConfiguration as KubeletConfiguration

GROUP = "karpenter.k8s.aws"
VERSION = "v1"

AMIFamily = Literal[
    "AL2", "AL2023", "Bottlerocket", "Custom", "Windows2019", "Windows2022", "Windows2025"
]
# alias family -> amiFamily
ALIAS_FAMILIES: dict[str, str] = {
    "al2": "AL2",
    "al2023": "AL2023",
    "bottlerocket": "Bottlerocket",
    "windows2019": "Windows2019",
    "windows2022": "Windows2022",
    "windows2025": "Windows2025",
}
VolumeType = Literal["standard", "io1", "io2", "gp2", "sc1", "st1", "gp3"]

TagMap = Annotated[dict[str, str], Field(max_length=20)]
# EC2 takes at most 50 tags on a resource; the bound also keeps the CEL rule over the keys
# within the API server's cost budget.
MAX_TAGS = 50
_NOT_EMPTY_TAGS = CelRule(
    "has(self.tags) ? self.tags.all(k, k != '' && self.tags[k] != '') : true",
    "empty tag keys or values aren't supported",
)


def _exclusive(field: str, others: list[str], where: str) -> CelRule:
    rule = f"has(self.{field}) ? !({' || '.join(f'has(self.{o})' for o in others)}) : true"
    return CelRule(
        rule,
        f"'{field}' is mutually exclusive, cannot be set with a combination of other "
        f"fields in {where}",
    )


def _exclusive_in_list(field: str, others: list[str], message: str) -> CelRule:
    """Karpenter's rule on the whole list, as its CRD has it: it refuses the combination only
    when every term has it (one plain term next to a combined one passes, and an empty list
    fails)."""
    return CelRule(
        f"!self.all(x, has(x.{field}) && "
        + (f"has(x.{others[0]}))" if len(others) == 1
           else f"({' || '.join(f'has(x.{o})' for o in others)}))"),
        message,
    )


def _at_least_one(fields: list[str]) -> CelRule:
    return CelRule(
        f"self.all(x, {' || '.join(f'has(x.{f})' for f in fields)})",
        f"expected at least one, got none, {fields!r}",
    )


class SubnetSelectorTerm(KubeModel):
    tags: TagMap | None = None
    id: Annotated[str, StringConstraints(pattern=r"^subnet-[0-9a-z]+$")] | None = None

    cel_rules = (_NOT_EMPTY_TAGS,)


# Karpenter v1.14.1's rules and messages on the selector term lists
# (pkg/apis/crds/karpenter.k8s.aws_ec2nodeclasses.yaml).
SUBNET_SELECTOR_TERMS_RULES = (
    CelRule("self.size() != 0", "subnetSelectorTerms cannot be empty"),
    _at_least_one(["tags", "id"]),
    _exclusive_in_list("id", ["tags"], "'id' is mutually exclusive, cannot be set with a "
                       "combination of other fields in a subnet selector term"),
)


class SecurityGroupSelectorTerm(KubeModel):
    tags: TagMap | None = None
    id: Annotated[str, StringConstraints(pattern=r"^sg-[0-9a-z]+$")] | None = None
    name: str | None = None

    cel_rules = (_NOT_EMPTY_TAGS,)


SECURITY_GROUP_SELECTOR_TERMS_RULES = (
    CelRule("self.size() != 0", "securityGroupSelectorTerms cannot be empty"),
    _at_least_one(["tags", "id", "name"]),
    _exclusive_in_list("id", ["tags", "name"], "'id' is mutually exclusive, cannot be set "
                       "with a combination of other fields in a security group selector term"),
    _exclusive_in_list("name", ["tags", "id"], "'name' is mutually exclusive, cannot be set "
                       "with a combination of other fields in a security group selector term"),
)


class CapacityReservationSelectorTerm(KubeModel):
    tags: TagMap | None = None
    id: Annotated[str, StringConstraints(pattern=r"^cr-[0-9a-z]+$")] | None = None
    owner_id: Annotated[str, StringConstraints(pattern=r"^[0-9]{12}$")] | None = Field(
        default=None, alias="ownerID"
    )
    # open: reservations any matching launch uses; targeted: only launches that name them.
    instance_match_criteria: Literal["open", "targeted"] | None = None

    cel_rules = (_NOT_EMPTY_TAGS,)


CAPACITY_RESERVATION_SELECTOR_TERMS_RULES = (
    _at_least_one(["tags", "id", "instanceMatchCriteria"]),
    _exclusive_in_list("id", ["tags", "ownerID", "instanceMatchCriteria"],
                       "'id' is mutually exclusive, cannot be set along with other fields in a "
                       "capacity reservation selector term"),
)


class PlacementGroupSelector(KubeModel):
    """The EC2 placement group (by name or id) every instance of the node class launches
    into."""

    name: Annotated[str, StringConstraints(min_length=1)] | None = None
    id: Annotated[str, StringConstraints(pattern=r"^pg-[0-9a-z]+$")] | None = None

    cel_rules = (
        CelRule("has(self.name) || has(self.id)",
                "expected at least one, got none, ['name', 'id']"),
        CelRule("!(has(self.name) && has(self.id))", "'name' and 'id' are mutually exclusive"),
    )


ALIAS_PATTERN = r"^[a-zA-Z0-9]+@.+$"


class AMISelectorTerm(KubeModel):
    alias: Annotated[str, StringConstraints(max_length=30, pattern=ALIAS_PATTERN)] | None = None
    id: Annotated[str, StringConstraints(pattern=r"^ami-[0-9a-z]+$")] | None = None
    name: str | None = None
    owner: str | None = None
    tags: TagMap | None = None
    ssm_parameter: str | None = None

    cel_rules = (
        CelRule(
            "has(self.alias) || has(self.tags) || has(self.name) || has(self.id) "
            "|| has(self.ssmParameter)",
            "expected at least one, got none, ['tags', 'id', 'name', 'alias', 'ssmParameter']",
        ),
        # As Karpenter's: ssmParameter may sit next to an alias or id (the alias, else the
        # id, is what resolves the term).
        _exclusive("alias", ["tags", "name", "owner", "id"], "amiSelectorTerms"),
        _exclusive("id", ["alias", "tags", "name", "owner"], "amiSelectorTerms"),
        CelRule(
            "has(self.alias) ? self.alias.find('^[^@]+') in "
            "['al2', 'al2023', 'bottlerocket', 'windows2019', 'windows2022', 'windows2025'] "
            ": true",
            "family is not supported, must be one of the following: 'al2', 'al2023', "
            "'bottlerocket', 'windows2019', 'windows2022', 'windows2025'",
        ),
        CelRule(
            "has(self.alias) && self.alias.find('^[^@]+') in "
            "['windows2019', 'windows2022', 'windows2025'] "
            "? self.alias.find('[^@]+$') == 'latest' : true",
            "windows families may only specify version 'latest'",
        ),
        _NOT_EMPTY_TAGS,
    )

    @property
    def alias_family(self) -> str | None:
        return self.alias.split("@", 1)[0] if self.alias else None


# Karpenter's CRD pattern for ebs.volumeSize (v1.14.1, quirks included: "18Ti" is refused
# and a bare "Ti" admitted): 1-59000Gi, 1-64000G, up to 58Ti or 64T.
VOLUME_SIZE_PATTERN: Final = (
    r"^((?:[1-9][0-9]{0,3}|[1-4][0-9]{4}|[5][0-8][0-9]{3}|59000)Gi"
    r"|(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|[6][0-3][0-9]{3}|64000)G"
    r"|([1-9]||[1-5][0-7]|58)Ti|([1-9]||[1-5][0-9]|6[0-3]|64)T)$"
)
VolumeSize = Annotated[str, StringConstraints(pattern=VOLUME_SIZE_PATTERN)]


class BlockDevice(KubeModel):
    delete_on_termination: bool | None = None
    encrypted: bool | None = None
    iops: int | None = Field(default=None, ge=0)
    kms_key_id: str | None = Field(default=None, alias="kmsKeyID")
    snapshot_id: str | None = Field(default=None, alias="snapshotID")
    throughput: int | None = Field(default=None, ge=0)
    volume_initialization_rate: int | None = Field(default=None, ge=100, le=300)
    volume_size: VolumeSize | None = None
    volume_type: VolumeType | None = None

    cel_rules = (
        CelRule(
            "has(self.snapshotID) || has(self.volumeSize)",
            "snapshotID or volumeSize must be defined",
        ),
        CelRule(
            # (Karpenter also refuses an empty snapshotID here; `validate` does, and the
            # rule stays within the CEL budget by not reading the unbounded string.)
            "!has(self.volumeInitializationRate) || has(self.snapshotID)",
            "snapshotID must be set when volumeInitializationRate is set",
        ),
    )


class BlockDeviceMapping(KubeModel):
    device_name: str | None = None
    ebs: BlockDevice | None = None
    root_volume: bool | None = None


class MetadataOptions(KubeModel):
    http_endpoint: Literal["enabled", "disabled"] = "enabled"
    http_protocol_ipv6: Literal["enabled", "disabled"] = Field(
        default="disabled", alias="httpProtocolIPv6"
    )
    http_put_response_hop_limit: int = Field(default=1, ge=1, le=64)
    http_tokens: Literal["required", "optional"] = "required"


class CPUOptions(KubeModel):
    nested_virtualization: Literal["enabled", "disabled"] | None = None


class ConnectionTracking(KubeModel):
    """Idle connection-tracking timeouts (seconds) of the interfaces the launch template
    lists; EC2's defaults apply to those left out."""

    tcp_established_timeout: int | None = Field(default=None, ge=60, le=432000)
    udp_stream_timeout: int | None = Field(default=None, ge=60, le=180)
    udp_timeout: int | None = Field(default=None, ge=30, le=60)

    cel_rules = (
        CelRule(
            "has(self.tcpEstablishedTimeout) || has(self.udpStreamTimeout) || "
            "has(self.udpTimeout)",
            "at least one of tcpEstablishedTimeout, udpStreamTimeout, or udpTimeout must be "
            "set",
        ),
    )


class NetworkInterface(KubeModel):
    """One network interface the launch template attaches: the card and device index it
    sits at, and whether it carries IP traffic (interface) or only EFA traffic (efa-only)."""

    network_card_index: int = Field(ge=0)
    device_index: int = Field(ge=0)
    interface_type: Literal["interface", "efa-only"]


NETWORK_INTERFACE_RULES = (
    CelRule(
        "self.size() == 0 || self.exists(x, x.deviceIndex == 0 && x.networkCardIndex == 0 "
        "&& x.interfaceType == 'interface')",
        "networkInterfaces must include a primary interface with interfaceType='interface'",
    ),
    CelRule(
        "self.all(x, self.filter(y, x.networkCardIndex == y.networkCardIndex && "
        "x.deviceIndex == y.deviceIndex).size() == 1 && (x.interfaceType != 'efa-only' || "
        "self.filter(y, x.networkCardIndex == y.networkCardIndex && "
        "y.interfaceType == 'efa-only').size() == 1))",
        "networkInterfaces must not have duplicate networkCardIndex and deviceIndex pairs, "
        "and can have at most one efa device per network card",
    ),
)


class EC2NodeClassSpec(KubeModel):
    # No minItems on these two, as in Karpenter's CRD: their "cannot be empty" rule says it
    # (both would report the one fault).
    subnet_selector_terms: list[SubnetSelectorTerm] = Field(
        max_length=30,
        json_schema_extra=cel_extra(rule.to_schema() for rule in SUBNET_SELECTOR_TERMS_RULES),
    )
    security_group_selector_terms: list[SecurityGroupSelectorTerm] = Field(
        max_length=30,
        json_schema_extra=cel_extra(
            rule.to_schema() for rule in SECURITY_GROUP_SELECTOR_TERMS_RULES),
    )
    capacity_reservation_selector_terms: list[CapacityReservationSelectorTerm] | None = Field(
        default=None, max_length=30,
        json_schema_extra=cel_extra(
            rule.to_schema() for rule in CAPACITY_RESERVATION_SELECTOR_TERMS_RULES),
    )
    placement_group_selector: PlacementGroupSelector | None = None
    associate_public_ip_address: bool | None = Field(default=None, alias="associatePublicIPAddress")
    ip_prefix_count: int | None = Field(default=None, ge=0, alias="ipPrefixCount")
    ami_selector_terms: list[AMISelectorTerm] = Field(min_length=1, max_length=30)
    ami_family: AMIFamily | None = None
    user_data: str | None = None
    role: Annotated[str, StringConstraints(min_length=1, max_length=64)] | None = None
    instance_profile: Annotated[str, StringConstraints(min_length=1, max_length=128)] | None = None
    tags: dict[str, str] | None = Field(default=None, max_length=MAX_TAGS)
    kubelet: KubeletConfiguration | None = None
    block_device_mappings: list[BlockDeviceMapping] | None = Field(default=None, max_length=50)
    instance_store_policy: Literal["RAID0"] | None = None
    network_interfaces: list[NetworkInterface] | None = Field(
        default=None, max_length=150,
        json_schema_extra=cel_extra(rule.to_schema() for rule in NETWORK_INTERFACE_RULES),
    )
    detailed_monitoring: bool | None = None
    metadata_options: MetadataOptions = Field(default_factory=MetadataOptions)
    connection_tracking: ConnectionTracking | None = None
    context: str | None = None
    cpu_options: CPUOptions | None = None

    cel_rules = (
        CelRule(
            "!self.amiSelectorTerms.exists(x, has(x.alias)) || self.amiSelectorTerms.size() == 1",
            "'alias' is mutually exclusive, cannot be set with a combination of other "
            "amiSelectorTerms",
        ),
        CelRule(
            "self.amiSelectorTerms.exists(x, has(x.alias)) || has(self.amiFamily)",
            "must specify amiFamily if amiSelectorTerms does not contain an alias",
        ),
        *(
            CelRule(
                f"self.amiSelectorTerms.exists(x, has(x.alias) && "
                f"x.alias.find('^[^@]+') == '{alias}') ? (!has(self.amiFamily) || "
                f"self.amiFamily == '{family}' || self.amiFamily == 'Custom') : true",
                f"amiFamily must be {family} or Custom when using an alias for {alias}",
            )
            for alias, family in ALIAS_FAMILIES.items()
        ),
        CelRule(
            "(has(self.role) || has(self.instanceProfile)) && "
            "!(has(self.role) && has(self.instanceProfile))",
            "must specify exactly one of ['role', 'instanceProfile']",
        ),
        CelRule(
            "!has(self.blockDeviceMappings) || "
            "self.blockDeviceMappings.filter(x, has(x.rootVolume) && x.rootVolume).size() <= 1",
            "must have only one blockDeviceMappings with rootVolume",
        ),
        CelRule("!has(self.tags) || self.tags.all(k, k != '')",
                "empty tag keys aren't supported"),
        # Karpenter's rules on spec.tags, one per restricted key, with its messages.
        *(
            CelRule(f"!has(self.tags) || self.tags.all(k, {condition})",
                    f"tag contains a restricted tag matching {key}")
            for key, condition in (
                ("eks:eks-cluster-name", "k != 'eks:eks-cluster-name'"),
                ("kubernetes.io/cluster/", "!k.startsWith('kubernetes.io/cluster')"),
                ("karpenter.sh/nodepool", "k != 'karpenter.sh/nodepool'"),
                ("karpenter.sh/nodeclaim", "k != 'karpenter.sh/nodeclaim'"),
                ("karpenter.k8s.aws/ec2nodeclass", "k != 'karpenter.k8s.aws/ec2nodeclass'"),
            )
        ),
    )

    def resolved_ami_family(self) -> str:
        """The family that decides the user data: amiFamily when set (Custom included),
        else the alias's family, else Custom."""
        if self.ami_family is not None:
            return self.ami_family
        for term in self.ami_selector_terms:
            if term.alias_family is not None:
                return ALIAS_FAMILIES.get(term.alias_family, "Custom")
        return "Custom"


class SubnetStatus(KubeModel):
    id: str
    zone: str
    zone_id: str | None = Field(default=None, alias="zoneID")


class SecurityGroupStatus(KubeModel):
    id: str
    name: str | None = None


class AMIStatus(KubeModel):
    id: str
    name: str | None = None
    deprecated: bool | None = None
    requirements: list[NodeSelectorRequirement] = Field(default_factory=list)


class CapacityReservationStatus(KubeModel):
    """A capacity reservation the node class may launch into (Karpenter's status entry)."""

    availability_zone: str
    end_time: str | None = None
    id: str
    instance_match_criteria: str
    instance_type: str
    owner_id: str = Field(alias="ownerID")
    reservation_type: Literal["default", "capacity-block"]
    interruptible: bool = False
    # expiring: a capacity block within 40 minutes of its end (no launches, nodes drained).
    state: Literal["active", "expiring"] = "active"


class EC2NodeClassStatus(KubeModel):
    subnets: list[SubnetStatus] | None = None
    security_groups: list[SecurityGroupStatus] | None = None
    capacity_reservations: list[CapacityReservationStatus] | None = None
    amis: list[AMIStatus] | None = None
    instance_profile: str | None = None
    conditions: list[Condition] | None = None


class EC2NodeClass(KubeModel):
    api_version: Literal["karpenter.k8s.aws/v1"] = "karpenter.k8s.aws/v1"
    kind: Literal["EC2NodeClass"] = "EC2NodeClass"
    metadata: ObjectMeta
    spec: EC2NodeClassSpec
    status: EC2NodeClassStatus | None = None

    @property
    def name(self) -> str:
        return self.metadata.name or ""

    def resolved_ami_family(self) -> str:
        return self.spec.resolved_ami_family()
