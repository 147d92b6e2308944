"""Operand-rule violations, one per `case`; the offending call carries `# <- case`."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def bad(a, case=""):
    s = nl.ndarray((8, 16), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=s, src=a)
    d = nl.ndarray((8, 16), dtype=nl.float32, buffer=nl.sbuf)
    p = nl.ndarray((8, 16), dtype=nl.float32, buffer=nl.psum)
    nisa.tensor_copy(dst=p, src=s)
    s4 = nl.ndarray((4, 16), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=s4, value=0.0)
    i32 = nl.ndarray((8, 16), dtype=nl.int32, buffer=nl.sbuf)
    nisa.memset(dst=i32, value=0)
    b16 = nl.ndarray((8, 16), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.memset(dst=b16, value=0.0)
    col = nl.ndarray((8, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=col, value=1.0)
    # partition counts / free sizes
    if case == "partition_mismatch":
        nisa.tensor_tensor(dst=d, data1=s, data2=s4, op=nl.add)  # <- partition_mismatch
    if case == "free_size_mismatch":
        nisa.tensor_tensor(dst=d[:, 0:8], data1=s, data2=s, op=nl.add)  # <- free_size_mismatch
    if case == "matmul_k_mismatch":
        nisa.nc_matmul(dst=p, stationary=s4[:, 0:8], moving=s)  # <- matmul_k_mismatch
    if case == "matmul_n_too_big":
        big = nl.ndarray((8, 1024), dtype=nl.bfloat16, buffer=nl.sbuf)
        nisa.memset(dst=big, value=0.0)
        pb = nl.ndarray((8, 1024), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=pb, stationary=b16[:, 0:8], moving=big)  # <- matmul_n_too_big
    if case == "vector_transpose_too_big":
        t = nl.ndarray((16, 64), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=t, value=0.0)
        o = nl.ndarray((64, 16), dtype=nl.float32, buffer=nl.sbuf)
        nisa.nc_transpose(dst=o, data=t, engine=nisa.engine.vector)  # <- vector_transpose_too_big
    if case == "scalar_operand_shape":
        c2 = nl.ndarray((8, 2), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=c2, value=1.0)
        nisa.tensor_scalar(dst=d, data=s, op0=nl.add, operand0=c2)  # <- scalar_operand_shape
    if case == "reduce_axis_not_trailing":
        t3 = nl.ndarray((8, 4, 4), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=t3, value=0.0)
        o3 = nl.ndarray((8, 4), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=o3, op=nl.add, data=t3, axis=(1,))  # <- reduce_axis_not_trailing
    if case == "reduce_axis_zero":
        nisa.tensor_reduce(dst=col, op=nl.add, data=s, axis=0)  # <- reduce_axis_zero
    if case == "bn_stats_too_wide":
        w = nl.ndarray((8, 1024), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=w, value=0.0)
        st = nl.ndarray((8, 6), dtype=nl.float32, buffer=nl.sbuf)
        nisa.bn_stats(dst=st, data=w)  # <- bn_stats_too_wide
    if case == "iota_pattern_size":
        nisa.iota(dst=i32, pattern=[[1, 8]], offset=0)  # <- iota_pattern_size
    # memory spaces
    if case == "matmul_moving_psum":
        nisa.nc_matmul(dst=p, stationary=s[:, 0:8], moving=p)  # <- matmul_moving_psum
    if case == "matmul_dst_sbuf":
        nisa.nc_matmul(dst=d, stationary=s[:, 0:8], moving=s)  # <- matmul_dst_sbuf
    if case == "dma_psum":
        nisa.dma_copy(dst=p, src=a)  # <- dma_psum
    if case == "gpsimd_psum":
        nisa.tensor_copy(dst=p, src=s, engine=nisa.engine.gpsimd)  # <- gpsimd_psum
    if case == "both_psum":
        nisa.tensor_tensor(dst=d, data1=p, data2=p, op=nl.add)  # <- both_psum
    if case == "iota_psum":
        nisa.iota(dst=p, pattern=[[1, 16]], offset=0)  # <- iota_psum
    if case == "activation_hbm":
        nisa.activation(dst=d, op=nl.exp, data=a)  # <- activation_hbm
    # dtypes
    if case == "bitvec_float":
        nisa.tensor_tensor(dst=d, data1=s, data2=s, op=nl.bitwise_and)  # <- bitvec_float
    if case == "memset_value_type":
        nisa.memset(dst=i32, value=1.5)  # <- memset_value_type
    if case == "matmul_mixed_fp32_bf16":
        nisa.nc_matmul(dst=p, stationary=s[:, 0:8], moving=b16)  # <- matmul_mixed_fp32_bf16
    if case == "transpose_dtype":
        o = nl.ndarray((16, 8), dtype=nl.bfloat16, buffer=nl.psum)
        nisa.nc_transpose(dst=o, data=s)  # <- transpose_dtype
    if case == "predicate_dtype":
        nisa.tensor_copy_predicated(dst=d, src=s, predicate=s)  # <- predicate_dtype
    if case == "scalar_operand_dtype":
        cb = nl.ndarray((8, 1), dtype=nl.bfloat16, buffer=nl.sbuf)
        nisa.memset(dst=cb, value=1.0)
        nisa.tensor_scalar(dst=d, data=s, op0=nl.add, operand0=cb)  # <- scalar_operand_dtype
    if case == "cumulative_int32":
        nisa.tensor_scalar_cumulative(dst=i32, src=i32, op0=nl.add, op1=nl.add, imm0=0.0)  # <- cumulative_int32
    if case == "rng_float":
        nisa.rng(dst=d, engine=nisa.engine.vector)  # <- rng_float
    # operators
    if case == "tsr_reduce_op":
        nisa.tensor_scalar_reduce(  # <- tsr_reduce_op
            dst=d, data=s, op0=nl.add, operand0=1.0, reduce_op=nl.subtract, reduce_res=col
        )
    if case == "mixed_bitvec_arith":
        nisa.tensor_scalar(dst=i32, data=i32, op0=nl.bitwise_and, operand0=3, op1=nl.add, operand1=1.0)  # <- mixed_bitvec_arith
    if case == "activation_not_a_function":
        nisa.activation(dst=d, op=nl.maximum, data=s)  # <- activation_not_a_function
    if case == "partition_reduce_op":
        o1 = nl.ndarray((1, 16), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_partition_reduce(dst=o1, op=nl.multiply, data=s)  # <- partition_reduce_op
    # engines
    if case == "copy_on_tensor_engine":
        nisa.tensor_copy(dst=d, src=s, engine=nisa.engine.tensor)  # <- copy_on_tensor_engine
    if case == "bitvec_on_gpsimd":
        nisa.tensor_scalar(dst=i32, data=i32, op0=nl.bitwise_and, operand0=3, engine=nisa.engine.gpsimd)  # <- bitvec_on_gpsimd
    # arguments
    if case == "shuffle_mask_len":
        nisa.nc_stream_shuffle(dst=d, src=s, shuffle_mask=[0, 1, 2])  # <- shuffle_mask_len
    if case == "tiling_half_given":
        nisa.nc_matmul(dst=p, stationary=s[:, 0:8], moving=s, tile_position=(0, 0))  # <- tiling_half_given
    if case == "unary_operand0":
        nisa.tensor_scalar(dst=d, data=s, op0=nl.abs, operand0=2.0)  # <- unary_operand0
    # target gates
    if case == "scalar_copy_trn1":
        nisa.tensor_copy(dst=d, src=s, engine=nisa.engine.scalar)  # <- scalar_copy_trn1
    if case == "exponential_trn2":
        nisa.exponential(dst=d, src=s)  # <- exponential_trn2
    if case == "activate2_trn2":
        nisa.activate2(dst=d, op=nl.copy, data=s, imm0=1.0, imm1=0.0, op0=nl.multiply, op1=nl.add)  # <- activate2_trn2
    if case == "range_select_trn1":
        nisa.range_select(dst=d, on_true_tile=s, comp_op0=nl.greater_equal, comp_op1=nl.less, bound0=col, bound1=col)  # <- range_select_trn1
    if case == "nonzero_trn1":
        nz = nl.ndarray((8, 17), dtype=nl.int32, buffer=nl.sbuf)
        nisa.nonzero_with_count(dst=nz, src=s)  # <- nonzero_trn1
    if case == "rand2_trn2":
        nisa.rand2(dst=d, min=0.0, max=1.0)  # <- rand2_trn2
    if case == "gpsimd_rng_trn1":
        nisa.rng(dst=i32, engine=nisa.engine.gpsimd)  # <- gpsimd_rng_trn1
    if case == "rand_state_trn1":
        st6 = nl.ndarray((8, 6), dtype=nl.uint32, buffer=nl.sbuf)
        nisa.memset(dst=st6, value=1)
        nisa.rand_set_state(src_seeds=st6, engine=nisa.engine.gpsimd)  # <- rand_state_trn1
    if case == "hwdge_trn1":
        nisa.dma_copy(dst=d, src=a, dge_mode=nisa.dge_mode.hwdge)  # <- hwdge_trn1
    if case == "double_row_trn1":
        f8 = nl.ndarray((8, 2, 16), dtype=nl.float8_e5m2, buffer=nl.sbuf)
        nisa.memset(dst=f8, value=0.0)
        nisa.nc_matmul(dst=p[:, 0:16], stationary=f8[:, :, 0:8], moving=f8, perf_mode=nisa.matmul_perf_mode.double_row)  # <- double_row_trn1
    if case == "tile32_trn1":
        nisa.nc_matmul(dst=p, stationary=s[:, 0:8], moving=s, tile_position=(0, 0), tile_size=(32, 32))  # <- tile32_trn1
    if case == "bf16_psum_trn2":
        pb = nl.ndarray((8, 16), dtype=nl.bfloat16, buffer=nl.psum)
        nisa.nc_matmul(dst=pb, stationary=b16[:, 0:8], moving=b16)  # <- bf16_psum_trn2
    if case == "e4m3fn_matmul_trn2":
        f8 = nl.ndarray((8, 16), dtype=nl.float8_e4m3fn, buffer=nl.sbuf)
        nisa.memset(dst=f8, value=0.0)
        nisa.nc_matmul(dst=p, stationary=f8[:, 0:8], moving=f8)  # <- e4m3fn_matmul_trn2
    if case == "abs_max_trn2":
        nisa.tensor_tensor(dst=d, data1=s, data2=s, op=nl.abs_max)  # <- abs_max_trn2
    if case == "square_op0_trn2":
        nisa.tensor_scalar(dst=d, data=s, op0=nl.square, operand0=0)  # <- square_op0_trn2
    if case == "scalar_bias_trn1":
        nisa.activation(dst=d, op=nl.exp, data=s, bias=1.0)  # <- scalar_bias_trn1
    if case == "dma_transpose_trn1":
        tt = nl.ndarray((16, 8), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_transpose(dst=tt, src=s)  # <- dma_transpose_trn1
    if case == "quantize_mx_trn2":
        q = nl.ndarray((8, 4), dtype=nl.uint32, buffer=nl.sbuf)
        sc = nl.ndarray((1, 4), dtype=nl.uint8, buffer=nl.sbuf)
        nisa.quantize_mx(dst=q, src=b16, dst_scale=sc)  # <- quantize_mx_trn2
    if case == "matmul_mx_trn2":
        w = nl.ndarray((32, 8), dtype=nl.uint32, buffer=nl.sbuf)
        ws = nl.ndarray((4, 8), dtype=nl.uint8, buffer=nl.sbuf)
        pm = nl.ndarray((8, 8), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul_mx(dst=pm, stationary=w, moving=w, stationary_scale=ws, moving_scale=ws)  # <- matmul_mx_trn2
    # rules added with these tests
    if case == "shuffle_mask_range":
        nisa.nc_stream_shuffle(dst=d, src=s, shuffle_mask=[40] * 32)  # <- shuffle_mask_range
    if case == "shuffle_missing_source":
        nisa.nc_stream_shuffle(dst=d, src=s, shuffle_mask=[20] * 32)  # <- shuffle_missing_source
    if case == "tile_k_exceeds_rows":
        big = nl.ndarray((128, 8), dtype=nl.bfloat16, buffer=nl.sbuf)
        nisa.memset(dst=big, value=0.0)
        nisa.nc_matmul(dst=p[:, 0:8], stationary=big, moving=big, tile_position=(0, 0), tile_size=(64, 128))  # <- tile_k_exceeds_rows
    if case == "transpose_dst_dtype":
        pt = nl.ndarray((16, 8), dtype=nl.float32, buffer=nl.psum)
        eye = nl.ndarray((8, 8), dtype=nl.bfloat16, buffer=nl.sbuf)
        nisa.memset(dst=eye, value=0.0)
        nisa.nc_matmul(dst=pt, stationary=b16, moving=eye, is_transpose=True)  # <- transpose_dst_dtype
    if case == "double_row_transpose":
        f8 = nl.ndarray((8, 2, 8), dtype=nl.float8_e5m2, buffer=nl.sbuf)
        nisa.memset(dst=f8, value=0.0)
        pt = nl.ndarray((8, 8), dtype=nl.uint16, buffer=nl.psum)
        nisa.nc_matmul(dst=pt, stationary=f8, moving=f8, is_transpose=True, perf_mode=nisa.matmul_perf_mode.double_row)  # <- double_row_transpose
    if case == "local_gather_elems":
        s16 = nl.ndarray((16, 16), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=s16, value=0.0)
        ix = nl.ndarray((16, 2), dtype=nl.uint16, buffer=nl.sbuf)
        nisa.memset(dst=ix, value=0)
        g = nl.ndarray((16, 96), dtype=nl.float32, buffer=nl.sbuf)
        nisa.local_gather(dst=g, src_buffer=s16, index=ix, num_elem_per_idx=3)  # <- local_gather_elems
    if case == "find_index8_dtype":
        v8 = nl.ndarray((8, 8), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=v8, value=0.0)
        o8 = nl.ndarray((8, 8), dtype=nl.float32, buffer=nl.sbuf)
        nisa.nc_find_index8(dst=o8, data=s, vals=v8)  # <- find_index8_dtype
    if case == "range_select_fill":
        nisa.range_select(dst=d, on_true_tile=s, comp_op0=nl.greater_equal, comp_op1=nl.less, bound0=col, bound1=col, on_false_value=0.0)  # <- range_select_fill
    if case == "rand2_bounds":
        nisa.rand2(dst=d, min=1.0, max=-1.0)  # <- rand2_bounds
    if case == "partition_window":
        t48 = nl.ndarray((48, 16), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=t48[8:16], value=0.0)  # <- partition_window
    if case == "packed_on_trn2":
        w = nl.ndarray((8, 4), dtype=nl.float8_e4m3fn_x4, buffer=nl.sbuf)
        nisa.memset(dst=w, value=0)  # <- packed_on_trn2
    if case == "partition_reduce_dst":
        nisa.tensor_partition_reduce(dst=d, op=nl.add, data=s)  # <- partition_reduce_dst
    if case == "gpsimd_tensor_scalar_op":
        nisa.tensor_scalar(dst=d, data=s, op0=nl.maximum, operand0=0.0, engine=nisa.engine.gpsimd)  # <- gpsimd_tensor_scalar_op
    if case == "matmul_mx_odd_m":
        w = nl.ndarray((32, 3), dtype=nl.uint32, buffer=nl.sbuf)
        nisa.memset(dst=w, value=0)
        ws = nl.ndarray((4, 3), dtype=nl.uint8, buffer=nl.sbuf)
        nisa.memset(dst=ws, value=0)
        pm = nl.ndarray((3, 3), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul_mx(dst=pm, stationary=w.view(nl.float8_e4m3fn_x4), moving=w.view(nl.float8_e4m3fn_x4), stationary_scale=ws, moving_scale=ws)  # <- matmul_mx_odd_m
    if case == "hwdge_cast":
        nisa.dma_copy(dst=b16, src=a, dge_mode=nisa.dge_mode.hwdge)  # <- hwdge_cast
    if case == "sync_engine_without_hwdge":
        nisa.dma_copy(dst=d, src=a, engine=nisa.engine.sync)  # <- sync_engine_without_hwdge
    if case == "dma_count_mismatch":
        nisa.dma_copy(dst=s4, src=a)  # <- dma_count_mismatch
    if case == "dma_transpose_1byte":
        s8 = nl.ndarray((8, 16), dtype=nl.int8, buffer=nl.sbuf)
        nisa.memset(dst=s8, value=0)
        tt = nl.ndarray((16, 8), dtype=nl.int8, buffer=nl.sbuf)
        nisa.dma_transpose(dst=tt, src=s8)  # <- dma_transpose_1byte
    if case == "dma_transpose_hwdge_4byte":
        s32 = nl.ndarray((16, 128), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=s32, value=0.0)
        tt = nl.ndarray((128, 16), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_transpose(dst=tt, src=s32, dge_mode=nisa.dge_mode.hwdge)  # <- dma_transpose_hwdge_4byte
    if case == "dma_transpose_shape":
        tt = nl.ndarray((8, 16), dtype=nl.bfloat16, buffer=nl.sbuf)
        nisa.dma_transpose(dst=tt, src=b16)  # <- dma_transpose_shape
    if case == "rand_get_state_trn1":
        st6 = nl.ndarray((8, 6), dtype=nl.uint32, buffer=nl.sbuf)
        nisa.rand_get_state(dst=st6, engine=nisa.engine.gpsimd)  # <- rand_get_state_trn1
    if case == "memset_packed_nonzero":
        w = nl.ndarray((8, 4), dtype=nl.float8_e4m3fn_x4, buffer=nl.sbuf)
        nisa.memset(dst=w, value=1.0)  # <- memset_packed_nonzero
    if case == "five_free_dims":
        t5 = nl.ndarray((8, 2, 2, 2, 2, 2), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=t5, value=0.0)  # <- five_free_dims
    if case == "too_many_partitions":
        big = nl.ndarray((256, 4), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=big, value=0.0)  # <- too_many_partitions
    if case == "dma_transpose_swdge_static":
        tt = nl.ndarray((16, 8), dtype=nl.bfloat16, buffer=nl.sbuf)
        nisa.dma_transpose(dst=tt, src=b16, dge_mode=nisa.dge_mode.swdge)  # <- dma_transpose_swdge_static
    if case == "dma_transpose_hwdge_shape":
        tt = nl.ndarray((16, 8), dtype=nl.bfloat16, buffer=nl.sbuf)
        nisa.dma_transpose(dst=tt, src=b16, dge_mode=nisa.dge_mode.hwdge)  # <- dma_transpose_hwdge_shape
    if case == "select_reduce_int_res":
        pr = nl.ndarray((8, 16), dtype=nl.uint8, buffer=nl.sbuf)
        nisa.memset(dst=pr, value=1)
        ri = nl.ndarray((8, 1), dtype=nl.int32, buffer=nl.sbuf)
        nisa.select_reduce(dst=d, predicate=pr, on_true=s, on_false=0.0, reduce_res=ri, reduce_cmd=nisa.reduce_cmd.reset_reduce)  # <- select_reduce_int_res
    if case == "exponential_dst_dtype":
        u = nl.ndarray((8, 16), dtype=nl.uint32, buffer=nl.sbuf)
        nisa.exponential(dst=u, src=s)  # <- exponential_dst_dtype
    if case == "cumulative_load_without_imm1":
        nisa.tensor_scalar_cumulative(dst=d, src=s, op0=nl.add, op1=nl.add, imm0=0.0, reduce_cmd=nisa.reduce_cmd.load_reduce)  # <- cumulative_load_without_imm1
    if case == "scan_initial_dtype":
        cb = nl.ndarray((8, 1), dtype=nl.bfloat16, buffer=nl.sbuf)
        nisa.memset(dst=cb, value=0.0)
        nisa.tensor_tensor_scan(dst=d, data0=s, data1=s, initial=cb, op0=nl.add, op1=nl.add)  # <- scan_initial_dtype
    if case == "dropout_int_prob_dtype":
        cb = nl.ndarray((8, 1), dtype=nl.bfloat16, buffer=nl.sbuf)
        nisa.memset(dst=cb, value=0.0)
        nisa.dropout(dst=i32, data=i32, prob=cb)  # <- dropout_int_prob_dtype
    if case == "max8_rank":
        t4 = nl.ndarray((8, 2, 2, 4), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=t4, value=0.0)
        m8 = nl.ndarray((8, 8), dtype=nl.float32, buffer=nl.sbuf)
        nisa.max8(dst=m8, src=t4)  # <- max8_rank
    if case == "activate2_reverse_without_op":
        nisa.activate2(dst=d, op=nl.copy, data=s, imm0=1.0, imm1=0.0, op0=nl.multiply, op1=nl.bypass, reverse1=True)  # <- activate2_reverse_without_op
    if case == "quantize_dst_size":
        src = nl.ndarray((32, 16), dtype=nl.bfloat16, buffer=nl.sbuf)
        nisa.memset(dst=src, value=0.0)
        q = nl.ndarray((32, 8), dtype=nl.float8_e4m3fn_x4, buffer=nl.sbuf)
        sc = nl.ndarray((4, 8), dtype=nl.uint8, buffer=nl.sbuf)
        nisa.quantize_mx(dst=q, src=src, dst_scale=sc)  # <- quantize_dst_size
    if case == "dma_compute_counts":
        nisa.dma_compute(dst=d, srcs=[s, s4], reduce_op=nl.add)  # <- dma_compute_counts
    out = nl.ndarray((8, 16), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=s)
    return out
