"""What the controller asks of the API server before it starts, as controller-runtime's
manager does when it builds its REST mapper: that the server answers, and that it serves
every kind the operator uses.

Neither is fixed by waiting, so both end the process with a message saying what to fix
(Karpenter exits the same way and the kubelet restarts it): a kubeconfig pointing at no
API server names the URL and where it came from; a kind the server does not serve names
its CustomResourceDefinition and how to install it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import httpx2
from lightkube import Client

from nodewright.cluster.api import kind_of

# The kinds whose definitions Nodewright installs (`nodewright crds`).
CRD_GROUPS = ("karpenter.sh", "karpenter.k8s.aws")
INSTALL_CRDS = "nodewright crds | kubectl apply -f -"


class ServerCheckError(Exception):
    """The API server cannot be used as configured; the text says what to fix."""


def server_url(client: Client) -> str:
    return str(client._client._client.base_url).rstrip("/")


def check_server(client: Client, kinds: Iterable[str], *, configured_by: str) -> str:
    """The server's version, once it answers and serves every one of `kinds`.
    `configured_by` says where its address came from (for the message)."""
    url = server_url(client)
    version = _get(client, "/version", url, configured_by)
    missing: list[str] = []
    served: dict[str, set[str] | None] = {}
    for name in dict.fromkeys(kinds):
        kind = kind_of(name)
        if kind.api_version not in served:
            served[kind.api_version] = _resources(client, kind.api_version, url,
                                                  configured_by)
        resources = served[kind.api_version]
        if resources is None or kind.plural not in resources:
            missing.append(name)
    if missing:
        raise ServerCheckError(_missing_kinds(missing, url))
    return str(version.get("gitVersion") or "unknown")


def minor_version(client: Client) -> str:
    """The API server's Kubernetes version as `major.minor` (`1.33`), as Karpenter reads it
    from /version when the control plane is not EKS's (a `+` after the minor is dropped)."""
    url = server_url(client)
    version = _get(client, "/version", url, "the controller's API server connection")
    major = str(version.get("major") or "").rstrip("+")
    minor = str(version.get("minor") or "").rstrip("+")
    if not major.isdigit() or not minor.isdigit():
        raise ServerCheckError(
            f"{url} answered GET /version without a numeric major and minor version "
            f"(major={version.get('major')!r}, minor={version.get('minor')!r})")
    return f"{major}.{minor}"


def _resources(client: Client, api_version: str, url: str, configured_by: str,
               ) -> set[str] | None:
    path = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    found = _get(client, path, url, configured_by, missing_ok=True)
    if found is None:
        return None
    return {str(item.get("name")) for item in found.get("resources") or []}


def _get(client: Client, path: str, url: str, configured_by: str, *,
         missing_ok: bool = False) -> Any:
    generic = client._client
    try:
        response = generic.send(generic._client.build_request("GET", path))
    except httpx2.TransportError as error:
        raise ServerCheckError(
            f"cannot reach the Kubernetes API server at {url} ({type(error).__name__}: "
            f"{error or 'no answer'}). The address comes from {configured_by}: point "
            f"--kubeconfig (or KUBECONFIG) at the cluster's kubeconfig, and check that its "
            f"API server is up") from error
    if response.status_code == 404 and missing_ok:
        return None
    if response.status_code == 401:
        raise ServerCheckError(
            f"the Kubernetes API server at {url} did not accept the credentials from "
            f"{configured_by} (401 Unauthorized): renew the token or use another "
            f"kubeconfig (--kubeconfig or KUBECONFIG)")
    if response.status_code >= 400:
        raise ServerCheckError(
            f"the Kubernetes API server at {url} answered GET {path} with HTTP "
            f"{response.status_code}: {response.text.strip()[:300]}")
    try:
        return response.json()
    except ValueError as error:
        raise ServerCheckError(
            f"{url} answered GET {path} with something that is not JSON: is it a Kubernetes "
            f"API server? (the address comes from {configured_by})") from error


def _missing_kinds(missing: list[str], url: str) -> str:
    ours = [kind_of(name) for name in missing if kind_of(name).group in CRD_GROUPS]
    others = [kind_of(name) for name in missing if kind_of(name).group not in CRD_GROUPS]
    parts = []
    if ours:
        crds = ", ".join(f"{kind.plural}.{kind.group}" for kind in ours)
        kinds = ", ".join(f"{kind.kind} ({kind.api_version})" for kind in ours)
        parts.append(f"the API server at {url} does not serve {kinds}: the "
                     f"CustomResourceDefinition(s) {crds} are not installed (or not at this "
                     f"version). Install them with `{INSTALL_CRDS}`")
    if others:
        kinds = ", ".join(f"{kind.kind} ({kind.api_version})" for kind in others)
        parts.append(f"the API server at {url} does not serve {kinds}, which Nodewright "
                     "needs (Kubernetes 1.25 or later)")
    return "; ".join(parts)
