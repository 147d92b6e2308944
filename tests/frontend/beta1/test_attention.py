"""Beta 1 attention building blocks: PSUM tensors with block dimensions are one tile per
block, each live only while it is used; `nl.matmul` without transpose_x transposes `x` on the
Tensor engine; `nl.loop_reduce` reduces into the tile it is assigned to."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import nkic

KERNELS = str(Path(__file__).parent / "attention_tiles.py")


def _attention(q, k, v):
    s = q.astype(np.float64).T @ k.astype(np.float64)
    p = np.exp(s - s.max(axis=1, keepdims=True))
    return (p / p.sum(axis=1, keepdims=True)) @ v.astype(np.float64).T


def test_attention_with_psum_blocks_and_implicit_transposes_matches_numpy():
    rng = np.random.default_rng(0)
    q, k, v = (rng.uniform(-1, 1, (128, 1024)).astype(np.float32) for _ in range(3))
    compiled = nkic.compile(KERNELS, q, k, v, kernel="attention")
    np.testing.assert_allclose(compiled(q, k, v), _attention(q, k, v), rtol=1e-4, atol=1e-5)
    # each scores block is its own PSUM tensor, written by its matmul directly (no copy)
    blocks = [ln for ln in compiled.ir.splitlines() if '"scores[' in ln]
    assert len(blocks) == 2
    for ln in blocks:
        name = ln.split()[0]
        writers = [w for w in compiled.ir.splitlines() if f"dst={name}[" in w]
        assert writers and all("nc_matmul" in w for w in writers)


def test_matmul_without_transpose_x_is_x_at_y():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((128, 128)).astype(np.float32)
    y = rng.standard_normal((128, 512)).astype(np.float32)
    compiled = nkic.compile(KERNELS, x, y, kernel="matmul_no_transpose")
    want = x.astype(np.float64) @ y.astype(np.float64)
    np.testing.assert_allclose(compiled(x, y), want, rtol=1e-5, atol=1e-4)
    assert "nc_transpose" in compiled.ir


def test_psum_blocks_larger_than_psum_fit_when_each_is_short_lived():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((128, 128)).astype(np.float32)
    b = rng.standard_normal((16, 128, 512)).astype(np.float32)
    out = nkic.compile(KERNELS, a, b, kernel="drained_blocks")(a, b)
    want = np.einsum("km,ikn->imn", a.astype(np.float64), b.astype(np.float64))
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-4)


def test_more_psum_blocks_live_at_once_than_banks_is_a_capacity_error():
    a = np.zeros((128, 128), np.float32)
    b = np.zeros((9, 128, 512), np.float32)
    errors = [
        d for d in nkic.check(KERNELS, kernel="all_blocks_live", a=a, b=b) if d.severity == "error"
    ]
    assert [d.code for d in errors] == ["err_psum_capacity_exceeded"]
    assert "'acc[8]'" in errors[0].message and "16384 bytes per partition" in errors[0].message
    assert errors[0].loc.line > 0


def test_loop_reduce_reduces_into_its_destination():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((128, 128)).astype(np.float32)
    b = rng.standard_normal((4, 128, 512)).astype(np.float32)
    total, top = nkic.compile(KERNELS, a, b, kernel="loop_reduced")(a, b)
    prods = np.einsum("km,ikn->imn", a.astype(np.float64), b.astype(np.float64))
    np.testing.assert_allclose(total, prods.sum(axis=0), rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(top, prods.max(axis=0), rtol=1e-5, atol=1e-4)
