"""Tensor indirection (`.indirect(index, num_elem)`, NKI 0.5, trn3) end to end: column gathers
and scatters on compute instructions against numpy references that read the offsets in the
engines' snake order themselves, the run-time fault of an offset outside the view, and every
diagnostic of a mistake."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from nkirt.errors import RuntimeFault

import nkic
from nkic import driver
from nkic.api import CompiledKernel, _tensor_args
from nkic.ir.parser import parse_kernel
from nkic.ir.printer import print_kernel

from .harness import KERNELS, ir_loops

FILE = KERNELS / "indirect05.py"
A = np.random.default_rng(5).standard_normal((128, 64)).astype(np.float32)


def snake(index: np.ndarray, count: int, group: int) -> list[int]:
    """Offset i of a (P, K) index tile: row i % G, column i // G of its group of G partitions;
    G * K offsets per group, then the next group."""
    parts, cols = index.shape
    out = []
    for i in range(count):
        g, r = divmod(i, group * cols)
        out.append(int(index[g * group + r % group, r // group]))
    return out


def offsets(shape, high, seed):
    return np.random.default_rng(seed).integers(0, high, shape).astype(np.int32)


def compile_(kernel, **args):
    return nkic.compile(str(FILE), kernel=kernel, target="trn3", **args)


@pytest.mark.parametrize("n", [16, 40, 256])
def test_tensor_copy_gathers_columns_in_snake_order(n):
    idx = offsets((128, 2), 64, seed=n)
    out = compile_("gather_copy", a=A, idx=idx, n=n)(a=A, idx=idx)
    np.testing.assert_array_equal(out, A[:, snake(idx, n, 16)])


def test_tensor_tensor_gathers_data1():
    idx = offsets((128, 3), 64, seed=1)
    y = np.random.default_rng(2).standard_normal((128, 40)).astype(np.float32)
    out = compile_("gather_add", a=A, idx=idx, y=y)(a=A, idx=idx, y=y)
    np.testing.assert_array_equal(out, A[:, snake(idx, 40, 16)] + y)


def test_activation_gathers_on_the_scalar_engine():
    idx = offsets((128, 1), 64, seed=3)
    out = compile_("gather_exp", a=A, idx=idx, n=24)(a=A, idx=idx)
    np.testing.assert_allclose(out, np.exp(0.5 * A[:, snake(idx, 24, 16)]), rtol=1e-5)


def test_nc_matmul_gathers_moving_in_groups_of_32():
    rng = np.random.default_rng(4)
    s = rng.standard_normal((128, 128)).astype(np.float32)
    m = rng.standard_normal((128, 64)).astype(np.float32)
    idx = offsets((128, 2), 64, seed=5)
    out = compile_("gather_matmul", s=s, m=m, idx=idx, n=100)(s=s, m=m, idx=idx)

    def bf16(x):
        return x.astype(ml_dtypes.bfloat16).astype(np.float32)

    want = bf16(s).T @ bf16(m)[:, snake(idx, 100, 32)]
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-4)
    # the Vector engines' group size would read other offsets
    assert not np.allclose(out, bf16(s).T @ bf16(m)[:, snake(idx, 100, 16)], atol=1e-2)


def _permutation_index(count: int, seed: int) -> np.ndarray:
    """An index tile whose first `count` offsets (snake order, G=16) are distinct columns."""
    perm = np.random.default_rng(seed).permutation(64)[:count]
    idx = np.zeros((128, 2), np.int32)
    for i, o in enumerate(perm):
        g, r = divmod(i, 32)
        idx[g * 16 + r % 16, r // 16] = o
    return idx


@pytest.mark.parametrize(("kernel", "scale"), [("scatter_copy", 1.0), ("scatter_scaled", 2.0)])
def test_dst_scatters_columns(kernel, scale):
    idx = _permutation_index(48, seed=6)
    s = np.random.default_rng(7).standard_normal((128, 48)).astype(np.float32)
    out = compile_(kernel, a=A, idx=idx, s=s)(a=A, idx=idx, s=s)
    want = A.copy()
    want[:, snake(idx, 48, 16)] = scale * s
    np.testing.assert_array_equal(out, want)


def test_an_offset_outside_the_view_is_a_fault_with_line_and_iteration():
    idx = offsets((2, 128, 1), 64, seed=8)
    k = compile_("gather_blocks", a=A, idx=idx)
    assert ir_loops(k.ir) == 1, k.ir
    want = np.stack([A[:, snake(idx[j], 16, 16)] for j in range(2)])
    np.testing.assert_array_equal(k(a=A, idx=idx), want)
    res = driver.compile_file(str(FILE), "gather_blocks", _tensor_args({"a": A, "idx": idx}),
                              "trn3", unroll_all=True)  # fmt: skip
    unrolled = CompiledKernel(res.neff, res.ir_text, res.asm)
    assert ir_loops(unrolled.ir) == 0
    np.testing.assert_array_equal(unrolled(a=A, idx=idx), want)
    idx[1, 3, 0] = 64
    with pytest.raises(RuntimeFault) as fault:
        k(a=A, idx=idx)
    line = (
        FILE.read_text()
        .splitlines()
        .index("        nisa.tensor_copy(dst=o, src=t.indirect(ix, num_elem=16))")
        + 1
    )
    message = str(fault.value)
    assert message.startswith(
        f"out-of-bounds tensor indirection: tensor_copy at indirect05.py:{line} [j=1]"
    )
    assert "reads offset 64 (offset 3 of 16 in 'src.index') of a free dimension of 64" in message


ERRORS = KERNELS / "indirect_errors.py"


@pytest.mark.parametrize(
    ("kernel", "code", "text", "line"),
    [
        ("on_hbm", "err_unsupported_memory", "addresses an SBUF or PSUM tensor", "a.indirect("),
        ("float_index", "err_invalid_argument", "got float32 sbuf (128, 1)", "t.indirect(fx)"),
        ("too_many_offsets", "err_invalid_argument", "num_elem 257 is not in 1..256", "257"),
        ("slice_of_indirect", "err_invalid_view", "indexing of a tensor-indirection", "[:, 0:8]"),
        (
            "data2",
            "nkic_tensor_indirection",
            "`data2` does not take tensor indirection; only `dst` and `data1` do",
            "data2=t.indirect",
        ),
        ("scalar_operand", "nkic_tensor_indirection", "`operand0` does not take", "operand0="),
        ("dma", "nkic_tensor_indirection", "nisa.dma_copy does not take", "nisa.dma_copy(dst=o"),
        ("memset_dst", "nkic_tensor_indirection", "nisa.memset does not take", "nisa.memset(dst=t"),
        (
            "gpsimd_copy",
            "err_unsupported_engine",
            "runs on the Vector or Scalar engine, not GpSimd",
            "engine=nisa.engine.gpsimd",
        ),
        (
            "snake_overflow",
            "nkic_tensor_indirection",
            "offset 11 comes from partition 11 of the 8-partition index tile",
            "num_elem=12))",
        ),
        (
            "psum_scatter_on_scalar",
            "nkic_tensor_indirection",
            "a scattered `dst` (.indirect()) cannot be in PSUM",
            "dst=p.indirect",
        ),
        (
            "matmul_float32",
            "nkic_tensor_indirection",
            "an indirect `moving` is float32",
            "moving=t.indirect",
        ),
        (
            "matmul_transpose",
            "nkic_tensor_indirection",
            "with is_transpose=True `moving` cannot",
            "is_transpose=True",
        ),
        (
            "matmul_tiled",
            "nkic_tensor_indirection",
            "incompatible with hardware tiling",
            "moving=m.indirect(ix, num_elem=16),",
        ),
        (
            "mx_scale_not_indexed",
            "nkic_tensor_indirection",
            "`stationary` and `stationary_scale` must both be .indirect() views",
            "nisa.nc_matmul_mx(",
        ),
        (
            "gathered_off_its_index",
            "nkic_tensor_indirection",
            "`src` starts at partition 32 but its index at partition 0",
            "nisa.tensor_copy(",
        ),
        (
            "gathered_view_off_its_index",
            "nkic_tensor_indirection",
            "`src` starts at partition 32 but its index at partition 0",
            "nisa.tensor_copy(",
        ),
        (
            "strided_3d",
            "err_invalid_view",
            "are not contiguous",
            "t[:, :, 0:8]",
        ),
        (
            "scatter_index_off_src",
            "nkic_tensor_indirection",
            "the index of `dst` starts at partition 64 but `src` at partition 0",
            "dst=t.indirect",
        ),
    ],
)
def test_each_mistake_is_one_diagnostic_at_its_call(kernel, code, text, line):
    a = np.zeros((128, 64), np.float32)
    (d,) = nkic.check(ERRORS, kernel=kernel, a=a, target="trn3")
    assert (d.code, d.severity) == (code, "error") and text in d.message, d.message
    assert d.hint
    source = ERRORS.read_text()
    at = source.index(line, source.index(f"def {kernel}("))  # the marker inside the kernel
    assert d.loc.line == source[:at].count("\n") + 1


def test_an_index_off_a_quadrant_boundary():
    a = np.zeros((128, 64), np.float32)
    found = nkic.check(ERRORS, kernel="index_off_quadrant", a=a, target="trn3")
    assert any(
        d.code == "nkic_tensor_indirection"
        and "the index of `src` starts at partition 8, not on a quadrant boundary" in d.message
        for d in found
    ), [d.message for d in found]


def test_before_nki_0_5_and_before_trn3_the_method_is_refused():
    a = np.zeros((128, 64), np.float32)
    (d,) = nkic.check(ERRORS, kernel="data2", a=a, target="trn3", nki="0.4")
    assert d.code == "err_unknown_api" and "it is new in NKI 0.5" in d.message, d.message
    (d,) = nkic.check(ERRORS, kernel="data2", a=a, target="trn2")
    assert d.code == "err_unsupported_on_target", d.message


def test_the_ir_text_of_an_indirect_operand_reads_back():
    idx = offsets((128, 2), 64, seed=9)
    ir = compile_("gather_copy", a=A, idx=idx, n=40).ir
    assert "indirect(src.index, 1, 1, 64)" in ir, ir
    assert print_kernel(parse_kernel(ir)) == ir


def test_nc_matmul_scatters_its_psum_result():
    rng = np.random.default_rng(10)
    s = rng.standard_normal((128, 128)).astype(np.float32)
    m = rng.standard_normal((128, 40)).astype(np.float32)
    perm = rng.permutation(96)[:40]
    idx = np.zeros((128, 2), np.int32)
    for i, o in enumerate(perm):  # snake order of the Tensor engine: groups of 32 partitions
        g, r = divmod(i, 64)
        idx[g * 32 + r % 32, r // 32] = o
    out = compile_("scatter_matmul", s=s, m=m, idx=idx, w=96)(s=s, m=m, idx=idx)
    want = np.zeros((128, 96), np.float32)
    bf16 = ml_dtypes.bfloat16
    want[:, snake(idx, 40, 32)] = s.astype(bf16).astype(np.float32).T @ m.astype(bf16).astype(
        np.float32
    )
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-4)


def test_predicated_copy_scatters_where_the_predicate_holds():
    rng = np.random.default_rng(11)
    idx = _permutation_index(32, seed=12)
    s = rng.standard_normal((128, 32)).astype(np.float32)
    pred = (rng.random((128, 32)) < 0.5).astype(np.uint8)
    out = compile_("scatter_predicated", a=A, idx=idx, s=s, pred=pred)(a=A, idx=idx, s=s, pred=pred)
    want, cols = A.copy(), snake(idx, 32, 16)
    want[:, cols] = np.where(pred != 0, s, A[:, cols])
    np.testing.assert_array_equal(out, want)


def test_tensor_reduce_sums_gathered_columns():
    idx = offsets((128, 3), 64, seed=13)
    out = compile_("gather_sum", a=A, idx=idx, n=48)(a=A, idx=idx)
    np.testing.assert_allclose(out, A[:, snake(idx, 48, 16)].sum(1, keepdims=True), rtol=1e-5)


def test_operands_of_tensor_indirection_are_placed_at_partition_0():
    """32-partition tiles would go to partitions 32, 64, 96 beside a wide tile; the operands of
    an indirect instruction start at partition 0, where the start-partition rules hold."""
    rng = np.random.default_rng(14)
    a = rng.standard_normal((32, 64)).astype(np.float32)
    idx = offsets((32, 1), 64, seed=15)
    k = compile_("small_tiles", a=a, idx=idx)
    np.testing.assert_array_equal(k(a=a, idx=idx), a[:, idx[:16, 0]] + 1.0)
    placed = {
        line.split('"')[1]: line.split("address(")[1].split(",")[0]
        for line in k.ir.splitlines()
        if "alloc sbuf" in line
    }
    assert placed == {"wide": "0", "t": "0", "ix": "0", "o": "0"}, placed


def test_exponential_gathers_src_and_scatters_dst():
    src_idx = offsets((128, 1), 64, seed=16)
    dst_idx = _permutation_index(24, seed=17)
    k = compile_("gather_exp_scatter", a=A, src_idx=src_idx, dst_idx=dst_idx, n=24)
    out = k(a=A, src_idx=src_idx, dst_idx=dst_idx)
    want = np.zeros_like(A)
    want[:, snake(dst_idx, 24, 16)] = np.exp(A[:, snake(src_idx, 24, 16)] - 1.0)
    np.testing.assert_allclose(out, want, rtol=1e-6)


def test_a_gather_from_a_partly_written_tile_is_checked_when_it_runs():
    idx = offsets((128, 1), 32, seed=18)
    assert nkic.check(FILE, kernel="gather_written_half", a=A, idx=idx, target="trn3") == []
    k = compile_("gather_written_half", a=A, idx=idx)
    np.testing.assert_array_equal(k(a=A, idx=idx), A[:, idx[:16, 0]])
    idx[5, 0] = 40  # a column nothing wrote
    with pytest.raises(RuntimeFault, match="uninitialised read: tensor_copy at indirect05.py"):
        k(a=A, idx=idx)


def test_nc_matmul_mx_gathers_stationary_with_its_scales():
    from ..isa.helpers import FP8E4
    from ..isa.test_mx import _deq, _mm, pack8, scale_rows

    rng = np.random.default_rng(19)
    P, W, M, N = 128, 12, 4, 6
    sv = rng.standard_normal((P, W, 4)).astype(FP8E4)
    mvv = rng.standard_normal((P, N, 4)).astype(FP8E4)
    sc = rng.integers(120, 134, (P // 8, W)).astype(np.uint8)
    mc = rng.integers(120, 134, (P // 8, N)).astype(np.uint8)
    ss, ms = np.zeros((P, W), np.uint8), np.zeros((P, N), np.uint8)
    ss[scale_rows(P)], ms[scale_rows(P)] = sc, mc
    idx = offsets((P, 1), W, seed=20)
    k = compile_("gather_matmul_mx", st=pack8(sv), mv=pack8(mvv), st_scale=ss, mv_scale=ms,
                 idx=idx, m=M)  # fmt: skip
    got = k(st=pack8(sv), mv=pack8(mvv), st_scale=ss, mv_scale=ms, idx=idx)
    cols = snake(idx, M, 32)
    want = _mm(_deq(sv[:, cols], sc[:, cols], P), _deq(mvv, mc, P))
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_a_tile_of_more_free_dimensions_is_indexed_row_major():
    a = np.random.default_rng(21).standard_normal((128, 4, 16)).astype(np.float32)
    idx = offsets((128, 2), 64, seed=22)
    out = compile_("gather_copy", a=a, idx=idx, n=32)(a=a, idx=idx)
    np.testing.assert_array_equal(out, a.reshape(128, 64)[:, snake(idx, 32, 16)])


def test_vector_engine_gathers_from_psum():
    rng = np.random.default_rng(23)
    s = rng.standard_normal((128, 128)).astype(np.float32)
    m = rng.standard_normal((128, 64)).astype(np.float32)
    idx = offsets((128, 1), 64, seed=24)
    out = compile_("gather_from_psum", s=s, m=m, idx=idx, n=20)(s=s, m=m, idx=idx)
    bf16 = ml_dtypes.bfloat16
    product = s.astype(bf16).astype(np.float32).T @ m.astype(bf16).astype(np.float32)
    np.testing.assert_allclose(out, product[:, snake(idx, 20, 16)], rtol=1e-5, atol=1e-4)
