"""Karpenter's own API test cases on a real API server: a sample of the NodePool,
NodeClaim, NodeOverlay and CapacityBuffer cases ported from kubernetes-sigs/karpenter
v1.14.1 (`pkg/apis/v1/nodepool_validation_cel_test.go`, `nodeclaim_validation_cel_test.go`,
`pkg/apis/v1alpha1/nodeoverlay_validation_test.go`, `pkg/apis/autoscaling/v1beta1/
suite_test.go`) is sent to the real Kubernetes with Nodewright's CRDs installed and to an
in-memory cluster emulating the same version; both must decide as Karpenter's test expects.
The unit tests (tests/api/test_*_karpenter.py) run every case in memory; this story checks
that the in-memory answers are the real server's."""

from __future__ import annotations

import contextlib
import copy
import itertools
from collections.abc import Iterator
from typing import Any

import pytest

from nodewright.cluster.api import ApiError, ClusterAPI, NotFoundError
from nodewright.cluster.kube.cluster import KubeCluster, connect
from nodewright.cluster.memory import InMemoryCluster
from nodewright.runtime.clock import VirtualClock
from tests.api import (
    test_capacitybuffer_crd_karpenter,
    test_nodeclaim_cel_karpenter,
    test_nodeoverlay_cel_karpenter,
    test_nodepool_cel_karpenter,
)
from tests.e2e.harness import ControlPlane, Installation

EVERY = 5  # every fifth case of each file: a sample across every Context


def sample() -> list[tuple[str, dict[str, Any], bool]]:
    """(Karpenter It / Entry, body, admitted) for the sampled cases."""
    found: list[tuple[str, dict[str, Any], bool]] = []
    for module in (test_nodepool_cel_karpenter, test_nodeclaim_cel_karpenter,
                   test_nodeoverlay_cel_karpenter):
        for case in module.CASES[::EVERY]:
            found += [(case[0], body, case[2]) for body in case[1]]
    for karpenter, spec, admit in test_capacitybuffer_crd_karpenter.CASES[::EVERY]:
        found.append((karpenter, test_capacitybuffer_crd_karpenter.buffer(**spec), admit))
    return found


@pytest.fixture
def real(control_plane: ControlPlane, installation: Installation) -> Iterator[KubeCluster]:
    cluster = KubeCluster(connect(str(control_plane.kubeconfig)), cached_kinds=())
    yield cluster
    cluster.close()


def accepted(cluster: ClusterAPI, body: dict[str, Any], name: str) -> bool:
    obj = copy.deepcopy(body)
    obj["metadata"]["name"] = name
    try:
        cluster.create(obj)
    except ApiError as error:
        assert error.status == 422, error.message
        return False
    with contextlib.suppress(NotFoundError):
        cluster.delete(obj["kind"], name, obj["metadata"].get("namespace"))
    return True


def test_karpenters_api_cases_are_decided_alike_by_the_real_and_the_in_memory_server(
        real: KubeCluster, control_plane: ControlPlane) -> None:
    memory = InMemoryCluster(VirtualClock(), kubernetes_version=control_plane.version)
    names = (f"karpenter-case-{index}" for index in itertools.count())
    wrong = []
    for karpenter, body, admit in sample():
        name = next(names)
        there, here = accepted(real, body, name), accepted(memory, body, name)
        if (there, here) != (admit, admit):
            wrong.append(f"{karpenter}: Karpenter expects {admit}, the API server said "
                         f"{there}, in memory {here}")
    assert not wrong, "\n".join(wrong)
