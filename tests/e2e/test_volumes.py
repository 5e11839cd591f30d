"""A pod whose claim is bound to a zonal volume, on a real control plane: the
PersistentVolume controller of kube-controller-manager binds the claim to the
pre-provisioned volume, Nodewright (as the manifests' ServiceAccount, which may read
claims, volumes and classes) launches the node in the volume's zone, and kube-scheduler
binds the pod there."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.conftest import StartController
from tests.e2e.fleet import WORKSHOP
from tests.e2e.harness import ControlPlane, Installation, eventually

ZONE = "topology.kubernetes.io/zone"

STORAGE = """
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: e2e-static}
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: WaitForFirstConsumer
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: e2e-pv-c}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: e2e-static
  csi: {driver: ebs.csi.aws.com, volumeHandle: vol-0123456789abcdef0}
  nodeAffinity:
    required:
      nodeSelectorTerms:
        - matchExpressions:
            - {key: topology.kubernetes.io/zone, operator: In, values: [us-east-1c]}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: e2e-data, namespace: default}
spec:
  storageClassName: e2e-static
  volumeName: e2e-pv-c
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: Pod
metadata: {name: e2e-db, namespace: default}
spec:
  nodeSelector: {type: karpenter}
  containers:
    - name: db
      image: public.ecr.aws/docker/library/postgres:16
      resources: {requests: {cpu: 500m, memory: 512Mi}}
      volumeMounts: [{name: data, mountPath: /data}]
  volumes: [{name: data, persistentVolumeClaim: {claimName: e2e-data}}]
"""


@pytest.fixture
def storage(control_plane: ControlPlane) -> Iterator[None]:
    yield
    for args in (("pod", "e2e-db", "-n", "default"), ("pvc", "e2e-data", "-n", "default"),
                 ("pv", "e2e-pv-c"), ("storageclass", "e2e-static")):
        control_plane.kubectl("delete", *args, "--ignore-not-found", "--wait=false",
                              check=False)


def test_a_pod_gets_its_node_in_its_volumes_zone(
        control_plane: ControlPlane, installation: Installation, start: StartController,
        storage: None) -> None:
    plane = control_plane
    plane.apply(WORKSHOP)
    plane.apply(STORAGE)
    start()

    def bound_in_zone_c() -> bool:
        pod = plane.get("pod", "e2e-db", "-n", "default")
        node_name = pod["spec"].get("nodeName")
        assert node_name, "not bound yet"
        node = plane.get("node", node_name)
        assert node["metadata"]["labels"][ZONE] == "us-east-1c"
        return True

    eventually(bound_in_zone_c, timeout=120, what="the pod bound to a node in us-east-1c")
    claims = [c for c in plane.items("nodeclaims.karpenter.sh")
              if not c["metadata"].get("deletionTimestamp")]
    assert len(claims) == 1
