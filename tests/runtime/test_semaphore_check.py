"""Accesses that race because the program waits for nothing are reported as compiler bugs."""

from __future__ import annotations

import nkirt
import pytest
from neff_builder import Kernel, write_neff


def run(k: Kernel, timing_only: bool = True):
    return nkirt.execute(nkirt.load(k.neff()), timing_only=timing_only)


def load_then_copy(wait: bool) -> Kernel:
    k = Kernel("trn2")
    x = k.input("x", "float32", [128, 512])
    k.output("unused", "float32", [1, 1])
    a = k.sbuf("a", "float32", [128, 512])
    b = k.sbuf("b", "float32", [128, 512], byte=4096)
    load = k.dma(k.ap(a), k.ap(x), line=11)
    k.inst(
        "tensor_copy",
        "vector",
        {"dst": k.ap(b), "src": k.ap(a)},
        waits=[(load, 0)] if wait else (),
        line=12,
    )
    return k


def test_read_of_an_unfinished_dma_is_a_missing_semaphore():
    with pytest.raises(nkirt.RuntimeFault) as info:
        run(load_then_copy(wait=False))
    assert str(info.value).startswith(
        "missing semaphore (compiler bug): tensor_copy at /src/kernels/test_kernel.py:12 "
        "waits for nothing on dma_copy at /src/kernels/test_kernel.py:11"
    )
    assert "RAW" in str(info.value)


def test_the_same_pair_with_its_wait_runs(fake_isa):
    assert run(load_then_copy(wait=True), timing_only=False).profile["instructions"] == 2


def test_overwriting_data_still_being_read_is_reported():
    k = Kernel("trn2")
    x = k.input("x", "float32", [128, 512])
    k.output("unused", "float32", [1, 1])
    a = k.sbuf("a", "float32", [128, 512])
    b = k.sbuf("b", "float32", [128, 512], byte=4096)
    k.inst("memset", "vector", {"dst": k.ap(a), "value": {"imm": 0.0}})
    k.inst("activation", "scalar", {"dst": k.ap(b), "data": k.ap(a)}, {"op": "exp"}, waits=[(0, 0)])
    k.dma(k.ap(a), k.ap(x), waits=[(0, 0)])  # waits for the memset, not for the reader
    with pytest.raises(nkirt.RuntimeFault, match=r"dma_copy .* on activation .*WAR"):
        run(k)


def test_two_unordered_writers_of_one_tile_are_reported():
    k = Kernel("trn2")
    k.output("unused", "float32", [1, 1])
    a = k.sbuf("a", "float32", [128, 512])
    k.inst("memset", "vector", {"dst": k.ap(a), "value": {"imm": 0.0}})
    k.inst("memset", "gpsimd", {"dst": k.ap(a), "value": {"imm": 1.0}})
    with pytest.raises(nkirt.RuntimeFault, match="WAW"):
        run(k)


def test_disjoint_halves_of_one_tile_need_no_semaphore():
    k = Kernel("trn2")
    k.output("unused", "float32", [1, 1])
    a = k.sbuf("a", "float32", [128, 512])
    k.inst("memset", "vector", {"dst": k.ap(a, [[512, 128], [1, 256]]), "value": {"imm": 0.0}})
    k.inst(
        "memset",
        "gpsimd",
        {"dst": k.ap(a, [[512, 128], [1, 256]], offset=256), "value": {"imm": 1.0}},
    )
    b = k.sbuf("b", "float32", [128, 512], byte=4096)
    k.inst("memset", "scalar", {"dst": k.ap(b, [[512, 64], [1, 512]]), "value": {"imm": 1.0}})
    k.inst(
        "memset",
        "vector",
        {"dst": k.ap(b, [[512, 64], [1, 512]], offset=64 * 512), "value": {"imm": 1.0}},
    )
    assert run(k).profile["instructions"] == 4


def test_interleaved_strided_writes_do_not_overlap():
    k = Kernel("trn2")
    k.output("unused", "float32", [1, 1])
    a = k.sbuf("a", "float32", [128, 512])
    k.inst("memset", "vector", {"dst": k.ap(a, [[512, 128], [2, 256]]), "value": {"imm": 0.0}})
    k.inst(
        "memset",
        "gpsimd",
        {"dst": k.ap(a, [[512, 128], [2, 256]], offset=1), "value": {"imm": 1.0}},
    )
    assert run(k).profile["instructions"] == 2


def test_disjoint_column_blocks_of_an_hbm_matrix_need_no_semaphore():
    k = Kernel("trn2")
    x = k.input("x", "float32", [128, 1024])
    y = k.output("y", "float32", [128, 1024])
    a = k.sbuf("a", "float32", [128, 512])
    k.dma(k.ap(a), k.ap(x, [[1024, 128], [1, 512]]), queue="dma0")
    k.dma(k.ap(y, [[1024, 128], [1, 512]], offset=512), k.ap(a), waits=[(0, 0)], queue="dma1")
    k.dma(k.ap(a), k.ap(x, [[1024, 128], [1, 512]]), waits=[(1, 0)], queue="dma2")
    k.dma(k.ap(y, [[1024, 128], [1, 512]]), k.ap(a), waits=[(2, 0)], queue="dma3")
    assert run(k).profile["instructions"] == 4


