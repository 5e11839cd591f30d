"""README.md's configuration reference ("Operating it.") names every setting the controller
reads, each with its default where it has one, and nothing the controller no longer reads.
The settings are `nodewright.operator.config.OPTIONS`, the list `nodewright controller`
parses its flags and variables from."""

from __future__ import annotations

import re

import pytest

from nodewright.operator.config import OPTIONS, Option
from tests.conftest import REPO_ROOT

# Named in the paragraph without being a variable of ours: Kubernetes' own.
NOT_SETTINGS = {"POD_NAMESPACE"}


def reference() -> str:
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    start = readme.index("**Operating it.**")
    return readme[start:readme.index("`:8080/metrics`", start)]


def described(option: Option) -> str:
    """The reference's text from the setting's name to the next setting's."""
    text = reference()
    found = re.search(rf"`{option.env}`(.*?)(?=`[A-Z][A-Z0-9_]{{3,}}`|$)", text, re.S)
    assert found, f"README.md's configuration reference does not list {option.env}"
    return found.group(1)


@pytest.mark.parametrize("option", OPTIONS, ids=lambda option: option.env)
def test_every_setting_is_listed_with_its_default(option: Option) -> None:
    text = described(option)
    default = option.default or option.shown_default
    if default and option.env not in ("FEATURE_GATES", "SOLVE_DEADLINE"):
        # FEATURE_GATES' default is the gate list; SOLVE_DEADLINE's 0 reads "off".
        assert default in text, f"{option.env}: its default {default!r} is not given"


def test_nothing_listed_is_gone() -> None:
    listed = set(re.findall(r"`([A-Z][A-Z0-9_]{3,})`", reference())) - NOT_SETTINGS
    assert listed <= {option.env for option in OPTIONS}
