"""Drop-in tests import official-style kernel modules from ./kernels through the stand-in nki."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import nkic  # noqa: F401  (provides the stand-in `nki` for the kernel modules)

KERNELS = Path(__file__).parent / "kernels"
if str(KERNELS) not in sys.path:
    sys.path.insert(0, str(KERNELS))


@pytest.fixture
def python(tmp_path):
    """Run Python code in a fresh interpreter of this environment, from `tmp_path`, with the
    kernels directory importable; returns the completed process."""

    def run(code: str, *, env: dict | None = None, pythonpath: list[str] | None = None):
        import os

        environ = {k: v for k, v in os.environ.items() if not k.startswith("NKI")}
        environ["PYTHONPATH"] = os.pathsep.join([*(pythonpath or []), str(KERNELS)])
        environ.update(env or {})
        return subprocess.run(
            [sys.executable, "-c", code],
            cwd=tmp_path,
            env=environ,
            capture_output=True,
            text=True,
            timeout=300,
        )

    return run
