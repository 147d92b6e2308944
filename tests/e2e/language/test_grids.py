"""The NKI 0.7 tiled layout: nl.tiles / nl.blocks grid views and nl.alloc_tiles /
nl.alloc_blocks allocations, run on the simulator against numpy, their metadata against an
independent computation, and their diagnostics."""

from __future__ import annotations

import numpy as np
import pytest

import nkic

from .harness import KERNELS, rand, run

GRIDS = KERNELS / "grids.py"


def test_tiles_with_remainders_cover_the_tensor_once():
    a = rand((300, 700), seed=1)
    out = run("grids.py", "scale_by_tiles", a=a)
    np.testing.assert_array_equal(out, a * np.float32(3.0))


def test_a_row_of_tiles_in_a_tiled_sbuf_allocation_is_one_operand():
    a = rand((200, 384), seed=2)
    out = run("grids.py", "row_sums_in_tiled_sbuf", a=a)
    doubled = a * np.float32(2.0)
    want = np.zeros((200, 1), np.float32)
    for c in range(doubled.shape[1]):  # VectorE reduces along the free dimension in order
        want[:, 0] += doubled[:, c]
    np.testing.assert_array_equal(out, want)


def test_blocks_then_tiles_of_a_block():
    a, b = rand((150, 600), seed=3), rand((150, 600), seed=4)
    out = run("grids.py", "add_by_blocks", a=a, b=b)
    np.testing.assert_array_equal(out, a + b)


def test_leading_hbm_dimensions_stay_untiled():
    a = rand((3, 200, 300), seed=5)
    np.testing.assert_array_equal(run("grids.py", "slabs", a=a), -a)


def test_alloc_blocks_and_a_strided_grid_slice():
    a = rand((128, 640), seed=6)  # 10 tiles of 64 columns: blocks of 4, 4 and 2 tiles
    want = a.copy()
    for tile in range(10):
        if (tile % 4) % 2 == 0:
            want[:, tile * 64 : (tile + 1) * 64] *= -1
    np.testing.assert_array_equal(run("grids.py", "strided_block_copy", a=a), want)


def _geometry(shape, tile, block, index):
    """The expected metadata, computed without the grid code: a cell's extent is clamped at
    the tensor's end; its row-major element offset in the tensor."""
    grid = tuple(-(-n // t) for n, t in zip(shape, tile))
    starts = [i % g * t for i, g, t in zip(index, grid, tile)]
    extent = tuple(min(t, n - s) for s, t, n in zip(starts, tile, shape))
    tiles_last = tuple(g - (-(-g // b) - 1) * b for g, b in zip(grid, block))
    last_extent = [n - (-(-g // b) - 1) * b * t for n, g, b, t in zip(shape, grid, block, tile)]
    return {
        "shape": grid,
        "block_grid_shape": tuple(-(-g // b) for g, b in zip(grid, block)),
        "cell_extent": extent,
        "cell_remainder": extent != tile,
        "cell_offset": starts[0] * shape[1] + starts[1],
        "last_block_remainder": any(e < b * t for e, b, t in zip(last_extent, block, tile)),
        "last_block_tiles": tiles_last,
    }


@pytest.mark.parametrize(
    ("shape", "tile", "block", "index"),
    [
        ((512, 1024), (128, 256), (2, 2), (1, 2)),
        ((300, 700), (128, 256), (2, 2), (2, 2)),
        ((300, 700), (128, 256), (2, 3), (-1, 0)),
        ((256, 1000), (64, 100), (3, 4), (3, 9)),
    ],
)
def test_grid_metadata(shape, tile, block, index):
    want = _geometry(shape, tile, block, index)
    a = np.zeros(shape, np.float32)
    assert nkic.check(GRIDS, kernel="geometry", a=a, tile_shape=tile, block_shape=block,
                      index=index, want=want) == []  # fmt: skip
    wrong = dict(want, cell_remainder=not want["cell_remainder"])
    (d,) = nkic.check(GRIDS, kernel="geometry", a=a, tile_shape=tile, block_shape=block,
                      index=index, want=wrong)  # fmt: skip
    assert d.code == "err_assert_failed"


@pytest.mark.parametrize(
    ("kernel", "code", "text", "hint"),
    [
        ("grid_as_operand", "err_invalid_argument", "'src' must be a tensor, got NkiTileGrid",
         "src=grid.data"),
        ("column_of_sbuf_tiles", "err_invalid_view", "tiles are not adjacent",
         "index one cell"),
        ("coordinate_out_of_range", "err_tensor_access_out_of_bound", "grid coordinate 2", None),
        ("tiles_without_shape", "err_missing_argument", "nl.tiles of a tensor needs tile_shape=",
         "tile_shape=(128, 512)"),
    ],
)  # fmt: skip
def test_grid_diagnostics(kernel, code, text, hint):
    a = np.zeros((128, 256), np.float32)
    (d,) = nkic.check(GRIDS, kernel=kernel, a=a)
    assert d.code == code and text in d.message, d.message
    line = next(i for i, s in enumerate(GRIDS.read_text().splitlines(), 1)
                if s.startswith(f"def {kernel}("))  # fmt: skip
    assert line < d.loc.line <= line + 6
    if hint:
        assert hint in d.hint


@pytest.mark.parametrize("nki", ["0.3", "0.6"])
def test_the_tiled_layout_is_new_in_0_7(nki):
    a = np.zeros((300, 700), np.float32)
    diags = nkic.check(GRIDS, kernel="scale_by_tiles", a=a, nki=nki)
    assert [(d.code, d.severity) for d in diags] == [("err_unknown_api", "error")] * 2
    assert diags[0].message == (
        f"nki.language has no attribute 'tiles' in NKI {nki} (it is new in NKI 0.7)"
    )
    assert diags[0].hint == "compile as NKI 0.7 or later (--nki 0.7)"
