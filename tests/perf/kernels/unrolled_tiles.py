"""A load-compute-store pipeline over column blocks, written with `nl.affine_range`: under
NKI 0.3 the loop stays symbolic; unrolled (NKI 0.7, or `--unroll-loops`) every iteration
allocates its own tiles. Both forms must get the same buffers and the same latency."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def scaled_blocks(x):
    P, N = x.shape
    B = 8192  # 32 KiB of fp32 per partition: the blocks' tiles together exceed SBUF
    out = nl.ndarray((P, N), dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(N // B):
        tile = nl.ndarray((P, B), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=tile, src=x[:, i * B : (i + 1) * B])
        scaled = nl.ndarray((P, B), dtype=x.dtype, buffer=nl.sbuf)
        nisa.activation(dst=scaled, op=nl.exp, data=tile)
        nisa.dma_copy(dst=out[:, i * B : (i + 1) * B], src=scaled)
    return out
