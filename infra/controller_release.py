"""The controller release: namespace, CRDs, RBAC, Deployment, PodDisruptionBudget, Service.

Every object comes from `nodewright.install.render`, the generator behind
`nodewright manifests`, so a stack and a GitOps install declare the same objects; this
module only turns each manifest into its Pulumi resource and orders them. The CRDs come
from `nodewright.api.crds.generate_crds()`, the same generator as `nodewright crds`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from infra.cluster import Cluster
from infra.config import StackSettings
from infra.iam import ControllerIdentity
from infra.interruption import InterruptionQueue
from infra.naming import SYSTEM_NODE_LABEL, SYSTEM_NODE_TAINT_KEY
from nodewright.api.crds import generate_crds
from nodewright.install import InstallSettings, render
from nodewright.install.objects import KUBE_DNS_ROLE
from nodewright.install.settings import ADMIN_ROLE_NAME

# Pulumi resource names stay what earlier versions declared, so updating a stack never
# replaces the controller's objects.
_PULUMI_NAMES: Mapping[str, str] = {"Service": "nodewright-metrics"}


@dataclass(frozen=True)
class ControllerRelease:
    namespace: str
    crds: list[k8s.apiextensions.v1.CustomResourceDefinition]
    deployment: k8s.apps.v1.Deployment


def build_crds(provider: k8s.Provider) -> list[k8s.apiextensions.v1.CustomResourceDefinition]:
    return [
        k8s.apiextensions.v1.CustomResourceDefinition(
            crd["metadata"]["name"],
            metadata=crd["metadata"],
            spec=crd["spec"],
            opts=pulumi.ResourceOptions(provider=provider),
        )
        for crd in generate_crds()
    ]


def install_settings(
    settings: StackSettings,
    cluster: Cluster,
    identity: ControllerIdentity,
    queue: InterruptionQueue | None,
) -> InstallSettings:
    controller = settings.controller
    return InstallSettings(
        cluster_name=settings.cluster_name,
        cloud="aws",
        image=controller.image,
        namespace=controller.namespace,
        service_account=controller.service_account,
        replicas=controller.replicas,
        log_level=controller.log_level,
        cluster_endpoint=cluster.endpoint,
        interruption_queue=queue.name if queue is not None else "",
        region=settings.region,
        service_account_annotations=identity.service_account_annotations,
        requests=controller.requests,
        limits=controller.limits,
        node_selector={SYSTEM_NODE_LABEL: "true", "kubernetes.io/os": "linux"},
        tolerations=({"key": SYSTEM_NODE_TAINT_KEY, "operator": "Exists",
                      "effect": "NoSchedule"},),
        # Karpenter's chart's aggregate-clusterrole.yaml: cluster admins manage NodePools,
        # NodeClaims and EC2NodeClasses through the built-in `admin` role.
        admin_role=True,
    )


def build_controller_release(
    settings: StackSettings,
    cluster: Cluster,
    identity: ControllerIdentity,
    queue: InterruptionQueue | None,
    crds: list[k8s.apiextensions.v1.CustomResourceDefinition],
) -> ControllerRelease:
    install = install_settings(settings, cluster, identity, queue)
    provider = cluster.kubernetes
    declared: dict[str, pulumi.CustomResource] = {}
    deployment: k8s.apps.v1.Deployment | None = None
    for manifest in render(install, include_crds=False):
        kind = manifest["kind"]
        depends_on = _dependencies(kind, declared, crds)
        resource = _DECLARE[kind](
            _pulumi_name(manifest),
            manifest,
            pulumi.ResourceOptions(provider=provider, depends_on=depends_on),
        )
        declared[kind] = resource
        if isinstance(resource, k8s.apps.v1.Deployment):
            deployment = resource
    if deployment is None:  # the generator always renders one
        raise RuntimeError("nodewright.install.render produced no Deployment")
    return ControllerRelease(namespace=install.namespace, crds=crds, deployment=deployment)


def _pulumi_name(manifest: Mapping[str, Any]) -> str:
    """One Pulumi name per object: "nodewright" for the controller's own objects, the
    object's name for a second one of a kind (the kube-dns Role and its binding, the
    ClusterRole aggregated into `admin`)."""
    name = str(manifest["metadata"]["name"])
    if name in (KUBE_DNS_ROLE, ADMIN_ROLE_NAME):
        return name
    return _PULUMI_NAMES.get(manifest["kind"], "nodewright")


def _dependencies(
    kind: str,
    declared: Mapping[str, pulumi.CustomResource],
    crds: list[k8s.apiextensions.v1.CustomResourceDefinition],
) -> list[pulumi.Resource]:
    wanted = {
        "Namespace": (),
        "ClusterRole": (),
        "ClusterRoleBinding": ("ClusterRole",),
        "RoleBinding": ("Role",),
        "Deployment": ("Namespace", "ServiceAccount"),
    }.get(kind, ("Namespace",))
    found: list[pulumi.Resource] = [declared[name] for name in wanted if name in declared]
    if kind == "Deployment":
        found.extend(crds)
    return found


Declare = Callable[[str, dict[str, Any], pulumi.ResourceOptions], pulumi.CustomResource]

_DECLARE: Mapping[str, Declare] = {
    "Namespace": lambda name, m, opts: k8s.core.v1.Namespace(
        name, metadata=m["metadata"], opts=opts),
    "ServiceAccount": lambda name, m, opts: k8s.core.v1.ServiceAccount(
        name, metadata=m["metadata"], opts=opts),
    "ClusterRole": lambda name, m, opts: k8s.rbac.v1.ClusterRole(
        name, metadata=m["metadata"], rules=m["rules"], opts=opts),
    "ClusterRoleBinding": lambda name, m, opts: k8s.rbac.v1.ClusterRoleBinding(
        name, metadata=m["metadata"], role_ref=m["roleRef"], subjects=m["subjects"], opts=opts),
    "Role": lambda name, m, opts: k8s.rbac.v1.Role(
        name, metadata=m["metadata"], rules=m["rules"], opts=opts),
    "RoleBinding": lambda name, m, opts: k8s.rbac.v1.RoleBinding(
        name, metadata=m["metadata"], role_ref=m["roleRef"], subjects=m["subjects"], opts=opts),
    "Deployment": lambda name, m, opts: k8s.apps.v1.Deployment(
        name, metadata=m["metadata"], spec=m["spec"], opts=opts),
    "PodDisruptionBudget": lambda name, m, opts: k8s.policy.v1.PodDisruptionBudget(
        name, metadata=m["metadata"], spec=m["spec"], opts=opts),
    "Service": lambda name, m, opts: k8s.core.v1.Service(
        name, metadata=m["metadata"], spec=m["spec"], opts=opts),
}
