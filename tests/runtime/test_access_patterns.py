"""Access patterns resolve to the right bytes: partition offsets, strides, reinterpretation,
loop offsets; leaving the tensor is a fault."""

from __future__ import annotations

import nkirt
import numpy as np
import pytest
from neff_builder import Kernel

pytestmark = pytest.mark.usefixtures("fake_isa")


def run(k: Kernel, **inputs):
    return nkirt.execute(nkirt.load(k.neff()), inputs).outputs


def test_partition_offset_selects_rows_of_an_on_chip_tile():
    k = Kernel()
    x = k.input("x", "float32", [128, 8])
    y = k.output("y", "float32", [32, 8])
    tile = k.sbuf("t", "float32", [128, 8])
    load = k.dma(k.ap(tile), k.ap(x))
    # partitions 64..95 of the tile: element offset 64 * 8
    k.dma(k.ap(y), k.ap(tile, [[8, 32], [1, 8]], offset=64 * 8), waits=[(load, 0)], queue="dma1")
    data = np.arange(128 * 8, dtype=np.float32).reshape(128, 8)
    assert np.array_equal(run(k, x=data)["y"], data[64:96])


def test_tile_at_a_partition_and_byte_address():
    k = Kernel()
    x = k.input("x", "float32", [16, 4])
    y = k.output("y", "float32", [16, 4])
    tile = k.sbuf("t", "float32", [16, 4], partition=96, byte=1000)
    load = k.dma(k.ap(tile), k.ap(x))
    k.dma(k.ap(y), k.ap(tile), waits=[(load, 0)], queue="dma1")
    data = np.random.default_rng(1).standard_normal((16, 4)).astype(np.float32)
    assert np.array_equal(run(k, x=data)["y"], data)


def test_strided_free_pattern_reads_every_other_column_in_reverse_rows():
    k = Kernel()
    x = k.input("x", "float32", [4, 8])
    y = k.output("y", "float32", [4, 4])
    tile = k.sbuf("t", "float32", [4, 8])
    load = k.dma(k.ap(tile), k.ap(x))
    half = k.sbuf("h", "float32", [4, 4], byte=64)
    copy = k.inst(
        "tensor_copy",
        "vector",
        {"dst": k.ap(half), "src": k.ap(tile, [[8, 4], [2, 4]], offset=1)},
        waits=[(load, 0)],
    )
    # HBM side walks rows backwards: row 3 first
    k.dma(k.ap(y, [[-4, 4], [1, 4]], offset=12), k.ap(half), waits=[(copy, 0)], queue="dma1")
    data = np.arange(32, dtype=np.float32).reshape(4, 8)
    assert np.array_equal(run(k, x=data)["y"], data[::-1, 1::2])


def test_dtype_view_reinterprets_the_bytes():
    k = Kernel()
    x = k.input("x", "float32", [2, 4])
    y = k.output("y", "uint16", [2, 8])
    tile = k.sbuf("t", "float32", [2, 4])
    load = k.dma(k.ap(tile), k.ap(x))
    k.dma(k.ap(y), k.ap(tile, [[8, 2], [1, 8]], dtype="uint16"), waits=[(load, 0)], queue="dma1")
    data = np.array([[1.0, -2.0, 3.5, 0.0], [1e-3, 7.0, -0.5, 2.0]], np.float32)
    assert np.array_equal(run(k, x=data)["y"], data.view(np.uint16))


def test_loop_offsets_move_each_iteration():
    k = Kernel()
    x = k.input("x", "float32", [128, 64])
    y = k.output("y", "float32", [128, 64])
    tile = k.sbuf("t", "float32", [128, 16])
    with k.loop("i", 0, 4):
        load = k.dma(k.ap(tile), k.ap(x, [[64, 128], [1, 16]], {"c": 0, "t": {"i": 16}}))
        k.dma(
            k.ap(y, [[64, 128], [1, 16]], {"c": 0, "t": {"i": 16}}),
            k.ap(tile),
            waits=[(load, 0)],
            queue="dma1",
        )
    program = k.program()
    program["body"][0]["body"][0]["waits"] = [[1, 0]]  # reuse of the tile waits for its store
    data = np.random.default_rng(2).standard_normal((128, 64)).astype(np.float32)
    from neff_builder import write_neff

    out = nkirt.execute(nkirt.load(write_neff(program)), {"x": data}).outputs["y"]
    assert np.array_equal(out, data)


