"""`nodewright plan` with storage manifests: a pod's claims pin it to its volume's zone
or its StorageClass's allowed zones (Karpenter's volume topology); a StatefulSet's
volumeClaimTemplates give each replica its claim; a pod whose claim cannot be used yet is
left out with a warning, as Karpenter leaves it."""

from __future__ import annotations

from nodewright.scheduling.planning import offline_catalogs, plan
from nodewright.scheduling.solver import SchedulingResult
from tests.scheduling.test_plan_workshop import workshop

CLASS = """\
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: gp3
  annotations: {storageclass.kubernetes.io/is-default-class: "true"}
provisioner: ebs.csi.aws.com
volumeBindingMode: WaitForFirstConsumer
allowedTopologies:
  - matchLabelExpressions:
      - {key: topology.ebs.csi.aws.com/zone, values: [us-east-1b]}
"""

BOUND = """\
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-c}
spec:
  capacity: {storage: 10Gi}
  accessModes: [ReadWriteOnce]
  csi: {driver: ebs.csi.aws.com, volumeHandle: vol-1}
  nodeAffinity:
    required:
      nodeSelectorTerms:
        - matchExpressions:
            - {key: topology.kubernetes.io/zone, operator: In, values: [us-east-1c]}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec: {storageClassName: gp3, volumeName: pv-c, accessModes: [ReadWriteOnce]}
---
apiVersion: v1
kind: Pod
metadata: {name: db}
spec:
  nodeSelector: {type: karpenter}
  containers: [{name: c, resources: {requests: {cpu: "1", memory: 1Gi}}}]
  volumes: [{name: data, persistentVolumeClaim: {claimName: data}}]
"""

STATEFULSET = """\
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 2
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      nodeSelector: {type: karpenter}
      containers: [{name: c, resources: {requests: {cpu: "1", memory: 1Gi}}}]
  volumeClaimTemplates:
    - metadata: {name: data}
      spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 10Gi}}}
"""

ORPHAN = """\
apiVersion: v1
kind: Pod
metadata: {name: orphan}
spec:
  nodeSelector: {type: karpenter}
  containers: [{name: c, resources: {requests: {cpu: "1", memory: 1Gi}}}]
  volumes: [{name: data, persistentVolumeClaim: {claimName: missing}}]
"""


def planned(*manifests: str) -> tuple[SchedulingResult, list[str]]:
    result, problems = plan(workshop(*manifests), offline_catalogs("us-east-1", None), {})
    assert [p.format() for p in problems if p.severity == "error"] == []
    assert result is not None
    return result, [p.format() for p in problems if p.severity == "warning"]


def test_a_bound_volume_puts_its_pod_in_the_volumes_zone() -> None:
    result, _ = planned(CLASS, BOUND)
    (claim,) = result.nodeclaims
    assert claim.zone == "us-east-1c" and claim.pods == ("default/db",)


def test_statefulset_replicas_get_claims_of_the_default_class_and_its_zones() -> None:
    result, _ = planned(CLASS, STATEFULSET)
    assert {claim.zone for claim in result.nodeclaims} == {"us-east-1b"}
    assert sorted(p for c in result.nodeclaims for p in c.pods) == ["default/db-0", "default/db-1"]


def test_a_pod_whose_claim_is_missing_is_left_out_with_a_warning() -> None:
    result, warnings = planned(CLASS, ORPHAN)
    assert result.nodeclaims == () and result.unschedulable == ()
    assert any('persistentvolumeclaim "missing" not found; Karpenter does not plan for this '
               "pod yet" in warning for warning in warnings)
