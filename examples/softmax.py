"""Row softmax of x[N, D]: y = exp(x - max(x)) / sum(exp(x - max(x))), 128 rows per tile.

Per tile: the Vector engine finds the negated row maximum, the Scalar engine computes
exp(x + (-max)) and its row sum in one activation, the Vector engine takes the reciprocal of
the sum and scales the row by it.
"""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def softmax(x):
    N, D = x.shape
    TILE = nl.tile_size.pmax
    assert N % TILE == 0, "rows must be a multiple of 128"
    y = nl.ndarray((N, D), dtype=x.dtype, buffer=nl.shared_hbm)

    for i in range(N // TILE):
        rows = slice(i * TILE, (i + 1) * TILE)
        x_tile = nl.ndarray((TILE, D), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=x_tile, src=x[rows, :])

        neg_max = nl.ndarray((TILE, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=neg_max, op=nl.maximum, data=x_tile, axis=(1,), negate=True)

        exps = nl.ndarray((TILE, D), dtype=nl.float32, buffer=nl.sbuf)
        sums = nl.ndarray((TILE, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation_reduce(
            dst=exps, op=nl.exp, data=x_tile, reduce_op=nl.add, reduce_res=sums, bias=neg_max
        )

        inv = nl.ndarray((TILE, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.reciprocal(dst=inv, data=sums)

        y_tile = nl.ndarray((TILE, D), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=y_tile, data=exps, op0=nl.multiply, operand0=inv)
        nisa.dma_copy(dst=y[rows, :], src=y_tile)
    return y
