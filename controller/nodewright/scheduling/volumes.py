"""What a pod's PersistentVolumeClaims ask of its node (Karpenter's volumetopology.go and
volumeusage.go).

A claim bound to a PersistentVolume pins the pod to the volume's node affinity (a zonal
EBS volume: its zone); an unbound claim of a WaitForFirstConsumer StorageClass limits the
pod to the class's `allowedTopologies`. Each ORed term is one alternative; a pod with
several volumes gets the cross product, keeping the combinations that can hold together.
The requirements narrow the node only, not what the pod's spread constraints count.

Before that, `problem` says why a pod cannot be planned at all (Karpenter ignores such
pods and waits): its claim is missing or being deleted, bound to a volume that is
missing, not yet marked bound, or unbound without a StorageClass or with an Immediate
one (the volume controller binds those, then the pod can be planned).

`volumes` names the volumes a pod mounts by CSI driver, for the attach limits a node
reports in its CSINode.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Protocol

from nodewright.api.quantity import parse_resources
from nodewright.scheduling.pods import Pod, SpecError
from nodewright.scheduling.requirements import Requirement, RequirementError, Requirements

Object = Mapping[str, Any]

BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
DEFAULT_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class"
HOSTNAME = "kubernetes.io/hostname"
# In-tree plugin names and the CSI drivers that replaced them (csi-translation-lib).
IN_TREE_DRIVERS = {
    "kubernetes.io/aws-ebs": "ebs.csi.aws.com",
    "kubernetes.io/gce-pd": "pd.csi.storage.gke.io",
    "kubernetes.io/azure-disk": "disk.csi.azure.com",
    "kubernetes.io/azure-file": "file.csi.azure.com",
    "kubernetes.io/cinder": "cinder.csi.openstack.org",
    "kubernetes.io/vsphere-volume": "csi.vsphere.vmware.com",
}


class VolumeLookup(Protocol):
    """Reads of the cluster's storage objects (None: not found)."""

    def claim(self, namespace: str, name: str) -> Object | None: ...

    def volume(self, name: str) -> Object | None: ...

    def storage_class(self, name: str) -> Object | None: ...


class MappingLookup:
    """A `VolumeLookup` over dicts: claims by "namespace/name", volumes and classes by
    name."""

    def __init__(self, claims: Mapping[str, Object], volumes: Mapping[str, Object],
                 classes: Mapping[str, Object]) -> None:
        self.claims = claims
        self.volumes = volumes
        self.classes = classes

    def claim(self, namespace: str, name: str) -> Object | None:
        return self.claims.get(f"{namespace}/{name}")

    def volume(self, name: str) -> Object | None:
        return self.volumes.get(name)

    def storage_class(self, name: str) -> Object | None:
        return self.classes.get(name)


def _meta(obj: Object) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _spec(obj: Object) -> Mapping[str, Any]:
    return obj.get("spec") or {}


def claim_class(claim: Object) -> str:
    return str(_spec(claim).get("storageClassName") or "")


def problem(pod: Pod, lookup: VolumeLookup) -> str | None:
    """Why the pod's volumes keep it from being planned now, or None (Karpenter's
    ValidatePersistentVolumeClaims)."""
    for ref in pod.volume_claims:
        name = ref.claim_name(pod.name)
        claim = lookup.claim(pod.namespace, name)
        if claim is None:
            return f'persistentvolumeclaim "{name}" not found'
        if _meta(claim).get("deletionTimestamp"):
            return f'persistentvolumeclaim "{name}" is being deleted'
        if (claim.get("status") or {}).get("phase") == "Lost":
            return f'persistentvolumeclaim "{name}" bound to non-existent persistentvolume'
        volume_name = str(_spec(claim).get("volumeName") or "")
        class_name = claim_class(claim)
        if volume_name:
            volume = lookup.volume(volume_name)
            if volume is None:
                return (f'persistentvolumeclaim "{name}": persistentvolume "{volume_name}" '
                        "not found")
            if _meta(volume).get("deletionTimestamp"):
                return (f'persistentvolumeclaim "{name}": persistentvolume "{volume_name}" '
                        "is being deleted")
            if BIND_COMPLETED not in (_meta(claim).get("annotations") or {}):
                return (f'persistentvolumeclaim "{name}" is considered unbound: it lacks the '
                        f"{BIND_COMPLETED} annotation")
            continue
        if not class_name:
            return f'persistentvolumeclaim "{name}" is unbound and names no storage class'
        storage_class = lookup.storage_class(class_name)
        if storage_class is None:
            return f'persistentvolumeclaim "{name}": storageclass "{class_name}" not found'
        if storage_class.get("volumeBindingMode", "Immediate") == "Immediate":
            return (f'persistentvolumeclaim "{name}" uses storageclass "{class_name}" with '
                    "Immediate binding and is not bound yet")
    return None


