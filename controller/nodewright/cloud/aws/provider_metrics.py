"""The AWS provider's own metrics, as Karpenter v1.14.1 names and counts them:
launch failures per CreateFleet offering error (pkg/providers/instance/metrics.go),
TerminateInstances failures, and the rendered user data's size per EC2NodeClass
(pkg/providers/launchtemplate/metrics.go)."""

from __future__ import annotations

import contextlib
import logging
from typing import Final

from nodewright import metrics
from nodewright.cloud.aws.errors import reason_message

log = logging.getLogger(__name__)

# ec2:CreateLaunchTemplate's user data limit. EC2 decides; we only warn as it comes near, so
# growth (CA bundles, custom user data) is seen before the launch template is refused.
USER_DATA_MAX_BYTES: Final = 16384
USER_DATA_WARN_BYTES: Final = USER_DATA_MAX_BYTES * 9 // 10


def launch_failed(zone: str, zone_id: str, capacity_type: str, code: str, message: str) -> None:
    """One CreateFleet error (one offering), its reason as Karpenter's ToReasonMessage."""
    reason = reason_message(f"{code}: {message}")[0]
    metrics.INSTANCE_LAUNCH_FAILURES.labels(zone, zone_id, capacity_type, reason).inc()


def termination_failed(zone: str, zone_id: str) -> None:
    metrics.INSTANCE_TERMINATION_FAILURES.labels(zone, zone_id).inc()


def user_data_rendered(node_class: str, user_data: str) -> None:
    """The raw (pre-base64) size, measured before CreateLaunchTemplate so an oversized
    rendering is reported even though EC2 refuses it."""
    size = len(user_data.encode())
    metrics.EC2NODECLASS_USERDATA_BYTES.labels(node_class).set(size)
    if size >= USER_DATA_WARN_BYTES:
        log.warning("EC2NodeClass %s: rendered user data is %d bytes, near EC2's %d-byte limit",
                    node_class, size, USER_DATA_MAX_BYTES)


def node_class_gone(node_class: str) -> None:
    """Removed, not zeroed: a deleted node class must not look like one with empty user data."""
    with contextlib.suppress(KeyError):
        metrics.EC2NODECLASS_USERDATA_BYTES.remove(node_class)
