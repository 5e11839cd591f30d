"""Garbage collection: the decisions are pure functions; the deletions are thin calls."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

from nodewright.cloud.aws import tags as tag_keys
from nodewright.cloud.aws.instance_profiles import OwnedProfile
from nodewright.cloud.aws.launch_templates import OwnedTemplate


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
    current: Collection[str] | None = None, active: Collection[str] = (),
    protected: Callable[[str], bool] = lambda _: False,
) -> list[OwnedProfile]:
    """Profiles we created that nothing needs (Karpenter's shouldDeleteProfile): not named
    by a node class's status (`current`), not launched with by a live NodeClaim (`active`),
    not protected. Without `current`, only profiles of node classes that are gone."""
    return [
        profile for profile in profiles
        if profile.name not in active and not protected(profile.name) and (
            profile.name not in current if current is not None
            else profile.node_class not in node_classes)
    ]
