"""Karpenter's validation rules that span fields or need more than a pattern.

Each check yields (field path in wire names, message). The same rules are in
the generated CRDs as CEL (see `cel_rules` on the models) where CEL can say them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence

from nodewright.api.base import KubeModel
from nodewright.api.capacitybuffer import CapacityBuffer
from nodewright.api.core import NodeSelectorRequirementWithMinValues
from nodewright.api.cron import cron_problem
from nodewright.api.ec2nodeclass import ALIAS_FAMILIES, EC2NodeClass, EC2NodeClassSpec
from nodewright.api.kubelet import admission_problems, kubelet_problems
from nodewright.api.labels import (
    key_length_problem,
    label_value_problem,
    restricted_label_problem,
    runtime_restricted_label,
    well_known_values_problem,
)
from nodewright.api.nodeclaim import NodeClaim
from nodewright.api.nodeoverlay import RESTRICTED_CAPACITY, NodeOverlay, OverlayRequirement
from nodewright.api.nodepool import NodePool
from nodewright.api.problems import FieldPath
from nodewright.api.quantity import parse_quantity

Finding = tuple[FieldPath, str]

NUMERIC_OPERATORS = ("Gt", "Lt", "Gte", "Lte")
# What the AWS provider adds to Karpenter's WellKnownResources (aws pkg/apis/v1/labels.go
# init): a NodeOverlay may not add them either.
AWS_WELL_KNOWN_RESOURCES = (
    "vpc.amazonaws.com/pod-eni",
    "aws.amazon.com/neuron",
    "aws.amazon.com/neuroncore",
    "nvidia.com/gpu",
    "amd.com/gpu",
    "habana.ai/gaudi",
)
RESTRICTED_TAG_KEYS = (
    "eks:eks-cluster-name",
    "karpenter.sh/nodepool",
    "karpenter.sh/nodeclaim",
    "karpenter.k8s.aws/ec2nodeclass",
)


def check_requirements(
    requirements: list[NodeSelectorRequirementWithMinValues],
    path: FieldPath,
    *,
    allow_nodepool: bool = False,
    exists_values: bool = False,
) -> Iterator[Finding]:
    """`exists_values`: Exists and DoesNotExist may list values (they are ignored), as
    Karpenter's ValidateRequirement and the NodeOverlay CRD allow."""
    for index, requirement in enumerate(requirements):
        here = (*path, index)
        reason = restricted_label_problem(requirement.key, allow_nodepool=allow_nodepool)
        if reason:
            yield (*here, "key"), reason
        values = requirement.values or []
        if requirement.operator == "In" and not values:
            yield (*here, "values"), "requirements with operator 'In' must have a value defined"
        if requirement.operator in NUMERIC_OPERATORS and (
            len(values) != 1 or not values[0].isascii() or not values[0].isdigit()
        ):
            yield (*here, "values"), (
                f"requirements with operator '{requirement.operator}' must have exactly one "
                f"non-negative integer value, got {values}"
            )
        if requirement.operator in ("Exists", "DoesNotExist") and values and not exists_values:
            yield (*here, "values"), (
                f"requirements with operator '{requirement.operator}' must not have values"
            )
        if requirement.min_values is not None and requirement.operator == "In" and (
            len(values) < requirement.min_values
        ):
            yield (*here, "minValues"), (
                f"requirements with 'minValues' must have at least that many values specified "
                f"in the 'values' field ({len(values)} < {requirement.min_values})"
            )


def check_nodepool(nodepool: NodePool) -> Iterator[Finding]:
    template = nodepool.spec.template
    labels = template.metadata.labels if template.metadata else None
    for key, value in (labels or {}).items():
        where = ("spec", "template", "metadata", "labels", key)
        reason = restricted_label_problem(key)
        if reason:
            yield where, reason
        value_reason = label_value_problem(value)
        if value_reason:
            yield where, value_reason
    yield from check_requirements(
        template.spec.requirements, ("spec", "template", "spec", "requirements")
    )
    yield from check_nodepool_runtime(nodepool)
    for name, quantity in (nodepool.spec.limits or {}).items():
        yield from _check_quantity(quantity, ("spec", "limits", name))
    yield from _check_static(nodepool)
    for index, budget in enumerate(nodepool.spec.disruption.budgets):
        here = ("spec", "disruption", "budgets", index)
        reasons = budget.reasons or []
        for position, reason_name in enumerate(reasons):
            if reason_name in reasons[:position]:
                yield (*here, "reasons", position), f"duplicate reason {reason_name!r}"
        if (budget.schedule is None) != (budget.duration is None):
            missing = "duration" if budget.duration is None else "schedule"
            yield (*here, missing), "'schedule' must be set with 'duration'"
        reason = cron_problem(budget.schedule) if budget.schedule is not None else None
        if reason:
            yield (*here, "schedule"), (
                f"schedule {budget.schedule!r} is not a cron expression ({reason}; five "
                "fields such as '0 9 * * mon-fri', or @daily, @hourly, ...)"
            )


