"""Whole kernels as the compiler emits them: loops, waits across iterations, PSUM groups."""

from __future__ import annotations

import nkirt
import numpy as np
import pytest
from neff_builder import Kernel
from nkirt import dtypes

pytestmark = pytest.mark.usefixtures("fake_isa")

K_TILES = 4


def tiled_matmul(target: str = "trn1") -> nkirt.Program:
    return nkirt.load(tiled_matmul_kernel(target).neff())


def tiled_matmul_kernel(target: str = "trn1") -> Kernel:
    """C[128, 512] = A[512, 128].T @ B[512, 512], K in 4 tiles accumulated in one PSUM bank;
    the first matmul is peeled because it overwrites (accumulate=False)."""
    k = Kernel(target, name="matmul")
    a = k.input("a", "bfloat16", [128 * K_TILES, 128])
    b = k.input("b", "bfloat16", [128 * K_TILES, 512])
    c = k.output("c", "float32", [128, 512])
    ta = k.sbuf("ta", "bfloat16", [128, 128])
    tb = k.sbuf("tb", "bfloat16", [128, 512], byte=256)
    acc = k.psum("acc", "float32", [128, 512])
    tc = k.sbuf("tc", "float32", [128, 512], byte=2048)
    mm_operands = {"dst": k.ap(acc), "stationary": k.ap(ta), "moving": k.ap(tb)}
    la0 = k.dma(k.ap(ta), k.ap(a, [[128, 128], [1, 128]]), queue="dma0")
    lb0 = k.dma(k.ap(tb), k.ap(b, [[512, 128], [1, 512]]), queue="dma1")
    mm0 = k.inst(
        "nc_matmul", "tensor", mm_operands, {"accumulate": False}, waits=[(la0, 0), (lb0, 0)]
    )
    with k.loop("kt", 1, K_TILES):
        la = k.dma(
            k.ap(ta),
            k.ap(a, [[128, 128], [1, 128]], {"c": 0, "t": {"kt": 128 * 128}}),
            queue="dma0",
            waits=[(mm0, 0), (mm0 + 3, 0)],
        )
        lb = k.dma(
            k.ap(tb),
            k.ap(b, [[512, 128], [1, 512]], {"c": 0, "t": {"kt": 128 * 512}}),
            queue="dma1",
            waits=[(mm0, 0), (mm0 + 3, 0)],
        )
        mm = k.inst(
            "nc_matmul", "tensor", mm_operands, {"accumulate": True}, waits=[(la, 0), (lb, 0)]
        )
    evict = k.inst("tensor_copy", "vector", {"dst": k.ap(tc), "src": k.ap(acc)}, waits=[(mm, 0)])
    k.dma(k.ap(c), k.ap(tc), waits=[(evict, 0)], queue="dma2")
    return k


def test_tiled_matmul_computes_the_product():
    rng = np.random.default_rng(7)
    a = rng.standard_normal((128 * K_TILES, 128)).astype(np.float32)
    b = rng.standard_normal((128 * K_TILES, 512)).astype(np.float32)
    result = nkirt.execute(tiled_matmul(), {"a": a, "b": b})
    a16 = dtypes.cast(a, "bfloat16").astype(np.float32)
    b16 = dtypes.cast(b, "bfloat16").astype(np.float32)
    np.testing.assert_allclose(result.outputs["c"], a16.T @ b16, rtol=1e-4, atol=1e-3)


def test_tiled_matmul_profile_counts_every_instance():
    profile = nkirt.execute(tiled_matmul(), timing_only=True).profile
    assert profile["instructions"] == 3 * K_TILES + 2
    assert profile["engines"]["tensor"]["instructions"] == K_TILES
    assert profile["bottleneck"] == "dma"


def test_dropping_the_war_wait_of_the_loop_is_a_missing_semaphore():
    k = tiled_matmul_kernel()
    load_a = k.body[3]["body"][0]
    load_a["waits"] = [[0, 0]]  # waits for its own previous instance only: races the matmul
    program = nkirt.load(k.neff())
    with pytest.raises(
        nkirt.RuntimeFault,
        match=r"dma_copy at .* \[kt=1\] waits for nothing on "
        r"nc_matmul",
    ):
        nkirt.execute(program, timing_only=True)


