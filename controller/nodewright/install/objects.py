"""The objects of an installation as Kubernetes manifests (wire-shape dicts).

`render(settings)` is what `nodewright manifests` prints and what infra/ declares, one
Pulumi resource per object, so the YAML a GitOps user applies and the Pulumi stack never
drift apart. Objects come in the order `kubectl apply` needs: CRDs, the namespace, the
identity and its RBAC, then the workload.
"""

from __future__ import annotations

from typing import Any

import yaml

from nodewright.api.crds import generate_crds
from nodewright.cluster.kube.access import KUBE_DNS_NAMESPACE, NODE_LEASE_NAMESPACE
from nodewright.install.rbac import (
    admin_rules,
    cluster_rules,
    kube_dns_rules,
    namespace_rules,
    node_lease_rules,
)
from nodewright.install.settings import (
    ADMIN_ROLE_NAME,
    APP_LABELS,
    CONTROLLER_NAME,
    HEALTH_PROBE_PORT,
    METRICS_PORT,
    METRICS_SERVICE_NAME,
    RUN_AS_USER,
    TERMINATION_GRACE_PERIOD_SECONDS,
    InstallSettings,
)

Manifest = dict[str, Any]
NODE_LEASES_ROLE = "nodewright-node-leases"
KUBE_DNS_ROLE = "nodewright-dns"
CONTAINER_NAME = "controller"


def render(settings: InstallSettings, *, include_crds: bool = True) -> list[Manifest]:
    objects: list[Manifest] = list(generate_crds()) if include_crds else []
    objects += [
        namespace(settings),
        service_account(settings),
        cluster_role(settings),
        cluster_role_binding(settings),
        *([admin_cluster_role()] if settings.admin_role else []),
        role(settings),
        role_binding(settings),
    ]
    if settings.cloud == "sim":
        objects += [node_lease_role(settings), node_lease_role_binding(settings)]
    if kube_dns_rules(settings.cloud):
        objects += [_role_in(KUBE_DNS_ROLE, KUBE_DNS_NAMESPACE, kube_dns_rules(settings.cloud)),
                    _binding_in(KUBE_DNS_ROLE, KUBE_DNS_NAMESPACE, settings)]
    objects += [deployment(settings), pod_disruption_budget(settings), metrics_service(settings)]
    return objects


def render_yaml(settings: InstallSettings, *, include_crds: bool = True) -> str:
    return yaml.safe_dump_all(render(settings, include_crds=include_crds), sort_keys=False)


def _labels() -> dict[str, str]:
    return dict(APP_LABELS)


def _meta(name: str, namespace: str | None = None, **extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    meta["labels"] = _labels()
    meta.update({key: value for key, value in extra.items() if value})
    return meta


def namespace(settings: InstallSettings) -> Manifest:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": _meta(settings.namespace)}


def service_account(settings: InstallSettings) -> Manifest:
    annotations = dict(settings.service_account_annotations) or None
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": _meta(settings.service_account, settings.namespace, annotations=annotations),
        # As the chart: no token for other pods that name the account; the controller's
        # pod asks for its own.
        "automountServiceAccountToken": False,
    }


def _subjects(settings: InstallSettings) -> list[dict[str, str]]:
    return [{"kind": "ServiceAccount", "name": settings.service_account,
             "namespace": settings.namespace}]


def cluster_role(settings: InstallSettings) -> Manifest:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": _meta(CONTROLLER_NAME),
        "rules": cluster_rules(settings.cloud),
    }


def cluster_role_binding(settings: InstallSettings) -> Manifest:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": _meta(CONTROLLER_NAME),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": CONTROLLER_NAME},
        "subjects": _subjects(settings),
    }


def admin_cluster_role() -> Manifest:
    """Bound to nobody: the `aggregate-to-admin` label has the API server's ClusterRole
    aggregation controller add its rules to the built-in `admin` ClusterRole."""
    metadata = _meta(ADMIN_ROLE_NAME)
    metadata["labels"] = {"rbac.authorization.k8s.io/aggregate-to-admin": "true",
                          **metadata["labels"]}
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": metadata,
        "rules": admin_rules(),
    }


def role(settings: InstallSettings) -> Manifest:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": _meta(CONTROLLER_NAME, settings.namespace),
        "rules": namespace_rules(settings.cloud),
    }


def role_binding(settings: InstallSettings) -> Manifest:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": _meta(CONTROLLER_NAME, settings.namespace),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                    "name": CONTROLLER_NAME},
        "subjects": _subjects(settings),
    }


def node_lease_role(settings: InstallSettings) -> Manifest:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": _meta(NODE_LEASES_ROLE, NODE_LEASE_NAMESPACE),
        "rules": node_lease_rules(settings.cloud),
    }


def node_lease_role_binding(settings: InstallSettings) -> Manifest:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": _meta(NODE_LEASES_ROLE, NODE_LEASE_NAMESPACE),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                    "name": NODE_LEASES_ROLE},
        "subjects": _subjects(settings),
    }


