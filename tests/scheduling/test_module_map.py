"""docs/design/scheduling.md maps every module of the solver and the packer: a module added
to either package without a line there fails here, so a newcomer can still find each
stage and algorithm from the map."""

from __future__ import annotations

from tests.conftest import REPO_ROOT

SCHEDULING = REPO_ROOT / "controller" / "nodewright" / "scheduling"
MAP = REPO_ROOT / "docs" / "design" / "scheduling.md"


def test_every_module_of_the_solver_and_the_packer_is_on_the_map() -> None:
    text = MAP.read_text(encoding="utf-8")
    unmapped = sorted(
        f"{package}/{path.name}"
        for package in ("solver", "packing")
        for path in (SCHEDULING / package).glob("*.py")
        if f"`{path.name}`" not in text
    )
    assert unmapped == []
