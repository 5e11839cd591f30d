"""What an installation is made of: the few choices `nodewright manifests` and infra/ make.

Values infra/ only knows at deploy time (the cluster endpoint, the queue name, the role ARN
inside an annotation) may be Pulumi Outputs: the generator places them where they go and
never reads them, so those fields are typed `object`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nodewright.cluster.kube.access import Cloud

DEFAULT_IMAGE = "ghcr.io/nodewright/controller:0.1.0"
DEFAULT_NAMESPACE = "nodewright"
APP_LABELS: Mapping[str, str] = {
    "app.kubernetes.io/name": "nodewright",
    "app.kubernetes.io/component": "controller",
}
CONTROLLER_NAME = "nodewright-controller"
# The ClusterRole aggregated into the built-in `admin` role (Karpenter's chart's `-admin`).
ADMIN_ROLE_NAME = "nodewright-admin"
METRICS_SERVICE_NAME = "nodewright-metrics"
METRICS_PORT = 8080
HEALTH_PROBE_PORT = 8081
RUN_AS_USER = 65532
TERMINATION_GRACE_PERIOD_SECONDS = 30
# Karpenter's chart tolerates CriticalAddonsOnly so it can run on dedicated system nodes.
DEFAULT_TOLERATIONS: tuple[Mapping[str, Any], ...] = (
    {"key": "CriticalAddonsOnly", "operator": "Exists"},
)


@dataclass(frozen=True)
class InstallSettings:
    cluster_name: str
    cloud: Cloud = "aws"
    image: str = DEFAULT_IMAGE
    namespace: str = DEFAULT_NAMESPACE
    service_account: str = "nodewright"
    replicas: int = 2
    log_level: str = "info"
    # Pulumi Outputs allowed (see the module docstring); None leaves the variable unset.
    cluster_endpoint: object = None
    interruption_queue: object = None
    region: object = None
    service_account_annotations: Mapping[str, object] = field(default_factory=dict)
    requests: Mapping[str, str] = field(
        default_factory=lambda: {"cpu": "250m", "memory": "512Mi"})
    limits: Mapping[str, str] = field(default_factory=lambda: {"memory": "512Mi"})
    node_selector: Mapping[str, str] = field(
        default_factory=lambda: {"kubernetes.io/os": "linux"})
    tolerations: Sequence[Mapping[str, Any]] = DEFAULT_TOLERATIONS
    priority_class: str = "system-cluster-critical"
    # The ClusterRole that aggregates NodePool, NodeClaim and EC2NodeClass access into the
    # built-in `admin` role, as Karpenter's chart always renders (bound to nobody).
    admin_role: bool = True

    @staticmethod
    def role_annotation(role_arn: object) -> dict[str, object]:
        """The IRSA annotation that lets the controller's pods assume an IAM role."""
        return {"eks.amazonaws.com/role-arn": role_arn}
