"""Pulumi entry point (Pulumi.yaml `main: infra/`): only wiring."""

import sys
from pathlib import Path

# Pulumi runs this directory as a script; make `infra` importable as a package.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from infra.outputs import export_all
from infra.program import build

export_all(build())
