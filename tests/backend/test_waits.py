"""Semaphore waits from RAW/WAR/WAW dependencies, loop-carried ones and multi-buffer skips."""

from __future__ import annotations

from nkic.backend.schedule import schedule
from nkic.ir.affine import Affine

from .irkit import blocked_matmul, lowered

PARAMS = '  param %a : hbm float32[128, 4096] "a"\n'


def T(name: str, f: int = 512, offset: str = "0", row: int | None = None) -> str:
    return f"%{name}[{offset}; [{row or f}, 128], [1, {f}]]"


def A(offset: str = "0", f: int = 512) -> str:
    return f"%a[{offset}; [4096, 128], [1, {f}]]"


def waits(body: str) -> list[tuple[str, str, list]]:
    """(opcode, queue, waits) of every instruction in program order."""
    s = schedule(lowered(body, PARAMS))
    return [(x.inst.opcode, x.queue, [list(w) for w in x.waits]) for x in s.insts]


TILE = '  %t = alloc sbuf float32[128, 512] "t"\n  %u = alloc sbuf float32[128, 512] "u"\n'


def test_raw_across_engines():
    got = waits(
        TILE
        + f"""
  dma_copy(dst={T("t")}, src={A()}) {{}}
  tensor_copy(dst={T("u")}, src={T("t")}) {{}}"""
    )
    assert got == [("dma_copy", "dma0", []), ("tensor_copy", "vector", [[0, 0]])]


def test_war_across_engines():
    got = waits(
        TILE
        + f"""
  memset(dst={T("t")}) {{value=0.0}}
  tensor_copy(dst={T("u")}, src={T("t")}) {{}}
  dma_copy(dst={T("t")}, src={A()}) {{}}
  activation(dst={T("u")}, data={T("t")}) {{op="exp"}}"""
    )
    # the DMA overwrites t after the vector engine read it; activation reads the new t and
    # overwrites u: its WAW wait on #1 is implied by the DMA's wait on #1
    assert got[2] == ("dma_copy", "dma0", [[1, 0]])
    assert got[3] == ("activation", "scalar", [[2, 0]])


def test_waw_across_engines():
    got = waits(
        TILE
        + f"""
  memset(dst={T("t")}) {{value=0.0}}
  dma_copy(dst={T("t")}, src={A()}) {{}}
  tensor_copy(dst={T("u")}, src={T("t")}) {{}}"""
    )
    assert got[1] == ("dma_copy", "dma0", [[0, 0]])


def test_same_queue_needs_no_waits():
    got = waits(
        TILE
        + f"""
  memset(dst={T("t")}) {{value=0.0}}
  tensor_copy(dst={T("u")}, src={T("t")}) {{}}
  tensor_copy(dst={T("t")}, src={T("u")}) {{}}"""
    )
    assert [w for _, _, w in got] == [[], [], []]


def test_disjoint_regions_need_no_waits():
    got = waits(
        TILE
        + f"""
  memset(dst={T("t", 256, row=512)}) {{value=0.0}}
  dma_copy(dst={T("t", 256, offset="256", row=512)}, src={A(f=256)}) {{}}
  tensor_copy(dst={T("u")}, src={T("t")}) {{}}"""
    )
    assert got[1][2] == []
    assert got[2][2] == [[1, 0]]


def test_loop_carried_war_on_a_tile_allocated_outside_the_loop():
    got = waits(
        TILE
        + f"""
  for $i = 0 to 8 step 1 affine {{
    dma_copy(dst={T("t")}, src={A("512*$i")}) {{}}
    tensor_copy(dst={T("u")}, src={T("t")}) {{}}
  }}"""
    )
    # iteration i's load must wait until iteration i-1's copy has read the tile
    assert got[0] == ("dma_copy", "dma0", [[1, 0]])
    assert got[1] == ("tensor_copy", "vector", [[0, 0]])


