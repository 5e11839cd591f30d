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
    templates: Sequence[OwnedTemplate], node_classes: Collection[str]
) -> list[OwnedTemplate]:
    """Templates whose node class no longer exists. (Templates of a live node class are kept
    even when unused: a launch may be about to reference them.)"""
    return [
        template
        for template in templates
        if template.tags.get(tag_keys.NODECLASS) not in node_classes
    ]


def unreferenced_profiles(
    profiles: Sequence[OwnedProfile], node_classes: Collection[str]
) -> list[OwnedProfile]:
    """Profiles we created for node classes that no longer exist."""
    return [profile for profile in profiles if profile.node_class not in node_classes]
