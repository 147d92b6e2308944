"""allocate: placement rules, address= placements, PSUM banks, capacity and multi-buffering."""

from __future__ import annotations

import random

from nkic.ir.core import UNKNOWN_LOC, Tensor
from nkic.ir.target import target
from nkic.passes.allocate import LENGTHS, Allocate, _Item, _Layout, _Placed

from .irtext import at, kernel, run, tensors, tile

PARAMS = '  param %a : hbm float32[128, 512] "a"\n'


def use(name: str, p: int, f: int, line: int = 50) -> str:
    """A vector instruction writing the whole (p, f) tile `name`."""
    return f"memset(dst={tile(name, p, f)}) {{value=0.0}} {at(line)}"


def read(dst: str, src: str, p: int, f: int, line: int = 51) -> str:
    return f"tensor_copy(dst={tile(dst, p, f)}, src={tile(src, p, f)}) {{}} {at(line)}"


def allocate(body: str, target: str = "trn2"):
    k = kernel(body, PARAMS, target=target)
    diags = run(Allocate(), k)
    return k, diags


def test_start_partition_rule():
    body = "\n".join(
        [f'  %q{i} = alloc sbuf float32[32, 64] "q{i}" {at(i + 1)}' for i in range(4)]
        + [f'  %h{i} = alloc sbuf float32[64, 64] "h{i}"' for i in range(2)]
        + ['  %w = alloc sbuf float32[96, 64] "w"']
        + [use(f"q{i}", 32, 64) for i in range(4)]
        + [use(f"h{i}", 64, 64) for i in range(2)]
        + [use("w", 96, 64)]
        + [read(f"q{i}", f"q{i}", 32, 64) for i in range(4)]
        + [read(f"h{i}", f"h{i}", 64, 64) for i in range(2)]
    )
    k, diags = allocate(body)
    assert diags == []
    t = tensors(k)
    assert sorted(t[f"q{i}"].address for i in range(4)) == [(0, 0), (32, 0), (64, 0), (96, 0)]
    assert {t["h0"].address[0], t["h1"].address[0]} <= {0, 64}
    assert t["w"].address[0] == 0
    for name, tensor in t.items():
        if tensor.on_chip:
            p = tensor.address[0]
            n = tensor.num_partitions
            assert p in ((0,) if n > 64 else (0, 64) if n > 32 else (0, 32, 64, 96)), name


def test_fixed_addresses_are_honoured_and_avoided():
    body = f"""
  %f = alloc sbuf float32[128, 256] "f" address(0, 0) fixed
  %g = alloc sbuf float32[128, 256] "g"
  {use("f", 128, 256)}
  {read("g", "f", 128, 256)}"""
    k, diags = allocate(body)
    assert diags == []
    t = tensors(k)
    assert t["f"].address == (0, 0)
    assert t["g"].address == (0, 1024)


def test_disjoint_lifetimes_get_fresh_bytes_while_there_is_room():
    # reusing x's bytes for y would make y's writer wait for x's last reader (in flight)
    body = f"""
  %x = alloc sbuf float32[128, 1024] "x"
  %y = alloc sbuf float32[128, 1024] "y"
  {use("x", 128, 1024, 10)}
  {use("y", 128, 1024, 11)}"""
    k, diags = allocate(body)
    t = tensors(k)
    assert t["x"].address == (0, 0) and t["y"].address == (0, 4096)


def test_disjoint_lifetimes_share_memory_when_space_runs_out():
    # 30,000 fp32 per partition: two of them do not fit in trn2's 212,984 bytes
    body = f"""
  %x = alloc sbuf float32[128, 30000] "x"
  %y = alloc sbuf float32[128, 30000] "y"
  {use("x", 128, 30000, 10)}
  {use("y", 128, 30000, 11)}"""
    k, diags = allocate(body)
    t = tensors(k)
    assert diags == []
    assert t["x"].address == t["y"].address == (0, 0)