def check_nodepool_runtime(nodepool: NodePool) -> Iterator[Finding]:
    """What Karpenter's RuntimeValidate checks beyond the CRD (a NodePool failing it is
    ValidationSucceeded=False and launches nothing): well-known capacity-type values,
    taint key/effect pairs named once across taints and startupTaints, and label, taint and
    requirement keys within Kubernetes' qualified-name lengths."""
    yield from _check_well_known_values(nodepool.spec.template.spec.requirements)
    yield from _check_duplicate_taints(nodepool)
    template = nodepool.spec.template
    labels = template.metadata.labels if template.metadata else None
    keys: list[tuple[FieldPath, str]] = [
        (("spec", "template", "metadata", "labels", key), key) for key in labels or {}]
    for field, taints in (("taints", template.spec.taints),
                          ("startupTaints", template.spec.startup_taints)):
        keys += [(("spec", "template", "spec", field, index, "key"), taint.key)
                 for index, taint in enumerate(taints or [])]
    yield from _check_key_lengths(keys)
    yield from _check_requirement_key_lengths(
        template.spec.requirements, ("spec", "template", "spec", "requirements"))
    yield from _check_runtime_restricted_keys(nodepool)


def _check_runtime_restricted_keys(nodepool: NodePool) -> Iterator[Finding]:
    """Karpenter's IsRestrictedLabel in RuntimeValidate (nodepool_validation.go
    validateLabels, nodeclaim_validation.go ValidateRequirement): a key the CRD lets
    through that is not one of Karpenter's WellKnownLabels (karpenter.k8s.aws/ec2nodeclass)."""
    template = nodepool.spec.template
    labels = template.metadata.labels if template.metadata else None
    for key in labels or {}:
        reason = None if restricted_label_problem(key) else runtime_restricted_label(key)
        if reason:
            yield (("spec", "template", "metadata", "labels", key),
                   f"invalid key name {json.dumps(key)} in labels, {reason}")
    for index, requirement in enumerate(template.spec.requirements):
        key = requirement.key
        reason = None if restricted_label_problem(key) else runtime_restricted_label(key)
        if reason:
            yield (("spec", "template", "spec", "requirements", index, "key"),
                   f"invalid value: {reason} in requirements, restricted")


def _check_key_lengths(keys: list[tuple[FieldPath, str]]) -> Iterator[Finding]:
    for where, key in keys:
        reason = key_length_problem(key)
        if reason:
            yield where, reason


def _check_requirement_key_lengths(
    requirements: Sequence[NodeSelectorRequirementWithMinValues | OverlayRequirement],
    path: FieldPath,
) -> Iterator[Finding]:
    yield from _check_key_lengths([((*path, index, "key"), requirement.key)
                                   for index, requirement in enumerate(requirements)])


def _check_well_known_values(
    requirements: list[NodeSelectorRequirementWithMinValues],
) -> Iterator[Finding]:
    """Karpenter's RuntimeValidate (ValidationSucceeded=False): `capacity-type In
    [ondemand]` names no capacity type that exists, so nothing could launch."""
    for index, requirement in enumerate(requirements):
        reason = well_known_values_problem(requirement.key, requirement.operator,
                                           list(requirement.values or []),
                                           requirement.min_values)
        if reason:
            yield ("spec", "template", "spec", "requirements", index, "values"), (
                f"invalid value: {reason} in requirements, restricted")


def _check_duplicate_taints(nodepool: NodePool) -> Iterator[Finding]:
    """Karpenter's RuntimeValidate: a taint key and effect appear once across `taints`
    and `startupTaints` together."""
    spec = nodepool.spec.template.spec
    seen: set[tuple[str, str]] = set()
    for field in ("taints", "startupTaints"):
        for index, taint in enumerate((spec.taints if field == "taints"
                                       else spec.startup_taints) or []):
            pair = (taint.key, taint.effect)
            if pair in seen:
                yield ("spec", "template", "spec", field, index), (
                    f"duplicate taint Key/Effect pair {taint.key}={taint.effect}")
            seen.add(pair)


