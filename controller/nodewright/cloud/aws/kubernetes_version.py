"""The Kubernetes versions Karpenter v1.14.1 supports (pkg/providers/version/version.go):
1.26 to 1.36. As Karpenter's version controller, a version outside the range is reported
once, as an error in the log, each time a new version is discovered; nothing is refused
(the version is still the one AMI aliases resolve for), so an upgraded cluster keeps its
nodes while the operator reads why it should upgrade the controller."""

from __future__ import annotations

import logging
import threading
from typing import Final

log = logging.getLogger(__name__)

MIN_K8S_VERSION: Final = "1.26"
MAX_K8S_VERSION: Final = "1.36"


def _minor(version: str) -> tuple[int, int] | None:
    parts = version.strip().removeprefix("v").split(".")
    if len(parts) < 2 or not parts[0].isdigit():
        return None
    minor = parts[1].rstrip("+")
    return (int(parts[0]), int(minor)) if minor.isdigit() else None


def compatibility_problem(version: str) -> str | None:
    """Why the controller is not made for `version`, or None when it is."""
    parsed = _minor(version)
    if parsed is None:
        return f"kubernetes version {version!r} is not of the form <major>.<minor>"
    low, high = _minor(MIN_K8S_VERSION), _minor(MAX_K8S_VERSION)
    assert low is not None and high is not None
    if parsed < low or parsed > high:
        return (f"karpenter is not compatible with kubernetes version {version} "
                f"(supported: {MIN_K8S_VERSION} to {MAX_K8S_VERSION})")
    return None


class VersionWatch:
    """Remembers the version last discovered; a new one is logged, and reported as an error
    when out of the supported range (Karpenter's ChangeMonitor on "kubernetes-version")."""

    def __init__(self) -> None:
        self._last: str | None = None
        self._lock = threading.Lock()

    def observe(self, version: str) -> str:
        with self._lock:
            if version == self._last:
                return version
            self._last = version
        log.debug("discovered kubernetes version", extra={"version": version})
        problem = compatibility_problem(version)
        if problem is not None:
            log.error("validating kubernetes version, %s", problem, extra={"version": version})
        return version