def requirements(pod: Pod, lookup: VolumeLookup) -> tuple[Requirements, ...]:
    """The alternatives of node requirements the pod's volumes allow (empty: none).
    Assumes `problem` found nothing; what cannot be read adds no requirement."""
    alternatives: list[Requirements | None] = [None]
    for ref in pod.volume_claims:
        claim = lookup.claim(pod.namespace, ref.claim_name(pod.name))
        if claim is None:
            continue
        options = _claim_alternatives(claim, lookup)
        if options:
            alternatives = _cross(alternatives, options)
    if alternatives == [None]:
        return ()
    return tuple(a if a is not None else Requirements() for a in alternatives)


def _claim_alternatives(claim: Object, lookup: VolumeLookup) -> list[Requirements]:
    volume_name = str(_spec(claim).get("volumeName") or "")
    if volume_name:
        volume = lookup.volume(volume_name)
        return _volume_alternatives(volume) if volume is not None else []
    class_name = claim_class(claim)
    storage_class = lookup.storage_class(class_name) if class_name else None
    if storage_class is None:
        return []
    options = []
    for term in storage_class.get("allowedTopologies") or []:
        expressions = [
            {"key": item.get("key"), "operator": "In", "values": item.get("values") or []}
            for item in (term or {}).get("matchLabelExpressions") or []
        ]
        if expressions:
            options.append(_from_expressions(expressions))
    return options


def _volume_alternatives(volume: Object) -> list[Requirements]:
    spec = _spec(volume)
    required = ((spec.get("nodeAffinity") or {}).get("required") or {})
    local = spec.get("local") is not None or spec.get("hostPath") is not None
    options = []
    for term in required.get("nodeSelectorTerms") or []:
        expressions = list((term or {}).get("matchExpressions") or [])
        if local:
            # A local or hostPath volume's hostname cannot follow the pod to a new node.
            kept = [e for e in expressions if e.get("key") != HOSTNAME]
            if expressions and not kept:
                options.append(Requirements())
                continue
            expressions = kept
        if expressions:
            options.append(_from_expressions(expressions))
    return options


def _from_expressions(expressions: list[Any]) -> Requirements:
    try:
        return Requirements.from_node_selector(expressions)
    except RequirementError:
        # An expression the API server would have refused: no node could match it.
        return Requirements([Requirement("kubernetes.io/hostname", False, frozenset())])


def _cross(alternatives: list[Requirements | None],
           options: list[Requirements]) -> list[Requirements | None]:
    """Every combination, keeping the compatible ones; when none is, all of them (as
    Karpenter does: the pod then fails to schedule with the conflict as its reason)."""
    compatible: list[Requirements | None] = []
    every: list[Requirements | None] = []
    for existing in alternatives:
        for option in options:
            merged = option if existing is None else existing.merged(option)
            every.append(merged)
            if existing is None or existing.conflict(option) is None:
                compatible.append(merged)
    return compatible or every


def driver(claim: Object, lookup: VolumeLookup) -> str:
    """The CSI driver that attaches the claim's volume ("" for none Karpenter tracks)."""
    volume_name = str(_spec(claim).get("volumeName") or "")
    if volume_name:
        volume = lookup.volume(volume_name)
        if volume is None:
            return ""
        spec = _spec(volume)
        if spec.get("csi") is not None:
            return str((spec.get("csi") or {}).get("driver") or "")
        if spec.get("awsElasticBlockStore") is not None:
            return IN_TREE_DRIVERS["kubernetes.io/aws-ebs"]
        return ""
    class_name = claim_class(claim)
    storage_class = lookup.storage_class(class_name) if class_name else None
    if storage_class is None:
        return ""
    provisioner = str(storage_class.get("provisioner") or "")
    return IN_TREE_DRIVERS.get(provisioner, provisioner)


