"""Garbage collection: the decisions are pure functions; the deletions are thin calls."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final

from nodewright.cloud.aws import tags as tag_keys
from nodewright.cloud.aws.instance_profiles import OwnedProfile
from nodewright.cloud.aws.launch_templates import OwnedTemplate
from nodewright.cloud.provider import Instance

# Younger instances may belong to a NodeClaim whose status is not written yet.
MIN_ORPHAN_AGE: Final = timedelta(seconds=30)


@dataclass(frozen=True)
class Orphan:
    instance: Instance
    why: str


def orphaned_instances(
    instances: Sequence[Instance],
    known_provider_ids: Collection[str],
    known_nodeclaims: Collection[str],
    now: datetime,
) -> list[Orphan]:
    """Cluster instances that no NodeClaim accounts for (neither by providerID nor by the
    name tag of a NodeClaim still launching) and that are older than 30 s."""
    orphans: list[Orphan] = []
    for instance in instances:
        if instance.provider_id in known_provider_ids:
            continue
        if instance.nodeclaim_name and instance.nodeclaim_name in known_nodeclaims:
            continue
        if now - instance.launch_time < MIN_ORPHAN_AGE:
            continue
        orphans.append(
            Orphan(
                instance,
                f"instance {instance.instance_id} (nodeclaim "
                f"{instance.nodeclaim_name or '?'}) has no NodeClaim",
            )
        )
    return orphans


def unreferenced_templates(
    templates: Sequence[OwnedTemplate], node_classes: Collection[str],
    recently_used: Collection[str] | None = None,
) -> list[OwnedTemplate]:
    """Templates whose node class no longer exists, and (given `recently_used`, the names
    launched with lately) templates no launch used lately: Karpenter deletes a launch
    template once it has gone unused for its cache's TTL, so an AMI change or a new
    configuration leaves nothing behind. (A launch that needs one again recreates it.)"""
    return [
        template
        for template in templates
        if template.tags.get(tag_keys.NODECLASS) not in node_classes
        or (recently_used is not None and template.name not in recently_used)
    ]


def unreferenced_profiles(
    profiles: Sequence[OwnedProfile], node_classes: Collection[str],
    with_role: Collection[str] | None = None, in_use: Collection[str] = (),
) -> list[OwnedProfile]:
    """Profiles we created for node classes that no longer exist; and, given `with_role`
    (the node classes that still launch with a `role`), those of node classes that dropped
    their role for an `instanceProfile`. A profile a live instance runs with is kept."""
    return [
        profile for profile in profiles
        if profile.name not in in_use and (
            profile.node_class not in node_classes
            or (with_role is not None and profile.node_class not in with_role))
    ]