def _role_in(name: str, namespace: str, rules: list[dict[str, Any]]) -> Manifest:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": _meta(name, namespace), "rules": rules}


def _binding_in(name: str, namespace: str, settings: InstallSettings) -> Manifest:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": _meta(name, namespace),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            "subjects": _subjects(settings)}


def environment(settings: InstallSettings) -> list[dict[str, Any]]:
    """The controller's environment: the variables Karpenter's chart sets, by the same
    names (`nodewright controller --help` documents each)."""
    values: list[tuple[str, object]] = [
        ("CLUSTER_NAME", settings.cluster_name),
        ("CLUSTER_ENDPOINT", settings.cluster_endpoint),
        ("INTERRUPTION_QUEUE", settings.interruption_queue),
        ("AWS_REGION", settings.region),
        ("LOG_LEVEL", settings.log_level),
        ("LEADER_ELECT", "true"),
        ("METRICS_PORT", str(METRICS_PORT)),
        ("HEALTH_PROBE_PORT", str(HEALTH_PROBE_PORT)),
    ]
    env: list[dict[str, Any]] = [
        {"name": name, "value": value} for name, value in values if value is not None
    ]
    env += [
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "POD_NAMESPACE",
         "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
        # As Karpenter's chart: the container's own CPU request (millicores) and memory
        # limit (bytes); the latter only when set, else the node's memory would be read.
        {"name": "CPU_REQUESTS", "valueFrom": {"resourceFieldRef": {
            "containerName": CONTAINER_NAME, "divisor": "1m", "resource": "requests.cpu"}}},
    ]
    if "memory" in (settings.limits or {}):
        env.append({"name": "MEMORY_LIMIT", "valueFrom": {"resourceFieldRef": {
            "containerName": CONTAINER_NAME, "divisor": "1", "resource": "limits.memory"}}})
    return env


def _probe(path: str, initial_delay: int) -> dict[str, Any]:
    return {
        "httpGet": {"path": path, "port": "http-health"},
        "initialDelaySeconds": initial_delay,
        "periodSeconds": 10,
        # The chart's: a busy controller answers late rather than not at all.
        "timeoutSeconds": 30,
    }


def _container(settings: InstallSettings) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if settings.requests:
        resources["requests"] = dict(settings.requests)
    if settings.limits:
        resources["limits"] = dict(settings.limits)
    return {
        "name": CONTAINER_NAME,
        "image": settings.image,
        "command": ["nodewright", "controller"],
        "args": ["--cloud", settings.cloud],
        "env": environment(settings),
        "ports": [
            {"name": "http-metrics", "containerPort": METRICS_PORT, "protocol": "TCP"},
            {"name": "http-health", "containerPort": HEALTH_PROBE_PORT, "protocol": "TCP"},
        ],
        "resources": resources,
        "livenessProbe": _probe("/healthz", initial_delay=30),
        "readinessProbe": _probe("/readyz", initial_delay=5),
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "runAsNonRoot": True,
            "privileged": False,
            "capabilities": {"drop": ["ALL"]},
        },
    }


def _affinity() -> dict[str, Any]:
    """Never on nodes Nodewright manages (it would disrupt itself); replicas on different
    hosts."""
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [
                    {"key": "karpenter.sh/nodepool", "operator": "DoesNotExist"},
                ]}],
            },
        },
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"topologyKey": "kubernetes.io/hostname",
                 "labelSelector": {"matchLabels": _labels()}},
            ],
        },
    }


def pod_spec(settings: InstallSettings) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "serviceAccountName": settings.service_account,
        "automountServiceAccountToken": True,
        "priorityClassName": settings.priority_class,
        "terminationGracePeriodSeconds": TERMINATION_GRACE_PERIOD_SECONDS,
        "nodeSelector": dict(settings.node_selector),
        "tolerations": [dict(toleration) for toleration in settings.tolerations],
        "affinity": _affinity(),
        "topologySpreadConstraints": [{
            "maxSkew": 1,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": _labels()},
        }],
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": RUN_AS_USER,
            "runAsGroup": RUN_AS_USER,
            "fsGroup": RUN_AS_USER,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "containers": [_container(settings)],
    }
    return spec


def deployment(settings: InstallSettings) -> Manifest:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta(CONTROLLER_NAME, settings.namespace),
        "spec": {
            "replicas": settings.replicas,
            "selector": {"matchLabels": _labels()},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
            "template": {"metadata": {"labels": _labels()}, "spec": pod_spec(settings)},
        },
    }


def pod_disruption_budget(settings: InstallSettings) -> Manifest:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": _meta(CONTROLLER_NAME, settings.namespace),
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": _labels()}},
    }


def metrics_service(settings: InstallSettings) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(METRICS_SERVICE_NAME, settings.namespace),
        "spec": {
            "type": "ClusterIP",
            "selector": _labels(),
            "ports": [{"name": "http-metrics", "port": METRICS_PORT,
                       "targetPort": "http-metrics", "protocol": "TCP"}],
        },
    }