def _check_static(nodepool: NodePool) -> Iterator[Finding]:
    """Karpenter's rules for static NodePools (replicas set): no weight, no limit but nodes."""
    if not nodepool.is_static:
        return
    for name in sorted(nodepool.spec.limits or {}):
        if name != "nodes":
            yield ("spec", "limits", name), (
                "only 'limits.nodes' is supported on static NodePools")
    if nodepool.spec.weight is not None:
        yield ("spec", "weight"), "'weight' is not supported on static NodePools"


def _check_quantity(quantity: str, where: FieldPath) -> Iterator[Finding]:
    """A quantity the pattern accepts but Nodewright cannot compute with (1e31, say) is
    reported here, so that `plan` and the controller never meet it."""
    try:
        parse_quantity(quantity)
    except ValueError as error:
        yield where, str(error)


def check_nodeoverlay(overlay: NodeOverlay) -> Iterator[Finding]:
    """Karpenter's RuntimeValidate of a NodeOverlay: its requirements follow the NodePool
    rules (karpenter.sh/nodepool allowed; a well-known label's `In` names a known value;
    Exists and DoesNotExist may list values), NotIn needs values, capacity adds only
    extended resources that are not well-known (Karpenter's WellKnownResources, with the
    AWS provider's GPUs, Neuron, Gaudi and pod ENIs)."""
    requirements = [
        NodeSelectorRequirementWithMinValues(key=r.key, operator=r.operator, values=r.values)
        for r in overlay.spec.requirements
    ]
    yield from check_requirements(requirements, ("spec", "requirements"), allow_nodepool=True,
                                  exists_values=True)
    yield from _check_requirement_key_lengths(overlay.spec.requirements, ("spec", "requirements"))
    for index, requirement in enumerate(overlay.spec.requirements):
        if not restricted_label_problem(requirement.key, allow_nodepool=True):
            restricted = runtime_restricted_label(requirement.key)
            if restricted:
                yield ("spec", "requirements", index, "key"), (
                    f"invalid value: {restricted} in requirements, restricted")
        reason = well_known_values_problem(requirement.key, requirement.operator,
                                           list(requirement.values or []))
        if reason:
            yield ("spec", "requirements", index, "values"), (
                f"invalid value: {reason} in requirements, restricted")
        if requirement.operator == "NotIn" and not requirement.values:
            yield ("spec", "requirements", index, "values"), (
                "requirements with operator 'NotIn' must have a value defined")
    for name, quantity in (overlay.spec.capacity or {}).items():
        where: FieldPath = ("spec", "capacity", name)
        if name in RESTRICTED_CAPACITY or name in AWS_WELL_KNOWN_RESOURCES:
            yield where, f"invalid capacity: {name} in resource, restricted"
        yield from _check_quantity(quantity, where)
    if overlay.spec.price is not None and overlay.spec.price_adjustment is not None:
        yield ("spec", "priceAdjustment"), "cannot set both 'price' and 'priceAdjustment'"


def check_capacitybuffer(buffer: CapacityBuffer) -> Iterator[Finding]:
    """The CapacityBuffer CRD's rules: one of podTemplateRef and scalableRef, and a
    podTemplateRef needs replicas or limits (there is no workload to take a percentage of);
    limits are quantities."""
    spec = buffer.spec
    if spec.pod_template_ref is not None and spec.scalable_ref is not None:
        yield ("spec",), "You must define either PodTemplateRef or ScalableRef, but not both"
    if spec.pod_template_ref is not None and spec.replicas is None and spec.limits is None:
        yield ("spec",), "If podTemplateRef is set, replicas or limits must also be set"
    for name, quantity in (spec.limits or {}).items():
        yield from _check_quantity(quantity, ("spec", "limits", name))


def check_nodeclaim(nodeclaim: NodeClaim) -> Iterator[Finding]:
    yield from check_requirements(
        nodeclaim.spec.requirements, ("spec", "requirements"), allow_nodepool=True
    )
    yield from _check_requirement_key_lengths(nodeclaim.spec.requirements,
                                              ("spec", "requirements"))


