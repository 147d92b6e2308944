"""The HBM address model: arguments as views into larger buffers, and 32-bit offsets."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import nkic
from nkic.frontend import parse_arg_spec
from nkic.frontend.args import HbmView
from tests.deprecations import without_loop_deprecations

KERNEL = Path(__file__).parent / "lnc" / "row_double.py"


def test_a_strided_array_is_a_view_of_its_buffer():
    buffer = np.random.default_rng(0).standard_normal((1024, 1024), dtype=np.float32)
    view = buffer[2:514:2, 3:515]  # every other row, columns 3..514
    kernel = nkic.compile(KERNEL, view)
    (arg,) = kernel.inputs
    assert arg.shape == (1024, 1024) and arg.view == ((256, 512), 2 * 1024 + 3, (2048, 1))
    np.testing.assert_array_equal(kernel(view), 2 * view)
    np.testing.assert_array_equal(kernel(buffer), 2 * view)  # the buffer itself works too
    # the kernel's DMA reads the buffer at the view's addresses
    assert "src=%t0[262144*$i0 + 2051; [2048, 128], [1, 512]]" in kernel.ir


def test_view_specs_on_the_command_line():
    spec = parse_arg_spec("view(bfloat16[64,4096], shape=(64,1024), offset=2048, strides=(4096,1))")
    assert spec.shape == (64, 1024) and spec.dtype == "bfloat16"
    assert spec.view == HbmView((64, 4096), 2048, (4096, 1))
    whole = parse_arg_spec("view(float32[8,8])")
    assert whole.shape == (8, 8) and whole.view == HbmView((8, 8), 0, (8, 1))
    with pytest.raises(ValueError, match="outside its buffer of 64 elements"):
        parse_arg_spec("view(float32[8,8], shape=(4,4), offset=60)")
    with pytest.raises(ValueError, match="unknown view key 'stride'"):
        parse_arg_spec("view(float32[8,8], stride=(8,1))")


def test_the_view_shape_bounds_the_kernel_even_inside_the_buffer(tmp_path):
    path = tmp_path / "k.py"
    path.write_text(
        "import nki\nimport nki.isa as nisa\nimport nki.language as nl\n\n\n@nki.jit\n"
        "def kernel(a):\n"
        "    out = nl.ndarray((128, 512), a.dtype, buffer=nl.shared_hbm)\n"
        "    t = nl.ndarray((128, 512), a.dtype, buffer=nl.sbuf)\n"
        "    nisa.dma_copy(dst=t, src=a[128:256, :])\n"
        "    nisa.dma_copy(dst=out, src=t)\n"
        "    return out\n"
    )
    # rows 128..255 exist in the buffer, but the kernel was given a view of 128 rows
    spec = parse_arg_spec("view(float32[1024,512], shape=(128,512))")
    diags = nkic.check(path, a=spec)
    assert [d.code for d in diags] == ["err_tensor_access_out_of_bound"]
    assert nkic.check(path, a=parse_arg_spec("view(float32[1024,512], shape=(256,512))")) == []


OVERFLOW = """import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def kernel(a):
    out = nl.ndarray((128, 512), a.dtype, buffer=nl.shared_hbm)
    acc = nl.ndarray((128, 512), a.dtype, buffer=nl.sbuf)
    nisa.memset(dst=acc, value=0.0)
    for block in nl.static_range(BLOCKS):
        for i in nl.sequential_range(ROWS // 128):
            row = block * ROWS + i * 128
            t = nl.ndarray((128, 512), a.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=t, src=a[row:row + 128, 0:512])
            nisa.tensor_tensor(dst=acc, data1=acc, data2=t, op=nl.add)
    nisa.dma_copy(dst=out, src=acc)
    return out
"""


@pytest.mark.parametrize(("blocks", "errors"), [(1, 1), (2, 0)])
def test_a_loop_offset_past_2_31_elements_overflows(tmp_path, blocks, errors):
    # a [262144, 16384] bf16 tensor (8 GiB, 2^32 elements) summed in row tiles: one compiled
    # loop over all rows moves 2^32 - 16384 elements from its base; two static blocks of
    # loops move less than 2^31 each
    path = tmp_path / "sum.py"
    rows = 262144 // blocks
    path.write_text(OVERFLOW.replace("BLOCKS", str(blocks)).replace("ROWS", str(rows)))
    diags = without_loop_deprecations(
        nkic.check(path, a=nkic.TensorSpec((262144, 16384), "bfloat16"))
    )
    assert [d.code for d in diags] == ["nkic_hbm_offset_overflow"] * errors
    if errors:
        last = (2047 * 128 + 127) * 16384 + 511
        assert f"moves {last:,} elements ({2 * last:,} bytes) into `a`" in diags[0].message
        assert diags[0].loc.line == 15


def test_the_offset_check_sees_the_buffer_a_view_lies_in(tmp_path):
    # 1024 rows of a view whose rows are 2^22 elements apart: row 1023 is past 2^31
    path = tmp_path / "sum.py"
    path.write_text(OVERFLOW.replace("BLOCKS", "1").replace("ROWS", "1024"))
    spec = nkic.TensorSpec((1024, 512), "bfloat16", HbmView((1024, 2**22), 0, (2**22, 1)))
    diags = without_loop_deprecations(nkic.check(path, a=spec))
    assert [d.code for d in diags] == ["nkic_hbm_offset_overflow"]
    assert "a view into a buffer of 4,294,967,296 elements" in diags[0].message
    small = nkic.TensorSpec((1024, 512), "bfloat16", HbmView((1024, 2**20), 0, (2**20, 1)))
    assert without_loop_deprecations(nkic.check(path, a=small)) == []
