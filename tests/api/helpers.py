"""Small helpers for the API tests: write a manifest, run the CLI, read its lines."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from nodewright.cli import main


def write(tmp_path: Path, text: str, name: str = "manifest.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err
