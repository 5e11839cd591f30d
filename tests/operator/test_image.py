"""What ships: the package's runtime dependencies hold no test tools, the offline EC2 data
is a file in the package (fresh from moto's data set), and the image runs
`nodewright controller` as non-root."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import tomllib

import pytest

from nodewright.scheduling import instance_data
from tests.conftest import REPO_ROOT

TEST_TOOLS = ("moto", "pytest", "hypothesis", "respx", "mypy", "ruff", "jsonschema")


def test_runtime_dependencies_hold_no_test_tools() -> None:
    project = tomllib.loads((REPO_ROOT / "controller" / "pyproject.toml").read_text())
    names = [dep.split("[")[0].split(">")[0].split("=")[0].split("<")[0].strip().lower()
             for dep in project["project"]["dependencies"]]
    assert not set(names) & set(TEST_TOOLS)
    assert "**/*.json.gz" in project["tool"]["setuptools"]["package-data"]["nodewright"]


def test_the_offline_catalog_needs_no_moto() -> None:
    script = (
        "import sys; sys.modules['moto'] = None\n"  # any import of moto now fails
        "from nodewright.scheduling.catalog import offline_catalog\n"
        "types = {t.name: t for t in offline_catalog('us-east-1')}\n"
        "print(len(types), types['m5.large'].allocatable['memory'])\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    count, memory = done.stdout.split()
    assert int(count) > 500
    assert int(memory) == 6903 * 1024 * 1024 * 1000  # millibytes: 6903Mi, Karpenter's figure


def test_the_shipped_data_says_where_it_comes_from() -> None:
    assert instance_data.source().startswith("moto ")
    assert "generated 20" in instance_data.source()
    assert "us-east-1a" in instance_data.zone_ids("us-east-1")
    with pytest.raises(ValueError, match="not in the offline data"):
        instance_data.offerings("mars-north-1")


@pytest.mark.skipif(importlib.util.find_spec("moto") is None, reason="moto is not installed")
def test_the_shipped_data_is_what_the_generator_makes_from_moto() -> None:
    done = subprocess.run(
        [sys.executable, str(REPO_ROOT / "tools" / "generate_instance_data.py"), "--check"],
        capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr


def test_the_image_runs_the_controller_as_non_root() -> None:
    dockerfile = (REPO_ROOT / "controller" / "Dockerfile").read_text()
    final = dockerfile.rsplit("\nFROM ", 1)[1]
    assert final.startswith("python:3.11-slim")
    assert "USER 65532:65532" in final
    assert 'ENTRYPOINT ["nodewright", "controller"]' in final
    assert "PYTHONDONTWRITEBYTECODE=1" in final  # read-only root filesystem
    for tool in ("apt-get", "gcc", "build-essential", "pip install"):
        assert tool not in final
    assert "requirements-dev" not in dockerfile


def test_the_build_context_holds_only_what_the_image_copies() -> None:
    dockerfile = (REPO_ROOT / "controller" / "Dockerfile").read_text()
    ignore = (REPO_ROOT / "controller" / "Dockerfile.dockerignore").read_text().splitlines()
    patterns = [line for line in ignore if line and not line.startswith("#")]
    assert patterns[0] == "*"  # everything out (the 1 GB virtualenv, .git) ...
    kept = {line.removeprefix("!") for line in patterns if line.startswith("!")}
    copied = {source for line in dockerfile.splitlines() if line.startswith("COPY controller/")
              for source in line.split()[1:-1]}
    assert kept == copied  # ... but what COPY reads
    assert "**/__pycache__" in patterns