def test_loop_with_start_and_step_and_two_variables():
    k = Kernel()
    x = k.input("x", "float32", [4, 8])
    y = k.output("y", "float32", [4, 8])
    tile = k.sbuf("t", "float32", [4, 8])
    load = k.dma(k.ap(tile), k.ap(x))
    with k.loop("r", 1, 4, 2):  # rows 1 and 3
        with k.loop("c", 0, 8, 4):  # column blocks 0 and 4
            k.dma(
                k.ap(y, [[8, 1], [1, 4]], {"c": 0, "t": {"r": 8, "c": 1}}),
                k.ap(tile, [[8, 1], [1, 4]], {"c": 0, "t": {"r": 8, "c": 1}}),
                waits=[(load, 0)],
                queue="dma1",
            )
    data = np.arange(32, dtype=np.float32).reshape(4, 8)
    out = run(k, x=data)["y"]
    assert np.array_equal(out[[1, 3]], data[[1, 3]])
    assert np.isnan(out[[0, 2]]).all()  # never written: the NaN fill of unwritten memory


def test_out_of_bounds_access_is_a_fault_naming_the_line():
    k = Kernel()
    x = k.input("x", "float32", [128, 8])
    tile = k.sbuf("t", "float32", [128, 8])
    k.output("y", "float32", [128, 8])
    with k.loop("i", 0, 3):
        k.dma(k.ap(tile, [[8, 128], [1, 4]], {"c": 0, "t": {"i": 4}}), k.ap(x, [[8, 128], [1, 4]]))
    with pytest.raises(nkirt.RuntimeFault) as info:
        run(k, x=np.zeros((128, 8), np.float32))
    message = str(info.value)
    assert "out-of-bounds" in message
    assert "dma_copy at /src/kernels/test_kernel.py:12" in message
    assert "[i=2]" in message


def test_partition_range_beyond_the_tile_is_a_fault():
    k = Kernel()
    x = k.input("x", "float32", [64, 8])
    tile = k.sbuf("t", "float32", [64, 8])
    k.output("y", "float32", [64, 8])
    k.dma(k.ap(tile, [[8, 64], [1, 8]], offset=8), k.ap(x))
    with pytest.raises(nkirt.RuntimeFault, match="partitions 1..64 of a 64-partition tensor"):
        run(k, x=np.zeros((64, 8), np.float32))


def test_program_counts_the_instances_its_loops_issue():
    k = Kernel()
    x = k.input("x", "float32", [4, 8])
    k.output("y", "float32", [4, 8])
    tile = k.sbuf("t", "float32", [4, 8])
    k.dma(k.ap(tile), k.ap(x))
    with k.loop("r", 1, 4, 2):
        with k.loop("c", 0, 8, 4):
            k.dma(k.ap(tile), k.ap(x), waits=[(0, 0)])
            k.dma(k.ap(tile), k.ap(x), waits=[(0, 0)])
    program = nkirt.load(k.neff())
    assert program.instance_count == 1 + 2 * 2 * 2


def test_a_pattern_moved_to_another_offset_equals_one_built_there():
    """Operands that differ only by their offset share the static fields of one pattern
    (`AccessPattern.moved`): every field equals that of a pattern built at the offset."""
    from nkirt.access import AccessPattern
    from nkirt.program import TensorInfo

    tile = TensorInfo(3, "t", "tile", "sbuf", "bfloat16", (128, 64), address=(0, 256))
    pattern = [[64, 32], [2, 16]]
    first = AccessPattern("src", {"pattern": pattern, "offset": 2}, tile, 192 * 1024)
    affine = {"c": 64 * 3 + 1, "t": {"i": 2, "j": 0}}
    built = AccessPattern("src", {"pattern": pattern, "offset": affine}, tile, 192 * 1024)
    moved = first.moved(affine)
    for name in AccessPattern.__slots__:
        assert getattr(moved, name) == getattr(built, name), name
    assert (moved.const, moved.terms) == (193, (("i", 2),))
    # placements are the moved pattern's own
    env = {"i": 5, "j": 7}
    assert moved.locate(env, {}) == built.locate(env, {}) != first.locate(env, {})
    assert moved.placed is not first.placed


def test_a_loaded_program_keeps_its_text_and_parses_its_body_on_demand():
    k = Kernel()
    x = k.input("x", "float32", [4, 8])
    k.output("y", "float32", [4, 8])
    tile = k.sbuf("t", "float32", [4, 8])
    with k.loop("r", 0, 3):
        k.dma(k.ap(tile), k.ap(x))
    program = nkirt.load(k.neff())
    assert program.body == k.body
    assert program.body is not program.body  # a fresh tree on each call, none kept
    assert (program.instance_count, program.has_dynamic_loops) == (3, False)
