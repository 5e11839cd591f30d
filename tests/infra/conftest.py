"""Fixtures for the infra/ program tests: one mocked run per example stack and module."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from infra_harness import ProgramRun, run_program_with_outputs


@pytest.fixture(scope="module")
def dev() -> ProgramRun:
    return run_program_with_outputs("dev")


@pytest.fixture(scope="module")
def prod() -> ProgramRun:
    return run_program_with_outputs("prod")
