"""Operand constraints through the real compiler: code and line of each diagnostic."""

from __future__ import annotations

import re

import numpy as np
import pytest

from .helpers import KERNELS, diagnostics

SRC = (KERNELS / "negative.py").read_text().splitlines()


def line_of(case: str) -> int:
    tag = re.compile(rf"#\s*<-\s*{re.escape(case)}\s*$")
    return next(i + 1 for i, text in enumerate(SRC) if tag.search(text))


CASES = [
    # (case, target, code, argument named in the message)
    ("too_many_partitions", "trn2", "err_num_partition_exceed_arch_limit", "dst"),
    ("partition_mismatch", "trn2", "err_num_partition_mismatch", "data2"),
    ("free_size_mismatch", "trn2", "err_shape_mismatch", "dst"),
    ("matmul_k_mismatch", "trn2", "err_num_partition_mismatch", "moving"),
    ("matmul_n_too_big", "trn2", "err_size_of_dimension_exceed_arch_limit", "moving"),
    ("vector_transpose_too_big", "trn2", "err_size_of_dimension_exceed_arch_limit", "data"),
    ("scalar_operand_shape", "trn2", "err_shape_mismatch", "operand0"),
    ("reduce_axis_not_trailing", "trn2", "err_invalid_argument", "axis"),
    ("reduce_axis_zero", "trn2", "err_invalid_argument", "axis"),
    ("bn_stats_too_wide", "trn2", "err_size_of_dimension_exceed_arch_limit", "data"),
    ("iota_pattern_size", "trn2", "err_shape_mismatch", "pattern"),
    ("matmul_moving_psum", "trn2", "err_unsupported_memory", "moving"),
    ("matmul_dst_sbuf", "trn2", "err_unsupported_memory", "dst"),
    ("dma_psum", "trn2", "err_unsupported_memory", "dst"),
    ("gpsimd_psum", "trn2", "err_unsupported_memory", "dst"),
    ("both_psum", "trn2", "err_unsupported_memory", "data2"),
    ("iota_psum", "trn2", "err_unsupported_memory", "dst"),
    ("activation_hbm", "trn2", "err_unsupported_memory", "data"),
    ("bitvec_float", "trn2", "err_dtype_mismatch", "data1"),
    ("memset_value_type", "trn2", "err_dtype_mismatch", "value"),
    ("matmul_mixed_fp32_bf16", "trn2", "err_dtype_mismatch", "moving"),
    ("transpose_dtype", "trn2", "err_dtype_mismatch", "dst"),
    ("predicate_dtype", "trn2", "err_dtype_mismatch", "predicate"),
    ("scalar_operand_dtype", "trn2", "err_dtype_mismatch", "operand0"),
    ("cumulative_int32", "trn2", "err_dtype_mismatch", "src"),
    ("rng_float", "trn2", "err_dtype_mismatch", "dst"),
    ("tsr_reduce_op", "trn2", "err_unsupported_operator", "reduce_op"),
    ("mixed_bitvec_arith", "trn2", "err_unsupported_operator", "op1"),
    ("activation_not_a_function", "trn2", "err_invalid_argument", "op"),
    ("partition_reduce_op", "trn2", "err_unsupported_operator", "op"),
    ("copy_on_tensor_engine", "trn2", "err_unsupported_engine", "tensor"),
    ("bitvec_on_gpsimd", "trn2", "err_unsupported_engine", "gpsimd"),
    ("shuffle_mask_len", "trn2", "err_invalid_argument", "shuffle_mask"),
    ("tiling_half_given", "trn2", "err_invalid_argument", "tile_size"),
    ("unary_operand0", "trn2", "err_invalid_argument", "operand0"),
    # target gates
    ("scalar_copy_trn1", "trn1", "err_unsupported_on_target", "trn1"),
    ("exponential_trn2", "trn2", "err_unsupported_on_target", "trn3"),
    ("activate2_trn2", "trn2", "err_unsupported_on_target", "trn3"),
    ("range_select_trn1", "trn1", "err_unsupported_on_target", "trn2"),
    ("nonzero_trn1", "trn1", "err_unsupported_on_target", "trn2"),
    ("rand2_trn2", "trn2", "err_unsupported_on_target", "trn3"),
    ("gpsimd_rng_trn1", "trn1", "err_unsupported_on_target", "trn1"),
    ("rand_state_trn1", "trn1", "err_unsupported_on_target", "trn2"),
    ("hwdge_trn1", "trn1", "err_unsupported_on_target", "hwdge"),
    ("double_row_trn1", "trn1", "err_unsupported_on_target", "double_row"),
    ("tile32_trn1", "trn1", "err_invalid_argument", "tile_size"),
    ("bf16_psum_trn2", "trn2", "err_dtype_mismatch", "dst"),
    ("e4m3fn_matmul_trn2", "trn2", "err_dtype_mismatch", "trn3"),
    ("abs_max_trn2", "trn2", "err_unsupported_on_target", "trn3"),
    ("square_op0_trn2", "trn2", "err_unsupported_on_target", "trn3"),
    ("scalar_bias_trn1", "trn1", "err_unsupported_on_target", "bias"),
    ("quantize_mx_trn2", "trn2", "err_unsupported_on_target", "trn3"),
    ("matmul_mx_trn2", "trn2", "err_unsupported_on_target", "trn3"),
    # rules added with these tests (nkic/passes/checks/operand_rules.py)
    ("shuffle_mask_range", "trn2", "err_invalid_argument", "shuffle_mask[0]"),
    ("shuffle_missing_source", "trn2", "err_invalid_argument", "shuffle_mask[0]"),
    ("tile_k_exceeds_rows", "trn2", "err_size_of_dimension_exceed_arch_limit", "tile_size"),
    ("transpose_dst_dtype", "trn2", "err_dtype_mismatch", "dst"),
    ("double_row_transpose", "trn3", "err_invalid_argument", "is_transpose"),
    ("local_gather_elems", "trn2", "err_invalid_argument", "num_elem_per_idx"),
    ("find_index8_dtype", "trn2", "err_dtype_mismatch", "dst"),
    ("range_select_fill", "trn2", "err_invalid_argument", "on_false_value"),
    ("rand2_bounds", "trn3", "err_invalid_argument", "min"),
    ("partition_window", "trn2", "nkic_partition_window", "dst"),
    ("packed_on_trn2", "trn2", "err_unsupported_on_target", "float8_e4m3fn_x4"),
    ("partition_reduce_dst", "trn2", "err_shape_mismatch", "dst"),
    ("gpsimd_tensor_scalar_op", "trn2", "err_unsupported_engine", "op0"),
    ("matmul_mx_odd_m", "trn3", "err_size_of_dimension_exceed_arch_limit", "stationary"),
    ("hwdge_cast", "trn2", "err_dtype_mismatch", "dst"),
    ("sync_engine_without_hwdge", "trn2", "err_invalid_argument", "hwdge"),
    ("dma_count_mismatch", "trn2", "err_store_dst_shape_smaller_than_other_shape", "dst"),
    ("dma_transpose_1byte", "trn2", "err_dtype_mismatch", "2- and 4-byte"),
    ("dma_transpose_hwdge_4byte", "trn2", "err_dtype_mismatch", "hardware-DGE"),
    ("dma_transpose_shape", "trn2", "err_shape_mismatch", "dst"),
    ("rand_get_state_trn1", "trn1", "err_unsupported_on_target", "trn2"),
    ("memset_packed_nonzero", "trn3", "err_dtype_mismatch", "0"),
    ("five_free_dims", "trn2", "err_exceed_max_supported_dimension", "dst"),
    ("dma_transpose_swdge_static", "trn2", "err_invalid_argument", "dge_mode"),
    ("dma_transpose_hwdge_shape", "trn2", "err_shape_mismatch", "src"),
    ("select_reduce_int_res", "trn2", "err_dtype_mismatch", "reduce_res"),
    ("exponential_dst_dtype", "trn3", "err_dtype_mismatch", "dst"),
    ("cumulative_load_without_imm1", "trn2", "err_invalid_argument", "imm1"),
    ("scan_initial_dtype", "trn2", "err_dtype_mismatch", "initial"),
    ("dropout_int_prob_dtype", "trn2", "err_dtype_mismatch", "prob"),
    ("max8_rank", "trn2", "err_exceed_max_supported_dimension", "3 dimensions"),
    ("activate2_reverse_without_op", "trn3", "err_invalid_argument", "reverse1"),
    ("quantize_dst_size", "trn3", "err_shape_mismatch", "dst"),
    ("dma_compute_counts", "trn2", "err_shape_mismatch", "source 1"),
]


def _errors(case, target):
    a = np.zeros((8, 16), np.float32)
    diags = diagnostics("negative", "bad", target, a=a, case=case)
    return (
        [d for d in diags if d.severity == "error"]
        if diags and hasattr(diags[0], "severity")
        else diags
    )


def test_baseline_kernel_is_clean():
    for target in ("trn1", "trn2", "trn3"):
        assert _errors("", target) == []


@pytest.mark.parametrize(("case", "target", "code", "word"), CASES, ids=[c[0] for c in CASES])
def test_operand_rule(case, target, code, word):
    errs = _errors(case, target)
    assert errs, f"{case}: no diagnostic on {target}"
    first = errs[0]
    assert first.code == code, [(d.code, d.message) for d in errs]
    assert first.loc.line == line_of(case), (first.loc, first.message)
    assert word in first.message, first.message
