"""Shared test fixtures: where the repository, its examples and ../shared are.

The team's shared folder (reference tables from Karpenter and AWS, the seed documents)
sits beside the repository on the team's machines and in CI, and is never copied into
it. Tests that compare against it ask for it through `shared_path`, which skips them,
naming what is missing, on a machine without it (a fresh clone): the rest of the suite
still runs there. NODEWRIGHT_SHARED_DIR points elsewhere when the folder lives elsewhere.
"""

from __future__ import annotations

import gc
import gzip
import os
from importlib import resources
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = REPO_ROOT / "examples"
SHARED = Path(os.environ.get("NODEWRIGHT_SHARED_DIR") or REPO_ROOT.parent / "shared")


def _moto_without_the_regional_image_lists() -> None:
    """Give moto its base images only (its own amis.json, the ones our tests name, such as
    ami-ekslinux), not the thousand-odd latest images per region it loads into every EC2
    backend it creates or resets: that load was a third of the AWS tests' time. Set before
    moto is first imported (it reads MOTO_AMIS_PATH then); subprocesses inherit it."""
    if "MOTO_AMIS_PATH" in os.environ:
        return
    base_images = resources.files("moto").joinpath("ec2", "resources", "amis.json.gz")
    target = REPO_ROOT / "build" / "moto-base-amis.json"
    if not target.exists():
        target.parent.mkdir(exist_ok=True)
        partial = target.with_suffix(f".{os.getpid()}.tmp")
        partial.write_bytes(gzip.decompress(base_images.read_bytes()))
        partial.replace(target)  # atomic: xdist workers may race to write it
    os.environ["MOTO_AMIS_PATH"] = str(target)


_moto_without_the_regional_image_lists()


def _fewer_full_collections() -> None:
    """Run the collector's full (oldest generation) pass a tenth as often as Python's
    default. Every story's World is a web of cycles (clock, drivers, controllers) that only
    a full pass frees, and each full pass walks everything alive, the shared catalogs and
    tens of thousands of offering series included: at the default, those passes were a
    quarter of a controller story's CPU time. A few dead worlds more wait for the next."""
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, 100)


_fewer_full_collections()

# No test asks the EC2 instance metadata service (169.254.169.254): the controller's region
# falls back to it, as Karpenter's does, and the AWS SDK's credential chain ends with it.
# Tests set their region and credentials; subprocesses inherit this.
os.environ["AWS_EC2_METADATA_DISABLED"] = "true"


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
