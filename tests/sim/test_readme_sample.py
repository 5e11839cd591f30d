"""README's quickstart shows the workshop's output: it is the real, deterministic output of
the command it names, so it cannot go stale."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from nodewright.cli import main
from tests.conftest import REPO_ROOT

COMMAND = "nodewright simulate examples/scenarios/workshop.yaml --report build/workshop.html"


def readme_sample() -> str:
    readme = (REPO_ROOT / "README.md").read_text()
    after_command = readme[readme.index(f"`{COMMAND}`"):]
    block = re.search(r"\n```\n(.*?)\n```\n", after_command, re.S)
    assert block is not None, "README's workshop output block is missing"
    return block.group(1)


def test_the_readme_shows_what_the_workshop_prints(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("matplotlib", reason="the report extra draws the report's charts")
    monkeypatch.chdir(REPO_ROOT)
    report = tmp_path / "workshop.html"

    code = main(["simulate", "examples/scenarios/workshop.yaml", "--report", str(report)])

    printed = capsys.readouterr().out.rstrip("\n").replace(str(report), "build/workshop.html")
    assert code == 0
    assert printed == readme_sample()
