"""Python `range` / `nl.static_range` / `nl.range` loops: the symbolic form (one sequential
loop, split where a comparison on the variable changes) and every loop unrolled give
identical results (every `run` compiles both), and bodies Python needs per iteration unroll."""

from __future__ import annotations

import numpy as np
import pytest

import nkic
from nkic import driver
from nkic.frontend import TensorSpec
from nkic.frontend.interp import loops

from .harness import rand, run


@pytest.fixture(autouse=True)
def _range_loops_kept_from_the_start(monkeypatch):
    """Plain `range` loops are attempted as symbolic loops only past `PLAIN_AFTER` unrolled
    iterations; these small kernels exercise that form from their first loop."""
    monkeypatch.setattr(loops, "PLAIN_AFTER", 0)


@pytest.mark.parametrize(("width", "loops"), [(250, 1), (256, 1), (200, 1)])
def test_ragged_tiles_split_instead_of_unrolled(width, loops):
    # full tiles in one loop; the narrow last tile (if any) and the `break` run concretely
    x = rand((64, 4 * width - 100 if width == 250 else 4 * width), seed=3)
    got = run("ranges.py", "ragged_exp", loops=loops, x=x, width=128)
    np.testing.assert_allclose(got, np.exp(x), rtol=1e-5)


def test_static_range_accumulates_in_one_loop_and_keeps_the_last_value():
    x = rand((128, 512), seed=4)
    last, got = run("ranges.py", "running_sum", loops=1, x=x)
    assert last[0, 0] == 3
    want = sum(x[:, i : i + 128] for i in range(0, 512, 128))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("stop", "loops", "reached"), [(0, 0, 0), (2, 1, 0), (3, 1, 0), (7, 1, 1)])
def test_break_at_an_iteration_splits_the_loop_around_it(stop, loops, reached):
    x = rand((128, 512), seed=5)
    flag, got = run("ranges.py", "stop_at", loops=loops, x=x, stop=stop)
    assert flag[0, 0] == reached
    want = x.copy()
    want[:, : 128 * min(stop, 4)] *= -1
    np.testing.assert_array_equal(got, want)


def test_tile_read_after_the_loop_unrolls_it():
    x = rand((128, 512), seed=6)
    got = run("ranges.py", "last_tile_after", loops=0, x=x)
    np.testing.assert_array_equal(got, x[:, 384:] + np.float32(1.0))


def test_compile_time_state_unrolls():
    x = rand((128, 384), seed=7)
    counts, got = run("ranges.py", "python_state", loops=0, x=x)
    assert counts.tolist() == [[3.0, 3.0]]
    want = np.concatenate([x[:, i * 128 : (i + 1) * 128] * (i + 1) for i in range(3)], 1)
    np.testing.assert_array_equal(got, want)


def test_generator_loop_yields_every_iteration():
    listed, summed = run("ranges.py", "yields", x=rand((1, 1)))
    assert listed.tolist() == [[0.0, 2.0, 4.0, 6.0]]
    assert summed.tolist() == [[6.0]]


@pytest.mark.parametrize(("shape", "loops"), [((128, 384), 2), ((100, 300), 3)])
def test_nested_ragged_loops(shape, loops):
    x = rand(shape, seed=8)
    got = run("ranges.py", "nested_ragged", loops=loops, x=x)
    np.testing.assert_array_equal(got, x * np.float32(2.0))


HEADER = "import nki\nimport nki.isa as nisa\nimport nki.language as nl\n\n\n"


def test_out_of_bounds_in_a_range_loop_names_the_iteration(tmp_path):
    path = tmp_path / "oob.py"
    path.write_text(
        HEADER + "@nki.jit\ndef k(a):\n"
        "    out = nl.ndarray((128, 512), a.dtype, buffer=nl.shared_hbm)\n"
        "    for i in range(5):\n"
        "        t = nl.ndarray((128, 128), a.dtype, buffer=nl.sbuf)\n"
        "        nisa.dma_copy(dst=t, src=a[:, i * 128:(i + 1) * 128])\n"
        "        nisa.dma_copy(dst=out[:, i * 128:(i + 1) * 128], src=t)\n"
        "    return out\n"
    )
    with pytest.raises(nkic.CompileError) as e:
        nkic.compile(str(path), a=np.zeros((128, 512), np.float32))
    got = [(d.code, d.loc.line) for d in e.value.diagnostics]
    assert got == [("err_tensor_access_out_of_bound", 11), ("err_tensor_access_out_of_bound", 12)]
    for d in e.value.diagnostics:
        assert "i=4 (loop at line 9)" in d.message and d.hint


def test_a_carried_dependency_in_a_range_loop_is_not_a_parallel_loop_warning(tmp_path):
    # the same body in nl.affine_range warns err_unexpected_output_dependencies; a Python
    # loop runs its iterations in order, so it must not
    body = (
        "    t = nl.ndarray((128, 256), nl.float32, buffer=nl.sbuf)\n"
        "    nisa.dma_copy(dst=t, src=x)\n"
        "    out = nl.ndarray((128, 64), nl.float32, buffer=nl.shared_hbm)\n"
        "    for i in {loop}(4):\n"
        "        nisa.dma_copy(dst=out[:, 0:64], src=t[:, nl.ds(i * 64, 64)])\n"
        "    return out\n"
    )
    x = rand((128, 256), seed=9)
    codes = {}
    for loop in ("nl.affine_range", "range", "nl.static_range"):
        path = tmp_path / f"{loop.split('.')[-1]}.py"
        path.write_text(HEADER + "@nki.jit\ndef k(x):\n" + body.format(loop=loop))
        res = driver.compile_file(str(path), "k", {"x": TensorSpec(x.shape, "float32")}, nki="0.6")
        assert res.ok and "for $" in res.ir_text  # kept as one loop
        codes[loop] = [d.code for d in res.diagnostics]
        got = nkic.compile(str(path), x=x)(x=x)
        np.testing.assert_array_equal(got, x[:, 192:])  # the last iteration's write
    assert "err_unexpected_output_dependencies" in codes["nl.affine_range"]
    assert "err_unexpected_output_dependencies" not in codes["range"]
    assert "err_unexpected_output_dependencies" not in codes["nl.static_range"]
