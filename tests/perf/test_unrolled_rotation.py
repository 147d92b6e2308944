"""An unrolled loop's tiles rotate over the buffers its symbolic form's tiles get, so both
forms predict the same latency (the allocator's site chains, docs/architecture.md)."""

from __future__ import annotations

import nkirt
import numpy as np
import pytest

from nkic import driver
from nkic.diagnostics import render_text

from .conftest import KERNELS, spec

UNROLLED = KERNELS / "unrolled_tiles.py"


def compiled(unroll: bool):
    args = {"x": spec((128, 16 * 8192), "float32")}
    res = driver.compile_file(
        str(UNROLLED), "scaled_blocks", args, "trn2", nki="0.3", unroll_all=unroll
    )
    if not res.ok:
        pytest.fail(render_text(res.diagnostics))
    return res


def buffers(res, label: str) -> int:
    """How many distinct slots the tiles labelled `label` use."""
    tiles = [t for t in res.ir.tensors() if t.label == label]
    if len(tiles) == 1:
        return tiles[0].rotate[1] if tiles[0].rotate else 1
    return len({t.address for t in tiles})


@pytest.fixture(scope="module")
def forms():
    return {unroll: compiled(unroll) for unroll in (False, True)}


def test_the_unrolled_loop_gets_the_buffers_of_the_symbolic_one(forms):
    for label in ("tile", "scaled"):
        assert buffers(forms[False], label) == buffers(forms[True], label) > 1


def test_both_forms_predict_the_same_latency(forms):
    ns = [
        nkirt.execute(nkirt.load(forms[u].neff), {}, timing_only=True).profile["total_ns"]
        for u in (False, True)
    ]
    assert ns[1] == pytest.approx(ns[0], rel=0.01)


def test_both_forms_compute_the_same_values(forms):
    x = np.random.default_rng(0).standard_normal((128, 16 * 8192)).astype(np.float32)
    outs = [nkirt.execute(nkirt.load(forms[u].neff), {"x": x}).outputs for u in (False, True)]
    (a,), (b,) = (list(o.values()) for o in outs)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(a, np.exp(x), rtol=1e-5)
