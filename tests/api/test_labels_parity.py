"""The label keys a NodePool and a pod may name in the karpenter.k8s.aws domain, as in the
AWS provider v1.14.1.

Two lists decide it there. The CRDs' CEL rule 'label domain "karpenter.k8s.aws" is
restricted' (aws/karpenter-provider-aws v1.14.1 pkg/apis/crds/karpenter.sh_nodepools.yaml
lines 230-231 and 299-300, karpenter.sh_nodeclaims.yaml 136-137) lets through the
well-known instance labels and karpenter.k8s.aws/ec2nodeclass. Karpenter's
WellKnownLabels (pkg/apis/v1/labels.go lines 31-62, init) do not have the node class label,
so IsRestrictedLabel (kubernetes-sigs/karpenter v1.14.1 pkg/apis/v1/labels.go 137-153)
refuses it: a NodePool naming it fails RuntimeValidate (nodepool_validation.go 27-48,
nodeclaim_validation.go 125), and the provisioner ignores a pod selecting it
(provisioner.go 561-655). Neither list has karpenter.k8s.aws/nitro-sandbox (a label of
later releases).

Before, Nodewright let nitro-sandbox through everywhere, and let a NodePool or a pod use
the node class label without complaint."""

from __future__ import annotations

from typing import Any

import yaml

from nodewright.api.crds import generate_crds
from nodewright.api.manifests import Document
from nodewright.api.nodepool import NodePool
from nodewright.api.rules import check_nodepool_runtime
from nodewright.api.validation import parse_document
from nodewright.cluster import objects
from nodewright.scheduling.podvalidation import validation_problem
from tests.controllers.conftest import WORKSHOP
from tests.harness import NODE_CLASS, World, node_pool

NITRO_SANDBOX = "karpenter.k8s.aws/nitro-sandbox"
NODECLASS = "karpenter.k8s.aws/ec2nodeclass"
# The list of the v1.14.1 NodePool and NodeClaim CRDs' karpenter.k8s.aws rule.
KARPENTER_CRD_AWS_KEYS = {
    f"karpenter.k8s.aws/{name}"
    for name in (
        "instance-tenancy",
        "capacity-reservation-type",
        "capacity-reservation-id",
        "capacity-reservation-interruptible",
        "ec2nodeclass",
        "instance-encryption-in-transit-supported",
        "instance-category",
        "instance-hypervisor",
        "instance-family",
        "instance-generation",
        "instance-local-nvme",
        "instance-size",
        "instance-cpu",
        "instance-cpu-manufacturer",
        "instance-cpu-sustained-clock-speed-mhz",
        "instance-memory",
        "instance-ebs-bandwidth",
        "instance-network-bandwidth",
        "instance-gpu-name",
        "instance-gpu-manufacturer",
        "instance-gpu-count",
        "instance-gpu-memory",
        "instance-accelerator-name",
        "instance-accelerator-manufacturer",
        "instance-accelerator-count",
        "instance-capability-flex",
        "placement-group-id",
        "placement-group-partition",
    )
}


def _pool(
    requirements: list[dict[str, Any]] | None = None, labels: dict[str, str] | None = None
) -> dict[str, Any]:
    body: dict[str, Any] = yaml.safe_load((WORKSHOP / "nodepool.yaml").read_text())
    template = body["spec"]["template"]
    template["spec"]["requirements"] += requirements or []
    if labels:
        template.setdefault("metadata", {}).setdefault("labels", {}).update(labels)
    return body


def _problems(body: dict[str, Any]) -> list[tuple[str, str]]:
    _, problems = parse_document(Document("pool.yaml", 1, body))
    return [(problem.path, problem.message) for problem in problems]


def _aws_rule_keys(kind: str) -> set[str]:
    """The keys named by the CRD's 'label domain "karpenter.k8s.aws"' rules."""
    (crd,) = [c for c in generate_crds() if c["spec"]["names"]["kind"] == kind]
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for rule in node.get("x-kubernetes-validations") or []:
                if rule.get("message") == 'label domain "karpenter.k8s.aws" is restricted':
                    listed = rule["rule"].split(" in [", 1)[1].split("]", 1)[0]
                    found.update(key.strip(" '\"") for key in listed.split(","))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(crd)
    return found


