"""A control plane for `nodewright controller` processes where no Kubernetes binaries are:
the adapter tests' fake API server (tests/kube/apiserver.py, RBAC as `nodewright manifests`
installs it) served on a socket, seeded with the workshop's NodePool and EC2NodeClass.
There is no scheduler and no kubelet: pods are seeded as the scheduler leaves the ones it
cannot place (Pending, PodScheduled=False/Unschedulable), and the simulated cloud's
kubelets (in the controller's process) register the Nodes. So the fault stories that look
at NodeClaims, Nodes, the Lease and what each replica wrote run here; those that need pods
to run stay in tests/e2e."""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import count
from pathlib import Path
from typing import Any

import yaml

from nodewright.install import InstallSettings
from tests.conftest import EXAMPLES
from tests.e2e.harness import CLUSTER_NAME
from tests.faults.proxy import FaultProxy
from tests.faults.served_apiserver import ServedApiServer
from tests.kube.apiserver import Authorizer, FakeApiServer

WORKSHOP = EXAMPLES / "workshop"
LEADER_LEASE = ("nodewright", "nodewright-leader-election")
# How long the fake keeps a watch open (its default, 0.2 s, suits the adapter's tests; two
# controllers re-watching every kind five times a second would load a busy machine).
WATCH_SECONDS = 5.0


@dataclass
class FakePlane:
    fake: FakeApiServer
    served: ServedApiServer
    workdir: Path
    _pods: count[int] = field(default_factory=count)

    @classmethod
    def start(cls, workdir: Path) -> FakePlane:
        fake = FakeApiServer(Authorizer.for_install(
            InstallSettings(cluster_name=CLUSTER_NAME, cloud="sim")),
            watch_window=WATCH_SECONDS)
        for name in ("nodepool.yaml", "ec2nodeclass.yaml"):
            fake.seed(yaml.safe_load((WORKSHOP / name).read_text()))
        return cls(fake, ServedApiServer(fake), workdir)

    @property
    def address(self) -> str:
        return self.served.address

    def kubeconfig(self, proxy: FaultProxy | None = None, name: str = "direct") -> Path:
        """A kubeconfig with a token, reaching the server directly or through `proxy`."""
        server = proxy.url if proxy is not None else f"http://{self.address}"
        path = self.workdir / f"{name}.kubeconfig"
        path.write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config",
            "clusters": [{"name": "fake", "cluster": {"server": server}}],
            "users": [{"name": "nodewright", "user": {"token": "fake-token"}}],
            "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "nodewright"}}],
            "current-context": "fake"}))
        return path

    def pending_pods(self, how_many: int, memory: str = "1Gi") -> None:
        """`how_many` of the workshop's inflate pods the scheduler could not place."""
        for _ in range(how_many):
            number = next(self._pods)
            self.fake.seed({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": f"inflate-{number}", "namespace": "default",
                             "labels": {"app": "inflate"}},
                "spec": {"nodeSelector": {"type": "karpenter"},
                         "containers": [{"name": "inflate", "image": "pause",
                                         "resources": {"requests": {"memory": memory}}}]},
                "status": {"phase": "Pending", "conditions": [
                    {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]},
            })

    def nodeclaims(self) -> list[dict[str, Any]]:
        return self.fake.objects("NodeClaim")

    def lease(self) -> dict[str, Any]:
        """The leader Lease's spec ({} while there is none)."""
        for lease in self.fake.objects("Lease"):
            meta = lease["metadata"]
            if (meta.get("namespace"), meta.get("name")) == LEADER_LEASE:
                return dict(lease.get("spec") or {})
        return {}

    def holder(self) -> str:
        return str(self.lease().get("holderIdentity") or "").partition("_")[0]

    def registered(self, nodeclaims: int) -> bool:
        """Exactly `nodeclaims` NodeClaims, none being deleted, each with its Node, and no
        Node without its NodeClaim."""
        claims = self.nodeclaims()
        assert len(claims) == nodeclaims, (
            f"{len(claims)} NodeClaims, {nodeclaims} needed: "
            f"{[c['metadata']['name'] for c in claims]}")
        assert not [c for c in claims if c["metadata"].get("deletionTimestamp")]
        claimed = {str(c.get("status", {}).get("providerID", "")) for c in claims}
        nodes = {str(n["spec"].get("providerID")) for n in self.fake.objects("Node")}
        assert "" not in claimed, "a NodeClaim not launched"
        assert nodes == claimed, f"Nodes {sorted(nodes)}, NodeClaims' {sorted(claimed)}"
        return True

    def stop(self) -> None:
        self.served.stop()