def _rows(step: int, first: int, second: int, blocks: int = 8) -> Kernel:
    """Two DMAs on different queues, unordered, each storing `blocks` row-blocks, every
    `step`-th, of a [16, 4, 64] HBM output (blocks of 4 rows), from block `first` and from
    block `second`."""
    k = Kernel("trn2")
    y = k.output("y", "float32", [16, 4, 64])
    a = k.sbuf("a", "float32", [8, 256])
    k.inst("memset", "vector", {"dst": k.ap(a), "value": {"imm": 1.0}})
    half = blocks
    for n, start in enumerate((first, second)):
        dst = k.ap(y, [[step * 256, half], [64, 4], [1, 64]], offset=start * 256)
        src = k.ap(a, [[256, half], [64, 4], [1, 64]])
        k.dma(dst, src, waits=[(0, 0)], queue=f"dma{n}")
    return k


def test_interleaved_row_blocks_of_an_hbm_tensor_do_not_overlap():
    # even and odd blocks of rows (every row in each block, all columns): no byte in common
    assert run(_rows(2, 0, 1)).profile["instructions"] == 3
    # every block of rows from block 0 and from block 2: blocks 2, 4, ... in common
    with pytest.raises(nkirt.RuntimeFault, match="WAW"):
        run(_rows(2, 0, 2, blocks=7))


def test_tensors_sharing_sbuf_addresses_are_checked_as_one_memory():
    k = Kernel("trn2")
    k.output("unused", "float32", [1, 1])
    a = k.sbuf("a", "float32", [128, 64], byte=0)
    b = k.sbuf("b", "float32", [128, 64], byte=128)  # overlaps a's bytes 128..255
    c = k.sbuf("c", "float32", [128, 64], byte=4096)
    k.inst("memset", "vector", {"dst": k.ap(a), "value": {"imm": 0.0}})
    k.inst("tensor_copy", "gpsimd", {"dst": k.ap(c), "src": k.ap(b)})
    with pytest.raises(nkirt.RuntimeFault, match="waits for nothing on memset"):
        run(k)


def test_loop_carried_reuse_needs_its_wait_on_the_previous_iteration():
    def kernel(with_war_wait: bool) -> bytes:
        k = Kernel("trn2")
        x = k.input("x", "float32", [128, 2048])
        y = k.output("y", "float32", [128, 2048])
        a = k.sbuf("a", "float32", [128, 512])
        with k.loop("i", 0, 4):
            load = k.dma(k.ap(a), k.ap(x, [[2048, 128], [1, 512]], {"c": 0, "t": {"i": 512}}))
            k.dma(
                k.ap(y, [[2048, 128], [1, 512]], {"c": 0, "t": {"i": 512}}),
                k.ap(a),
                waits=[(load, 0)],
                queue="dma1",
            )
        program = k.program()
        if with_war_wait:
            program["body"][0]["body"][0]["waits"] = [[1, 0]]
        return write_neff(program)

    assert nkirt.execute(nkirt.load(kernel(True)), timing_only=True).profile["instructions"] == 8
    with pytest.raises(nkirt.RuntimeFault, match=r"dma_copy at .*:12 \[i=1\] waits for nothing"):
        nkirt.execute(nkirt.load(kernel(False)), timing_only=True)


def load_then_overwrite_input(wait_for_load: bool) -> Kernel:
    # reads of inputs nothing writes are not remembered: an input the kernel also writes is
    k = Kernel("trn2")
    x = k.input("x", "float32", [128, 512])
    k.output("unused", "float32", [1, 1])
    a = k.sbuf("a", "float32", [128, 512])
    b = k.sbuf("b", "float32", [128, 512], byte=4096)
    k.dma(k.ap(a), k.ap(x), queue="dma0", line=11)
    k.inst("memset", "vector", {"dst": k.ap(b), "value": {"imm": 0.0}}, line=12)
    waits = [(1, 0), (0, 0)] if wait_for_load else [(1, 0)]
    k.dma(k.ap(x), k.ap(b), queue="dma1", waits=waits, line=13)
    return k


def test_overwriting_an_input_still_being_read_is_reported():
    with pytest.raises(nkirt.RuntimeFault) as info:
        run(load_then_overwrite_input(wait_for_load=False))
    assert "dma_copy at /src/kernels/test_kernel.py:13 waits for nothing on dma_copy at " in str(
        info.value
    )
    assert "WAR" in str(info.value)


def test_overwriting_an_input_after_its_read_runs():
    assert run(load_then_overwrite_input(wait_for_load=True)).profile["instructions"] == 3
