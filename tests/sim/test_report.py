"""`--report`: one self-contained HTML file whose charts a browser really draws."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from nodewright.sim.loading import load_scenario
from nodewright.sim.report import render_report
from nodewright.sim.report.charts import PALETTE
from nodewright.sim.result import RunResult
from nodewright.sim.runner import run_scenario
from tests.sim.conftest import SCENARIOS

CHROMIUM = next((found for name in ("chromium", "chromium-browser", "google-chrome")
                 if (found := shutil.which(name))), None)


@pytest.fixture(scope="module")
def workshop_run() -> RunResult:
    scenario, problems = load_scenario(SCENARIOS / "workshop.yaml")
    assert scenario is not None, problems
    return run_scenario(scenario)


def test_the_report_needs_nothing_from_the_network(workshop_run: RunResult) -> None:
    html = render_report(workshop_run)

    assert html.startswith("<!DOCTYPE html>")
    for fetches in ("<script", "<link", "src=", "@import", 'href="http'):
        assert fetches not in html
    assert re.search(r"url\((?!#)", html) is None  # only references within the page
    assert html.count("<svg") == 3


def test_the_report_tells_the_story_of_the_run(workshop_run: RunResult) -> None:
    html = render_report(workshop_run)

    assert "<h1>workshop</h1>" in html
    assert "every expectation held" in html
    assert "Nodes by instance type" in html and "Hourly cost of the fleet" in html
    assert "Pods waiting for a node" in html
    # the final fleet and why each node went
    assert "<td>c5.large</td>" in html
    assert "single-node consolidation" in html and "emptiness" in html
    assert "disruption: Underutilized" in html  # the marker on the time axis


def test_the_charts_plot_areas_line_up(workshop_run: RunResult) -> None:
    """A moment is at the same x on every chart: the axes' frames are the same."""
    from nodewright.sim.report import charts

    frames = set()
    for svg in (charts.nodes_chart(workshop_run), charts.cost_chart(workshop_run),
                charts.pending_chart(workshop_run)):
        frame = re.search(r'<g id="patch_2">\s*<path d="([^"]+)"', svg)
        assert frame is not None
        frames.add(frame.group(1))
    assert len(frames) == 1, frames


def test_each_explanation_states_the_saving_once(workshop_run: RunResult) -> None:
    html = render_report(workshop_run)

    rows = [row for row in html.split("<tr>") if "savings" in row or "saves" in row]
    assert rows
    assert all(row.count("$0.0") == 1 for row in rows), rows


def test_the_same_run_draws_the_same_report(workshop_run: RunResult) -> None:
    assert render_report(workshop_run) == render_report(workshop_run)


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Debian: apt-get "
                                             "install chromium); the browser check needs it")
def test_headless_chromium_draws_the_charts(workshop_run: RunResult, tmp_path: Path) -> None:
    import matplotlib.image

    report = tmp_path / "report.html"
    report.write_text(render_report(workshop_run), encoding="utf-8")
    shot = tmp_path / "shot.png"
    assert CHROMIUM is not None
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
             "--disable-background-networking", "--disable-component-update", "--no-first-run",
             f"--user-data-dir={profile}", "--window-size=1100,2000",
             f"--screenshot={shot}", report.as_uri()],
            check=True, capture_output=True, timeout=120, env={**os.environ, "HOME": profile},
        )
    pixels = matplotlib.image.imread(str(shot))[:, :, :3] * 255

    # The m5.large layer of the stacked chart (second colour, drawn at alpha 0.9 on white).
    orange = [0.9 * int(PALETTE[1][i:i + 2], 16) + 0.1 * 255 for i in (1, 3, 5)]
    close = (abs(pixels - orange) < 12).all(axis=2)
    assert close.sum() > 5000, "the stacked nodes chart was not drawn"
    # The cost line (first colour, opaque).
    blue = [int(PALETTE[0][i:i + 2], 16) for i in (1, 3, 5)]
    assert (abs(pixels - blue) < 12).all(axis=2).sum() > 300, "the line charts were not drawn"
