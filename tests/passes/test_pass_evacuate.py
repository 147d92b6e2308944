"""PSUM tiles read out as soon as they are final when program order would keep too many live."""

from __future__ import annotations

from pathlib import Path

import nkirt
import numpy as np

import nkic

#: `n` matmul results, each in its own PSUM bank (2 KiB per partition), then added to a tile of
#: ones one by one; the ones are set {when} the matmuls.
TILES = """import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def kernel(x, w):
    n = w.shape[1] // 512
    xs = nl.ndarray(x.shape, x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=xs, src=x)
    ws = nl.ndarray(w.shape, w.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=ws, src=w)
    ones = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
    if {early}:
        nisa.memset(ones, value=1.0)
    tiles = []
    for i in range(n):
        p = nl.ndarray((128, 512), nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=p, stationary=xs, moving=ws[:, i * 512:(i + 1) * 512])
        tiles.append(p)
    if not {early}:
        nisa.memset(ones, value=1.0)
    res = nl.ndarray((128, w.shape[1]), nl.float32, buffer=nl.sbuf)
    for i in range(n):
        nisa.tensor_tensor(dst=res[:, i * 512:(i + 1) * 512], data1=tiles[i], data2=ones, op=nl.add)
    out = nl.ndarray(res.shape, res.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=res)
    return out
"""


def _kernel(tmp_path: Path, early: bool) -> Path:
    path = tmp_path / "tiles.py"
    path.write_text(TILES.format(early=early, when="before" if early else "after"))
    return path


def test_twelve_banks_in_program_order_fit_when_each_tile_is_read_out_early(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((128, 128), dtype=np.float32)
    w = rng.standard_normal((128, 12 * 512), dtype=np.float32)
    kernel = nkic.compile(_kernel(tmp_path, early=True), x, w)
    np.testing.assert_allclose(kernel(x, w), x.T @ w + 1, rtol=1e-4, atol=1e-3)
    # each addition now follows its tile's matmul
    ops = [ln.strip().split("[")[0] for ln in kernel.ir.splitlines()]
    body = [op for op in ops if op in ("nc_matmul", "tensor_tensor")]
    assert body == ["nc_matmul", "tensor_tensor"] * 12


def test_tiles_that_must_all_stay_live_are_spilled_to_hbm_instead(tmp_path):
    # every addition also reads the ones, set only after the last matmul: twelve banks live;
    # reading early cannot help, so four tiles go to HBM and back (program order kept)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((128, 128), dtype=np.float32)
    w = rng.standard_normal((128, 12 * 512), dtype=np.float32)
    path = _kernel(tmp_path, early=False)
    diags = nkic.check(path, x=x, w=w)
    assert [d.code for d in diags] == ["nkic_psum_spill"]
    assert "spilled 1048576 bytes of PSUM (4 tile(s) of " in diags[0].message
    kernel = nkic.compile(path, x, w)
    np.testing.assert_allclose(kernel(x, w), x.T @ w + 1, rtol=1e-4, atol=1e-3)
    ops = [ln.strip().split("[")[0] for ln in kernel.ir.splitlines()]
    body = [op for op in ops if op in ("nc_matmul", "tensor_tensor")]
    assert body == ["nc_matmul"] * 12 + ["tensor_tensor"] * 12
    # the profile counts the spill traffic: 4 fp32 [128, 512] tiles stored once, each read back
    # once by its addition; nothing else touches the scratch
    tile_bytes = 128 * 512 * 4
    assert kernel.profile["spill_save_bytes"] == 4 * tile_bytes
    assert kernel.profile["spill_reload_bytes"] == 4 * tile_bytes
    assert kernel.profile["hbm_traffic"]["spill_bytes"] == 8 * tile_bytes
    summary = nkirt.execute(nkirt.load(kernel.neff), {"x": x, "w": w}, timing_only=True).summary()
    assert "PSUM spill: 1,048,576 bytes saved to HBM, 1,048,576 bytes reloaded" in summary


def test_a_kernel_without_spills_reports_no_spill_traffic(tmp_path):
    x = np.ones((128, 128), np.float32)
    w = np.ones((128, 4 * 512), np.float32)
    kernel = nkic.compile(_kernel(tmp_path, early=True), x, w)
    kernel(x, w)
    assert kernel.profile["spill_save_bytes"] == kernel.profile["spill_reload_bytes"] == 0
    assert kernel.profile["dma_bytes"] > 0
