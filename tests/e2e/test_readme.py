"""README.md's "Running in a cluster" laptop steps with `--cloud sim`, run exactly as written
against the real control plane: the fenced block is read from the README (edit it and this
test runs the new text), each command through bash with `kubectl` being the control plane's
kubectl with the admin kubeconfig as ~/.kube/config and `nodewright` being `python -m
nodewright`. What the README promises: the inflate pods run on nodes that appear for them."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import STORY_NAMESPACES
from tests.e2e.harness import REPO_ROOT, ControlPlane, clean_cluster, eventually, free_port

README = REPO_ROOT / "README.md"
SECTION = "## Running in a cluster"


def laptop_block() -> list[str]:
    """The commands of the section's fenced block that runs the controller from a laptop
    (`--leader-elect=false`), continuation lines joined."""
    text = README.read_text()
    section = text[text.index(SECTION):]
    section = section[:section.index("\n## ", len(SECTION))]
    blocks = re.findall(r"```sh\n(.*?)```", section, flags=re.S)
    (block,) = [b for b in blocks if "--cloud sim" in b and "--leader-elect=false" in b]
    return [line.strip() for line in block.replace("\\\n", " ").splitlines() if line.strip()]


@pytest.fixture
def laptop(control_plane: ControlPlane, tmp_path: Path) -> Iterator[dict[str, str]]:
    """A shell environment where `kubectl` and `nodewright` are what a user has on PATH."""
    home = tmp_path / "home"
    (home / ".kube").mkdir(parents=True)
    (home / ".kube" / "config").write_text(control_plane.kubeconfig.read_text())
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrappers = {
        "kubectl": f'exec {shlex.quote(str(control_plane.home / "bin" / "kubectl"))} "$@"',
        "nodewright": f'exec {shlex.quote(sys.executable)} -m nodewright "$@"',
    }
    for name, body in wrappers.items():
        script = bin_dir / name
        script.write_text(f"#!/bin/sh\n{body}\n")
        script.chmod(0o755)
    env = {**os.environ, "HOME": str(home), "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
           "KUBECONFIG": str(home / ".kube" / "config"),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT / "controller"),
                                                       str(REPO_ROOT),
                                                       os.environ.get("PYTHONPATH")])),
           # Not in the README: ports of this test's own, on a machine others share.
           "METRICS_PORT": str(free_port()), "HEALTH_PROBE_PORT": str(free_port()),
           "NO_PROXY": "127.0.0.1,localhost"}
    for variable in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy",
                     "NODEWRIGHT_SIM_TIMING"):
        env.pop(variable, None)
    clean_cluster(control_plane, STORY_NAMESPACES)
    yield env
    clean_cluster(control_plane, STORY_NAMESPACES)


def test_the_readme_block_extracts_the_commands_a_user_types() -> None:
    commands = laptop_block()
    assert commands[0].startswith("nodewright manifests --cluster-name demo --cloud sim")
    assert any(c.startswith("nodewright controller --cloud sim") and c.endswith("&")
               for c in commands)
    assert commands[-1].startswith("kubectl get nodeclaims,nodes")


def inflate_running(plane: ControlPlane, replicas: int) -> list[dict[str, Any]]:
    pods = [p for p in plane.items("pods", "-n", "default", "-l", "app=inflate")
            if p["status"].get("phase") == "Running" and p["spec"].get("nodeName")]
    assert len(pods) == replicas, f"{len(pods)}/{replicas} inflate pods running"
    nodes = {n["metadata"]["name"] for n in plane.items("nodes")
             if n["metadata"].get("labels", {}).get("karpenter.sh/nodepool") == "default"}
    assert {p["spec"]["nodeName"] for p in pods} <= nodes, "pods on nodes nodewright made"
    return pods


def test_the_laptop_steps_work_as_written(control_plane: ControlPlane,
                                          laptop: dict[str, str], tmp_path: Path) -> None:
    background: list[subprocess.Popen[bytes]] = []
    try:
        for command in laptop_block():
            if command.endswith("&"):
                background.append(subprocess.Popen(
                    ["bash", "-c", f"exec {command[:-1]}"], cwd=tmp_path, env=laptop,
                    start_new_session=True))
                continue
            done = subprocess.run(["bash", "-c", command], cwd=REPO_ROOT, env=laptop,
                                  capture_output=True, text=True, timeout=120, check=False)
            assert done.returncode == 0, f"{command}\n{done.stderr}{done.stdout}"
        assert len(background) == 1 and background[0].poll() is None
        try:
            eventually(lambda: inflate_running(control_plane, 5), timeout=90,
                       what="the five inflate pods running on nodes Nodewright made")
        except AssertionError as error:
            log = (tmp_path / "nodewright.log").read_text(errors="replace")
            raise AssertionError(f"{error}\ncontroller log (last lines):\n"
                                 + "\n".join(log.splitlines()[-40:])) from error
        shown = subprocess.run(["bash", "-c", laptop_block()[-1]], cwd=REPO_ROOT, env=laptop,
                               capture_output=True, text=True, timeout=60, check=True).stdout
        assert "nodeclaim.karpenter.sh/default-" in shown and "node/ip-" in shown, shown
    finally:
        for process in background:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(30)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait(10)
    log = (tmp_path / "nodewright.log").read_text(errors="replace")
    assert "forbidden" not in log.lower(), log[-2000:]
