"""User data per AMI family: AL2023 (nodeadm), AL2 (bootstrap.sh), Bottlerocket (TOML),
Windows (PowerShell, Start-EKSBootstrap.ps1), Custom (the user's, unchanged)."""

from __future__ import annotations

from nodewright.cloud.aws.userdata import al2, al2023, bottlerocket, windows
from nodewright.cloud.aws.userdata.bootstrap import (
    ClusterInfo,
    KubeletSettings,
    NodeBootstrap,
    NodeTaint,
    UserDataError,
)


class UnsupportedFamilyError(ValueError):
    pass


def render_user_data(ami_family: str, bootstrap: NodeBootstrap) -> str:
    if ami_family == "AL2023":
        return al2023.render(bootstrap)
    if ami_family == "AL2":
        return al2.render(bootstrap)
    if ami_family == "Bottlerocket":
        return bottlerocket.render(bootstrap)
    if ami_family.startswith("Windows"):
        return windows.render(bootstrap)
    if ami_family == "Custom":
        return bootstrap.custom_user_data or ""
    raise UnsupportedFamilyError(
        f"spec.amiFamily: {ami_family} user data is not supported "
        "(supported: AL2023, AL2, Bottlerocket, Windows2019, Windows2022, Windows2025, Custom)"
    )


__all__ = [
    "ClusterInfo",
    "KubeletSettings",
    "NodeBootstrap",
    "NodeTaint",
    "UnsupportedFamilyError",
    "UserDataError",
    "render_user_data",
]
