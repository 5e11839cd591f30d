"""The controller's Deployment and ServiceAccount keep the defaults of Karpenter's v1.14.1
chart (charts/karpenter/templates/deployment.yaml, serviceaccount.yaml) where they are
about how the pod is run: the health probes' 30 s timeouts, and the account's token given
to the controller's pod only."""

from __future__ import annotations

from typing import Any

from nodewright.install import InstallSettings, render


def rendered(kind: str) -> dict[str, Any]:
    manifests = render(InstallSettings(cluster_name="demo"), include_crds=False)
    (found,) = [m for m in manifests if m["kind"] == kind]
    return found


def test_the_probes_wait_as_long_as_the_charts() -> None:
    (container,) = rendered("Deployment")["spec"]["template"]["spec"]["containers"]
    liveness, readiness = container["livenessProbe"], container["readinessProbe"]
    assert (liveness["httpGet"]["path"], liveness["initialDelaySeconds"],
            liveness["timeoutSeconds"]) == ("/healthz", 30, 30)
    assert (readiness["httpGet"]["path"], readiness["initialDelaySeconds"],
            readiness["timeoutSeconds"]) == ("/readyz", 5, 30)


def test_only_the_controllers_pod_mounts_the_accounts_token() -> None:
    assert rendered("ServiceAccount")["automountServiceAccountToken"] is False
    pod = rendered("Deployment")["spec"]["template"]["spec"]
    assert pod["automountServiceAccountToken"] is True