def volumes(pod: Pod, lookup: VolumeLookup) -> tuple[tuple[str, str], ...]:
    """(driver, "namespace/claim") for each claim a CSI driver attaches."""
    found = []
    for ref in pod.volume_claims:
        name = ref.claim_name(pod.name)
        claim = lookup.claim(pod.namespace, name)
        if claim is None:
            continue
        name_of_driver = driver(claim, lookup)
        if name_of_driver:
            found.append((name_of_driver, f"{pod.namespace}/{name}"))
    return tuple(sorted(set(found)))


def resolved(pod: Pod, lookup: VolumeLookup) -> Pod:
    """The pod with its volume requirements and volumes filled in."""
    if not pod.volume_claims:
        return pod
    return replace(pod, volume_requirements=requirements(pod, lookup),
                   volumes=volumes(pod, lookup))


def zones_of(alternatives: tuple[Requirements, ...], key: str) -> frozenset[str] | None:
    """The values of `key` the alternatives allow together, or None when one of them
    does not limit it (for explanations)."""
    allowed: set[str] = set()
    for alternative in alternatives:
        requirement = alternative.get(key)
        if requirement is None or requirement.complement:
            return None
        allowed |= requirement.values
    return frozenset(allowed)


def limits_exceeded(used: Mapping[str, frozenset[str]], limits: Mapping[str, int],
                    wanted: tuple[tuple[str, str], ...]) -> str | None:
    """Whether mounting `wanted` next to `used` (claims by driver) passes a driver's
    attach limit; the message says which."""
    if not wanted or not limits:
        return None
    adding: dict[str, set[str]] = {}
    for name_of_driver, claim in wanted:
        adding.setdefault(name_of_driver, set()).add(claim)
    for name_of_driver, claims in sorted(adding.items()):
        limit = limits.get(name_of_driver)
        if limit is None:
            continue
        count = len(used.get(name_of_driver, frozenset()) | claims)
        if count > limit:
            return f"would exceed the volume limit of {name_of_driver} ({count} > {limit})"
    return None


# ---------------------------------------------------------------------------------------
# Reading manifests (what `simulate` and `plan` check before using them)

BINDING_MODES = ("Immediate", "WaitForFirstConsumer")


def check_manifest(kind: str, body: Object) -> None:
    """Raise SpecError (naming the field) when a StorageClass, PersistentVolumeClaim,
    PersistentVolume or RuntimeClass manifest cannot be used."""
    if kind == "StorageClass":
        _check_storage_class(body)
    elif kind == "PersistentVolumeClaim":
        _check_claim(body)
    elif kind == "PersistentVolume":
        _check_volume(body)
    elif kind == "RuntimeClass":
        _check_runtime_class(body)


def _check_storage_class(body: Object) -> None:
    provisioner = body.get("provisioner")
    if not isinstance(provisioner, str) or not provisioner:
        raise SpecError("provisioner", "a provisioner (such as ebs.csi.aws.com) is required")
    mode = body.get("volumeBindingMode", "Immediate")
    if mode not in BINDING_MODES:
        raise SpecError("volumeBindingMode",
                        f"expected Immediate or WaitForFirstConsumer, got {mode!r}")
    terms = body.get("allowedTopologies") or []
    if not isinstance(terms, list):
        raise SpecError("allowedTopologies", "expected a list")
    for i, term in enumerate(terms):
        expressions = (term or {}).get("matchLabelExpressions") if isinstance(term, Mapping) \
            else None
        if not isinstance(expressions, list):
            raise SpecError(f"allowedTopologies[{i}].matchLabelExpressions", "expected a list")
        for j, expression in enumerate(expressions):
            where = f"allowedTopologies[{i}].matchLabelExpressions[{j}]"
            if not isinstance(expression, Mapping) or not expression.get("key"):
                raise SpecError(f"{where}.key", "a key is required")
            values = expression.get("values")
            if not isinstance(values, list) or not values:
                raise SpecError(f"{where}.values", "at least one value is required")


def _check_claim(body: Object) -> None:
    spec = body.get("spec")
    if not isinstance(spec, Mapping):
        raise SpecError("spec", "a PersistentVolumeClaim needs a spec")
    for field in ("storageClassName", "volumeName"):
        value = spec.get(field)
        if value is not None and not isinstance(value, str):
            raise SpecError(f"spec.{field}", f"expected a string, got {value!r}")


