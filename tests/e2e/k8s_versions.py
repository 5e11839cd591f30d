"""Which Kubernetes versions the control plane of ../shared/k8s can run on this machine,
and where each keeps its state. Standard library only: `dev.py` reads it before the
project's virtual environment exists.

The script names its versions in SHA256SUMS (one `kubernetes-VERSION-linux-amd64.tar.xz`
each). A version is present when its tarball is in NW_K8S_TARBALL_DIR or its binaries were
already extracted into its state dir; NW_K8S_BIN_DIR holds the binaries of the one version
NW_K8S_VERSION names.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

_TARBALL = re.compile(r"^([0-9a-f]{64})\s+\*?kubernetes-(v[0-9.]+)-linux-amd64\.tar\.xz$")
_DEFAULT = re.compile(r"^K8S_DEFAULT_VERSION=(v[0-9.]+)", re.MULTILINE)


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.removeprefix("v").split("."))


def checksums(k8s_dir: Path) -> dict[str, str]:
    """Version -> the sha256 of its tarball, as the script's SHA256SUMS lists them."""
    try:
        lines = (k8s_dir / "SHA256SUMS").read_text().splitlines()
    except OSError:
        return {}
    found = (_TARBALL.match(line.strip()) for line in lines)
    return {match[2]: match[1] for match in found if match}


def script_default(k8s_dir: Path) -> str:
    """The version `control-plane` runs when NW_K8S_VERSION is unset."""
    try:
        found = _DEFAULT.search((k8s_dir / "control-plane").read_text())
    except OSError:
        found = None
    return found[1] if found else "v1.26.1"


def default_home(k8s_dir: Path, version: str, env: Mapping[str, str]) -> Path:
    """The state dir the script uses for `version` without NW_K8S_HOME: the default
    version keeps `${TMPDIR:-/tmp}/nw-k8s`, another `${TMPDIR:-/tmp}/nw-k8s-VERSION`, so
    both stay warm side by side."""
    base = Path(env.get("TMPDIR") or "/tmp")
    if version == script_default(k8s_dir):
        return base / "nw-k8s"
    return base / f"nw-k8s-{version}"


def tarball_dir(env: Mapping[str, str]) -> Path:
    if env.get("NW_K8S_TARBALL_DIR"):
        return Path(env["NW_K8S_TARBALL_DIR"])
    cache = env.get("XDG_CACHE_HOME") or str(Path(env.get("HOME") or "~").expanduser()
                                             / ".cache")
    return Path(cache) / "nw-k8s"


def present(k8s_dir: Path, env: Mapping[str, str] | None = None) -> list[str]:
    """The versions whose binaries are here, oldest first."""
    env = os.environ if env is None else env
    if env.get("NW_K8S_BIN_DIR"):
        return [env.get("NW_K8S_VERSION") or script_default(k8s_dir)]
    found = []
    for version, sha in checksums(k8s_dir).items():
        tarball = tarball_dir(env) / f"kubernetes-{version}-linux-amd64.tar.xz"
        extracted = default_home(k8s_dir, version, env) / "bin" / ".tarball-sha256"
        try:
            warm = extracted.read_text().strip() == sha
        except OSError:
            warm = False
        if tarball.is_file() or warm:
            found.append(version)
    return sorted(found, key=_key)


def chosen(k8s_dir: Path, env: Mapping[str, str] | None = None) -> str:
    """The version the stories run on: NW_K8S_VERSION when set, else the newest present,
    else the script's default (whose start then says what is missing)."""
    env = os.environ if env is None else env
    if env.get("NW_K8S_VERSION"):
        return env["NW_K8S_VERSION"]
    versions = present(k8s_dir, env)
    return versions[-1] if versions else script_default(k8s_dir)