def test_the_crds_let_through_the_same_aws_keys_as_karpenters() -> None:
    assert _aws_rule_keys("NodePool") == KARPENTER_CRD_AWS_KEYS
    assert _aws_rule_keys("NodeClaim") == KARPENTER_CRD_AWS_KEYS


def test_a_nodepool_requiring_nitro_sandbox_is_refused() -> None:
    body = _pool([{"key": NITRO_SANDBOX, "operator": "In", "values": ["true"]}])
    assert (
        "spec.template.spec.requirements[6].key",
        'label domain "karpenter.k8s.aws" is restricted',
    ) in _problems(body)


def test_a_nodepool_labelled_nitro_sandbox_is_refused() -> None:
    body = _pool(labels={NITRO_SANDBOX: "true"})
    assert (
        f"spec.template.metadata.labels[{NITRO_SANDBOX}]",
        'label domain "karpenter.k8s.aws" is restricted',
    ) in _problems(body)


def test_a_nodepool_requiring_the_node_class_label_passes_the_crd_but_not_runtime() -> None:
    """The CRD admits it; RuntimeValidate's IsRestrictedLabel does not (ValidationSucceeded
    False, nothing launches from the NodePool)."""
    body = _pool([{"key": NODECLASS, "operator": "In", "values": ["default"]}])
    pool = NodePool.model_validate(body)

    ((path, message),) = check_nodepool_runtime(pool)

    assert path == ("spec", "template", "spec", "requirements", 6, "key")
    assert message.startswith(
        f"invalid value: using label {NODECLASS} is not allowed as "
        "it might interfere with the internal provisioning logic; "
        "specify a well known label: ["
    )
    assert message.endswith(
        "], or a custom label that does not use a restricted domain: "
        "[karpenter.k8s.aws karpenter.sh] in requirements, restricted"
    )


def test_a_nodepool_labelled_with_the_node_class_label_fails_runtime_validation() -> None:
    pool = NodePool.model_validate(_pool(labels={NODECLASS: "default"}))

    ((path, message),) = check_nodepool_runtime(pool)

    assert path == ("spec", "template", "metadata", "labels", NODECLASS)
    assert message.startswith(
        f'invalid key name "{NODECLASS}" in labels, using label {NODECLASS} is not allowed'
    )


def test_the_nodepool_status_says_why_it_launches_nothing() -> None:
    world = World()
    world.apply(
        NODE_CLASS,
        node_pool(requirements=[{"key": NODECLASS, "operator": "In", "values": ["default"]}]),
    )
    world.advance(5)

    pool = world.cluster.get("NodePool", "default")
    (validation,) = [c for c in objects.conditions(pool) if c["type"] == "ValidationSucceeded"]
    assert validation["status"] == "False"
    assert validation["reason"] == "NodePoolValidationFailed"
    assert f"using label {NODECLASS} is not allowed" in validation["message"]


def test_a_pod_selecting_the_node_class_label_is_ignored() -> None:
    problem = validation_problem({"nodeSelector": {NODECLASS: "default"}})
    assert problem is not None
    assert problem.startswith(f"using label {NODECLASS} is not allowed")


def test_a_pod_selecting_nitro_sandbox_is_ignored() -> None:
    problem = validation_problem({"nodeSelector": {NITRO_SANDBOX: "true"}})
    assert problem is not None
    assert problem.startswith(f"using label {NITRO_SANDBOX} is not allowed")


def test_the_refusal_lists_karpenters_well_known_labels() -> None:
    """sets.List(WellKnownLabels): the zone ID label is one (the AWS provider's init),
    the node class label is not."""
    problem = validation_problem({"nodeSelector": {"karpenter.sh/foo": "x"}})
    assert problem is not None
    known = problem.split("specify a well known label: [", 1)[1].split("]", 1)[0].split()
    assert "topology.k8s.aws/zone-id" in known
    assert NODECLASS not in known and NITRO_SANDBOX not in known
    assert known == sorted(known)


def test_a_pod_selecting_an_instance_family_is_planned_for() -> None:
    assert validation_problem({"nodeSelector": {"karpenter.k8s.aws/instance-family": "m5"}}) is None
