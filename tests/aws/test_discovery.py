"""Discovery: selector terms resolve to exactly the matching subnets, groups and AMIs."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from botocore.exceptions import ClientError

from nodewright.cloud.aws.actions import AWS_ACTIONS
from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.node_class_resolution import resolve_node_class

from .conftest import CallRecorder
from .world import CLUSTER, K8S_VERSION, X86_IMAGE, build_world, node_class


def test_tagged_subnets_groups_and_alias_amis_resolve(
    clients: AwsClients, recorder: CallRecorder
) -> None:
    world = build_world(clients)
    recorder.actions.clear()

    resolution = resolve_node_class(
        clients, node_class(), cluster=CLUSTER, kubernetes_version=K8S_VERSION
    )

    assert {s.id for s in resolution.subnets} == set(world.subnets.values())
    assert {s.zone for s in resolution.subnets} == set(world.subnets)
    assert [g.id for g in resolution.security_groups] == [world.security_group]
    assert {(i.architecture, i.id) for i in resolution.images} == {
        ("amd64", X86_IMAGE),
        ("arm64", world.arm_image),
    }
    assert resolution.instance_profile is not None and resolution.instance_profile.startswith(
        f"{CLUSTER}_"
    )
    assert resolution.ready
    assert {c.type: c.status for c in resolution.conditions()} == {
        "SubnetsReady": "True",
        "SecurityGroupsReady": "True",
        "AMIsReady": "True",
        "InstanceProfileReady": "True",
        "CapacityReservationsReady": "True",
        "PlacementGroupReady": "True",
        "ValidationSucceeded": "True",
        "Ready": "True",
    }
    assert set(recorder.actions) <= {use.action for use in AWS_ACTIONS}


def test_instance_profile_is_created_once_tagged_and_holds_the_role(clients: AwsClients) -> None:
    build_world(clients)
    first = resolve_node_class(
        clients, node_class(), cluster=CLUSTER, kubernetes_version=K8S_VERSION
    )
    again = resolve_node_class(
        clients, node_class(), cluster=CLUSTER, kubernetes_version=K8S_VERSION
    )

    assert first.instance_profile == again.instance_profile
    profile = clients.iam.get_instance_profile(InstanceProfileName=str(first.instance_profile))[
        "InstanceProfile"
    ]
    assert [role["RoleName"] for role in profile["Roles"]] == ["KarpenterNodeRole-demo"]
    assert profile["Path"] == f"/nodewright/{CLUSTER}/"
    tags = {t["Key"]: t["Value"] for t in profile.get("Tags", [])}
    assert tags == {
        "team": "payments",  # the node class's spec.tags, as Karpenter's InstanceProfileTags
        f"kubernetes.io/cluster/{CLUSTER}": "owned",
        "eks:eks-cluster-name": CLUSTER,
        "topology.kubernetes.io/region": clients.region,
        "karpenter.k8s.aws/ec2nodeclass": "default",
    }


class StaleFirstRead:
    """An IAM client whose first GetInstanceProfile answers what was true before another
    replica wrote: `stale` (None: the profile did not exist yet)."""

    def __init__(self, iam: Any, stale: dict[str, Any] | None) -> None:
        self._iam, self._stale, self._read = iam, stale, False

    def get_instance_profile(self, **kwargs: Any) -> Any:
        if self._read:
            return self._iam.get_instance_profile(**kwargs)
        self._read = True
        if self._stale is None:
            raise ClientError({"Error": {"Code": "NoSuchEntity", "Message": "not found"}},
                              "GetInstanceProfile")
        return {"InstanceProfile": self._stale}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._iam, name)


@pytest.mark.parametrize("stale", [None, {"Roles": []}], ids=["not-created", "no-role"])
def test_a_replica_that_read_before_another_created_the_profile_still_gets_it_ready(
        clients: AwsClients, stale: dict[str, Any] | None) -> None:
    build_world(clients)
    first = resolve_node_class(clients, node_class(), cluster=CLUSTER,
                               kubernetes_version=K8S_VERSION)
    # The second replica's read came before the first one's writes: its create answers
    # EntityAlreadyExists, or its AddRoleToInstanceProfile LimitExceeded.
    late = dataclasses.replace(clients, iam=StaleFirstRead(clients.iam, stale))
    second = resolve_node_class(late, node_class(), cluster=CLUSTER,
                                kubernetes_version=K8S_VERSION)

    assert second.problems == {}
    assert second.ready and second.instance_profile == first.instance_profile


def test_terms_or_and_fields_and_and_wildcards_match_any_value(clients: AwsClients) -> None:
    world = build_world(clients)
    zone_a = f"{clients.region}a"
    spec = node_class(
        subnetSelectorTerms=[{"id": world.subnets[zone_a]}, {"tags": {"team": "*"}}],
        securityGroupSelectorTerms=[{"name": "unrelated"}],
    ).spec
    resolution = resolve_node_class(
        clients,
        node_class(**spec.model_dump(by_alias=True, exclude_none=True)),
        cluster=CLUSTER,
        kubernetes_version=K8S_VERSION,
    )
    assert {s.id for s in resolution.subnets} == {world.subnets[zone_a], world.other_subnet}
    assert [g.id for g in resolution.security_groups] == [world.other_security_group]


def test_a_term_that_matches_nothing_is_named(clients: AwsClients) -> None:
    build_world(clients)
    resolution = resolve_node_class(
        clients,
        node_class(
            subnetSelectorTerms=[
                {"tags": {"karpenter.sh/discovery": CLUSTER}},
                {"tags": {"karpenter.sh/discovery": "typo"}},
            ],
            amiSelectorTerms=[{"alias": "bottlerocket@v1.99.0"}],
        ),
        cluster=CLUSTER,
        kubernetes_version=K8S_VERSION,
    )
    described = [term.describe() for term in resolution.unmatched]
    assert described == [
        "subnetSelectorTerms[1] {'tags': {'karpenter.sh/discovery': 'typo'}} matched nothing",
        "amiSelectorTerms[0] {'alias': 'bottlerocket@v1.99.0'} matched nothing",
    ]
    conditions = {c.type: c for c in resolution.conditions()}
    assert conditions["AMIsReady"].status == "False"
    assert "bottlerocket@v1.99.0" in str(conditions["AMIsReady"].message)
    assert conditions["Ready"].status == "False"
    assert conditions["SubnetsReady"].status == "True"


def test_ami_terms_by_id_and_by_name_pick_the_newest_per_architecture(
    clients: AwsClients,
) -> None:
    world = build_world(clients)
    resolution = resolve_node_class(
        clients,
        node_class(
            amiFamily="AL2023",
            amiSelectorTerms=[{"id": world.arm_image}, {"name": "amazon-eks-node-linux"}],
        ),
        cluster=CLUSTER,
        kubernetes_version=K8S_VERSION,
    )
    assert {(i.architecture, i.id) for i in resolution.images} == {
        ("arm64", world.arm_image),
        ("amd64", X86_IMAGE),
    }


def test_a_kubelet_configuration_no_kubelet_could_read_fails_validation(
    clients: AwsClients,
) -> None:
    """The CRD stores evictionSoftGracePeriod's values as plain strings (Karpenter decodes
    them into a metav1.Duration): one that is not a duration sets ValidationSucceeded=False
    (InvalidKubeletConfiguration) and Ready=False, and the class launches nothing."""
    build_world(clients)
    al2 = node_class(amiSelectorTerms=[{"alias": "al2@latest"}],
                     kubelet={"evictionSoft": {"memory.available": "5%"},
                              "evictionSoftGracePeriod": {"memory.available": "-1m"}})

    resolution = resolve_node_class(clients, al2, cluster=CLUSTER, kubernetes_version=K8S_VERSION)

    assert not resolution.ready
    conditions = {c.type: c for c in resolution.conditions()}
    validation = conditions["ValidationSucceeded"]
    assert (validation.status, validation.reason) == ("False", "InvalidKubeletConfiguration")
    assert validation.message == (
        "spec.kubelet.evictionSoftGracePeriod[memory.available]: '-1m' can't be a negative "
        "duration")
    assert conditions["Ready"].status == "False"
    assert "ValidationSucceeded" in (conditions["Ready"].message or "")