def test_no_loop_carried_wait_when_iterations_touch_different_columns():
    got = waits(
        TILE
        + f"""
  for $i = 0 to 8 step 1 affine {{
    memset(dst={T("t", 64, offset="64*$i", row=512)}) {{value=0.0}}
    dma_copy(dst=%a[64*$i; [4096, 128], [1, 64]], src={T("t", 64, offset="64*$i", row=512)}) {{}}
  }}"""
    )
    assert got[0] == ("memset", "vector", [])
    assert got[1] == ("dma_copy", "dma0", [[0, 0]])


def test_multi_buffered_tile_skips_the_other_slots():
    got = waits(
        f"""
  %u = alloc sbuf float32[128, 512] "u"
  for $i = 0 to 8 step 1 affine {{
    %t = alloc sbuf float32[128, 512] "t"
    dma_copy(dst={T("t")}, src={A("512*$i")}) {{}}
    tensor_copy(dst={T("u")}, src={T("t")}) {{}}
  }}"""
    )
    # t has 4 slots: the load of iteration i reuses the slot read in iteration i-4
    assert got[0] == ("dma_copy", "dma0", [[1, 3]])
    assert got[1] == ("tensor_copy", "vector", [[0, 0]])


def test_multi_buffer_skip_counts_instances_of_nested_loops():
    got = waits(
        f"""
  %u = alloc sbuf float32[128, 512] "u"
  for $i = 0 to 8 step 1 affine {{
    %t = alloc sbuf float32[128, 512] "t"
    dma_copy(dst={T("t")}, src={A("512*$i")}) {{}}
    for $j = 0 to 3 step 1 affine {{
      tensor_copy(dst={T("u")}, src={T("t")}) {{}}
    }}
  }}"""
    )
    # 3 copies per iteration; the slot's last reader ran 3 slots (= 9 copies) earlier
    assert got[0] == ("dma_copy", "dma0", [[1, 9]])


def test_waits_implied_by_a_later_instruction_on_the_same_queue_are_dropped():
    got = waits(
        TILE
        + f"""
  memset(dst={T("t")}) {{value=0.0}}
  memset(dst={T("u")}) {{value=1.0}}
  dma_copy(dst={A()}, src={T("t")}) {{}}
  dma_copy(dst={A("512")}, src={T("u")}) {{}}
  %v = alloc sbuf float32[128, 512] "v"
  tensor_tensor(dst={T("v")}, data1={T("t")}, data2={T("u")}) {{op="add"}}
  activation(dst={T("v")}, data={T("v")}) {{op="exp"}}"""
    )
    assert got[2][2] == [[0, 0]]
    assert got[3][2] == [[1, 0]]
    # activation reads v written by the vector engine; waiting on #4 covers #0 and #1 too
    assert got[5] == ("activation", "scalar", [[4, 0]])


def test_blocked_matmul_waits_for_the_tile_it_reuses_not_the_newest_matmul():
    kt = 4
    params, body = blocked_matmul(kt)
    s = schedule(lowered(body, params, "%o"))
    load_l, load_r, mm = s.insts[:3]
    skips = {
        (c.inst.opcode, c.queue, s.insts[p].inst.opcode, s.insts[p].queue): skip
        for c in (load_l, load_r, mm)
        for p, skip in c.waits
    }
    tiles = 2  # TILES_M = TILES_N
    # a load into a tile waits for the last matmul that read it in the previous block
    assert skips["dma_copy", load_r.queue, "nc_matmul", "tensor"] == Affine(
        tiles * kt - 1, {"bn": -kt, "k2": -1}
    )
    assert skips["dma_copy", load_l.queue, "nc_matmul", "tensor"] == Affine(
        (tiles - 1) * tiles * kt + kt - 1, {"bm": -tiles * kt, "k": -1}
    )
    # a matmul waits for the load of its own tiles, not for the last load of the block
    assert skips["nc_matmul", "tensor", "dma_copy", load_r.queue] == Affine(
        tiles * kt - 1, {"bn2": -kt, "k3": -1}
    )
    assert skips["nc_matmul", "tensor", "dma_copy", load_l.queue] == Affine(
        tiles * kt - 1, {"bm2": -kt, "k3": -1}
    )