def _check_volume(body: Object) -> None:
    spec = body.get("spec")
    if not isinstance(spec, Mapping):
        raise SpecError("spec", "a PersistentVolume needs a spec")
    required = ((spec.get("nodeAffinity") or {}).get("required") or {})
    for i, term in enumerate(required.get("nodeSelectorTerms") or []):
        try:
            Requirements.from_node_selector((term or {}).get("matchExpressions") or [])
        except RequirementError as error:
            raise SpecError(
                f"spec.nodeAffinity.required.nodeSelectorTerms[{i}].matchExpressions",
                str(error)) from None


def _check_runtime_class(body: Object) -> None:
    handler = body.get("handler")
    if not isinstance(handler, str) or not handler:
        raise SpecError("handler", "a handler is required")
    pod_fixed = (body.get("overhead") or {}).get("podFixed")
    if pod_fixed is not None:
        try:
            parse_resources(pod_fixed)
        except (ValueError, TypeError) as error:
            raise SpecError("overhead.podFixed", str(error)) from None


def manifest_lookup(bodies: Sequence[Object]) -> MappingLookup:
    """A lookup over manifests, with the claims a StatefulSet's volumeClaimTemplates would
    create (class: the template's, or the default StorageClass) where none is given."""
    claims: dict[str, Object] = {}
    volumes_by_name: dict[str, Object] = {}
    classes: dict[str, Object] = {}
    for body in bodies:
        kind, metadata = body.get("kind"), body.get("metadata") or {}
        name = str(metadata.get("name") or "")
        if kind == "PersistentVolumeClaim":
            claims[f"{metadata.get('namespace') or 'default'}/{name}"] = body
        elif kind == "PersistentVolume":
            volumes_by_name[name] = body
        elif kind == "StorageClass":
            classes[name] = body
    # The DefaultStorageClass admission gives a claim without a class the newest default
    # one: the latest creationTimestamp, else the one applied last.
    defaults = [(str((sc.get("metadata") or {}).get("creationTimestamp") or ""), order, name)
                for order, (name, sc) in enumerate(classes.items())
                if ((sc.get("metadata") or {}).get("annotations") or {})
                .get(DEFAULT_CLASS_ANNOTATION) == "true"]
    default = max(defaults)[2] if defaults else None
    for body in bodies:
        if body.get("kind") != "StatefulSet":
            continue
        metadata, spec = body.get("metadata") or {}, body.get("spec") or {}
        namespace = str(metadata.get("namespace") or "default")
        replicas = spec.get("replicas", 1) if isinstance(spec.get("replicas", 1), int) else 0
        for template in spec.get("volumeClaimTemplates") or []:
            template_spec = dict((template or {}).get("spec") or {})
            if "storageClassName" not in template_spec and default is not None:
                template_spec["storageClassName"] = default
            template_name = str(((template or {}).get("metadata") or {}).get("name") or "")
            for ordinal in range(replicas):
                key = f"{namespace}/{template_name}-{metadata.get('name')}-{ordinal}"
                claims.setdefault(key, {"kind": "PersistentVolumeClaim",
                                        "metadata": {"name": key.split("/", 1)[1],
                                                     "namespace": namespace},
                                        "spec": template_spec})
    for key, claim in list(claims.items()):
        spec, metadata = claim.get("spec") or {}, claim.get("metadata") or {}
        if "storageClassName" not in spec and default is not None:
            spec = {**spec, "storageClassName": default}
        annotations = dict(metadata.get("annotations") or {})
        if spec.get("volumeName") in volumes_by_name:
            # As the volume controller would have bound it.
            annotations.setdefault(BIND_COMPLETED, "yes")
        claims[key] = {**claim, "metadata": {**metadata, "annotations": annotations},
                       "spec": spec}
    return MappingLookup(claims, volumes_by_name, classes)


def plan_pods(bodies: Sequence[Object], pods: Sequence[Pod]
              ) -> tuple[list[Pod], list[tuple[Pod, str]]]:
    """Pending pods of manifests with what their volumes require, and those left out
    (with why) because Karpenter would not plan for them yet."""
    if not any(pod.volume_claims for pod in pods):
        return list(pods), []
    lookup = manifest_lookup(bodies)
    kept, left = [], []
    for pod in pods:
        why = problem(pod, lookup) if pod.volume_claims else None
        if why is not None:
            left.append((pod, why))
        else:
            kept.append(resolved(pod, lookup))
    return kept, left
