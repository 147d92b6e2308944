"""Every code block of docs/dropin.md and of the README's drop-in section runs, in a fresh
virtual environment of its own (so that `nkic shim install` touches nothing else)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)


def blocks(text: str) -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in FENCE.finditer(text)]


def readme_section() -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index("## Running official NKI scripts")
    return text[start : text.index("\n## ", start + 1)]


@pytest.fixture
def env(tmp_path):
    """A new venv whose site-packages sees this environment's (nkic and its dependencies),
    with an `nkic` command, first on PATH."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = venv / "bin" / "python"
    site = subprocess.run(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    here = sysconfig.get_paths()["purelib"]
    Path(site, "_outer_env.pth").write_text(f"import site; site.addsitedir({here!r})\n")
    nkic = venv / "bin" / "nkic"
    nkic.write_text(f"#!{py}\nfrom nkic.cli import main\nmain()\n")
    nkic.chmod(0o755)
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("NKI", "PYTHON"))}
    environ["PATH"] = f"{venv / 'bin'}{os.pathsep}{environ['PATH']}"
    work = tmp_path / "work"
    work.mkdir()

    def run(kind: str, code: str) -> subprocess.CompletedProcess:
        if kind == "sh":
            cmd = ["bash", "-euo", "pipefail", "-c", code]
        else:
            (work / "example.py").write_text(code)
            cmd = [str(py), "example.py"]
        res = subprocess.run(cmd, cwd=work, env=environ, capture_output=True, text=True)
        assert res.returncode == 0, f"{code}\n--- stdout\n{res.stdout}\n--- stderr\n{res.stderr}"
        return res

    run.work = work
    run.site = Path(site)
    return run


BETA1_KERNELS = """
import neuronxcc.nki.language as nl
from neuronxcc import nki


@nki.jit
def add_kernel(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    ix = nl.program_id(0) * 128 + nl.arange(128)[:, None]
    iy = nl.program_id(1) * 512 + nl.arange(512)[None, :]
    nl.store(out[ix, iy], value=nl.load(a[ix, iy]) + nl.load(b[ix, iy]))
    return out
"""


def test_docs_dropin_blocks_run(env):
    found = blocks((ROOT / "docs" / "dropin.md").read_text())
    assert [k for k, _ in found] == ["python", "sh", "python", "python"]
    (_, script), (_, shell), (_, from_python), (_, beta1) = found
    (env.work / "my_kernels.py").write_text(BETA1_KERNELS)
    assert "equal: True" in env("python", beta1).stdout
    first = script.splitlines()[0]
    assert first.startswith("# add.py")
    (env.work / "add.py").write_text(script)
    out = env("sh", shell).stdout
    assert "nki.simulate: ndarray float32 (128, 512)" in out
    assert "import nki: nkic's stand-in" in out
    assert not (env.site / "nkic-nki-standin.pth").exists()  # uninstalled at the end
    pytest.importorskip("torch")
    assert "latency (ns):" in env("python", from_python).stdout


def test_readme_dropin_block_runs(env):
    found = blocks(readme_section())
    assert [k for k, _ in found] == ["sh"]
    script = blocks((ROOT / "docs" / "dropin.md").read_text())[0][1]
    (env.work / "add.py").write_text(script)
    out = env("sh", found[0][1]).stdout
    assert "nki.simulate: ndarray float32 (128, 512)" in out
    assert "removed" in out