def test_skip_stays_constant_when_the_latest_conflict_is_not_affine():
    # the copy of column i reads what the load of pair j = i // 2 wrote: not affine in i
    got = waits(
        TILE
        + f"""
  for $j = 0 to 4 step 1 affine {{
    dma_copy(dst={T("t", 2, offset="2*$j", row=512)}, src={A("2*$j", 2)}) {{}}
  }}
  for $i = 0 to 8 step 1 affine {{
    tensor_copy(dst={T("u", 1, offset="$i", row=512)}, src={T("t", 1, offset="$i", row=512)}) {{}}
  }}"""
    )
    assert got[1][2] == [[0, 0]]


def rotation(body: str) -> list[tuple[str, int, int, list]]:
    """(opcode, queues, stride, waits) of every instruction in program order."""
    s = schedule(lowered(body, PARAMS))
    return [(x.inst.opcode, x.queues, x.stride, [list(w) for w in x.waits]) for x in s.insts]


def test_a_loops_dmas_rotate_over_the_queues_as_unrolled():
    got = rotation(
        f"""
  %o = alloc shared_hbm float32[128, 4096] "o" output
  for $i = 0 to 8 step 1 affine {{
    %t = alloc sbuf float32[128, 512] "t"
    dma_copy(dst={T("t")}, src={A("512*$i")}) {{}}
    dma_copy(dst=%o[512*$i; [4096, 128], [1, 512]], src={T("t")}) {{}}
  }}"""
    )
    # two DMAs per iteration: unrolled, iteration i's take queues 2i and 2i + 1
    assert [(op, q, s) for op, q, s, _ in got] == [("dma_copy", 16, 2), ("dma_copy", 16, 2)]


def test_a_dma_rewriting_a_slot_no_one_reads_waits_on_itself():
    got = rotation(
        f"""
  for $i = 0 to 8 step 1 affine {{
    %t = alloc sbuf float32[128, 512] "t"
    dma_copy(dst={T("t")}, src={A("512*$i")}) {{}}
  }}"""
    )
    # nothing reads t: its 4 slots are rewritten every 4 loads, ordered by a wait on itself
    assert got == [("dma_copy", 16, 1, [[0, 3]])]


def test_a_dma_rewriting_what_its_previous_instance_wrote_rotates_and_waits_on_it():
    got = rotation(
        f"""
  %o = alloc shared_hbm float32[128, 512] "o" output
  %t = alloc sbuf float32[128, 512] "t"
  memset(dst={T("t")}) {{value=0.0}}
  for $i = 0 to 8 step 1 affine {{
    dma_copy(dst=%o[0; [512, 128], [1, 512]], src={T("t")}) {{}}
  }}"""
    )
    # unrolled, each store is a DMA of its own on the next queue, waiting for the one before
    assert got[1] == ("dma_copy", 16, 1, [[0, 0], [1, 0]])


def test_a_dma_reloading_a_tile_its_reader_ordered_rotates_without_waiting_on_itself():
    got = rotation(
        f"""
  %o = alloc shared_hbm float32[128, 4096] "o" output
  %t = alloc sbuf float32[128, 512] "t"
  for $i = 0 to 8 step 1 affine {{
    dma_copy(dst={T("t")}, src={A("512*$i")}) {{}}
    dma_copy(dst=%o[512*$i; [4096, 128], [1, 512]], src={T("t")}) {{}}
  }}"""
    )
    # load i rewrites load i - 1's bytes, but waits for store i - 1, which waited for load
    # i - 1: both rotate over the queues as unrolled, and the load needs no wait on itself
    # (on one queue it would hold up every later DMA given that queue)
    assert got == [("dma_copy", 16, 2, [[1, 0]]), ("dma_copy", 16, 2, [[0, 0]])]
