"""A Beta 1 attention kernel written for the nkic migrate tests: softmax(q.T @ k) @ v one
block of 128 queries at a time, each block's score row and its probabilities as large SBUF
tiles. Migrated to NKI 0.7 its loops become `range` and are unrolled: the tiles of every
iteration are then tensors of their own, together far more than SBUF holds."""

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np


@nki.jit
def attention_rows(q, k, v):
    # q, k: [d, S] (d = 128 on partitions), v: [S, d]; out[S, d]
    d, S = q.shape
    out = nl.ndarray((S, d), dtype=nl.float32, buffer=nl.shared_hbm)
    q_sb = nl.load(q)
    k_sb = nl.load(k)
    for i in nl.affine_range(S // 128):
        scores = nl.ndarray((nl.par_dim(128), S), dtype=nl.float32, buffer=nl.sbuf)
        for j in nl.affine_range(S // 512):
            block = nisa.nc_matmul(
                q_sb[:, i * 128 : (i + 1) * 128], k_sb[:, j * 512 : (j + 1) * 512]
            )
            scores[:, j * 512 : (j + 1) * 512] = nl.copy(block)
        top = nl.max(scores, axis=1)
        centred = nisa.tensor_scalar(data=scores, op0=np.subtract, operand0=top)
        shifted = nl.exp(centred)
        inverse = nl.reciprocal(nl.sum(shifted, axis=1))
        probs = nisa.tensor_scalar(data=shifted, op0=np.multiply, operand0=inverse)
        acc = nl.zeros((nl.par_dim(128), d), dtype=nl.float32, buffer=nl.psum)
        for j in nl.affine_range(S // 128):
            probs_t = nisa.nc_transpose(probs[:, j * 128 : (j + 1) * 128])
            v_rows = nl.load(v[j * 128 : (j + 1) * 128, :])
            acc += nisa.nc_matmul(nl.copy(probs_t), v_rows)
        nl.store(out[i * 128 : (i + 1) * 128, :], value=nl.copy(acc))
    return out
