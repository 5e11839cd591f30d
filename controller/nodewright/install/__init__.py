"""The install manifests (CRDs, namespace, RBAC, Deployment, PDB, metrics Service), shared
by `nodewright manifests` and infra/ so the two cannot drift apart."""

from nodewright.install.objects import render, render_yaml
from nodewright.install.settings import InstallSettings

__all__ = ["InstallSettings", "render", "render_yaml"]
