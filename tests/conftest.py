"""Shared test fixtures: where the repository, its examples and ../shared are.

The team's shared folder (reference tables from Karpenter and AWS, the seed documents)
sits beside the repository on the team's machines and in CI, and is never copied into
it. Tests that compare against it ask for it through `shared_path`, which skips them,
naming what is missing, on a machine without it (a fresh clone): the rest of the suite
still runs there. NODEWRIGHT_SHARED_DIR points elsewhere when the folder lives elsewhere.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = REPO_ROOT / "examples"
SHARED = Path(os.environ.get("NODEWRIGHT_SHARED_DIR") or REPO_ROOT.parent / "shared")


def shared_path(*parts: str) -> Path:
    """A file or folder of the shared folder; skips the calling test when it is absent."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        where = "the team's shared folder" if not SHARED.is_dir() else "this shared folder"
        pytest.skip(
            f"needs {'/'.join(parts) or 'the shared folder'} from {where} at {SHARED} "
            "(kept beside the repository, not in it; set NODEWRIGHT_SHARED_DIR if it is "
            "elsewhere): not on this machine"
        )
    return path


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture
def shared_dir() -> Path:
    return shared_path()
