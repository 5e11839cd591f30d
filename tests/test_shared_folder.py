"""The suite passes on a fresh clone, where the team's shared folder is not beside it.

The comparisons with Karpenter's and AWS's reference tables (and the seed with mistakes)
need ../shared; on a machine without it they are skipped, each saying what it needs and
where it looked, and everything else runs.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import conftest

NEEDS_SHARED = [
    "tests/scheduling/test_allocatable.py::"
    "test_allocatable_matches_karpenters_table_for_every_shared_type",
    "tests/scheduling/test_pricing.py::test_the_table_matches_aws_list_prices",
    "tests/scheduling/test_catalog.py::"
    "test_labels_match_karpenters_table_for_the_labels_derived_from_ec2_data",
    "tests/api/test_validate_cli.py::"
    "test_every_mistake_in_the_seed_examples_is_reported_on_its_line",
]


def test_a_missing_shared_folder_skips_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    absent = tmp_path / "shared"
    monkeypatch.setattr(conftest, "SHARED", absent)
    with pytest.raises(pytest.skip.Exception) as skipped:
        conftest.shared_path("data", "reference", "ondemand-prices.json")
    reason = str(skipped.value)
    assert "data/reference/ondemand-prices.json" in reason
    assert str(absent) in reason
    assert "the team's shared folder" in reason


def test_a_shared_folder_without_the_file_also_skips(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(conftest, "SHARED", tmp_path)
    with pytest.raises(pytest.skip.Exception, match=r"seeds/none\.txt from this shared folder"):
        conftest.shared_path("seeds", "none.txt")


def test_a_present_file_is_returned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "table.json").write_text("{}")
    monkeypatch.setattr(conftest, "SHARED", tmp_path)
    assert conftest.shared_path("data", "table.json") == tmp_path / "data" / "table.json"


def test_the_four_comparisons_skip_on_a_machine_without_the_shared_folder(
    tmp_path: Path,
) -> None:
    environment = {**os.environ, "NODEWRIGHT_SHARED_DIR": str(tmp_path / "no-shared")}
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist",
         "-rs", *NEEDS_SHARED],
        cwd=conftest.REPO_ROOT, env=environment, capture_output=True, text=True, check=False,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "4 skipped" in completed.stdout, completed.stdout
    for needed in ("data/reference/karpenter-instance-types.json",
                   "data/reference/ondemand-prices.json", "seeds/001_6cb0740443c2222b.txt"):
        assert f"needs {needed} from the team's shared folder" in completed.stdout
