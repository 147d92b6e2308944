"""DMA with runtime offsets (Language §8): gathers and scatters by an index tile, a
block moved by one index, run-time out-of-bounds faults and `oob_mode` skip, and the
diagnostics for views nkic cannot serve."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from nkirt.errors import RuntimeFault

import nkic
from nkic.driver import compile_file
from nkic.frontend import TensorSpec
from nkic.ir.parser import parse_kernel
from nkic.ir.printer import print_kernel

from .helpers import KERNELS, TARGETS, compile_kernel

RNG = np.random.default_rng(7)
TABLE = RNG.standard_normal((300, 32)).astype(np.float32)
IDS = RNG.integers(0, 300, (128, 1)).astype(np.int32)


@pytest.mark.parametrize("target", TARGETS)
def test_gather_reads_one_row_per_index(target):
    k = compile_kernel("dynamic", "gather", [TABLE, IDS], target)
    np.testing.assert_array_equal(k(TABLE, IDS), TABLE[IDS[:, 0]])


def test_gathers_in_a_symbolic_loop_match_the_unrolled_kernel():
    ids = RNG.integers(0, 300, (512, 1)).astype(np.int32)
    args = {"table": TensorSpec(TABLE.shape, "float32"), "ids": TensorSpec(ids.shape, "int32")}
    path = str(KERNELS / "dynamic.py")
    symbolic = compile_file(path, "gather_tiles", args, "trn2")
    unrolled = compile_file(path, "gather_tiles", args, "trn2", unroll_all=True)
    assert len(print_kernel(symbolic.ir).splitlines()) < len(print_kernel(unrolled.ir).splitlines())
    for res in (symbolic, unrolled):
        out = nkic.CompiledKernel(res.neff)(TABLE, ids)
        np.testing.assert_array_equal(out, TABLE[ids[:, 0]])


def test_scatter_writes_one_row_per_index_after_the_copy():
    ids = RNG.permutation(300)[:64].reshape(64, 1).astype(np.int32)
    values = RNG.standard_normal((64, 32)).astype(np.float32)
    k = compile_kernel("dynamic", "scatter", [TABLE, ids, values], "trn2")
    want = TABLE.copy()
    want[ids[:, 0]] = values
    np.testing.assert_array_equal(k(TABLE, ids, values), want)


def test_an_index_column_with_trailing_unit_dims_scatters_one_row_per_index():
    ids = RNG.permutation(300)[:128].reshape(64, 2).astype(np.int32)
    values = RNG.standard_normal((64, 2, 32)).astype(np.float32)
    k = compile_kernel("dynamic", "scatter_by_columns", [TABLE, ids, values], "trn2")
    want = TABLE.copy()
    want[ids[:, 0]] = values[:, 0]
    want[ids[:, 1]] = values[:, 1]
    np.testing.assert_array_equal(k(TABLE, ids, values), want)


def test_a_scalar_offset_moves_the_whole_block_by_rows():
    pos = np.array([[37]], np.int32)
    k = compile_kernel("dynamic", "block_at", [TABLE, pos], "trn2")
    np.testing.assert_array_equal(k(TABLE, pos), TABLE[37:53])


def test_an_index_outside_the_table_is_a_fault_naming_the_line_and_the_index():
    k = compile_kernel("dynamic", "gather", [TABLE, IDS], "trn2")
    bad = IDS.copy()
    bad[9, 0] = 300
    with pytest.raises(RuntimeFault) as fault:
        k(TABLE, bad)
    line = next(
        n
        for n, src in enumerate((KERNELS / "dynamic.py").read_text().splitlines(), 1)
        if "vector_offset=idx), oob_mode=mode" in src
    )
    message = str(fault.value)
    assert message.startswith("out-of-bounds dynamic access: dma_copy at dynamic.py:")
    assert f"dynamic.py:{line}:" in message
    assert "index 300 (at partition 9 of 'src.vector_offset') leaves table of shape [300, 32]" in (
        message
    )
    # row 300 of float32 rows of 32: elements 9600..9631
    assert "(38400 bytes): it reaches bytes 38400..38527" in message


def test_oob_mode_skip_leaves_the_rows_of_outside_indices_unchanged():
    bad = IDS.copy()
    bad[3, 0], bad[9, 0] = -2, 300
    k = compile_kernel("dynamic", "gather", [TABLE, bad], "trn2", OOB="skip", FILL=-1.0)
    want = TABLE[np.clip(bad[:, 0], 0, 299)].copy()
    want[[3, 9]] = -1.0
    np.testing.assert_array_equal(k(TABLE, bad), want)


def test_timing_only_runs_charge_a_gather_like_a_load_of_the_same_rows():
    k = compile_kernel("dynamic", "gather", [TABLE, IDS], "trn2")
    k(TABLE, IDS, timing_only=True)
    dma = [i for i in k.profile["top_instructions"] if i["op"] == "dma_copy"]
    assert len(dma) == 3 and k.profile["dma_bytes"] == 128 * 4 + 2 * 128 * 32 * 4


def test_indices_into_a_reshape_step_by_the_reshape_not_the_tensor_rows():
    # one index unit is the step of the view `.ap()` is called on: an element of a 1-D
    # reshape, a pair of a [R*D/2, 2] one; stepping by the tensor's rows of 32 would land
    # elsewhere (or outside the tensor)
    flat = RNG.permutation(300 * 32)[:96].reshape(96, 1).astype(np.int32)
    values = RNG.standard_normal((96, 1)).astype(np.float32)
    k = compile_kernel("dynamic", "scatter_elements", [TABLE, flat, values], "trn2")
    want = TABLE.copy()
    want.flat[flat[:, 0]] = values[:, 0]
    np.testing.assert_array_equal(k(TABLE, flat, values), want)
    ids = RNG.integers(0, 300 * 16, (64, 1)).astype(np.int32)
    k = compile_kernel("dynamic", "gather_pairs", [TABLE, ids], "trn2")
    np.testing.assert_array_equal(k(TABLE, ids), TABLE.reshape(-1, 2)[ids[:, 0]])


def test_the_ir_of_a_gather_prints_and_parses_back():
    args = {"table": TensorSpec(TABLE.shape, "float32"), "ids": TensorSpec(IDS.shape, "int32")}
    res = compile_file(str(KERNELS / "dynamic.py"), "gather", args, "trn2", emit=False)
    text = print_kernel(res.ir)
    assert "vector(src.vector_offset, 0, 32), src.vector_offset=%" in text  # a row: 32 elements
    assert print_kernel(parse_kernel(text)) == text


@pytest.mark.parametrize(
    "kernel, case, code, fragment",
    [
        ("gather_into_compute", None, "err_unsupported_api", "only be an operand of nisa.dma_copy"),
        ("misuse", "sbuf_base", "err_unsupported_api", "only on HBM tensors"),
        ("misuse", "float_index", "err_invalid_argument", "int32/uint32 SBUF tile"),
        ("misuse", "sliced", "err_invalid_view", "indexing of a view with a dynamic offset"),
        ("misuse", "hwdge", "err_invalid_argument", "only the software DGE"),
        ("misuse", "two_columns", "err_invalid_argument", "shape (128, 1) (more trailing 1s"),
    ],
)
def test_views_nkic_cannot_serve_are_diagnosed(kernel, case, code, fragment):
    params = {"CASE": case} if case else {}
    diags = nkic.check(str(KERNELS / "dynamic.py"), kernel, "trn2", table=TABLE, ids=IDS, **params)
    errors = [d for d in diags if d.severity == "error"]
    assert [d.code for d in errors] == [code], [(d.code, d.message) for d in errors]
    assert fragment in errors[0].message


def test_a_row_skipped_on_either_side_of_a_gather_scatter_is_not_moved():
    src = np.array([[5], [300], [7], [9]], np.int32)  # 300 is outside the table
    dst = np.array([[0], [1], [-1], [3]], np.int32)  # -1 too
    k = compile_kernel("dynamic", "move_rows", [TABLE, src, dst], "trn2")
    want = TABLE.copy()
    want[[0, 3]] = TABLE[[5, 9]]
    np.testing.assert_array_equal(k(TABLE, src, dst), want)


def test_a_scalar_offset_block_leaving_the_table_is_skipped_whole():
    pos = np.array([[290]], np.int32)  # rows 290..305 of 300
    k = compile_kernel("dynamic", "block_at", [TABLE, pos], "trn2", OOB="skip")
    np.testing.assert_array_equal(k(TABLE, pos), np.zeros((16, 32), np.float32))
    strict = compile_kernel("dynamic", "block_at", [TABLE, pos], "trn2")
    with pytest.raises(RuntimeFault, match="with index 290 .* leaves table of shape"):
        strict(TABLE, pos)


def test_dma_compute_adds_gathered_rows():
    ids = RNG.integers(0, 300, (128, 3)).astype(np.int32)
    k = compile_kernel("dynamic", "gather_accumulate", [TABLE, ids], "trn2")
    want = np.zeros((128, 32), np.float32)
    for j in range(3):
        want = want + TABLE[ids[:, j]]
    np.testing.assert_array_equal(k(TABLE, ids), want)


def test_dma_compute_with_oob_skip_leaves_rows_of_outside_indices():
    ids = RNG.integers(0, 300, (128, 2)).astype(np.int32)
    ids[5, 1] = 300  # outside: the second addition skips row 5
    ids[9, 0] = -1
    k = compile_kernel("dynamic", "gather_accumulate", [TABLE, ids], "trn2", OOB="skip")
    want = np.zeros((128, 32), np.float32)
    for j in range(2):
        inside = (ids[:, j] >= 0) & (ids[:, j] < 300)
        want[inside] = want[inside] + TABLE[ids[inside, j]]
    np.testing.assert_array_equal(k(TABLE, ids), want)
    with pytest.raises(RuntimeFault, match="out-of-bounds dynamic access"):
        compile_kernel("dynamic", "gather_accumulate", [TABLE, ids], "trn2")(TABLE, ids)


def test_a_dma_transpose_of_a_block_moved_by_a_runtime_index():
    table = RNG.standard_normal((300, 32)).astype(ml_dtypes.bfloat16)
    pos = np.array([[101]], np.int32)
    k = compile_kernel("dynamic", "block_transposed", [table, pos], "trn2")
    np.testing.assert_array_equal(k(table, pos), table[101:117].T)
    skip = compile_kernel("dynamic", "block_transposed", [table, pos], "trn2", OOB="skip")
    far = np.array([[290]], np.int32)  # rows 290..305 leave the table: nothing is moved
    np.testing.assert_array_equal(skip(table, far), np.zeros((32, 16), ml_dtypes.bfloat16))
    np.testing.assert_array_equal(skip(table, pos), table[101:117].T)
    with pytest.raises(RuntimeFault, match="out-of-bounds dynamic access"):
        k(table, far)
    diags = nkic.check(KERNELS / "dynamic.py", kernel="block_transposed", table=table, pos=pos,
                       nki="0.4")  # fmt: skip
    assert [d.code for d in diags] == ["err_invalid_argument"]
    assert "new in NKI 0.5" in diags[0].message
