#!/usr/bin/env python3
"""Developer entry point: `python3 dev.py workshop` (the workshop scenario simulated, with
an HTML report in build/) and `python3 dev.py test`.

Needs only Python 3.11+. Creates ./.venv on first use and installs what the
command needs into it (again whenever a requirements file changes).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PYTHON = BIN / "python"
# What each command installs: the workshop needs the package and its report extra only;
# the tests need the whole toolchain (requirements-dev.txt, which includes the workshop's).
PROFILES: dict[str, list[str]] = {
    "workshop": ["-e", "./controller[report]"],
    "test": ["-r", "requirements-dev.txt"],
}
# A profile whose install also satisfies another.
COVERS = {"test": {"workshop"}}


def requirements_digest() -> str:
    digest = hashlib.sha256()
    for path in (ROOT / "requirements.txt", ROOT / "requirements-dev.txt",
                 ROOT / "controller" / "pyproject.toml"):
        digest.update(path.read_bytes())
    return digest.hexdigest()


def stamp(profile: str) -> Path:
    return VENV / f".installed-{profile}"


def ensure_venv(profile: str) -> None:
    if sys.version_info < (3, 11):  # noqa: UP036 - dev.py must run on any python3
        sys.exit(f"dev.py: Python 3.11 or newer is required, this is {sys.version.split()[0]}")
    if not PYTHON.exists():
        print(f"dev.py: creating {VENV}", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    wanted = requirements_digest()
    for installed in (profile, *(p for p, covered in COVERS.items() if profile in covered)):
        if stamp(installed).exists() and stamp(installed).read_text() == wanted:
            return
    print(f"dev.py: installing what `dev.py {profile}` needs into .venv "
          "(a few minutes the first time)", flush=True)
    quiet_pip("install", "--upgrade", "pip")
    quiet_pip("install", *PROFILES[profile])
    stamp(profile).write_text(wanted)


def quiet_pip(*args: str) -> None:
    """pip with its output kept back unless it fails."""
    completed = subprocess.run(
        [str(PYTHON), "-m", "pip", "-q", *args], cwd=ROOT, capture_output=True, text=True,
        check=False,
    )
    if completed.returncode != 0:
        sys.stderr.write(completed.stdout + completed.stderr)
        sys.exit(completed.returncode)


def run(command: list[str]) -> None:
    completed = subprocess.run(command, cwd=ROOT, check=False)
    if completed.returncode != 0:
        sys.exit(completed.returncode)


def nodewright(*args: str) -> None:
    print(f"\n$ nodewright {' '.join(args)}", flush=True)
    run([str(BIN / "nodewright"), *args])


def workshop() -> None:
    """The main command: the seed's workshop, simulated, with an HTML report."""
    ensure_venv("workshop")
    report = ROOT / "build" / "workshop.html"
    nodewright("simulate", "examples/scenarios/workshop.yaml", "--report",
               str(report.relative_to(ROOT)))
    print(f"\nOpen the report in a browser: {report.as_uri()}", flush=True)


BROWSERS = ("chromium", "chromium-browser", "google-chrome")


