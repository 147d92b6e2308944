"""The NEFF reader's checks of tensor-indirection operands (docs/neff-format.md, `dynamic`
kind `indirect`): a well-formed one loads and gathers; each defect is one line."""

from __future__ import annotations

import nkirt
import numpy as np
import pytest
from neff_builder import Kernel
from nkirt import NeffError


def gather_kernel(op="tensor_copy", engine="vector", index_dtype="int32", extent=64):
    k = Kernel("trn3", name="gather")
    x = k.input("x", "float32", [128, 64])
    ids = k.input("ids", index_dtype, [128, 1])
    out = k.output("y", "float32", [128, 16])
    t = k.sbuf("t", "float32", [128, 64])
    ix = k.sbuf("ix", index_dtype, [128, 1], byte=256)
    o = k.sbuf("o", "float32", [128, 16], byte=260)
    load = k.dma(k.ap(t), k.ap(x))
    load_ix = k.dma(k.ap(ix), k.ap(ids), queue="dma1")
    src = k.ap(t, [[64, 128], [1, 16]])
    src["dynamic"] = {"kind": "indirect", "index": "src.index", "dim": 1, "unit": 1}
    if extent is not None:
        src["dynamic"]["extent"] = extent
    copy = k.inst(
        op,
        engine,
        {"dst": k.ap(o), "src": src, "src.index": k.ap(ix)},
        waits=[(load, 0), (load_ix, 0)],
    )
    k.dma(k.ap(out), k.ap(o), waits=[(copy, 0)], queue="dma2")
    return k


def test_a_well_formed_indirect_operand_gathers_in_snake_order():
    x = np.arange(128 * 64, dtype=np.float32).reshape(128, 64)
    ids = np.random.default_rng(0).integers(0, 64, (128, 1)).astype(np.int32)
    program = nkirt.load(gather_kernel().neff())
    y = nkirt.execute(program, {"x": x, "ids": ids}).outputs["y"]
    np.testing.assert_array_equal(y, x[:, ids[:16, 0]])


@pytest.mark.parametrize(
    ("kernel", "fragment"),
    [
        (dict(op="dma_copy", engine="dma"), "dma_copy has no tensor-indirection operand"),
        (dict(index_dtype="float32"), "must be a 2-D int32/uint32 SBUF tile"),
        (dict(extent=None), "an indirect operand is a 2-D on-chip pattern"),
    ],
)
def test_a_malformed_indirect_operand_is_refused_in_one_line(kernel, fragment):
    with pytest.raises(NeffError) as info:
        nkirt.load(gather_kernel(**kernel).neff())
    assert fragment in str(info.value) and "\n" not in str(info.value)
