"""`nodewright plan` marks estimated prices as `nodewright catalog` does: offline, spot
prices are estimates (`*`, explained on the cost line); on-demand list prices are not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nodewright.cli import main

WORKSHOP = Path(__file__).resolve().parents[2] / "examples" / "workshop"
Capsys = pytest.CaptureFixture[str]


def workshop_allowing(tmp_path: Path, capacity_types: str) -> Path:
    for manifest in WORKSHOP.iterdir():
        (tmp_path / manifest.name).write_text(manifest.read_text())
    pool = tmp_path / "nodepool.yaml"
    text = pool.read_text()
    assert 'values: ["on-demand"]' in text
    pool.write_text(text.replace('values: ["on-demand"]', f"values: {capacity_types}"))
    return tmp_path


def test_an_estimated_spot_price_is_marked(tmp_path: Path, capsys: Capsys) -> None:
    folder = workshop_allowing(tmp_path, '["spot"]')

    assert main(["plan", str(folder), "--replicas", "inflate=5"]) == 0
    output = capsys.readouterr().out
    row = next(line for line in output.splitlines() if " spot " in line)
    assert "*" in row.split()[4]
    assert "; * estimated price (docs/pricing.md)" in output

    assert main(["plan", str(folder), "--replicas", "inflate=5", "--format", "json"]) == 0
    (claim,) = json.loads(capsys.readouterr().out)["nodeclaims"]
    assert (claim["capacityType"], claim["priceEstimated"]) == ("spot", True)


def test_a_listed_on_demand_price_is_not_marked(capsys: Capsys) -> None:
    assert main(["plan", str(WORKSHOP), "--replicas", "inflate=5"]) == 0
    output = capsys.readouterr().out
    assert "*" not in output
    assert "estimated" not in output
