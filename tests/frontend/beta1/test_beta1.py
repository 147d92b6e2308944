"""The Beta 1 dialect: selected by `neuronxcc.nki` imports; index grids, tile operators,
returning instructions and PSUM accumulation compile and compute what numpy computes; what
nkic does not implement is a diagnostic, never a different result."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import nkic
from nkic.frontend import find_kernels

KERNELS = Path(__file__).parent / "add_tiles.py"


def test_the_dialect_is_selected_by_its_imports_and_kernels_are_found():
    names = [name for name, _ in find_kernels(str(KERNELS))]
    assert names[:4] == ["add_rows", "matmul_psum", "matmul_named_partials", "strided_cols"]


def test_index_grids_with_loop_offsets_and_tile_operators():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((384, 512)).astype(np.float32)
    b = rng.standard_normal((384, 512)).astype(np.float32)
    out = nkic.compile(str(KERNELS), a, b, kernel="add_rows")(a, b)
    np.testing.assert_array_equal(out, a + (b * np.float32(2.0)))


def test_psum_accumulation_of_returned_matmuls():
    rng = np.random.default_rng(1)
    lhsT = rng.standard_normal((384, 128)).astype(np.float32)
    rhs = rng.standard_normal((384, 256)).astype(np.float32)
    k = nkic.compile(str(KERNELS), lhsT, rhs, kernel="matmul_psum")
    out = k(lhsT, rhs)
    want = lhsT.astype(np.float64).T @ rhs.astype(np.float64)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-4)
    # `acc += nisa.nc_matmul(...)` accumulates in PSUM: one matmul per K tile, no vector add
    matmuls = [line for line in k.ir.splitlines() if "nc_matmul[" in line]
    acc = next(ln for ln in k.ir.splitlines() if '"acc"' in ln).split()[0]  # its tensor, %tN
    assert matmuls and all(f"dst={acc}[" in line for line in matmuls)
    assert "tensor_tensor" not in k.ir
    # nor is the tile each call would have returned allocated: every tile is used
    assert _unused_allocations(k.ir) == []


def test_a_named_matmul_result_keeps_its_value_when_also_accumulated():
    # `part = nisa.nc_matmul(...); acc += part`: the matmul writes `part` (read again below),
    # and the sum goes through the Vector engine, its PSUM operand copied to SBUF first
    rng = np.random.default_rng(2)
    lhsT = rng.standard_normal((256, 128)).astype(np.float32)
    rhs = rng.standard_normal((256, 256)).astype(np.float32)
    k = nkic.compile(str(KERNELS), lhsT, rhs, kernel="matmul_named_partials")
    out, last = k(lhsT, rhs)
    parts = [lhsT[i : i + 128].astype(np.float64).T @ rhs[i : i + 128] for i in (0, 128)]
    np.testing.assert_allclose(last, parts[1], rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(out, parts[0] + parts[1], rtol=1e-5, atol=1e-4)


def _unused_allocations(ir: str) -> list[str]:
    lines = ir.splitlines()
    allocs = [ln.split()[0] for ln in lines if " = alloc " in ln]
    return [t for t in allocs if not any(f"{t}[" in ln for ln in lines if " = alloc " not in ln)]


def test_tiles_of_calls_assigned_into_other_tiles_are_not_allocated():
    # `scores[j] = nisa.nc_matmul(...)`, `maxes[:, j] = nisa.tensor_reduce(...)`, ...: each
    # instruction writes the tile it is assigned to, and its own result tile is not allocated
    rng = np.random.default_rng(3)
    q, k, v = (rng.uniform(-1, 1, (128, 512)).astype(np.float32) for _ in range(3))
    attention = Path(__file__).parent / "attention_tiles.py"
    compiled = nkic.compile(str(attention), q, k, v, kernel="attention")
    assert _unused_allocations(compiled.ir) == []
    s = q.astype(np.float64).T @ k.astype(np.float64)
    p = np.exp(s - s.max(axis=1, keepdims=True))
    want = (p / p.sum(axis=1, keepdims=True)) @ v.astype(np.float64).T
    np.testing.assert_allclose(compiled(q, k, v), want, rtol=1e-4, atol=1e-5)


def test_strided_grid_and_a_returning_activation():
    x = np.random.default_rng(2).standard_normal((128, 512)).astype(np.float32)
    out = nkic.compile(str(KERNELS), x, kernel="strided_cols")(x)
    np.testing.assert_allclose(out, np.exp(x[:, 1::2]), rtol=2e-6)


@pytest.mark.parametrize(
    ("kernel", "code", "text"),
    [
        ("masked", "err_unsupported_api", "not a mask nkic supports"),
        ("mixed", "err_unsupported_mixing_basic_advanced_tensor_indexing", "mixes slices"),
        # a (128, 512) read through a transposed (512, 128) grid leaves the tensor
        ("transposed", "err_tensor_access_out_of_bound", "index 511 is out of bounds"),
    ],
)
def test_what_nkic_does_not_implement_or_rejects_is_a_diagnostic(kernel, code, text):
    a = np.zeros((128, 512), np.float32)
    diags = [d for d in nkic.check(str(KERNELS), kernel=kernel, a=a) if d.severity == "error"]
    assert diags, f"{kernel}: no diagnostic"
    assert diags[0].code == code and text in diags[0].message
    assert diags[0].loc.line > 0


def test_numpy_functions_as_alu_operators():
    x = np.random.default_rng(3).standard_normal((128, 512)).astype(np.float32)
    out = nkic.compile(str(KERNELS), x, kernel="scale_shift")(x)
    np.testing.assert_array_equal(out, x * np.float32(3.0) + np.float32(1.0))


def test_a_0_3_file_is_not_taken_for_beta_1(tmp_path):
    import ast

    from nkic.frontend import languages

    assert languages.imports_beta1(ast.parse("import neuronxcc.nki.language as nl"))
    assert languages.imports_beta1(ast.parse("from neuronxcc import nki"))
    assert not languages.imports_beta1(ast.parse("import nki\nimport nki.language as nl"))
    mixed = ast.parse("import nki\nimport neuronxcc.nki.language as bnl")
    assert languages.for_file(mixed, None) is languages.DEFAULT  # its Beta 1 import is reported


def test_summed_grids_of_several_axes_index_one_dimension():
    x = np.random.default_rng(4).standard_normal((128, 24)).astype(np.float32)
    kernel = Path(__file__).parent / "grid_sums.py"
    out = nkic.compile(str(kernel), x, 4, 6, kernel="regroup")(x)
    want = x.reshape(128, 4, 6).transpose(0, 2, 1).reshape(128, 24)
    np.testing.assert_array_equal(out, want)


def test_a_reduction_over_axes_that_are_not_the_last_ones():
    x = np.random.default_rng(5).standard_normal((32, 12, 18)).astype(np.float32)
    kernel = Path(__file__).parent / "grid_sums.py"
    out = nkic.compile(str(kernel), x, 3, kernel="block_max")(x)
    np.testing.assert_array_equal(out, x.reshape(32, 4, 3, 6, 3).max(axis=(2, 4)))


def test_an_int_and_a_grid_in_one_index():
    x = np.random.default_rng(6).standard_normal((4, 64)).astype(np.float32)
    kernel = Path(__file__).parent / "grid_sums.py"
    out = nkic.compile(str(kernel), x, kernel="first_row")(x)
    np.testing.assert_array_equal(out, x[:1])


@pytest.mark.parametrize(
    ("kernel", "fn"),
    [("traced", lambda a: a * 2), ("bare", lambda a: a + 1), ("timed", lambda a: a - 3)],
)
def test_every_beta1_entry_point_is_a_kernel(kernel, fn):
    path = Path(__file__).parent / "entry_points.py"
    assert [name for name, _ in find_kernels(str(path))] == ["traced", "bare", "timed"]
    a = np.random.default_rng(4).standard_normal((128, 64)).astype(np.float32)
    np.testing.assert_array_equal(nkic.compile(str(path), a, kernel=kernel)(a), fn(a))