def test_overlapping_lifetimes_do_not_share():
    body = f"""
  %x = alloc sbuf float32[128, 1024] "x"
  %y = alloc sbuf float32[128, 1024] "y"
  {use("x", 128, 1024, 10)}
  {read("y", "x", 128, 1024)}"""
    k, _ = allocate(body)
    t = tensors(k)
    assert t["x"].address != t["y"].address


def test_use_inside_a_loop_keeps_a_tensor_live_for_the_whole_loop():
    body = f"""
  %x = alloc sbuf float32[128, 1024] "x"
  %y = alloc sbuf float32[128, 1024] "y"
  for $i = 0 to 4 step 1 affine {{
    {use("y", 128, 1024, 10)}
    {use("x", 128, 1024, 11)}
  }}"""
    k, _ = allocate(body)
    t = tensors(k)
    assert t["x"].address != t["y"].address


def test_psum_fixed_address_must_start_a_bank():
    body = f"""
  %p = alloc psum float32[128, 128] "p" address(0, 512) fixed {at(7)}
  {use("p", 128, 128)}"""
    _, diags = allocate(body)
    assert [d.code for d in diags] == ["nkic_psum_bank_align"]
    assert diags[0].loc.line == 7


def test_fixed_placements_must_not_overlap_while_live():
    body = f"""
  %f = alloc sbuf float32[128, 256] "f" address(0, 0) fixed {at(3)}
  %g = alloc sbuf float32[128, 256] "g" address(0, 512) fixed {at(4)}
  {read("g", "f", 128, 256)}"""
    _, diags = allocate(body)
    assert [d.code for d in diags] == ["nkic_address_conflict"]
    assert diags[0].loc.line == 4 and diags[0].related[0].loc.line == 3


def test_fixed_placements_end_at_their_exact_bytes():
    # 23 bfloat16 per partition are 46 bytes: a neighbour placed right after them does not
    # overlap (a stack allocator packs tiles that way), one placed 2 bytes earlier does
    def conflicts(second: int) -> list[str]:
        body = f"""
  %f = alloc sbuf bfloat16[128, 23] "f" address(0, 6012) fixed {at(3)}
  %g = alloc sbuf bfloat16[128, 23] "g" address(0, {second}) fixed {at(4)}
  {read("g", "f", 128, 23)}"""
        return [d.code for d in allocate(body)[1]]

    assert conflicts(6058) == []
    assert conflicts(6056) == ["nkic_address_conflict"]


def test_fixed_start_partition_must_obey_the_rule():
    body = f"""
  %f = alloc sbuf float32[64, 256] "f" address(32, 0) fixed {at(3)}
  {use("f", 64, 256)}"""
    _, diags = allocate(body)
    assert [d.code for d in diags] == ["nkic_partition_window"]


def test_psum_tensors_never_cross_a_bank():
    body = "\n".join(
        [f'  %p{i} = alloc psum float32[128, 384] "p{i}"' for i in range(3)]
        + [
            f"nc_matmul(dst={tile(f'p{i}', 128, 384)}, stationary={tile('s', 128, 128)}, moving={tile('s', 128, 128)}) {{accumulate=false}}"
            for i in range(3)
        ]
        + [read("p0", "p1", 128, 384), read("p1", "p2", 128, 384)]
    )
    k, diags = allocate('  %s = alloc sbuf bfloat16[128, 128] "s"\n' + body)
    assert diags == []
    for i in range(3):
        b = tensors(k)[f"p{i}"].address[1]
        assert b // 2048 == (b + 1535) // 2048


def test_large_psum_tensor_takes_whole_banks():
    body = f"""
  %p = alloc psum float32[128, 128] "p"
  %q = alloc psum float32[128, 1024] "q"
  {read("q", "p", 128, 128)}
  {use("q", 128, 1024)}"""
    k, diags = allocate(body)
    assert diags == []
    assert tensors(k)["q"].address[1] % 2048 == 0


