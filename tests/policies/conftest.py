"""The policy tests import the pack's rules from policies/ the way Pulumi runs them."""

from __future__ import annotations

import sys

from tests.conftest import REPO_ROOT

POLICIES_DIR = REPO_ROOT / "policies"
if str(POLICIES_DIR) not in sys.path:
    sys.path.insert(0, str(POLICIES_DIR))
