"""Bottlerocket: TOML settings, as Karpenter v1.14.1's bottlerocket.go writes them. The
user's settings.kubernetes and settings.bootstrap-commands are read into Karpenter's settings
structs (a value of the wrong type is refused, as go-toml refuses it); the fields we must
control (cluster, labels, taints, kubelet limits) are set over them: labels key by key, the
taints and each kubelet map the EC2NodeClass sets whole. Everything is written back as
go-toml writes Karpenter's structs and the user's other settings. Unlike Karpenter, a key its
structs do not know is kept, after the known ones (docs/karpenter-differences.md)."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from nodewright.cloud.aws.userdata import toml_writer
from nodewright.cloud.aws.userdata.bootstrap import NodeBootstrap, UserDataError

__all__ = ["MOUNT_INSTANCE_STORAGE", "UserDataError", "kubernetes_settings", "render"]


# Bottlerocket's own way to put containerd, kubelet and pod logs on the instance store.
MOUNT_INSTANCE_STORAGE = "000-mount-instance-storage"
_BIND_DIRS = ["--dirs", "/var/lib/containerd", "/var/lib/kubelet", "/var/log/pods"]
_VERSION_IN_NAME = re.compile(r"^v[0-9][^-]*\.[^-]*$")


def _raid0_command(version: str | None) -> dict[str, Any]:
    bind = ["apiclient", "ephemeral-storage", "bind"]
    return {
        "commands": [["apiclient", "ephemeral-storage", "init"],
                     bind if supports_default_bind(version) else [*bind, *_BIND_DIRS]],
        "mode": "always",
        "essential": True,
    }


def supports_default_bind(version: str | None) -> bool:
    """Bottlerocket 1.46.0 and later bind the right directories without --dirs; `latest`
    counts as new, an unknown version as old (Karpenter's SupportsDefaultBind)."""
    if not version:
        return False
    if version == "latest":
        return True
    parts = version.lstrip("v").split(".")
    if len(parts) < 3 or not parts[0].isdigit() or not parts[1].isdigit():
        return False
    major, minor = int(parts[0]), int(parts[1])
    return major > 1 or (major == 1 and minor >= 46)


def version_from_name(name: str) -> str | None:
    """"v1.46.0" from an image name like bottlerocket-aws-k8s-1.33-x86_64-v1.46.0-431fe75a."""
    return next((part for part in name.split("-") if _VERSION_IN_NAME.match(part)), None)


def ami_version(alias_version: str | None, term_names: Iterable[str],
                image_names: Iterable[str], term_ids: Iterable[str] = (),
                image_ids: Mapping[str, str] | None = None) -> str | None:
    """The release the node class's images are, as Karpenter reads it (its
    resolveAMIVersion): the alias's version, else one in a name term, else one in the name
    of the resolved Bottlerocket image an id term selects (`image_ids`: the resolved
    images' names by id), else one in the name of any resolved Bottlerocket image."""
    if alias_version:
        return alias_version
    for name in term_names:
        if found := version_from_name(name):
            return found
    for term_id in term_ids:
        name = (image_ids or {}).get(term_id, "")
        if "bottlerocket" in name and (found := version_from_name(name)):
            return found
    for name in image_names:
        if "bottlerocket" in name and (found := version_from_name(name)):
            return found
    return None


# Karpenter's BottlerocketKubernetes struct: its TOML keys in declaration order and how its
# fields read (go-toml refuses a value of another type). "str" *string, "int" *int,
# "uint32" *uint32, "bool" *bool, "strs" []string, "map:<kind>" a map of that kind,
# "struct:<name>" a struct (its fields below).
_KUBERNETES: Final = (
    ("api-server", "str"), ("cloud-provider", "str"), ("cluster-certificate", "str"),
    ("cluster-name", "str"), ("cluster-dns-ip", "str"),
    ("credential-providers", "map:struct:credential-provider"),
    ("node-labels", "map:str"), ("node-taints", "map:strs"), ("max-pods", "int"),
    ("static-pods", "map:struct:static-pod"), ("eviction-hard", "map:str"),
    ("eviction-soft", "map:str"), ("eviction-soft-grace-period", "map:str"),
    ("eviction-max-pod-grace-period", "int"), ("kube-reserved", "map:str"),
    ("system-reserved", "map:str"), ("allowed-unsafe-sysctls", "strs"),
    ("server-tls-bootstrap", "bool"), ("registry-qps", "int"), ("registry-burst", "int"),
    ("event-qps", "int"), ("event-burst", "int"), ("kube-api-qps", "int"),
    ("kube-api-burst", "int"), ("container-log-max-size", "str"),
    ("container-log-max-files", "int"), ("cpu-manager-policy", "str"),
    ("cpu-manager-policy-options", "strs"), ("cpu-manager-reconcile-period", "str"),
    ("memory-manager-policy", "str"), ("topology-manager-scope", "str"),
    ("topology-manager-policy", "str"),
    ("topology-manager-policy-options", "struct:topology-manager-policy-options"),
    ("image-gc-high-threshold-percent", "str"), ("image-gc-low-threshold-percent", "str"),
    ("ids-per-pod", "int"), ("cpu-cfs-quota-enforced", "bool"),
    ("shutdown-grace-period", "str"), ("shutdown-grace-period-for-critical-pods", "str"),
    ("cluster-domain", "str"), ("seccomp-default", "bool"), ("pod-pids-limit", "int"),
    ("device-ownership-from-security-context", "bool"), ("single-process-oom-kill", "bool"),
    ("container-log-max-workers", "int"), ("container-log-monitor-interval", "str"),
    ("hostname-override-source", "str"), ("log-level", "uint32"),
)
# The other structs: (key, kind, what an absent field is written as: None for nothing,
# as a nil pointer or an empty `omitempty` field; a value for a plain field Go writes even
# when unset).
_STRUCTS: Final[dict[str, tuple[tuple[str, str, Any], ...]]] = {
    "kubernetes": tuple((name, kind, None) for name, kind in _KUBERNETES),
    "credential-provider": (("enabled", "bool", None), ("cache-duration", "str", None),
                            ("image-patterns", "strs", []), ("environment", "map:str", None)),
    "static-pod": (("enabled", "bool", None), ("manifest", "str", None)),
    "topology-manager-policy-options": (("prefer-closest-numa-nodes", "bool", None),
                                        ("max-allowable-numa-nodes", "int", None)),
    "bootstrap-command": (("commands", "commands", []), ("mode", "str", ""),
                          ("essential", "bool", False)),
}
_INT64 = 1 << 63


@dataclass(frozen=True)
class _Typed:
    """A struct read from the user's TOML: its known fields, and the keys it does not know
    (kept, where Karpenter drops them: docs/karpenter-differences.md)."""

    known: dict[str, Any]
    unknown: dict[str, Any]


def _decode(value: Any, kind: str, where: str) -> Any:
    """go-toml's Unmarshal of one value into a field of `kind`; UserDataError otherwise."""
    def refuse() -> UserDataError:
        return UserDataError(f"spec.userData: {where}: cannot decode TOML "
                             f"{type(value).__name__} into a {kind} setting")

    if kind.startswith("map:"):
        if not isinstance(value, dict):
            raise refuse()
        return {name: _decode(item, kind[4:], f"{where}.{name}") for name, item in value.items()}
    if kind.startswith("struct:"):
        if not isinstance(value, dict):
            raise refuse()
        return _read_struct(value, _STRUCTS[kind[7:]], where)
    if kind == "str":
        ok = isinstance(value, str)
    elif kind in ("int", "uint32"):
        ok = isinstance(value, int) and not isinstance(value, bool) and (
            -_INT64 <= value < _INT64 if kind == "int" else 0 <= value < 1 << 32)
    elif kind == "bool":
        ok = isinstance(value, bool)
    elif kind == "strs":
        ok = isinstance(value, list) and all(isinstance(item, str) for item in value)
    else:  # "commands": a list of commands, each a list of strings
        ok = isinstance(value, list) and all(
            isinstance(command, list) and all(isinstance(word, str) for word in command)
            for command in value)
    if not ok:
        raise refuse()
    return value


def _read_struct(value: dict[str, Any], fields: tuple[tuple[str, str, Any], ...],
                 where: str) -> _Typed:
    kinds = {name: kind for name, kind, _ in fields}
    known: dict[str, Any] = {}
    unknown: dict[str, Any] = {}
    for name, item in value.items():
        # go-toml matches a field by its name, else case-insensitively.
        field = name if name in kinds else name.lower()
        if field in kinds:
            known[field] = _decode(item, kinds[field], f"{where}.{name}")
        else:
            unknown[name] = item
    return _Typed(known, unknown)


def _struct(typed: _Typed, fields: tuple[tuple[str, str, Any], ...]) -> toml_writer.Struct:
    """The struct to write: the known fields in their order (with Go's zero values), the
    unknown keys after them, sorted."""
    out = [toml_writer.Field(name, _written(typed.known.get(name, absent), kind),
                             omitempty=_omits_empty(kind, absent))
           for name, kind, absent in fields]
    out += [toml_writer.Field(name, typed.unknown[name], False) for name in sorted(typed.unknown)]
    return toml_writer.Struct(tuple(out))


def _omits_empty(kind: str, absent: Any) -> bool:
    """Karpenter's maps and slices are `omitempty` (an empty one is not written); its
    pointers are written whenever set, zero or not; its plain fields always."""
    return absent is None and (kind.startswith("map:") or kind in ("strs", "commands"))


def _written(value: Any, kind: str) -> Any:
    if value is None:
        return None
    if kind.startswith("map:struct:"):
        fields = _STRUCTS[kind[11:]]
        return {name: _struct(item, fields) for name, item in value.items()}
    if kind.startswith("struct:"):
        return _struct(value, _STRUCTS[kind[7:]])
    return value


def kubernetes_settings(bootstrap: NodeBootstrap, user: dict[str, Any] | None = None
                        ) -> dict[str, Any]:
    """settings.kubernetes as Karpenter's Bottlerocket.Script leaves it: the user's
    settings with ours over them (the cluster, the labels key by key, max pods, DNS, the
    kubelet maps the EC2NodeClass sets whole, the taints whole)."""
    cluster, kubelet = bootstrap.cluster, bootstrap.kubelet
    settings = dict(user or {})
    settings["cluster-name"] = cluster.name
    settings["api-server"] = cluster.endpoint
    settings["cluster-certificate"] = cluster.ca_bundle or None
    settings["node-labels"] = {**settings.get("node-labels", {}), **bootstrap.labels}
    if bootstrap.max_pods is not None:
        settings["max-pods"] = bootstrap.max_pods
    if bootstrap.cluster_dns:
        settings["cluster-dns-ip"] = bootstrap.cluster_dns[0]
    for name, values in (
        ("system-reserved", kubelet.system_reserved),
        ("kube-reserved", kubelet.kube_reserved),
        ("eviction-hard", kubelet.eviction_hard),
        ("eviction-soft", kubelet.eviction_soft),
        ("eviction-soft-grace-period", kubelet.eviction_soft_grace_period),
    ):
        if values:
            settings[name] = dict(values)
    # No pods-per-core: Bottlerocket has no such setting, and Karpenter v1.14.1 leaves
    # podsPerCore out for this family (its pod count ignores it too).
    optional: dict[str, Any] = {
        "eviction-max-pod-grace-period": kubelet.eviction_max_pod_grace_period,
        # Karpenter's struct holds the thresholds as strings.
        "image-gc-high-threshold-percent": _text(kubelet.image_gc_high_threshold_percent),
        "image-gc-low-threshold-percent": _text(kubelet.image_gc_low_threshold_percent),
        "cpu-cfs-quota-enforced": kubelet.cpu_cfs_quota,
    }
    settings.update({key: value for key, value in optional.items() if value is not None})
    taints: dict[str, list[str]] = {}
    for taint in bootstrap.taints:
        taints.setdefault(taint.key, []).append(f"{taint.value}:{taint.effect}")
    settings["node-taints"] = taints
    return settings


def _text(value: int | None) -> str | None:
    return None if value is None else str(value)


def _user_document(user_data: str | None) -> dict[str, Any]:
    if user_data is None:
        return {}
    try:
        return tomllib.loads(user_data)
    except tomllib.TOMLDecodeError as error:
        raise UserDataError(
            f"spec.userData: Bottlerocket user data must be TOML: {error}"
        ) from error


def render(bootstrap: NodeBootstrap) -> str:
    """Karpenter's Bottlerocket.Script and MarshalTOML: the user's settings as go-toml
    wrote them back (settings.kubernetes and settings.bootstrap-commands through Karpenter's
    structs, the rest as read), ours merged in."""
    document = _user_document(bootstrap.custom_user_data)
    raw = document.get("settings", {})
    if not isinstance(raw, dict):
        raise UserDataError("spec.userData: settings must be a TOML table")
    settings: dict[str, Any] = dict(raw)
    kubernetes = (_decode(raw["kubernetes"], "struct:kubernetes", "settings.kubernetes")
                  if "kubernetes" in raw else _Typed({}, {}))
    merged = _Typed(kubernetes_settings(bootstrap, kubernetes.known), kubernetes.unknown)
    settings["kubernetes"] = _written(merged, "struct:kubernetes")
    commands = (_decode(raw["bootstrap-commands"], "map:struct:bootstrap-command",
                        "settings.bootstrap-commands")
                if "bootstrap-commands" in raw else None)
    if bootstrap.instance_store_policy == "RAID0":
        commands = commands or {}
        commands[MOUNT_INSTANCE_STORAGE] = _Typed(_raid0_command(bootstrap.bottlerocket_version),
                                                  {})
    if commands is not None:
        settings["bootstrap-commands"] = _written(commands, "map:struct:bootstrap-command")
    # Top-level keys besides settings (Karpenter's model has none): kept, after settings.
    others = [toml_writer.Field(name, document[name], False)
              for name in sorted(document) if name != "settings"]
    return toml_writer.dumps(toml_writer.Struct((toml_writer.Field("settings", settings,
                                                                   False), *others)))