def test_matmul_output_crossing_a_bank_is_an_error():
    mm = (
        "nc_matmul(dst=%q[256; [1024, 128], [1, 512]], stationary=%s[0; [128, 128], [1, 128]], moving=%s[0; [128, 128], [1, 128]]) {accumulate=false} "
        + at(9)
    )
    body = f"""
  %s = alloc sbuf bfloat16[128, 128] "s"
  %q = alloc psum float32[128, 1024] "q"
  {mm}"""
    _, diags = allocate(body)
    assert [d.code for d in diags] == ["err_psum_bank_violation"]
    assert diags[0].loc.line == 9


def test_matmul_outputs_bank_by_bank_in_a_loop_are_fine():
    mm = "nc_matmul(dst=%q[512*$j; [2048, 128], [1, 512]], stationary=%s[0; [128, 128], [1, 128]], moving=%s[0; [128, 128], [1, 128]]) {accumulate=false}"
    body = f"""
  %s = alloc sbuf bfloat16[128, 128] "s"
  %q = alloc psum float32[128, 2048] "q"
  for $j = 0 to 4 step 1 affine {{
    {mm}
  }}"""
    _, diags = allocate(body)
    assert diags == []


def test_sbuf_capacity_error_points_at_the_overflowing_allocation():
    body = f"""
  %x = alloc sbuf float32[128, 30000] "x" {at(3)}
  %y = alloc sbuf float32[128, 30000] "y" {at(4)}
  {read("y", "x", 128, 30000)}"""
    _, diags = allocate(body)
    assert [d.code for d in diags] == ["err_sbuf_capacity_exceeded"]
    d = diags[0]
    assert d.loc.line == 4 and "'y'" in d.message and "212984" in d.message
    assert any("'x' 120000 bytes per partition (kernel.py:3)" in n for n in d.notes)


def test_capacity_depends_on_the_target():
    body = f"""
  %x = alloc sbuf float32[128, 23000] "x"
  %y = alloc sbuf float32[128, 23000] "y"
  {read("y", "x", 128, 23000)}"""
    assert allocate(body, "trn2")[1] == []
    _, diags = allocate(body, "trn1")
    assert [d.code for d in diags] == ["err_sbuf_capacity_exceeded"]


def test_psum_capacity_is_eight_banks():
    allocs = "\n".join(
        f'  %p{i} = alloc psum float32[128, 512] "p{i}" {at(i + 1)}' for i in range(9)
    )
    uses = "\n".join(use(f"p{i}", 128, 512) for i in range(9))
    reads = "\n".join(read(f"p{i}", f"p{i}", 128, 512) for i in range(9))
    _, diags = allocate(allocs + "\n" + uses + "\n" + reads)
    assert [d.code for d in diags] == ["err_psum_capacity_exceeded"]
    assert diags[0].loc.line == 9


def loop_body(tiles: str, trips: int = 8) -> str:
    return f"""
  for $i = 0 to {trips} step 1 affine {{
{tiles}
  }}"""


def test_loop_tiles_are_multi_buffered_when_space_allows():
    tiles = f"""    %t = alloc sbuf float32[128, 512] "t"
    %p = alloc psum float32[128, 512] "p"
    {use("t", 128, 512)}
    {read("p", "t", 128, 512)}"""
    k, diags = allocate(loop_body(tiles))
    assert diags == []
    t = tensors(k)
    assert t["t"].rotate == ("i", 4, 2048, 0)
    assert t["p"].rotate == ("i", 2, 2048, 0)


def test_big_loop_tiles_get_fewer_slots():
    tiles = f"""    %t = alloc sbuf float32[128, 20000] "t"
    {use("t", 128, 20000)}"""
    k, _ = allocate(loop_body(tiles))
    assert tensors(k)["t"].rotate == ("i", 2, 80000, 0)
    tiles = f"""    %t = alloc sbuf float32[128, 40000] "t"
    {use("t", 128, 40000)}"""
    k, _ = allocate(loop_body(tiles))
    assert tensors(k)["t"].rotate is None


