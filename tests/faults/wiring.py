"""How the fault stories put the proxy between the controller and its servers: a kubeconfig
that reaches the API server through a proxy, the proxy for a real API server (TLS
terminated with the proxy's CA and checked again against the cluster's), and the error
answers EC2 gives (for moto behind the proxy)."""

from __future__ import annotations

import copy
import uuid
from pathlib import Path
from typing import Any, Literal

import yaml

from tests.faults.proxy import FaultProxy, Rule, lose_answer

# EC2's Query API: one path, the action and the API version in the form body (IAM speaks
# the Query API too, with another version; SQS, SSM and EKS speak JSON).
CREATE_FLEET = r"(^|&)Action=CreateFleet(&|$)"
EC2_ACTIONS = r"(^|&)Version=2016-11-15(&|$)"


def kubeconfig_through(proxy: FaultProxy, source: Path, dest: Path) -> Path:
    """A copy of the kubeconfig `source` whose clusters reach their server through `proxy`
    (whose CA they trust, when it terminates TLS); the credentials are kept."""
    config: dict[str, Any] = copy.deepcopy(yaml.safe_load(source.read_text()))
    clusters = config.get("clusters") or []
    if not clusters:
        raise ValueError(f"{source}: clusters: no cluster to put the proxy in front of")
    for entry in clusters:
        cluster = entry.setdefault("cluster", {})
        cluster["server"] = proxy.url
        if proxy.ca_file is not None:
            cluster.pop("certificate-authority-data", None)
            cluster["certificate-authority"] = str(proxy.ca_file)
    dest.write_text(yaml.safe_dump(config))
    dest.chmod(0o600)
    return dest


def apiserver_proxy(api_url: str, ca_file: Path, *, mode: Literal["tcp", "http"] = "http",
                    name: str = "apiserver") -> FaultProxy:
    """A proxy for a real API server: in http mode it reads each request (TLS terminated
    with its own CA, the API server's certificate checked against `ca_file`), so it can
    answer 5xx/429 and keep the audit of what was sent; in tcp mode TLS passes through."""
    if mode == "tcp":
        return FaultProxy(api_url, mode="tcp", name=name)
    return FaultProxy(api_url, mode="http", tls=True, upstream_ca=ca_file, name=name)


def ec2_error(code: str, message: str = "") -> bytes:
    """The body of an EC2 (Query API) error, as botocore parses it."""
    text = message or f"{code} (injected by the fault proxy)"
    return (f"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Response><Errors><Error>"
            f"<Code>{code}</Code><Message>{text}</Message></Error></Errors>"
            f"<RequestID>{uuid.uuid4()}</RequestID></Response>").encode()


def ec2_fault(code: str, status: int, *, body: str = EC2_ACTIONS, share: float = 1.0,
              limit: int | None = None, retry_after: float | None = None) -> Rule:
    """EC2 answering `code` with HTTP `status` to the actions matching `body` (e.g.
    RequestLimitExceeded/503 for throttling, InternalError/500)."""
    return Rule("answer", status, retry_after, share, limit, frozenset({"POST"}), "", body,
                ec2_error(code), "text/xml")


def ec2_lost_answer(*, body: str = CREATE_FLEET, limit: int | None = 1) -> Rule:
    """EC2 acts on the matching actions, and the answer is lost: InternalError/500 in its
    place (botocore retries it)."""
    return lose_answer(500, methods={"POST"}, body=body, limit=limit,
                       content=ec2_error("InternalError"), content_type="text/xml")
