"""Shared fixtures: paths of the examples and a CLI runner that never hides a traceback."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"

# every compile in the tests verifies the IR after each pass, not only at the pipeline's ends
# (also in the `nkic` processes the tests start)
os.environ.setdefault("NKIC_VERIFY_EACH", "1")

if str(EXAMPLES) not in sys.path:
    sys.path.insert(0, str(EXAMPLES))


@pytest.fixture
def examples() -> Path:
    return EXAMPLES