def test_slots_never_exceed_the_executions_of_the_body():
    tiles = f"""    %t = alloc sbuf float32[128, 512] "t"
    {use("t", 128, 512)}"""
    k, _ = allocate(loop_body(tiles, trips=3))
    assert tensors(k)["t"].rotate == ("i", 3, 2048, 0)
    k, _ = allocate(loop_body(tiles, trips=1))
    assert tensors(k)["t"].rotate is None


def test_rotated_slots_do_not_overlap_other_live_tensors():
    tiles = f"""    %t = alloc sbuf float32[128, 512] "t"
    %u = alloc sbuf float32[128, 512] "u"
    {use("t", 128, 512)}
    {read("u", "t", 128, 512)}"""
    k, _ = allocate(loop_body(tiles))
    t, u = tensors(k)["t"], tensors(k)["u"]
    spans = []
    for x in (t, u):
        count, stride = x.rotate[1], x.rotate[2]
        spans.append((x.address[1], x.address[1] + count * stride))
    assert spans[0][1] <= spans[1][0] or spans[1][1] <= spans[0][0]


def test_hot_inner_tiles_get_slots_before_outer_tensors():
    # both doubled do not fit; the outer tensor alone would, and in program order it took the
    # space the inner tile needs
    body = f"""
  for $i = 0 to 2 step 1 affine {{
    %o = alloc sbuf float32[128, 12500] "o"
    {use("o", 128, 12500)}
    for $j = 0 to 4 step 1 affine {{
      %h = alloc sbuf float32[128, 15000] "h"
      tensor_copy(dst={tile("h", 128, 12500, row=15000)}, src={tile("o", 128, 12500)}) {{}}
    }}
  }}"""
    k, diags = allocate(body)
    assert diags == []
    t = tensors(k)
    assert t["h"].rotate == ("j", 2, 60000, 0)
    assert t["o"].rotate is None


def test_every_tile_is_double_buffered_before_any_is_tripled():
    # the inner tile alone could take a third slot, but only if the outer one had no second
    body = f"""
  for $i = 0 to 4 step 1 affine {{
    %o = alloc sbuf float32[128, 15000] "o"
    {use("o", 128, 15000)}
    for $j = 0 to 4 step 1 affine {{
      %h = alloc sbuf float32[128, 10000] "h"
      tensor_copy(dst={tile("h", 128, 10000)}, src={tile("o", 128, 10000, row=15000)}) {{}}
    }}
  }}"""
    k, diags = allocate(body)
    assert diags == []
    t = tensors(k)
    assert t["h"].rotate == ("j", 2, 40000, 0)
    assert t["o"].rotate == ("i", 2, 60000, 0)


def test_live_tensors_are_found_whatever_the_length_of_their_live_ranges():
    """The layout groups live ranges by length; a query must still find exactly the tensors
    whose ranges meet its interval, in placement order, as a scan of every tensor does."""
    rng = random.Random(7)
    layout = _Layout("sbuf", target("trn2"))
    lengths = [0, 1, *LENGTHS, *(n + 1 for n in LENGTHS), 5000]
    for n in range(400):
        lo = rng.randrange(20000)
        hi = lo + rng.choice(lengths)
        item = _Item(Tensor(f"t{n}", "sbuf", "float32", (1, 1)), UNKNOWN_LOC, (), n, lo, hi)
        layout._add(_Placed(item, 0, 0, 1, 4, ((0, 4),), (lo, hi)))
    for _ in range(300):
        s = rng.randrange(21000)
        e = s + rng.choice(lengths)
        expected = [q for q in layout.placed if q.interval[0] <= e and s <= q.interval[1]]
        assert layout.live_with((s, e)) == expected


def unrolled_body(f: int, trips: int, line: int = 20, psum: bool = False) -> str:
    buffer = "psum" if psum else "sbuf"
    ops = []
    for n in range(trips):
        ops.append(f'  %t{n} = alloc {buffer} float32[128, {f}] "t" {at(line)}')
        ops.append(f"  {use(f't{n}', 128, f, line + 1)}")
        ops.append(f"  {read(f't{n}', f't{n}', 128, f, line + 2)}")
    return "\n".join(ops)


