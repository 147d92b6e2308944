"""Kernels for the NKI 0.7 tiled layout: nl.tiles / nl.blocks views and nl.alloc_tiles /
nl.alloc_blocks allocations, with remainder tiles."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def scale_by_tiles(a, tile_shape=(128, 256), factor=3.0):
    """out = a * factor, one tile at a time through SBUF (tiles at the edges are remainders)."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    src = nl.tiles(a, tile_shape=tile_shape)
    dst = nl.tiles(out, tile_shape=tile_shape)
    for i in range(src.shape[0]):
        for j in range(src.shape[1]):
            cell = src[i, j]
            t = nl.ndarray(cell.element_shape, dtype=a.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=t.data, src=cell.data)
            nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=factor)
            nisa.dma_copy(dst=dst[i, j].data, src=t)
    return out


@nki.jit
def row_sums_in_tiled_sbuf(a, tile_shape=(128, 128)):
    """Each row of tiles of `a` is loaded into an SBUF tile grid tile by tile, then reduced as
    one operand (`grid[i, :].data`): out[r] = sum(a[r, :]) * 2."""
    rows, cols = a.shape
    out = nl.ndarray((rows, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    grid = nl.alloc_tiles(
        tile_shape=tile_shape, element_shape=a.shape, buffer=nl.sbuf, dtype=a.dtype
    )
    src = nl.tiles(a, tile_shape=tile_shape)
    for i in range(grid.shape[0]):
        for j in range(grid.shape[1]):
            nisa.dma_copy(dst=grid[i, j].data, src=src[i, j].data)
        row = grid[i, :]
        doubled = nl.ndarray(row.element_shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=doubled, data=row.data, op0=nl.multiply, operand0=2.0)
        total = nl.ndarray((row.element_shape[0], 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=total, op=nl.add, data=doubled, axis=1)
        nisa.dma_copy(dst=out[i * tile_shape[0]:i * tile_shape[0] + row.element_shape[0], :],
                      src=total)
    return out


@nki.jit
def add_by_blocks(a, b, tile_shape=(64, 128), block_shape=(2, 2)):
    """out = a + b: the tiles of each block of `a` and `b` (nl.blocks, then nl.tiles of a
    block), each added in SBUF; blocks and tiles at the edges are remainders."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    ablocks = nl.blocks(a, tile_shape=tile_shape, block_shape=block_shape)
    bblocks = nl.blocks(b, tile_shape=tile_shape, block_shape=block_shape)
    oblocks = nl.blocks(out, tile_shape=tile_shape, block_shape=block_shape)
    for bi in range(ablocks.shape[0]):
        for bj in range(ablocks.shape[1]):
            at = nl.tiles(ablocks[bi, bj])
            bt = nl.tiles(bblocks[bi, bj])
            ot = nl.tiles(oblocks[bi, bj])
            for ti in range(at.shape[0]):
                for tj in range(at.shape[1]):
                    x = nl.ndarray(at[ti, tj].element_shape, dtype=a.dtype, buffer=nl.sbuf)
                    y = nl.empty_like(x)
                    nisa.dma_copy(dst=x, src=at[ti, tj].data)
                    nisa.dma_copy(dst=y, src=bt[ti, tj].data)
                    nisa.tensor_tensor(dst=x, data1=x, data2=y, op=nl.add)
                    nisa.dma_copy(dst=ot[ti, tj].data, src=x)
    return out


@nki.jit
def slabs(a, tile_shape=(128, 256)):
    """out = -a for a 3-D HBM tensor: the leading dimension stays untiled (one slab per
    coordinate), the trailing two are tiled."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    src = nl.tiles(a, tile_shape=tile_shape)
    dst = nl.tiles(out, tile_shape=tile_shape)
    for b in range(src.shape[0]):
        for i in range(src.shape[1]):
            for j in range(src.shape[2]):
                cell = src[b, i, j]
                t = nl.ndarray(cell.element_shape, dtype=a.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=t, src=cell.data)
                nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=-1.0)
                nisa.dma_copy(dst=dst[b, i, j].data, src=t)
    return out


@nki.jit
def strided_block_copy(a, tile_shape=(128, 64), block_shape=(1, 4)):
    """out = a through an nl.alloc_blocks SBUF allocation: each block of tiles is loaded as one
    DMA (the tiles of a block along the free dimension are adjacent), every other tile of the
    block is negated through a strided grid slice, and the blocks are stored back."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    grid = nl.alloc_blocks(
        tile_shape=tile_shape, block_shape=block_shape, element_shape=a.shape,
        buffer=nl.sbuf, dtype=a.dtype,
    )
    src = nl.blocks(a, tile_shape=tile_shape, block_shape=block_shape)
    for bi in range(grid.shape[0]):
        for bj in range(grid.shape[1]):
            nisa.dma_copy(dst=grid[bi, bj].data, src=src[bi, bj].data)
            every_other = nl.tiles(grid[bi, bj])[:, ::2]
            for k in range(every_other.shape[1]):
                cell = every_other[0, k].data
                nisa.tensor_scalar(dst=cell, data=cell, op0=nl.multiply, operand0=-1.0)
            nisa.dma_copy(dst=nl.blocks(out, tile_shape=tile_shape,
                                        block_shape=block_shape)[bi, bj].data,
                          src=grid[bi, bj].data)
    return out


@nki.jit
def geometry(a, tile_shape, block_shape, index, want):
    """Specialisation-time checks of grid metadata against `want` (a dict computed by the
    test): an assertion that fails is a diagnostic."""
    g = nl.tiles(a, tile_shape=tile_shape)
    bg = nl.blocks(a, tile_shape=tile_shape, block_shape=block_shape)
    assert isinstance(g, nl.NkiTileGrid) and isinstance(g, nl.NkiGrid)
    assert isinstance(bg, nl.NkiBlockGrid) and not isinstance(bg, nl.NkiTileGrid)
    assert g.shape == want["shape"], g.shape
    assert bg.shape == want["block_grid_shape"], bg.shape
    assert g.tile_shape == tile_shape and bg.block_shape == block_shape
    assert g.element_shape == a.shape
    cell = g[index]
    assert cell.shape == (), cell.shape
    assert cell.element_shape == want["cell_extent"], cell.element_shape
    assert cell.is_remainder == want["cell_remainder"], cell.is_remainder
    assert cell.data.shape == want["cell_extent"]
    assert cell.data.offset == want["cell_offset"], cell.data.offset
    assert g.index_step_elements == tile_shape
    assert g[:, ::2].index_step_elements == (tile_shape[0], 2 * tile_shape[1])
    assert g[:, ::2].is_data_representable == (g.shape[1] < 3)
    last = bg[-1, -1]
    assert last.is_remainder == want["last_block_remainder"]
    assert nl.tiles(last).shape == want["last_block_tiles"], nl.tiles(last).shape
    copy = nl.empty_like(last, dtype=nl.bfloat16)
    assert isinstance(copy, nl.NkiBlockGrid) and copy.dtype == nl.bfloat16
    assert copy.element_shape == last.element_shape and copy.block_shape == block_shape
    assert nl.tiles(copy).shape == want["last_block_tiles"]
    assert g.dtype == a.dtype and g.buffer == nl.hbm
    out = nl.ndarray((1, 1), dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((1, 1), dtype=a.dtype, buffer=nl.sbuf)
    nisa.memset(dst=t, value=1.0)
    nisa.dma_copy(dst=out, src=t)
    return out


@nki.jit
def grid_as_operand(a):
    g = nl.tiles(a, tile_shape=(128, 128))
    t = nl.ndarray((128, 128), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=g[0, 0])
    return a


@nki.jit
def column_of_sbuf_tiles(a):
    grid = nl.alloc_tiles(
        tile_shape=(128, 128), element_shape=(256, 128), buffer=nl.sbuf, dtype=a.dtype
    )
    nisa.dma_copy(dst=grid[:, 0].data, src=a)
    return a


@nki.jit
def coordinate_out_of_range(a):
    g = nl.tiles(a, tile_shape=(128, 128))
    t = nl.ndarray((128, 128), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=g[0, 2].data)
    return a


@nki.jit
def tiles_without_shape(a):
    g = nl.tiles(a)
    return a