def rotating_copy(rotate: bool) -> bytes:
    """y = x through a 2-slot SBUF tile: the load of iteration i only waits for the copy of
    iteration i-2, which read the same slot."""
    from neff_builder import write_neff

    k = Kernel("trn2")
    x = k.input("x", "float32", [128, 4 * 64])
    y = k.output("y", "float32", [128, 4 * 64])
    tile = k.sbuf("tile", "float32", [128, 64])
    out = k.sbuf("out", "float32", [128, 64], byte=1024)
    cols = {"c": 0, "t": {"i": 64}}
    with k.loop("i", 0, 4):
        load = k.dma(k.ap(tile), k.ap(x, [[256, 128], [1, 64]], cols), waits=[(1, 1)])
        copy = k.inst(
            "tensor_copy",
            "vector",
            {"dst": k.ap(out), "src": k.ap(tile)},
            waits=[(load, 0), (2, 0)],
        )
        k.dma(k.ap(y, [[256, 128], [1, 64]], cols), k.ap(out), waits=[(copy, 0)], queue="dma1")
    program = k.program()
    if rotate:
        program["tensors"][tile]["rotate"] = {"var": "i", "count": 2, "stride": 256}
    return write_neff(program)


def test_rotating_tile_uses_a_slot_per_iteration():
    data = np.random.default_rng(4).standard_normal((128, 256)).astype(np.float32)
    result = nkirt.execute(nkirt.load(rotating_copy(rotate=True)), {"x": data})
    assert np.array_equal(result.outputs["y"], data)


def test_without_rotation_the_skip_one_wait_is_a_race():
    with pytest.raises(
        nkirt.RuntimeFault,
        match=r"dma_copy at .* \[i=1\] waits for nothing on "
        r"tensor_copy",
    ):
        nkirt.execute(nkirt.load(rotating_copy(rotate=False)), timing_only=True)


def test_matmul_accumulate_unless_first_overwrites_on_the_first_iteration():
    k = Kernel("trn1")
    w = k.input("w", "float32", [128 * K_TILES, 32])
    x = k.input("x", "float32", [128 * K_TILES, 64])
    y = k.output("y", "float32", [32, 64])
    tw = k.sbuf("tw", "float32", [128, 32])
    tx = k.sbuf("tx", "float32", [128, 64], byte=256)
    acc = k.psum("acc", "float32", [32, 64])
    out = k.sbuf("out", "float32", [32, 64], byte=1024)
    with k.loop("kt", 0, K_TILES):
        lw = k.dma(
            k.ap(tw), k.ap(w, [[32, 128], [1, 32]], {"c": 0, "t": {"kt": 128 * 32}}), waits=[(2, 0)]
        )
        lx = k.dma(
            k.ap(tx),
            k.ap(x, [[64, 128], [1, 64]], {"c": 0, "t": {"kt": 128 * 64}}),
            queue="dma1",
            waits=[(2, 0)],
        )
        operands = {"dst": k.ap(acc), "stationary": k.ap(tw), "moving": k.ap(tx)}
        mm = k.inst(
            "nc_matmul",
            "tensor",
            operands,
            {"accumulate": {"unless_first": ["kt"]}},
            waits=[(lw, 0), (lx, 0)],
        )
    cp = k.inst("tensor_copy", "vector", {"dst": k.ap(out), "src": k.ap(acc)}, waits=[(mm, 0)])
    k.dma(k.ap(y), k.ap(out), waits=[(cp, 0)])
    rng = np.random.default_rng(5)
    wv = rng.standard_normal((128 * K_TILES, 32)).astype(np.float32)
    xv = rng.standard_normal((128 * K_TILES, 64)).astype(np.float32)
    result = nkirt.execute(nkirt.load(k.neff()), {"w": wv, "x": xv})
    np.testing.assert_allclose(result.outputs["y"], wv.T @ xv, rtol=1e-4, atol=1e-3)


def test_runs_of_one_loaded_program_are_independent():
    # every run starts from the instructions compiled at load, with fresh counts and
    # histories: a second run repeats the first exactly and leaves the first's result intact
    program = tiled_matmul("trn2")
    first = nkirt.execute(program, timing_only=True)
    trace = first.trace()
    second = nkirt.execute(program, timing_only=True)
    assert second.profile == first.profile
    assert second.records == first.records
    assert first.trace() == trace
    assert [i.count for i in first.instructions] == [1, 1, 1, 3, 3, 3, 1, 1]
    assert first.instructions[0] is not second.instructions[0]