# Per selector term list: what a term whose only selector is `tags: {}` selects (as in
# Karpenter's providers), and the fields that narrow a term besides its tags.
_EMPTY_TAGS_SELECT: dict[str, tuple[str, tuple[str, ...]]] = {
    "subnetSelectorTerms": ("every subnet{owner} the controller can see", ("id",)),
    "securityGroupSelectorTerms": ("every security group{owner} the controller can see",
                                   ("id", "name")),
    # Karpenter queries reservations only for a term with tags or match criteria.
    "capacityReservationSelectorTerms": ("no capacity reservation{owner}",
                                         ("id", "instanceMatchCriteria")),
    "amiSelectorTerms": ("every image{owner} the controller can see",
                         ("id", "name", "alias", "ssmParameter")),
}


def selector_warnings(nodeclass: EC2NodeClass) -> Iterator[Finding]:
    """Valid terms that are likely mistakes: `tags: {}` alone passes Karpenter's CRD (and
    ours), and then the term filters on nothing."""
    spec = nodeclass.spec
    lists: dict[str, Sequence[KubeModel]] = {
        "subnetSelectorTerms": spec.subnet_selector_terms,
        "securityGroupSelectorTerms": spec.security_group_selector_terms,
        "capacityReservationSelectorTerms": spec.capacity_reservation_selector_terms or [],
        "amiSelectorTerms": spec.ami_selector_terms,
    }
    for field, terms in lists.items():
        selects, narrowing = _EMPTY_TAGS_SELECT[field]
        for index, term in enumerate(terms):
            fields = term.model_dump(by_alias=True, exclude_none=True)
            if fields.get("tags") == {} and not any(key in fields for key in narrowing):
                owner = fields.get("owner") or fields.get("ownerID")
                what = selects.format(owner=f" owned by {owner}" if owner else "")
                yield ("spec", field, index, "tags"), (
                    f"tags is empty, so this term selects {what} (as in Karpenter); give at "
                    "least one tag ('*' matches any value) unless that is meant")


def check_ec2nodeclass(nodeclass: EC2NodeClass) -> Iterator[Finding]:
    spec = nodeclass.spec
    yield from _check_selector_terms(spec)
    yield from _check_ami_terms(spec)
    if (spec.role is None) == (spec.instance_profile is None):
        where: FieldPath = ("spec", "instanceProfile") if spec.role else ("spec",)
        yield where, "must specify exactly one of ['role', 'instanceProfile']"
    for key in spec.tags or {}:
        # Karpenter's CRD rules: empty values are taken, empty keys and its own keys are not.
        where = ("spec", "tags", key)
        if not key:
            yield where, "empty tag keys aren't supported"
        restricted = next((r for r in RESTRICTED_TAG_KEYS if key == r), None)
        if restricted is None and key.startswith("kubernetes.io/cluster"):
            restricted = "kubernetes.io/cluster/"
        if restricted is not None:
            yield where, (f"tag contains a restricted tag matching {restricted} "
                          "(Nodewright sets it itself)")
    yield from _check_kubelet(spec)
    yield from _check_block_devices(spec)
    yield from _check_network_interfaces(spec)
    selector = spec.placement_group_selector
    if selector is not None and (selector.name is None) == (selector.id is None):
        yield ("spec", "placementGroupSelector"), (
            "'name' and 'id' are mutually exclusive" if selector.name is not None
            else "expected at least one, got none, ['name', 'id']")
    tracking = spec.connection_tracking
    if tracking is not None and tracking.tcp_established_timeout is None \
            and tracking.udp_stream_timeout is None and tracking.udp_timeout is None:
        yield ("spec", "connectionTracking"), (
            "at least one of tcpEstablishedTimeout, udpStreamTimeout, or udpTimeout must be set")


def _check_network_interfaces(spec: EC2NodeClassSpec) -> Iterator[Finding]:
    interfaces = spec.network_interfaces or []
    where: FieldPath = ("spec", "networkInterfaces")
    if interfaces and not any(
        (i.network_card_index, i.device_index, i.interface_type) == (0, 0, "interface")
        for i in interfaces
    ):
        yield where, ("networkInterfaces must include a primary interface with "
                      "interfaceType='interface' (networkCardIndex 0, deviceIndex 0)")
    seen: set[tuple[int, int]] = set()
    efa_cards: set[int] = set()
    for index, interface in enumerate(interfaces):
        slot = (interface.network_card_index, interface.device_index)
        if slot in seen:
            yield (*where, index), (
                f"networkInterfaces must not have duplicate networkCardIndex and deviceIndex "
                f"pairs (card {slot[0]}, device {slot[1]} is listed twice)")
        seen.add(slot)
        if interface.interface_type == "efa-only":
            if interface.network_card_index in efa_cards:
                yield (*where, index), (
                    f"networkInterfaces can have at most one efa device per network card "
                    f"(card {interface.network_card_index} has two)")
            efa_cards.add(interface.network_card_index)


