"""Row softmax split across the cores of an LNC launch: core c owns rows [c*N/cores, ...)."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def softmax_lnc(x):
    N, D = x.shape
    share = N // nl.num_programs()
    first = nl.program_id() * share
    y = nl.ndarray((N, D), dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(share // 128):
        rows = slice(first + i * 128, first + (i + 1) * 128)
        x_tile = nl.ndarray((128, D), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=x_tile, src=x[rows, :])
        neg_max = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=neg_max, op=nl.maximum, data=x_tile, axis=(1,), negate=True)
        exps = nl.ndarray((128, D), dtype=nl.float32, buffer=nl.sbuf)
        sums = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation_reduce(
            dst=exps, op=nl.exp, data=x_tile, reduce_op=nl.add, reduce_res=sums, bias=neg_max
        )
        inv = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.reciprocal(dst=inv, data=sums)
        y_tile = nl.ndarray((128, D), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=y_tile, data=exps, op0=nl.multiply, operand0=inv)
        nisa.dma_copy(dst=y[rows, :], src=y_tile)
    return y
