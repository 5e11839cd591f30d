"""How the end-to-end stories find their control plane: which Kubernetes version runs
(the newest whose binaries are here), where its state lives, and what a failed start
means (a missing prerequisite skips, anything else fails), with `dev.py test`'s closing
line saying which happened."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

import dev
from tests.e2e import k8s_versions
from tests.e2e.harness import start_control_plane

OLD, NEW = "v1.26.1", "v1.33.3"


@pytest.fixture
def k8s_dir(tmp_path: Path) -> Path:
    """A control-plane folder as ../shared/k8s lays it out: the script and SHA256SUMS."""
    folder = tmp_path / "k8s"
    folder.mkdir()
    (folder / "control-plane").write_text(f"#!/bin/sh\nK8S_DEFAULT_VERSION={OLD}\n")
    sums = "".join(f"{sha(version)}  kubernetes-{version}-linux-amd64.tar.xz\n"
                   for version in (OLD, NEW))
    (folder / "SHA256SUMS").write_text(sums)
    return folder


def sha(version: str) -> str:
    return hashlib.sha256(version.encode()).hexdigest()


def machine(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"HOME": str(tmp_path / "home"), "TMPDIR": str(tmp_path / "tmp"), **extra}


def test_without_binaries_nothing_is_present_and_the_scripts_default_is_tried(
        k8s_dir: Path, tmp_path: Path) -> None:
    env = machine(tmp_path)
    assert k8s_versions.present(k8s_dir, env) == []
    assert k8s_versions.chosen(k8s_dir, env) == OLD


def test_the_newest_tarball_present_is_chosen(k8s_dir: Path, tmp_path: Path) -> None:
    env = machine(tmp_path)
    cache = tmp_path / "home" / ".cache" / "nw-k8s"
    cache.mkdir(parents=True)
    for version in (OLD, NEW):
        (cache / f"kubernetes-{version}-linux-amd64.tar.xz").write_bytes(b"x")
    assert k8s_versions.present(k8s_dir, env) == [OLD, NEW]
    assert k8s_versions.chosen(k8s_dir, env) == NEW
    assert k8s_versions.chosen(k8s_dir, {**env, "NW_K8S_VERSION": OLD}) == OLD


def test_binaries_already_extracted_into_a_versions_state_dir_count_as_present(
        k8s_dir: Path, tmp_path: Path) -> None:
    env = machine(tmp_path)
    warm = tmp_path / "tmp" / f"nw-k8s-{NEW}" / "bin"
    warm.mkdir(parents=True)
    (warm / ".tarball-sha256").write_text(sha(NEW) + "\n")
    stale = tmp_path / "tmp" / "nw-k8s" / "bin"
    stale.mkdir(parents=True)
    (stale / ".tarball-sha256").write_text(sha("another build") + "\n")
    assert k8s_versions.present(k8s_dir, env) == [NEW]


def test_each_version_keeps_its_own_state_dir(k8s_dir: Path, tmp_path: Path) -> None:
    env = machine(tmp_path)
    assert k8s_versions.default_home(k8s_dir, OLD, env) == tmp_path / "tmp" / "nw-k8s"
    assert k8s_versions.default_home(k8s_dir, NEW, env) == tmp_path / "tmp" / f"nw-k8s-{NEW}"


def test_a_bin_dir_holds_the_version_named(k8s_dir: Path, tmp_path: Path) -> None:
    env = machine(tmp_path, NW_K8S_BIN_DIR=str(tmp_path), NW_K8S_VERSION=NEW)
    assert k8s_versions.present(k8s_dir, env) == [NEW]


def fake_script(tmp_path: Path, exit_code: int, message: str) -> Path:
    script = tmp_path / "control-plane"
    script.write_text(f"""#!/bin/sh
[ "$1" = status ] && exit 1
echo "[control-plane 04:08:31] starting" >&2
echo "[control-plane 04:08:31] ERROR: {message}" >&2
exit {exit_code}
""")
    script.chmod(0o755)
    return script


def test_a_missing_prerequisite_is_a_reason_to_skip(tmp_path: Path) -> None:
    script = fake_script(tmp_path, 3, "no Kubernetes v1.26.1 binaries: the tarball is missing")
    plane, why_not, was_running = start_control_plane(script, tmp_path / "home")
    assert plane is None and not was_running
    assert why_not == ("local Kubernetes control plane: no Kubernetes v1.26.1 binaries: "
                       "the tarball is missing")


def test_a_control_plane_that_does_not_come_up_is_a_failure(tmp_path: Path) -> None:
    script = fake_script(tmp_path, 1, "kube-apiserver did not become ready")
    with pytest.raises(RuntimeError, match="kube-apiserver did not become ready"):
        start_control_plane(script, tmp_path / "home")


def status_file(tmp_path: Path, *entries: dict[str, str]) -> Path:
    path = tmp_path / "e2e-status.jsonl"
    path.write_text("".join(json.dumps(entry) + "\n" for entry in entries))
    return path


def test_the_closing_line_says_the_version_the_stories_ran_on(tmp_path: Path) -> None:
    path = status_file(tmp_path, {"ran": NEW}, {"ran": NEW})
    assert dev.e2e_summary(path, 0) == (
        f"e2e stories: ran on Kubernetes {NEW} (the real control plane of ../shared/k8s), "
        "passed")
    assert dev.e2e_summary(path, 1).endswith("FAILED")


def test_the_closing_line_says_why_the_stories_did_not_run(tmp_path: Path) -> None:
    path = status_file(tmp_path, {"skipped": "local Kubernetes control plane: no binaries"})
    assert dev.e2e_summary(path, 0) == (
        "e2e stories: SKIPPED, not run: local Kubernetes control plane: no binaries")