# The fields of which each selector term must set one (Karpenter's "expected at least one").
_SELECTOR_FIELDS: dict[str, tuple[str, ...]] = {
    "subnetSelectorTerms": ("tags", "id"),
    "securityGroupSelectorTerms": ("tags", "id", "name"),
    "capacityReservationSelectorTerms": ("tags", "id", "instanceMatchCriteria"),
}
# Karpenter's CRD rules on the selector term lists (key, fields it may not be combined with,
# message). They quantify over the list: a combination is refused only when every term of
# the list has it, so an empty list fails them too.
_EXCLUSIVE_IN_LIST: dict[str, list[tuple[str, tuple[str, ...], str]]] = {
    "subnetSelectorTerms": [
        ("id", ("tags",), "'id' is mutually exclusive, cannot be set with a combination of "
         "other fields in a subnet selector term"),
    ],
    "securityGroupSelectorTerms": [
        ("id", ("tags", "name"), "'id' is mutually exclusive, cannot be set with a "
         "combination of other fields in a security group selector term"),
        ("name", ("tags", "id"), "'name' is mutually exclusive, cannot be set with a "
         "combination of other fields in a security group selector term"),
    ],
    "capacityReservationSelectorTerms": [
        ("id", ("tags", "ownerID", "instanceMatchCriteria"), "'id' is mutually exclusive, "
         "cannot be set along with other fields in a capacity reservation selector term"),
    ],
}


# The lists Karpenter's CRD refuses empty with a rule of their own ("<field> cannot be
# empty"); it sets no minItems on them.
_NOT_EMPTY = ("subnetSelectorTerms", "securityGroupSelectorTerms")


def _check_tag_selector(tags: object, here: FieldPath) -> Iterator[Finding]:
    """Karpenter's rule on a selector term's tags. An empty map is taken, as its CRD takes
    it (the term then selects every resource of its kind: see `selector_warnings`)."""
    if not isinstance(tags, dict):
        return
    for tag_key, tag_value in tags.items():
        if not tag_key or not tag_value:
            yield (*here, "tags", tag_key), "empty tag keys or values aren't supported"


def _check_selector_terms(spec: EC2NodeClassSpec) -> Iterator[Finding]:
    groups: list[tuple[str, list[dict[str, object]] | None]] = [
        ("subnetSelectorTerms", [t.model_dump(by_alias=True, exclude_none=True)
                                 for t in spec.subnet_selector_terms]),
        ("securityGroupSelectorTerms", [t.model_dump(by_alias=True, exclude_none=True)
                                        for t in spec.security_group_selector_terms]),
        ("capacityReservationSelectorTerms", None
         if spec.capacity_reservation_selector_terms is None else [
             t.model_dump(by_alias=True, exclude_none=True)
             for t in spec.capacity_reservation_selector_terms
         ]),
    ]
    for field, terms in groups:
        if terms is None:
            continue
        if not terms and field in _NOT_EMPTY:
            # Karpenter's "cannot be empty" rule; its exclusivity rules fail on an empty list
            # too, but one fault gets one message.
            yield ("spec", field), (f"{field} cannot be empty (give at least one term, "
                                    f"selecting by {list(_SELECTOR_FIELDS[field])!r})")
            continue
        for index, term in enumerate(terms):
            here = ("spec", field, index)
            selectors = _SELECTOR_FIELDS[field]
            if not any(key in term for key in selectors):
                yield here, (f"each of {field} must set at least one selector field: "
                             f"expected at least one, got none, {list(selectors)!r}")
                continue
            yield from _check_tag_selector(term.get("tags"), here)
        for key, others, message in _EXCLUSIVE_IN_LIST[field]:
            if all(key in term and any(o in term for o in others) for term in terms):
                yield ("spec", field), message + (
                    f" (every term of {field} sets it with another field)" if terms
                    else f" (an empty {field} fails this rule too, as in Karpenter's CRD: "
                    "leave the field out instead)")


# Karpenter's "expected at least one" fields of an AMI selector term, in its order.
_AMI_SELECTOR_FIELDS = ("tags", "id", "name", "alias", "ssmParameter")


