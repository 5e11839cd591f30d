"""EC2NodeClass spec.kubelet: an open map of any upstream KubeletConfiguration field.

As in Karpenter v1.14 the CRD leaves spec.kubelet unvalidated (any object is stored), and the
controller checks it instead: field names and value types against the upstream
kubelet.config.k8s.io/v1beta1 KubeletConfiguration, plus the rules the upstream types cannot
say (eviction signals, reservable resources, ranges, matching soft eviction pairs). A bad
configuration shows as ValidationSucceeded=False on the EC2NodeClass and blocks launches,
rather than failing `kubectl apply`.

Nodewright reads the fields that matter for scheduling and bootstrap (`KubeletConfiguration`
below: maxPods, podsPerCore, the reservations, eviction thresholds, ...). Every other field
reaches the node only on AMI families that render the raw configuration (AL2023's nodeadm
NodeConfig); the other families refuse them rather than drop them silently.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final, Literal

from pydantic import ConfigDict, Field, ValidationError

from nodewright.api.base import KubeModel
from nodewright.api.formats import parse_duration
from nodewright.api.problems import FieldPath
from nodewright.api.quantity import parse_quantity

Kind = Literal[
    "bool", "int", "number", "string", "duration", "strings", "ints", "string_map",
    "bool_map", "strings_map", "object", "objects",
]

# kubelet.config.k8s.io/v1beta1 KubeletConfiguration (k8s.io/kubelet v0.36): wire name -> JSON
# shape. Nested structs (authentication, logging, ...) are checked as objects only.
UPSTREAM_FIELDS: Final[Mapping[str, Kind]] = {
    "kind": "string", "apiVersion": "string",
    "enableServer": "bool", "staticPodPath": "string", "podLogsDir": "string",
    "syncFrequency": "duration", "fileCheckFrequency": "duration",
    "httpCheckFrequency": "duration", "staticPodURL": "string",
    "staticPodURLHeader": "strings_map", "address": "string", "port": "int",
    "readOnlyPort": "int", "tlsCertFile": "string", "tlsPrivateKeyFile": "string",
    "tlsCipherSuites": "strings", "tlsCurvePreferences": "ints", "tlsMinVersion": "string",
    "rotateCertificates": "bool", "serverTLSBootstrap": "bool", "authentication": "object",
    "authorization": "object", "registryPullQPS": "int", "registryBurst": "int",
    "imagePullCredentialsVerificationPolicy": "string",
    "preloadedImagesVerificationAllowlist": "strings", "eventRecordQPS": "int",
    "eventBurst": "int", "enableDebuggingHandlers": "bool", "enableContentionProfiling": "bool",
    "healthzPort": "int", "healthzBindAddress": "string", "oomScoreAdj": "int",
    "clusterDomain": "string", "clusterDNS": "strings",
    "streamingConnectionIdleTimeout": "duration", "nodeStatusUpdateFrequency": "duration",
    "nodeStatusReportFrequency": "duration", "nodeLeaseDurationSeconds": "int",
    "imageMinimumGCAge": "duration", "imageMaximumGCAge": "duration",
    "imageGCHighThresholdPercent": "int", "imageGCLowThresholdPercent": "int",
    "volumeStatsAggPeriod": "duration", "kubeletCgroups": "string", "systemCgroups": "string",
    "cgroupRoot": "string", "cgroupsPerQOS": "bool", "cgroupDriver": "string",
    "cpuManagerPolicy": "string", "singleProcessOOMKill": "bool",
    "cpuManagerPolicyOptions": "string_map", "cpuManagerReconcilePeriod": "duration",
    "memoryManagerPolicy": "string", "topologyManagerPolicy": "string",
    "topologyManagerScope": "string", "topologyManagerPolicyOptions": "string_map",
    "qosReserved": "string_map", "runtimeRequestTimeout": "duration", "hairpinMode": "string",
    "maxPods": "int", "podCIDR": "string", "podPidsLimit": "int", "resolvConf": "string",
    "runOnce": "bool", "cpuCFSQuota": "bool", "cpuCFSQuotaPeriod": "duration",
    "nodeStatusMaxImages": "int", "maxOpenFiles": "int", "contentType": "string",
    "kubeAPIQPS": "int", "kubeAPIBurst": "int", "serializeImagePulls": "bool",
    "maxParallelImagePulls": "int", "evictionHard": "string_map",
    "evictionSoft": "string_map", "evictionSoftGracePeriod": "string_map",
    "evictionPressureTransitionPeriod": "duration", "evictionMaxPodGracePeriod": "int",
    "evictionMinimumReclaim": "string_map", "mergeDefaultEvictionSettings": "bool",
    "podsPerCore": "int", "enableControllerAttachDetach": "bool",
    "protectKernelDefaults": "bool", "makeIPTablesUtilChains": "bool",
    "iptablesMasqueradeBit": "int", "iptablesDropBit": "int", "featureGates": "bool_map",
    "failSwapOn": "bool", "memorySwap": "object", "containerLogMaxSize": "string",
    "containerLogMaxFiles": "int", "containerLogMaxWorkers": "int",
    "containerLogMonitorInterval": "duration",
    "configMapAndSecretChangeDetectionStrategy": "string", "systemReserved": "string_map",
    "kubeReserved": "string_map", "reservedSystemCPUs": "string",
    "showHiddenMetricsForVersion": "string", "systemReservedCgroup": "string",
    "kubeReservedCgroup": "string", "enforceNodeAllocatable": "strings",
    "allowedUnsafeSysctls": "strings", "defaultPodSysctls": "string_map",
    "volumePluginDir": "string", "providerID": "string", "kernelMemcgNotification": "bool",
    "logging": "object", "enableSystemLogHandler": "bool", "enableSystemLogQuery": "bool",
    "shutdownGracePeriod": "duration", "shutdownGracePeriodCriticalPods": "duration",
    "shutdownGracePeriodByPodPriority": "objects", "crashLoopBackOff": "object",
    "reservedMemory": "objects", "enableProfilingHandler": "bool",
    "enableDebugFlagsHandler": "bool", "seccompDefault": "bool",
    "memoryThrottlingFactor": "number", "memoryReservationPolicy": "string",
    "registerWithTaints": "objects", "registerNode": "bool", "tracing": "object",
    "localStorageCapacityIsolation": "bool", "containerRuntimeEndpoint": "string",
    "imageServiceEndpoint": "string", "failCgroupV1": "bool", "userNamespaces": "object",
}

# The fields Nodewright reads itself (for scheduling and bootstrap): every family applies them.
MANAGED_FIELDS: Final = frozenset({
    "clusterDNS", "maxPods", "podsPerCore", "systemReserved", "kubeReserved", "evictionHard",
    "evictionSoft", "evictionSoftGracePeriod", "evictionMaxPodGracePeriod",
    "imageGCHighThresholdPercent", "imageGCLowThresholdPercent", "cpuCFSQuota",
})
EVICTION_SIGNALS: Final = (
    "memory.available", "nodefs.available", "nodefs.inodesFree", "imagefs.available",
    "imagefs.inodesFree", "pid.available",
)
RESERVED_RESOURCES: Final = ("cpu", "memory", "ephemeral-storage", "pid")
# Set by Nodewright itself at bootstrap; a user value would be dropped without a word.
OWNED_FIELDS: Final = {
    "registerWithTaints": "Nodewright sets it from the NodeClaim's taints so the node "
                          "registers unschedulable until it's ready",
}
# Families that render the raw configuration, so every valid field reaches the kubelet.
ARBITRARY_CONFIG_FAMILIES: Final = frozenset({"AL2023"})
# Families with no setting for podsPerCore (Bottlerocket's settings have none).
NO_PODS_PER_CORE_FAMILIES: Final = frozenset({"Bottlerocket"})
# Families that pass clusterDNS to a single-valued bootstrap parameter.
SINGLE_DNS_FAMILIES: Final = frozenset(
    {"AL2", "Bottlerocket", "Windows2019", "Windows2022", "Windows2025"}
)

INT32 = (-(1 << 31), (1 << 31) - 1)
INT64_FIELDS: Final = frozenset({"podPidsLimit", "maxOpenFiles"})

Finding = tuple[FieldPath, str]


class KubeletConfigError(ValueError):
    """spec.kubelet cannot be read; the message names the field."""


def _is_int(value: object) -> bool:
    return (isinstance(value, int) and not isinstance(value, bool)) or (
        isinstance(value, float) and value.is_integer()
    )


def _shape_problem(kind: Kind, value: object) -> str | None:
    """Why `value` cannot decode into a field of this kind (None: it can)."""
    if value is None:
        return None  # JSON null decodes to the zero value
    if kind == "bool":
        return None if isinstance(value, bool) else "must be a boolean"
    if kind == "int":
        return None if _is_int(value) else "must be an integer"
    if kind == "number":
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        return None if ok else "must be a number"
    if kind == "string":
        return None if isinstance(value, str) else "must be a string"
    if kind == "duration":
        if not isinstance(value, str):
            return "must be a duration string such as 30s"
        try:
            parse_duration(value, allow_negative=True)
        except ValueError as error:
            return str(error)
        return None
    if kind == "strings":
        ok = isinstance(value, list) and all(isinstance(v, str) for v in value)
        return None if ok else "must be a list of strings"
    if kind == "ints":
        ok = isinstance(value, list) and all(_is_int(v) for v in value)
        return None if ok else "must be a list of integers"
    if kind == "string_map":
        ok = isinstance(value, dict) and all(isinstance(v, str) for v in value.values())
        return None if ok else "must be a map of strings"
    if kind == "bool_map":
        ok = isinstance(value, dict) and all(isinstance(v, bool) for v in value.values())
        return None if ok else "must be a map of booleans"
    if kind == "strings_map":
        ok = isinstance(value, dict) and all(
            isinstance(v, list) and all(isinstance(s, str) for s in v) for v in value.values()
        )
        return None if ok else "must be a map of string lists"
    if kind == "object":
        return None if isinstance(value, dict) else "must be an object"
    ok = isinstance(value, list) and all(isinstance(v, dict) for v in value)
    return None if ok else "must be a list of objects"


def is_expression(field: str, value: object) -> bool:
    """A CEL expression where Karpenter allows one: a string maxPods, or a kubeReserved /
    systemReserved value that is not a quantity."""
    if field == "maxPods":
        return isinstance(value, str)
    if isinstance(value, str):
        try:
            parse_quantity(value)
        except ValueError:
            return True
    return False


def upstream_problems(raw: Mapping[str, Any]) -> Iterator[Finding]:
    """Unknown fields and values of the wrong type, as decoding into the upstream type finds."""
    for field in sorted(raw):
        value = raw[field]
        kind = UPSTREAM_FIELDS.get(field)
        here: FieldPath = ("spec", "kubelet", field)
        if kind is None:
            yield here, f"unknown field {field!r}: not a KubeletConfiguration field"
            continue
        if field == "maxPods" and isinstance(value, str):
            continue  # an expression; see expression_problems
        problem = _shape_problem(kind, value)
        if problem is not None:
            yield here, problem
        elif (kind == "int" and _is_int(value) and field not in INT64_FIELDS
              and not INT32[0] <= int(value) <= INT32[1]):
            yield here, f"{value} is out of range for a 32-bit integer"


def _string_map(raw: Mapping[str, Any], field: str) -> dict[str, str] | None:
    value = raw.get(field)
    if isinstance(value, dict) and all(isinstance(v, str) for v in value.values()):
        return {str(k): v for k, v in value.items()}
    return None


def _int(raw: Mapping[str, Any], field: str) -> int | None:
    value = raw.get(field)
    return int(value) if isinstance(value, int | float) and _is_int(value) else None


def _threshold_problem(value: str) -> str | None:
    if value.endswith("%"):
        try:
            percent = float(value[:-1])
        except ValueError:
            percent = -1.0
        if not 0 <= percent <= 100:
            return f"{value!r} must be a percentage or a resource quantity"
        return None
    try:
        amount = parse_quantity(value)
    except ValueError:
        return f"{value!r} must be a percentage or a resource quantity"
    return f"{value!r} can't be a negative resource quantity" if amount < 0 else None


def semantic_problems(raw: Mapping[str, Any]) -> Iterator[Finding]:
    """What the upstream types cannot say (Karpenter's validateKubeletSemantics)."""
    for field, reason in OWNED_FIELDS.items():
        if field in raw:
            yield ("spec", "kubelet", field), f"can't be set, {reason}"
    for field in ("evictionHard", "evictionSoft", "evictionSoftGracePeriod",
                  "evictionMinimumReclaim"):
        signals = _string_map(raw, field) or {}
        for signal in sorted(signals):
            here: FieldPath = ("spec", "kubelet", field, signal)
            if signal not in EVICTION_SIGNALS:
                yield here, (f"{signal!r} isn't a valid eviction signal, must be one of "
                             + ", ".join(EVICTION_SIGNALS))
            value = signals[signal]
            if field == "evictionSoftGracePeriod":
                try:
                    if parse_duration(value, allow_negative=True) < 0:
                        yield here, f"{value!r} can't be a negative duration"
                except ValueError:
                    yield here, f"{value!r} must be a duration"
                continue
            problem = _threshold_problem(value)
            if problem:
                yield here, problem
    soft = _string_map(raw, "evictionSoft") or {}
    grace = _string_map(raw, "evictionSoftGracePeriod") or {}
    for signal in sorted(set(soft) - set(grace)):
        yield ("spec", "kubelet", "evictionSoft", signal), (
            "has no matching evictionSoftGracePeriod")
    for signal in sorted(set(grace) - set(soft)):
        yield ("spec", "kubelet", "evictionSoftGracePeriod", signal), (
            "has no matching evictionSoft")
    for field in ("kubeReserved", "systemReserved"):
        reserved = _string_map(raw, field) or {}
        for resource in sorted(reserved):
            here = ("spec", "kubelet", field, resource)
            if resource not in RESERVED_RESOURCES:
                yield here, (f"{resource!r} isn't a reservable resource, must be one of "
                             + ", ".join(RESERVED_RESOURCES))
            if reserved[resource].startswith("-"):
                yield here, f"{reserved[resource]!r} can't be a negative resource quantity"
    for field in ("imageGCHighThresholdPercent", "imageGCLowThresholdPercent"):
        number = _int(raw, field)
        if number is not None and not 0 <= number <= 100:
            yield ("spec", "kubelet", field), f"{number} must be between 0 and 100"
    for field in ("podsPerCore", "evictionMaxPodGracePeriod", "maxPods"):
        number = _int(raw, field)
        if number is not None and number < 0:
            yield ("spec", "kubelet", field), f"{number} can't be negative"
    high = _int(raw, "imageGCHighThresholdPercent")
    low = _int(raw, "imageGCLowThresholdPercent")
    if high is not None and low is not None and high <= low:
        yield ("spec", "kubelet"), (
            f"imageGCHighThresholdPercent ({high}) must be greater than "
            f"imageGCLowThresholdPercent ({low})")


def expression_problems(raw: Mapping[str, Any]) -> Iterator[Finding]:
    """Karpenter's NodeClassCEL feature gate is off by default, and so are expressions here:
    a configuration carrying one is refused rather than launched with defaults."""
    if is_expression("maxPods", raw.get("maxPods")):
        yield ("spec", "kubelet", "maxPods"), (
            "a CEL expression is not supported (Karpenter's NodeClassCEL feature gate is off)")
    for field in ("kubeReserved", "systemReserved"):
        for resource, value in sorted((_string_map(raw, field) or {}).items()):
            if not value.startswith("-") and is_expression(field, value):
                yield ("spec", "kubelet", field, resource), (
                    f"{value!r} is not a quantity (CEL expressions are not supported: "
                    "Karpenter's NodeClassCEL feature gate is off)")


def family_problems(raw: Mapping[str, Any], family: str) -> Iterator[Finding]:
    """Fields the family would not apply (Karpenter's validateKubeletFieldsSupported)."""
    if not raw or family == "Custom" or family in ARBITRARY_CONFIG_FAMILIES:
        return
    unsupported = {field for field in raw if field not in MANAGED_FIELDS}
    if "podsPerCore" in raw and family in NO_PODS_PER_CORE_FAMILIES:
        unsupported.add("podsPerCore")
    if unsupported:
        yield ("spec", "kubelet"), (
            f"has fields not applied by the {family} AMI family that would be silently "
            f"dropped: {', '.join(sorted(unsupported))}")
    dns = raw.get("clusterDNS")
    if family in SINGLE_DNS_FAMILIES and isinstance(dns, list) and len(dns) > 1:
        yield ("spec", "kubelet", "clusterDNS"), (
            f"the {family} AMI family doesn't accept multiple entries, only one, "
            f"but {len(dns)} were set")


def kubelet_problems(raw: Mapping[str, Any] | None, family: str) -> list[Finding]:
    """Everything wrong with spec.kubelet for a node class of this AMI family."""
    if not raw:
        return []
    shape = list(upstream_problems(raw))
    if shape:
        return shape  # as Karpenter: a type error is reported alone
    return [*semantic_problems(raw), *expression_problems(raw), *family_problems(raw, family)]


class KubeletConfiguration(KubeModel):
    """The spec.kubelet fields Nodewright reads for scheduling and bootstrap (Karpenter's
    ParsedKubeletConfig). Built from the open map by `parse`."""

    model_config = ConfigDict(**{**KubeModel.model_config, "extra": "ignore", "strict": False})

    cluster_dns: list[str] | None = Field(default=None, alias="clusterDNS")
    max_pods: int | None = None
    pods_per_core: int | None = None
    system_reserved: dict[str, str] | None = None
    kube_reserved: dict[str, str] | None = None
    eviction_hard: dict[str, str] | None = None
    eviction_soft: dict[str, str] | None = None
    eviction_soft_grace_period: dict[str, str] | None = None
    eviction_max_pod_grace_period: int | None = None
    image_gc_high_threshold_percent: int | None = Field(
        default=None, alias="imageGCHighThresholdPercent"
    )
    image_gc_low_threshold_percent: int | None = Field(
        default=None, alias="imageGCLowThresholdPercent"
    )
    cpu_cfs_quota: bool | None = Field(default=None, alias="cpuCFSQuota")

    @classmethod
    def parse(cls, raw: Mapping[str, Any] | None) -> KubeletConfiguration:
        """The managed fields of an open spec.kubelet map. Expression values (refused by
        validation) are left out, as Karpenter does with its NodeClassCEL gate off."""
        if not raw:
            return cls()
        managed = {k: v for k, v in raw.items() if k in MANAGED_FIELDS and v is not None}
        if isinstance(managed.get("maxPods"), str):
            del managed["maxPods"]
        for field in ("kubeReserved", "systemReserved"):
            values = managed.get(field)
            if isinstance(values, dict):
                managed[field] = {
                    k: v for k, v in values.items() if not is_expression(field, v)
                }
        try:
            return cls.model_validate(managed)
        except ValidationError as error:
            first = error.errors()[0]
            where = ".".join(str(p) for p in ("spec", "kubelet", *first["loc"]))
            raise KubeletConfigError(f"{where}: {first['msg']}") from None


def unmanaged(raw: Mapping[str, Any] | None) -> dict[str, Any]:
    """The fields Nodewright passes through untouched (AL2023 only)."""
    return {k: v for k, v in (raw or {}).items() if k not in MANAGED_FIELDS}
