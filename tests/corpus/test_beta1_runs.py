"""The Beta 1 shapes table and the compile-and-run harness over it, on files written here."""

from __future__ import annotations

import textwrap

import pytest

from benchmarks.corpus import beta1_runs
from benchmarks.corpus.library import TableError

KERNEL = textwrap.dedent(
    """
    import neuronxcc.nki as nki
    import neuronxcc.nki.language as nl


    @nki.jit
    def add(a, b):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        ix = nl.program_id(0) * 128 + nl.arange(128)[:, None]
        iy = nl.arange(64)[None, :]
        nl.store(out[ix, iy], value=nl.load(a[ix, iy]) + nl.load(b[ix, iy]))
        return out
    """
)


def test_the_committed_table_is_valid_and_names_kernels_once():
    table = beta1_runs.load_table()
    keys = [k.key for k in table]
    assert len(keys) == len(set(keys)) and len(table) > 50
    assert all(k.file.startswith(("nki-samples/", "aws-neuron-sdk/")) for k in table)


def test_a_kernel_compiles_and_runs_at_its_grid(tmp_path):
    repo = tmp_path / "nki-samples"
    repo.mkdir()
    (repo / "k.py").write_text(KERNEL)
    table = tmp_path / "t.toml"
    table.write_text(
        '[[kernel]]\nfile = "nki-samples/k.py"\nentry = "add"\n'
        'args = { a = "float32[256,64]", b = "float32[256,64]" }\ngrid = "2"\n\n'
        '[[kernel]]\nfile = "nki-samples/k.py"\nentry = "add"\n'
        'args = { a = "float32[256,64]", b = "float32[128,64]" }\ngrid = "2"\n'
    )
    good, bad = (beta1_runs.run_kernel(tmp_path, k, 120) for k in beta1_runs.load_table(table))
    assert good["status"] == "run ok" and good["latency_ns"] > 0
    assert bad["status"] == "compile diagnostics"
    assert "err_tensor_access_out_of_bound" in bad["detail"]
    rows = beta1_runs.summary([good, bad], ["nki-samples/k.py", "nki-samples/other.py"])
    assert rows == {"nki-samples": {"files": 2, "files_run": 0, "kernels": 2, "kernels_run": 1}}


def test_a_bad_spec_is_a_table_error(tmp_path):
    table = tmp_path / "t.toml"
    table.write_text('[[kernel]]\nfile = "x.py"\nentry = "k"\nargs = { a = "float32[2,"}\n')
    with pytest.raises(TableError, match="arg 'a'"):
        beta1_runs.load_table(table)
