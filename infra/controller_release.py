"""The controller release: namespace, CRDs, RBAC, Deployment, PodDisruptionBudget, Service.

The CRDs come from `nodewright.api.crds.generate_crds()`, the same generator as
`nodewright crds`. RBAC grants only the verbs the controller's reconcilers use.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from infra.cluster import Cluster
from infra.config import StackSettings
from infra.iam import ControllerIdentity
from infra.interruption import InterruptionQueue
from infra.naming import SYSTEM_NODE_LABEL, SYSTEM_NODE_TAINT_KEY
from nodewright.api.crds import generate_crds

APP_LABELS = {"app.kubernetes.io/name": "nodewright", "app.kubernetes.io/component": "controller"}
METRICS_PORT = 8080
HEALTH_PORT = 8081
RUN_AS_USER = 65532

# (apiGroups, resources, verbs): everything the controller reads, writes or deletes.
CLUSTER_RULES: tuple[tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]], ...] = (
    (("karpenter.sh",), ("nodepools", "nodeclaims"), ("get", "list", "watch")),
    (("karpenter.sh",), ("nodeclaims",), ("create", "delete", "patch")),
    (("karpenter.sh",), ("nodepools",), ("patch",)),
    (("karpenter.sh",), ("nodepools/status", "nodeclaims/status"), ("patch",)),
    (("karpenter.k8s.aws",), ("ec2nodeclasses",), ("get", "list", "watch", "patch")),
    (("karpenter.k8s.aws",), ("ec2nodeclasses/status",), ("patch",)),
    (("",), ("nodes",), ("get", "list", "watch", "patch", "delete")),
    (("",), ("pods",), ("get", "list", "watch")),
    (("",), ("pods/eviction",), ("create",)),
    (("apps",), ("daemonsets",), ("list", "watch")),
    (("policy",), ("poddisruptionbudgets",), ("list", "watch")),
    (("", "events.k8s.io"), ("events",), ("create", "patch")),
)
# Leader election uses one Lease in the controller's own namespace.
NAMESPACE_RULES: tuple[tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]], ...] = (
    (("coordination.k8s.io",), ("leases",), ("get", "watch", "create", "update", "patch")),
)


@dataclass(frozen=True)
class ControllerRelease:
    namespace: str
    crds: list[k8s.apiextensions.v1.CustomResourceDefinition]
    deployment: k8s.apps.v1.Deployment


def _rules(
    rules: tuple[tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]], ...],
) -> list[k8s.rbac.v1.PolicyRuleArgs]:
    return [
        k8s.rbac.v1.PolicyRuleArgs(api_groups=list(groups), resources=list(kinds),
                                   verbs=list(verbs))
        for groups, kinds, verbs in rules
    ]


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


def build_controller_release(
    settings: StackSettings,
    cluster: Cluster,
    identity: ControllerIdentity,
    queue: InterruptionQueue | None,
    crds: list[k8s.apiextensions.v1.CustomResourceDefinition],
) -> ControllerRelease:
    controller = settings.controller
    provider = cluster.kubernetes
    on_cluster = pulumi.ResourceOptions(provider=provider)
    namespace = k8s.core.v1.Namespace(
        "nodewright",
        metadata=k8s.meta.v1.ObjectMetaArgs(name=controller.namespace, labels=APP_LABELS),
        opts=on_cluster,
    )
    in_namespace = pulumi.ResourceOptions(provider=provider, depends_on=[namespace])

    def meta(name: str) -> k8s.meta.v1.ObjectMetaArgs:
        return k8s.meta.v1.ObjectMetaArgs(name=name, namespace=controller.namespace,
                                          labels=APP_LABELS)

    account = k8s.core.v1.ServiceAccount(
        "nodewright",
        metadata=k8s.meta.v1.ObjectMetaArgs(
            name=controller.service_account,
            namespace=controller.namespace,
            labels=APP_LABELS,
            annotations=identity.service_account_annotations or None,
        ),
        opts=in_namespace,
    )
    subject = k8s.rbac.v1.SubjectArgs(kind="ServiceAccount", name=controller.service_account,
                                      namespace=controller.namespace)
    cluster_role = k8s.rbac.v1.ClusterRole(
        "nodewright",
        metadata=k8s.meta.v1.ObjectMetaArgs(name="nodewright-controller", labels=APP_LABELS),
        rules=_rules(CLUSTER_RULES),
        opts=on_cluster,
    )
    k8s.rbac.v1.ClusterRoleBinding(
        "nodewright",
        metadata=k8s.meta.v1.ObjectMetaArgs(name="nodewright-controller", labels=APP_LABELS),
        role_ref=k8s.rbac.v1.RoleRefArgs(api_group="rbac.authorization.k8s.io",
                                         kind="ClusterRole", name="nodewright-controller"),
        subjects=[subject],
        opts=pulumi.ResourceOptions(provider=provider, depends_on=[cluster_role]),
    )
    role = k8s.rbac.v1.Role(
        "nodewright",
        metadata=meta("nodewright-controller"),
        rules=_rules(NAMESPACE_RULES),
        opts=in_namespace,
    )
    k8s.rbac.v1.RoleBinding(
        "nodewright",
        metadata=meta("nodewright-controller"),
        role_ref=k8s.rbac.v1.RoleRefArgs(api_group="rbac.authorization.k8s.io", kind="Role",
                                         name="nodewright-controller"),
        subjects=[subject],
        opts=pulumi.ResourceOptions(provider=provider, depends_on=[role]),
    )

    deployment = k8s.apps.v1.Deployment(
        "nodewright",
        metadata=meta("nodewright-controller"),
        spec=k8s.apps.v1.DeploymentSpecArgs(
            replicas=controller.replicas,
            selector=k8s.meta.v1.LabelSelectorArgs(match_labels=APP_LABELS),
            strategy=k8s.apps.v1.DeploymentStrategyArgs(
                type="RollingUpdate",
                rolling_update=k8s.apps.v1.RollingUpdateDeploymentArgs(max_unavailable=1),
            ),
            template=k8s.core.v1.PodTemplateSpecArgs(
                metadata=k8s.meta.v1.ObjectMetaArgs(labels=APP_LABELS),
                spec=_pod_spec(settings, cluster, queue),
            ),
        ),
        opts=pulumi.ResourceOptions(provider=provider, depends_on=[account, *crds]),
    )
    k8s.policy.v1.PodDisruptionBudget(
        "nodewright",
        metadata=meta("nodewright-controller"),
        spec=k8s.policy.v1.PodDisruptionBudgetSpecArgs(
            max_unavailable=1,
            selector=k8s.meta.v1.LabelSelectorArgs(match_labels=APP_LABELS),
        ),
        opts=in_namespace,
    )
    k8s.core.v1.Service(
        "nodewright-metrics",
        metadata=meta("nodewright-metrics"),
        spec=k8s.core.v1.ServiceSpecArgs(
            type="ClusterIP",
            selector=APP_LABELS,
            ports=[k8s.core.v1.ServicePortArgs(name="http-metrics", port=METRICS_PORT,
                                               target_port="http-metrics", protocol="TCP")],
        ),
        opts=in_namespace,
    )
    return ControllerRelease(namespace=controller.namespace, crds=crds, deployment=deployment)


def _pod_spec(
    settings: StackSettings, cluster: Cluster, queue: InterruptionQueue | None
) -> k8s.core.v1.PodSpecArgs:
    controller = settings.controller
    env: list[k8s.core.v1.EnvVarArgs] = [
        k8s.core.v1.EnvVarArgs(name="CLUSTER_NAME", value=settings.cluster_name),
        k8s.core.v1.EnvVarArgs(name="CLUSTER_ENDPOINT", value=cluster.endpoint),
        k8s.core.v1.EnvVarArgs(name="INTERRUPTION_QUEUE",
                               value=queue.name if queue is not None else ""),
        k8s.core.v1.EnvVarArgs(name="AWS_REGION", value=settings.region),
        k8s.core.v1.EnvVarArgs(name="LOG_LEVEL", value=controller.log_level),
        k8s.core.v1.EnvVarArgs(name="LEADER_ELECT", value="true"),
        k8s.core.v1.EnvVarArgs(name="METRICS_PORT", value=str(METRICS_PORT)),
        k8s.core.v1.EnvVarArgs(name="HEALTH_PROBE_PORT", value=str(HEALTH_PORT)),
        _field_env("POD_NAME", "metadata.name"),
        _field_env("POD_NAMESPACE", "metadata.namespace"),
    ]
    return k8s.core.v1.PodSpecArgs(
        service_account_name=controller.service_account,
        priority_class_name="system-cluster-critical",
        node_selector={SYSTEM_NODE_LABEL: "true", "kubernetes.io/os": "linux"},
        tolerations=[k8s.core.v1.TolerationArgs(key=SYSTEM_NODE_TAINT_KEY, operator="Exists",
                                                effect="NoSchedule")],
        affinity=_affinity(),
        topology_spread_constraints=[
            k8s.core.v1.TopologySpreadConstraintArgs(
                max_skew=1,
                topology_key="topology.kubernetes.io/zone",
                when_unsatisfiable="DoNotSchedule",
                label_selector=k8s.meta.v1.LabelSelectorArgs(match_labels=APP_LABELS),
            )
        ],
        security_context=k8s.core.v1.PodSecurityContextArgs(
            run_as_non_root=True,
            run_as_user=RUN_AS_USER,
            run_as_group=RUN_AS_USER,
            fs_group=RUN_AS_USER,
            seccomp_profile=k8s.core.v1.SeccompProfileArgs(type="RuntimeDefault"),
        ),
        containers=[
            k8s.core.v1.ContainerArgs(
                name="controller",
                image=controller.image,
                command=["nodewright", "operator"],
                env=env,
                ports=[
                    k8s.core.v1.ContainerPortArgs(name="http-metrics",
                                                  container_port=METRICS_PORT),
                    k8s.core.v1.ContainerPortArgs(name="http-health", container_port=HEALTH_PORT),
                ],
                resources=k8s.core.v1.ResourceRequirementsArgs(
                    requests=controller.requests, limits=controller.limits
                ),
                liveness_probe=_probe("/healthz", initial_delay=30),
                readiness_probe=_probe("/readyz", initial_delay=5),
                security_context=k8s.core.v1.SecurityContextArgs(
                    allow_privilege_escalation=False,
                    read_only_root_filesystem=True,
                    run_as_non_root=True,
                    privileged=False,
                    capabilities=k8s.core.v1.CapabilitiesArgs(drop=["ALL"]),
                ),
            )
        ],
    )


def _field_env(name: str, field_path: str) -> k8s.core.v1.EnvVarArgs:
    return k8s.core.v1.EnvVarArgs(
        name=name,
        value_from=k8s.core.v1.EnvVarSourceArgs(
            field_ref=k8s.core.v1.ObjectFieldSelectorArgs(field_path=field_path)
        ),
    )


def _probe(path: str, initial_delay: int) -> k8s.core.v1.ProbeArgs:
    return k8s.core.v1.ProbeArgs(
        http_get=k8s.core.v1.HTTPGetActionArgs(path=path, port="http-health"),
        initial_delay_seconds=initial_delay,
        period_seconds=10,
        timeout_seconds=5,
    )


def _affinity() -> k8s.core.v1.AffinityArgs:
    """Never on nodes Nodewright manages; replicas on different hosts."""
    return k8s.core.v1.AffinityArgs(
        node_affinity=k8s.core.v1.NodeAffinityArgs(
            required_during_scheduling_ignored_during_execution=k8s.core.v1.NodeSelectorArgs(
                node_selector_terms=[k8s.core.v1.NodeSelectorTermArgs(match_expressions=[
                    k8s.core.v1.NodeSelectorRequirementArgs(key="karpenter.sh/nodepool",
                                                            operator="DoesNotExist"),
                ])]
            )
        ),
        pod_anti_affinity=k8s.core.v1.PodAntiAffinityArgs(
            required_during_scheduling_ignored_during_execution=[
                k8s.core.v1.PodAffinityTermArgs(
                    topology_key="kubernetes.io/hostname",
                    label_selector=k8s.meta.v1.LabelSelectorArgs(match_labels=APP_LABELS),
                )
            ]
        ),
    )

