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


def _spill_warnings(diags) -> list:
    assert not [d for d in diags if d.severity == "error"]
    return [d for d in diags if d.code == "nkic_psum_spill"]


def test_more_psum_blocks_live_at_once_than_banks_are_spilled_to_hbm():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((128, 128)).astype(np.float32)
    b = rng.standard_normal((9, 128, 512)).astype(np.float32)
    c = rng.standard_normal((128, 512)).astype(np.float32)
    (warning,) = _spill_warnings(nkic.check(KERNELS, kernel="all_blocks_live", a=a, b=b, c=c))
    # one block of 128 x 512 float32 is enough: the other eight stay in the eight banks
    assert warning.severity == "warning"
    assert "spilled 262144 bytes of PSUM (1 tile(s) of 'acc')" in warning.message
    assert "1 reloads" in warning.message and warning.loc.line > 0
    compiled = nkic.compile(KERNELS, a, b, c, kernel="all_blocks_live")
    want = np.einsum("km,ikn->imn", a.astype(np.float64), b.astype(np.float64)) + c
    np.testing.assert_allclose(compiled(a, b, c), want, rtol=1e-5, atol=1e-4)
    # the spilled block goes PSUM -> SBUF -> HBM after its matmul and comes back to SBUF
    ir = compiled.ir.splitlines()
    (scratch,) = [ln.split()[0] for ln in ir if "alloc hbm" in ln and "(spilled)" in ln]
    assert sum(f"dst={scratch}[" in ln for ln in ir) == 1
    assert sum(f"src={scratch}[" in ln for ln in ir) == 1


def test_staged_softmax_spills_score_blocks_and_matches_numpy():
    rng = np.random.default_rng(5)
    q, k = (rng.uniform(-1, 1, (128, 1024)).astype(np.float32) for _ in range(2))
    (warning,) = _spill_warnings(nkic.check(KERNELS, kernel="staged_softmax", q=q, k=k))
    assert "of 'scores') to HBM" in warning.message
    out = nkic.compile(KERNELS, q, k, kernel="staged_softmax")(q, k)
    s = q.astype(np.float64).T @ k.astype(np.float64)
    want = np.exp(s - s.max(axis=1, keepdims=True)).reshape(8, 128, 1024)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)


def test_loop_reduce_reduces_into_its_destination():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((128, 128)).astype(np.float32)
    b = rng.standard_normal((4, 128, 512)).astype(np.float32)
    total, top = nkic.compile(KERNELS, a, b, kernel="loop_reduced")(a, b)
    prods = np.einsum("km,ikn->imn", a.astype(np.float64), b.astype(np.float64))
    np.testing.assert_allclose(total, prods.sum(axis=0), rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(top, prods.max(axis=0), rtol=1e-5, atol=1e-4)


def test_a_named_returned_tile_stays_written_when_copied_into_another():
    a = np.random.default_rng(4).uniform(-1, 1, (128, 512)).astype(np.float32)
    out, twice = nkic.compile(KERNELS, a, kernel="kept_result")(a)
    np.testing.assert_allclose(out, np.exp(np.exp(a.astype(np.float64))), rtol=1e-5)
    np.testing.assert_allclose(twice, 2 * np.exp(a.astype(np.float64)), rtol=1e-5)
