"""The report's plotting is an optional extra (`nodewright[report]`, matplotlib): the
controller image installs nodewright without it, so nothing but `simulate --report` may
need it, and `--report` without it says what to install instead of failing mid-run."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

from nodewright.cli import main
from tests.sim.conftest import REPO, SCENARIOS

# Run in a fresh interpreter in which `import matplotlib` fails as if it were not installed.
WITHOUT_MATPLOTLIB = textwrap.dedent("""\
    import sys
    sys.modules["matplotlib"] = None  # import matplotlib -> ModuleNotFoundError
    from nodewright.cli import main
    sys.exit(main(sys.argv[1:]))
    """)


def run_without_matplotlib(*args: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "PYTHONPATH": str(REPO / "controller")}
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_MATPLOTLIB, *args], cwd=REPO, env=environment,
        capture_output=True, text=True, timeout=120, check=False,
    )


def test_matplotlib_is_an_extra_not_a_dependency_of_the_controller() -> None:
    project = tomllib.loads((REPO / "controller" / "pyproject.toml").read_text())["project"]

    assert not any(dep.startswith("matplotlib") for dep in project["dependencies"])
    assert any(dep.startswith("matplotlib") for dep in project["optional-dependencies"]["report"])
    requirements = (REPO / "requirements.txt").read_text().splitlines()
    assert "-e ./controller[report]" in requirements  # what dev.py installs
    dockerfile = (REPO / "controller" / "Dockerfile").read_text()
    assert "pip install /src/controller " in dockerfile  # the image: no extras


def test_the_cli_and_the_controller_run_without_matplotlib() -> None:
    completed = run_without_matplotlib("controller", "--help")

    assert completed.returncode == 0, completed.stderr
    assert "usage: nodewright controller" in completed.stdout


def test_a_simulation_without_a_report_runs_without_matplotlib(tmp_path: Path) -> None:
    timeline = tmp_path / "timeline.json"

    completed = run_without_matplotlib("simulate", str(SCENARIOS / "workshop.yaml"),
                                       "--quiet", "--json", str(timeline))

    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert timeline.exists()


def test_a_report_without_the_extra_exits_2_and_says_what_to_install(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in list(sys.modules):
        if name.split(".")[0] == "matplotlib" or name.startswith("nodewright.sim.report"):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    report = tmp_path / "report.html"

    code = main(["simulate", str(SCENARIOS / "workshop.yaml"), "--report", str(report)])

    captured = capsys.readouterr()
    assert code == 2
    assert ("--report needs the report extra: pip install 'nodewright[report]'"
            in captured.err)
    assert "Traceback" not in captured.out + captured.err
    assert "[00:00:00]" not in captured.out  # nothing was run
    assert not report.exists()