def _check_ami_terms(spec: EC2NodeClassSpec) -> Iterator[Finding]:
    terms = spec.ami_selector_terms
    has_alias = any(term.alias for term in terms)
    for index, term in enumerate(terms):
        here = ("spec", "amiSelectorTerms", index)
        fields = term.model_dump(by_alias=True, exclude_none=True)
        if not any(key in fields for key in _AMI_SELECTOR_FIELDS):
            # (owner alone is not one: it narrows a name or tags query, as in Karpenter)
            yield here, ("each of amiSelectorTerms must set at least one selector field: "
                         f"expected at least one, got none, {list(_AMI_SELECTOR_FIELDS)!r}")
            continue
        # ssmParameter may sit next to an alias or an id, as in Karpenter's CRD.
        selectors = set(fields) - {"ssmParameter"}
        if term.alias is not None:
            family, _, version = term.alias.partition("@")
            if len(selectors) > 1:
                yield (*here, "alias"), (
                    "'alias' is mutually exclusive, cannot be set with a combination of other "
                    "fields in amiSelectorTerms"
                )
            if family not in ALIAS_FAMILIES:
                yield (*here, "alias"), (
                    f"alias family {family!r} is not supported, must be one of: "
                    + ", ".join(ALIAS_FAMILIES)
                )
            elif family.startswith("windows") and version != "latest":
                yield (*here, "alias"), "windows families may only specify version 'latest'"
            elif version != "latest" and family != "bottlerocket" and not version.startswith("v"):
                # Bottlerocket versions are taken with or without the v (its SSM parameters
                # have none, its GitHub releases have one), as Karpenter does.
                yield (*here, "alias"), (
                    f"alias version {version!r} must be 'latest' or a pinned version such as "
                    "v20240807 (al2, al2023) or 1.26.0 / v1.26.0 (bottlerocket)"
                )
        if term.id is not None and len(selectors) > 1:
            yield (*here, "id"), (
                "'id' is mutually exclusive, cannot be set with a combination of other fields "
                "in amiSelectorTerms"
            )
        yield from _check_tag_selector(fields.get("tags"), here)
    if has_alias and len(terms) > 1:
        yield ("spec", "amiSelectorTerms"), (
            "'alias' is mutually exclusive, cannot be set with a combination of other "
            "amiSelectorTerms"
        )
    if not has_alias and spec.ami_family is None:
        yield ("spec", "amiFamily"), (
            "must specify amiFamily if amiSelectorTerms does not contain an alias"
        )
    alias_family = next((t.alias_family for t in terms if t.alias_family), None)
    if (
        alias_family in ALIAS_FAMILIES
        and spec.ami_family not in (None, "Custom", ALIAS_FAMILIES[alias_family])
    ):
        yield ("spec", "amiFamily"), (
            f"amiFamily {spec.ami_family} does not match the alias family {alias_family}; "
            f"use {ALIAS_FAMILIES[alias_family]}, Custom, or leave amiFamily unset"
        )


def _check_kubelet(spec: EC2NodeClassSpec) -> Iterator[Finding]:
    if spec.kubelet is not None:
        yield from admission_problems(spec.kubelet)
        yield from kubelet_problems(spec.kubelet)


def _check_block_devices(spec: EC2NodeClassSpec) -> Iterator[Finding]:
    mappings = spec.block_device_mappings or []
    roots = [index for index, m in enumerate(mappings) if m.root_volume]
    if len(roots) > 1:
        yield ("spec", "blockDeviceMappings", roots[1], "rootVolume"), (
            "must have only one blockDeviceMappings with rootVolume"
        )
    for index, mapping in enumerate(mappings):
        here = ("spec", "blockDeviceMappings", index)
        if mapping.ebs is None:
            continue
        if mapping.ebs.snapshot_id is None and mapping.ebs.volume_size is None:
            yield (*here, "ebs"), "snapshotID or volumeSize must be defined"
        if mapping.ebs.volume_initialization_rate is not None and not mapping.ebs.snapshot_id:
            yield (*here, "ebs"), "snapshotID must be set when volumeInitializationRate is set"
        if mapping.ebs.volume_size is not None:
            # The CRD's pattern bounds the size (1G is taken, as in Karpenter); it also
            # admits a bare "Ti" or "T", which no controller can read as a quantity.
            yield from _check_quantity(mapping.ebs.volume_size, (*here, "ebs", "volumeSize"))
