"""Helpers for the simulator's tests: scenario files written into a temporary folder."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
WORKSHOP_MANIFESTS = REPO / "examples" / "workshop"
SCENARIOS = REPO / "examples" / "scenarios"

ScenarioWriter = Callable[[str], Path]


@pytest.fixture
def write_scenario(tmp_path: Path) -> ScenarioWriter:
    """Write a scenario (YAML text, dedented) as tmp/scenario.yaml; `WORKSHOP` in the text
    stands for the path of the workshop manifests."""

    def write(text: str) -> Path:
        path = tmp_path / "scenario.yaml"
        body = textwrap.dedent(text).lstrip("\n").replace("WORKSHOP", str(WORKSHOP_MANIFESTS))
        path.write_text(body, encoding="utf-8")
        return path

    return write