def ensure_browser() -> None:
    """In CI, install Debian's chromium for the report's browser test when it is missing.
    Best effort: without it that one test skips and says why."""
    if not os.environ.get("CI") or any(shutil.which(name) for name in BROWSERS):
        return
    if shutil.which("apt-get") is None or os.geteuid() != 0:
        return
    print("dev.py: installing chromium (Debian) for the report's browser test", flush=True)
    for command in (["apt-get", "update", "-qq"],
                    ["apt-get", "install", "-y", "-qq", "--no-install-recommends", "chromium"]):
        try:
            subprocess.run(command, check=True, capture_output=True, timeout=600,
                           env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
        except (subprocess.SubprocessError, OSError) as error:
            print(f"dev.py: could not install chromium ({error}); its test will skip", flush=True)
            return


def test(extra: list[str]) -> None:
    """The whole suite: ruff, mypy, pytest (with extra arguments: just pytest with them)."""
    ensure_venv("test")
    ensure_browser()
    print("$ ruff check .", flush=True)
    run([str(BIN / "ruff"), "check", "."])
    print("$ mypy", flush=True)
    run([str(BIN / "mypy")])
    print("$ python tools/dead_code.py", flush=True)
    run([str(PYTHON), str(ROOT / "tools" / "dead_code.py")])
    if extra:
        print(f"$ pytest {' '.join(extra)}", flush=True)
        run([str(PYTHON), "-m", "pytest", *extra])
        return
    # The unit, in-memory and simulator tests on two workers per core: many of them wait
    # on threads and timers (the operator, fault and lifecycle stories), so a second
    # worker per core keeps the cores busy. Then the end-to-end stories on two workers,
    # each with its own real control plane (../shared/k8s; a story owns its cluster's
    # cluster-scoped objects). The stories mostly wait on the cluster, so two at a time
    # take about half as long on 2 cores.
    workers = str(min(8, 2 * (os.cpu_count() or 1)))
    print(f"$ pytest -n {workers} --dist loadfile --ignore tests/e2e", flush=True)
    run([str(PYTHON), "-m", "pytest", "-n", workers, "--dist", "loadfile",
         "--ignore", "tests/e2e"])
    e2e_stories()


def shared_k8s() -> Path:
    shared = os.environ.get("NODEWRIGHT_SHARED_DIR") or str(ROOT.parent / "shared")
    return Path(shared) / "k8s"


def e2e_stories() -> None:
    """The end-to-end stories on the newest Kubernetes whose binaries are here (or the one
    NW_K8S_VERSION names), then one line saying whether they ran, on which version, or why
    not (tests/e2e/conftest.py writes what happened to NW_E2E_STATUS)."""
    from tests.e2e import k8s_versions  # standard library only

    version = k8s_versions.chosen(shared_k8s())
    status = ROOT / "build" / "e2e-status.jsonl"
    status.parent.mkdir(exist_ok=True)
    status.unlink(missing_ok=True)
    env = {**os.environ, "NW_K8S_VERSION": version, "NW_E2E_STATUS": str(status)}
    stop_after = prepare_control_plane(env)
    print(f"$ NW_K8S_VERSION={version} pytest -n 2 --dist worksteal tests/e2e", flush=True)
    completed = subprocess.run([str(PYTHON), "-m", "pytest", "-n", "2", "--dist", "worksteal",
                                "tests/e2e"], cwd=ROOT, env=env, check=False)
    if stop_after:
        subprocess.run([str(shared_k8s() / "control-plane"), "stop"], env=env,
                       capture_output=True, check=False)
    print(e2e_summary(status, completed.returncode), flush=True)
    if completed.returncode != 0:
        sys.exit(completed.returncode)


def prepare_control_plane(env: dict[str, str]) -> bool:
    """Start the first worker's control plane once before the workers do, so that what it
    installs (etcd from Debian, the extracted binaries) is not raced for by two workers.
    True when it was started here (and is to be stopped after the stories). A failure is
    left to the stories' fixture, which skips on a missing prerequisite and fails on
    anything else."""
    script = shared_k8s() / "control-plane"
    if not script.exists():
        return False
    if subprocess.run([str(script), "status"], env=env, capture_output=True,
                      check=False).returncode == 0:
        return False
    started = subprocess.run([str(script), "start"], env=env, capture_output=True, text=True,
                             check=False)
    return started.returncode == 0


def e2e_summary(status: Path, returncode: int) -> str:
    import json

    lines = status.read_text().splitlines() if status.exists() else []
    seen = [json.loads(line) for line in lines if line.strip()]
    ran = sorted({entry["ran"] for entry in seen if "ran" in entry})
    skipped = [entry["skipped"] for entry in seen if "skipped" in entry]
    outcome = "passed" if returncode == 0 else "FAILED"
    if ran:
        return (f"e2e stories: ran on Kubernetes {', '.join(ran)} (the real control plane of "
                f"../shared/k8s), {outcome}")
    if skipped:
        return f"e2e stories: SKIPPED, not run: {skipped[0]}"
    return f"e2e stories: none reached the control plane ({outcome})"


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] not in {"workshop", "test"}:
        sys.exit("usage: python3 dev.py workshop | python3 dev.py test [PYTEST ARGS...]")
    if sys.argv[1] == "workshop":
        workshop()
    else:
        test(sys.argv[2:])


if __name__ == "__main__":
    main()
