"""LNC=2: two cores writing the same bytes of a shared tensor with the same values (a
duplicated, deterministic store) are not a race; writing different values there unordered is."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import nkic
from nkic.frontend.interp import loops


@pytest.fixture(autouse=True)
def _range_loops_kept_from_the_start(monkeypatch):
    """Plain `range` loops are attempted as symbolic loops only past `PLAIN_AFTER` unrolled
    iterations; these small kernels exercise that form from their first loop."""
    monkeypatch.setattr(loops, "PLAIN_AFTER", 0)


HEADER = "import nki\nimport nki.isa as nisa\nimport nki.language as nl\n\n"

#: Every core zeroes the whole output (the same zeros), then, after meeting the other core,
#: stores twice its half of the input over the zeros of its half.
ZERO_THEN_HALVES = """
@nki.jit
def kernel(a):
    core = nl.program_id()
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    for r in range(a.shape[0] // 128):
        zeros = nl.ndarray((128, a.shape[1]), a.dtype, buffer=nl.sbuf)
        nisa.memset(zeros, value=0.0)
        nisa.dma_copy(dst=out[r * 128:(r + 1) * 128, :], src=zeros)
    nisa.core_barrier(out, (0, 1))
    half = a.shape[1] // 2
    t = nl.ndarray((a.shape[0] // 2, half), a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a[0:{rows}, core * half:(core + 1) * half])
    nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=2.0)
    nisa.dma_copy(dst=out[0:{rows}, core * half:(core + 1) * half], src=t)
    return out
"""

#: Each core loads one half of the columns, sends it to the other and adds what it receives
#: (`own OP received`): with a commutative OP both cores hold the same sum and store it whole.
EXCHANGE = """
@nki.jit
def kernel(a):
    core = nl.program_id()
    half = a.shape[1] // 2
    out = nl.ndarray((128, half), a.dtype, buffer=nl.shared_hbm)
    own = nl.ndarray((128, half), a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=own, src=a[:, core * half:(core + 1) * half])
    got = nl.ndarray((128, half), a.dtype, buffer=nl.sbuf)
    nisa.sendrecv(src=own, dst=got, send_to_rank=1 - core, recv_from_rank=1 - core, pipe_id=0)
    total = nl.ndarray((128, half), a.dtype, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=total, data1=own, data2=got, op={op})
    nisa.dma_copy(dst=out, src=total)
    return out
"""


def _write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "kernel.py"
    path.write_text(HEADER + body)
    return path


def _codes(path: Path, **args) -> list[str]:
    return [d.code for d in nkic.check(path, lnc=2, **args)]


def test_every_core_zeroing_the_output_is_not_a_race(tmp_path):
    a = np.random.default_rng(0).standard_normal((256, 128), dtype=np.float32)
    path = _write(tmp_path, ZERO_THEN_HALVES.format(rows="a.shape[0] // 2"))
    assert _codes(path, a=nkic.TensorSpec(a.shape, "float32")) == []
    got = nkic.compile(path, a, lnc=2)(a)
    want = np.zeros_like(a)
    want[:128] = 2 * a[:128]
    np.testing.assert_array_equal(got, want)


def test_a_store_over_the_other_cores_zeros_without_a_meeting_is_a_race(tmp_path):
    # the same kernel without the barrier: core 1 may zero core 0's rows after core 0 stored
    src = ZERO_THEN_HALVES.format(rows="a.shape[0] // 2").replace(
        "    nisa.core_barrier(out, (0, 1))\n", ""
    )
    path = _write(tmp_path, src)
    diags = nkic.check(path, lnc=2, a=nkic.TensorSpec((256, 128), "float32"))
    assert [d.code for d in diags] == ["nkic_lnc_shared_hbm_race"] * 2
    # each pair is a zeroing store against the other core's store of data, never the two
    # zeroings
    assert [(d.loc.line, d.related[0].loc.line) for d in diags] == [(13, 18), (18, 13)]


@pytest.mark.parametrize("op", ["nl.add", "nl.maximum"])
def test_both_cores_storing_the_exchanged_sum_is_not_a_race(tmp_path, op):
    a = np.random.default_rng(1).standard_normal((128, 256), dtype=np.float32)
    path = _write(tmp_path, EXCHANGE.format(op=op))
    assert _codes(path, a=nkic.TensorSpec(a.shape, "float32")) == []
    got = nkic.compile(path, a, lnc=2)(a)
    ref = np.add if op == "nl.add" else np.maximum
    np.testing.assert_array_equal(got, ref(a[:, :128], a[:, 128:]))


def test_a_non_commutative_combination_of_the_exchange_is_a_race(tmp_path):
    # core 0 stores a0 - a1, core 1 stores a1 - a0 at the same place
    path = _write(tmp_path, EXCHANGE.format(op="nl.subtract"))
    assert _codes(path, a=nkic.TensorSpec((128, 256), "float32")) == ["nkic_lnc_shared_hbm_race"]


def test_values_that_depend_on_the_core_are_a_race(tmp_path):
    path = _write(
        tmp_path,
        """
@nki.jit
def kernel(a):
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(a.shape, a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=float(nl.program_id() + 1))
    nisa.dma_copy(dst=out, src=t)
    return out
""",
    )
    assert _codes(path, a=nkic.TensorSpec((128, 64), "float32")) == ["nkic_lnc_shared_hbm_race"]


def test_values_read_from_what_the_other_core_writes_are_a_race(tmp_path):
    # both cores store the same instruction's result, but its input is a shared scratch that
    # the other core may not have written yet: the stored values depend on timing
    path = _write(
        tmp_path,
        """
@nki.jit
def kernel(a):
    core = nl.program_id()
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    scratch = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    mine = nl.ndarray((64, a.shape[1]), a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=mine, src=a[core * 64:(core + 1) * 64, :])
    nisa.dma_copy(dst=scratch[core * 64:(core + 1) * 64, :], src=mine)
    t = nl.ndarray(a.shape, a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=scratch)
    nisa.dma_copy(dst=out, src=t)
    return out
""",
    )
    assert _codes(path, a=nkic.TensorSpec((128, 64), "float32")) == ["nkic_lnc_shared_hbm_race"]


#: Each core fills a scratch tile with its own values, then loads the input over `{cover}` of it
#: and stores columns 64..127 of the tile on every core.
OVERWRITE = """
@nki.jit
def kernel(a):
    out = nl.ndarray((128, 64), a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 256), a.dtype, buffer=nl.sbuf)
    nisa.memset(t, value=float(nl.program_id()))
    nisa.dma_copy(dst=t[:, {cover}], src=a[:, {cover}])
    nisa.dma_copy(dst=out, src=t[:, 64:128])
    return out
"""


def test_a_read_inside_the_last_whole_write_ignores_what_came_before(tmp_path):
    a = np.random.default_rng(2).standard_normal((128, 256), dtype=np.float32)
    path = _write(tmp_path, OVERWRITE.format(cover="0:256"))
    assert _codes(path, a=nkic.TensorSpec(a.shape, "float32")) == []
    np.testing.assert_array_equal(nkic.compile(path, a, lnc=2)(a), a[:, 64:128])
    # the load covers columns 0..95 only: columns 96..127 still hold each core's own fill
    racy = _write(tmp_path, OVERWRITE.format(cover="0:96"))
    assert _codes(racy, a=nkic.TensorSpec(a.shape, "float32")) == ["nkic_lnc_shared_hbm_race"]


#: Both cores compute the same product, accumulated over a `range` loop that nkic keeps as one
#: loop, and store it whole; only core 0 first runs a loop that must be unrolled (`k * k`), so
#: the two programs number their loops differently.
SAME_PRODUCT_OVER_A_RANGE_LOOP = """
@nki.jit
def kernel(lhsT, rhs):
    core = nl.program_id()
    out = nl.ndarray((128, 512), nl.float32, buffer=nl.shared_hbm)
    side = nl.ndarray((2, 128, 512), nl.float32, buffer=nl.shared_hbm)
    if core == 0:
        for k in range(2):
            t = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
            nisa.memset(t, value=float(k * k))
    acc = nl.ndarray((128, 512), nl.float32, buffer=nl.psum)
    for k in range(lhsT.shape[0] // 128):
        a = nl.ndarray((128, 128), lhsT.dtype, buffer=nl.sbuf)
        b = nl.ndarray((128, 512), rhs.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=a, src=lhsT[k * 128:(k + 1) * 128, :])
        nisa.dma_copy(dst=b, src=rhs[k * 128:(k + 1) * 128, :])
        nisa.nc_matmul(dst=acc, stationary=a, moving=b)
    res = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res, src=acc)
    nisa.dma_copy(dst=out, src=res)
    nisa.dma_copy(dst=side[core], src=res)
    return out, side
"""


def test_the_same_product_over_a_range_loop_kept_as_one_loop_is_not_a_race(tmp_path):
    rng = np.random.default_rng(1)
    lhsT = rng.standard_normal((512, 128), dtype=np.float32)
    rhs = rng.standard_normal((512, 512), dtype=np.float32)
    path = _write(tmp_path, SAME_PRODUCT_OVER_A_RANGE_LOOP)
    specs = {
        "lhsT": nkic.TensorSpec(lhsT.shape, "float32"),
        "rhs": nkic.TensorSpec(rhs.shape, "float32"),
    }
    assert _codes(path, **specs) == []
    ir = nkic.compile(path, lhsT, rhs, lnc=2)
    out, side = ir(lhsT, rhs)
    want = lhsT.T.astype(np.float64) @ rhs.astype(np.float64)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-3)
    np.testing.assert_array_equal(side[0], out)
    np.testing.assert_array_equal(side[1], out)


def test_a_range_loop_whose_product_depends_on_the_core_is_a_race(tmp_path):
    # core 1 skips the first block of the sum: the stores to `out` differ
    src = SAME_PRODUCT_OVER_A_RANGE_LOOP.replace(
        "for k in range(lhsT.shape[0] // 128):", "for k in range(core, lhsT.shape[0] // 128):"
    )
    path = _write(tmp_path, src)
    specs = {
        "lhsT": nkic.TensorSpec((512, 128), "float32"),
        "rhs": nkic.TensorSpec((512, 512), "float32"),
    }
    assert "nkic_lnc_shared_hbm_race" in _codes(path, **specs)
