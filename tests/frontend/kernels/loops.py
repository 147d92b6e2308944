"""Loops: which stay symbolic IR loops and which must be unrolled."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def symbolic(x):
    P, F = x.shape
    out = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(F // 128):
        t = nl.ndarray((P, 128), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[:, nl.ds(i * 128, 128)])
        nisa.dma_copy(dst=out[:, i * 128 : (i + 1) * 128], src=t)
    for j in nl.sequential_range(1, 9, 2):
        nisa.dma_copy(dst=out[:, nl.ds(j, 1)], src=x[:, nl.ds(j - 1, 1)])
    return out


@nki.jit
def must_unroll(x):
    P, F = x.shape
    t = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
    for i in nl.affine_range(2):  # branches on i
        if i == 0:
            nisa.memset(dst=t[:, 0:128], value=0.0)
        else:
            nisa.memset(dst=t[:, 128:256], value=1.0)
    seen = []
    for i in nl.sequential_range(3):  # builds compile-time state
        seen.append(i)
    assert seen == [0, 1, 2]
    count = 0
    for _ in nl.affine_range(3):  # carries a compile-time value
        count += 1
    assert count == 3
    items = []
    push = items.append
    for i in nl.affine_range(2):  # mutates through an alias
        push(i)
    assert items == [0, 1]
    for i in nl.affine_range(2):  # not affine
        nisa.memset(dst=t[:, nl.ds(i * i * 128, 128)], value=2.0)
    for i in nl.affine_range(2):  # needs a concrete int
        nisa.memset(dst=t[:, nl.ds(min(i, 1) * 64, 64)], value=3.0)
    for i in nl.static_range(2):  # always unrolled
        nisa.memset(dst=t[:, nl.ds(i * 64, 64)], value=4.0)
    for i in range(2):  # always unrolled
        nisa.memset(dst=t[:, nl.ds(i * 64, 64)], value=5.0)
    last = -1
    for i in nl.affine_range(4):  # symbolic; i is 3 after the loop
        last = i
    assert last == 3
    out = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    return out


def scale_half(t, i):
    if i % 2 == 0:
        nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=0.5)


@nki.jit
def nested(x):
    P, F = x.shape
    t = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    for a in nl.affine_range(2):
        for b in nl.affine_range(4):  # symbolic inside symbolic
            nisa.memset(dst=t[:, nl.ds(a * 256 + b * 64, 64)], value=1.0)
    for a in nl.affine_range(2):
        for b in nl.affine_range(2):  # helper branches on b: inner unrolled, outer symbolic
            scale_half(t[:, nl.ds(a * 256 + b * 128, 128)], b)
    out = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    return out


@nki.jit
def escaped(x):
    P, F = x.shape
    for i in nl.sequential_range(4):
        t = nl.ndarray((P, 128), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[:, nl.ds(i * 128, 128)])
    out = nl.ndarray((P, 128), dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    return out
