"""Beta 1 `neuronxcc.nki.compiler` placements, the entry-point forms of Beta 1 scripts, and
the conveniences Beta 1 kernels rely on (1-D loads, `t[...] += x`, `nl.max` as an operator,
`tile.broadcast_to`, `np.identity` constants)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import nkic
from nkic.frontend import find_kernels

KERNELS = str(Path(__file__).parent / "compiler_tiles.py")


def test_kernels_marked_by_profile_with_options_and_by_baremetal_wrapping():
    names = [name for name, _ in find_kernels(KERNELS)]
    assert names[:2] == ["placed_transpose", "column_scale"]


def test_mod_alloc_placements_compute_what_automatic_placement_computes():
    a = np.random.default_rng(0).standard_normal((256, 128)).astype(np.float32)
    out = nkic.compile(KERNELS, a, kernel="placed_transpose")(a)
    np.testing.assert_allclose(out, a.T, rtol=1e-6)


def test_one_dimensional_loads_inplace_updates_and_nl_max_as_operator():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((128, 64)).astype(np.float32)
    s = rng.standard_normal((128, 64)).astype(np.float32)
    out = nkic.compile(KERNELS, a, s, kernel="column_scale")(a, s)
    acc = a * s[:, 0:1]
    want = acc + s[0:1, :] + acc.max(axis=1, keepdims=True)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


def test_block_dimensions_and_an_affine_range_reduction():
    a = np.random.default_rng(2).standard_normal((512, 64)).astype(np.float32)
    k = nkic.compile(KERNELS, a, kernel="blocked_sums")
    np.testing.assert_allclose(k(a), a.reshape(4, 128, 64).sum(axis=0), rtol=1e-5, atol=1e-5)
    # the blocks share the 128 partitions: one tensor of 4 x 64 columns per partition
    assert "sbuf float32[128, 4, 64]" in k.ir
    # `blocks[i, :, :] = nl.load(...)` loads into the block itself: one DMA, no copy
    blocks = next(ln for ln in k.ir.splitlines() if "sbuf float32[128, 4, 64]" in ln).split()[0]
    loads = [
        ln for ln in k.ir.splitlines() if ln.strip().startswith("dma_copy") and "src=%t0[" in ln
    ]
    assert len(loads) == 1 and f"dst={blocks}[" in loads[0]
    assert "tensor_copy" not in k.ir


def test_a_block_dimension_kept_whole_is_a_diagnostic():
    a = np.zeros((128, 64), np.float32)
    diags = nkic.check(KERNELS, kernel="whole_block_axis", a=a)
    assert any(
        d.code == "err_unsupported_api" and "block dimension 0" in d.message for d in diags
    ), diags


def test_loop_scheduling_hints_do_not_change_the_loop():
    a = np.random.default_rng(3).standard_normal((256, 32)).astype(np.float32)
    np.testing.assert_array_equal(nkic.compile(KERNELS, a, kernel="hinted_loops")(a), a)