def slots(k, trips: int) -> list[int]:
    t = tensors_by_name(k)
    return [t[f"t{n}"].address[1] for n in range(trips)]


def tensors_by_name(k):
    return {t.name: t for t in k.tensors()}


def test_an_unrolled_loop_rotates_its_tiles_as_the_symbolic_loop_does():
    symbolic, _ = allocate(
        loop_body(f"""    %t = alloc sbuf float32[128, 512] "t"
    {use("t", 128, 512)}
    {read("t", "t", 128, 512)}""")
    )
    _, count, stride, _ = tensors(symbolic)["t"].rotate
    k, diags = allocate(unrolled_body(512, 8))
    assert diags == []
    addresses = slots(k, 8)
    # tile n in slot n mod 4, the slots as far apart as the symbolic loop's
    assert (count, stride) == (4, 2048)
    assert addresses == [addresses[0] + n % count * stride for n in range(8)]
    assert all(t.rotate is None for t in k.tensors())


def test_psum_tiles_of_an_unrolled_loop_take_two_banks():
    k, diags = allocate(unrolled_body(512, 6, psum=True))
    assert diags == []
    addresses = slots(k, 6)
    assert addresses == [addresses[0] + n % 2 * 2048 for n in range(6)]


def test_unrolled_tiles_get_fewer_slots_when_space_is_short():
    # 80,000 bytes per partition: two fit in trn2's 212,984, three do not (as symbolically)
    k, diags = allocate(unrolled_body(20000, 4))
    assert diags == []
    addresses = slots(k, 4)
    assert addresses == [addresses[0] + n % 2 * 80000 for n in range(4)]
    # 160,000: one slot, every tile at one address, as before
    k, diags = allocate(unrolled_body(40000, 4))
    assert diags == []
    assert len(set(slots(k, 4))) == 1


def test_a_tile_live_across_the_unrolled_loop_keeps_the_space_it_needs():
    # `big` (140,000 bytes) is live from before the loop to after it: the tiles rotate in what
    # is left (72,984 bytes: 3 slots of 20,000), where 4 slots do not fit
    ops = [
        f'  %big = alloc sbuf float32[128, 35000] "big" {at(2)}',
        f"  {use('big', 128, 35000, 3)}",
        unrolled_body(5000, 6),
        f"  {read('big', 'big', 128, 35000, 90)}",
    ]
    k, diags = allocate("\n".join(ops))
    assert diags == []
    addresses = slots(k, 6)
    assert addresses == [addresses[0] + n % 3 * 20000 for n in range(6)]
    big = tensors(k)["big"].address[1]
    assert all(b + 20000 <= big or big + 140000 <= b for b in addresses)


def test_tiles_of_a_site_live_at_once_are_separate_chains():
    # two calls of a helper per iteration: the site's tiles of one iteration overlap, so
    # they never share a slot
    ops = []
    for n in range(4):
        a, b = f"t{2 * n}", f"t{2 * n + 1}"
        ops += [
            f'  %{a} = alloc sbuf float32[128, 512] "t" {at(20)}',
            f'  %{b} = alloc sbuf float32[128, 512] "t" {at(20)}',
            f"  {use(a, 128, 512, 21)}",
            f"  {read(b, a, 128, 512, 22)}",
        ]
    k, diags = allocate("\n".join(ops))
    assert diags == []
    addresses = slots(k, 8)
    for n in range(4):
        assert addresses[2 * n] != addresses[2 * n + 1]
    firsts, seconds = addresses[0::2], addresses[1::2]
    assert len(set(firsts)) == len(set(seconds)) == 4
    assert not set(firsts) & set(seconds)


def test_tiles_of_different_sites_do_not_rotate_together():
    ops = []
    for n in range(8):
        ops += [
            f'  %t{n} = alloc sbuf float32[128, 512] "t" {at(20 + n)}',
            f"  {use(f't{n}', 128, 512, 40)}",
        ]
    k, _ = allocate("\n".join(ops))
    # no chain: each tile placed on its own, in fresh bytes while there is room (as before)
    assert len(set(slots(k, 8))) == 8
