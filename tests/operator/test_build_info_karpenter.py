"""Karpenter's operator suite, ported: kubernetes-sigs/karpenter v1.14.1
pkg/operator/suite_test.go, It("should fire a metric with the build_info").

`nodewright controller` (here with --cloud sim, against a stubbed API server) serves
karpenter_build_info = 1 on its metrics port from the start, labeled with the version it
runs. Karpenter labels it with version, goversion, goarch and commit; Nodewright's has the
version only (docs/metrics.md): a Python process has no Go version or architecture to
report and knows no commit."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
import yaml

from nodewright import __version__, metrics
from nodewright.install import InstallSettings
from nodewright.operator.main import ControllerProcess
from tests.conftest import EXAMPLES
from tests.kube.apiserver import Authorizer, FakeApiServer
from tests.operator.test_controller_process import NAMESPACE, controller_process, http_get


@pytest.fixture
def process() -> Iterator[ControllerProcess]:
    settings = InstallSettings(cluster_name="demo", cloud="sim", namespace=NAMESPACE)
    server = FakeApiServer(Authorizer.for_install(settings))
    for name in ("nodepool.yaml", "ec2nodeclass.yaml"):
        for body in yaml.safe_load_all((EXAMPLES / "workshop" / name).read_text()):
            server.seed(body)
    metrics.BUILD_INFO.clear()  # what this process serves, not an earlier one's
    started = controller_process(server, leader_elect=False)
    started.start()
    yield started
    started.shutdown(timeout=5)
    server.close()


def test_the_controller_serves_its_build_info(process: ControllerProcess) -> None:
    """It("should fire a metric with the build_info")."""
    assert process.metrics is not None
    status, text = http_get(process.metrics.port, "/metrics")
    assert status == 200
    found = re.findall(r"^karpenter_build_info\{(.*)\} (\S+)$", text, re.MULTILINE)
    assert len(found) == 1
    labels, value = found[0]
    assert float(value) == 1.0
    assert dict(re.findall(r'(\w+)="([^"]*)"', labels)) == {"version": __version__}
