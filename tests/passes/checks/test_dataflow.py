"""Reads before writes and matmul accumulation onto unwritten PSUM, with symbolic loops."""

from __future__ import annotations

import numpy as np

from nkic.ir.core import Alloc
from nkic.ir.parser import parse_kernel
from nkic.passes.checks import dataflow as df
from nkic.passes.checks.accesses import accesses
from nkic.passes.checks.regions import common_kind, covered

from .irkit import at, check, codes, kernel_text, only, tile, view

T = '  %t = alloc sbuf float32[128, 512] "t" @0:1:5-1:40'
U = '  %u = alloc sbuf float32[128, 512] "u" @0:2:5-2:40'


def copy_t_to_u(line: int = 10) -> str:
    return f"  tensor_copy(dst={tile('u', 128, 512)}, src={tile('t', 128, 512)}) {{}} {at(line, 3, 60)}"


def memset_t(line: int = 5, window: str | None = None, value: str = "0.0") -> str:
    return f"  memset(dst={window or tile('t', 128, 512)}, value={value}) {{}} {at(line)}"


def test_read_before_write():
    d = only(check("\n".join([T, U, copy_t_to_u()])), "err_read_before_write")
    assert (d.loc.line, d.loc.col) == (10, 3)
    assert d.message == "tensor_copy: `src` reads `t` before anything wrote it"
    assert d.related[0].loc.line == 1 and d.hint


def test_written_first_is_clean():
    assert check("\n".join([T, U, memset_t(), copy_t_to_u()])) == []


def test_reported_once_per_tensor():
    diags = check("\n".join([T, U, copy_t_to_u(10), copy_t_to_u(11)]))
    assert codes(diags) == ["err_read_before_write"]


def test_partial_write_read_on_chip_is_a_warning():
    body = "\n".join([T, U, memset_t(window=view("t", 512, 128, 256)), copy_t_to_u()])
    d = only(check(body), "nkic_partly_uninitialised_read")
    assert d.severity == "warning" and (d.loc.line, d.loc.col) == (10, 3)
    assert d.message == (
        "tensor_copy: `src` reads `t`, of which earlier writes cover only a part; the rest "
        "holds what the memory held before"
    )


def test_partial_write_stored_to_hbm_is_an_error():
    out = '  %out = alloc shared_hbm float32[128, 512] "out" @0:3:5-3:60'
    store = f"  dma_copy(dst={tile('out', 128, 512)}, src={tile('t', 128, 512)}) {{}} {at(10)}"
    body = "\n".join([T, out, memset_t(window=view("t", 512, 128, 256)), store])
    d = only(check(body, returns="%out"), "err_read_before_write")
    assert d.loc.line == 10
    assert d.message == (
        "dma_copy: `src` reads `t`, of which earlier writes cover only a part, into device memory"
    )


def test_two_partial_writes_cover_the_read():
    halves = [memset_t(5, view("t", 512, 128, 256)), memset_t(6, view("t", 512, 128, 256, "256"))]
    assert check("\n".join([T, U, *halves, copy_t_to_u()])) == []


def test_write_in_earlier_loop_covers_read():
    loop = "\n".join([
        f"  for $i0 = 0 to 4 step 1 sequential {at(4)} {{",
        memset_t(5, view("t", 512, 128, 128, "128*$i0")),
        "  }",
    ])  # fmt: skip
    assert check("\n".join([T, U, loop, copy_t_to_u()])) == []


def test_write_in_too_short_loop_leaves_a_gap():
    loop = "\n".join([
        f"  for $i0 = 0 to 3 step 1 sequential {at(4)} {{",
        memset_t(5, view("t", 512, 128, 128, "128*$i0")),
        "  }",
    ])  # fmt: skip
    only(check("\n".join([T, U, loop, copy_t_to_u()])), "nkic_partly_uninitialised_read")


def test_write_later_in_loop_body_counts_as_earlier_iteration():
    loop = "\n".join([
        f"  for $i0 = 0 to 4 step 1 sequential {at(4)} {{",
        copy_t_to_u(10),
        memset_t(11),
        "  }",
    ])  # fmt: skip
    assert check("\n".join([T, U, loop])) == []


def test_write_in_zero_trip_loop_does_not_count():
    loop = "\n".join([f"  for $i0 = 0 to 0 step 1 sequential {at(4)} {{", memset_t(5), "  }"])
    only(check("\n".join([T, U, loop, copy_t_to_u()])), "err_read_before_write")


def test_failed_instruction_still_defines_its_destination():
    t = '  %t = alloc sbuf int32[128, 512] "t" @0:1:5-1:40'
    u = '  %u = alloc sbuf int32[128, 512] "u" @0:2:5-2:40'
    diags = check("\n".join([t, u, memset_t(value="0.5"), copy_t_to_u()]))
    assert codes(diags) == ["err_dtype_mismatch"]


def test_reinterpreted_view_counts_as_write():
    body = "\n".join(
        [T, U, memset_t(window="%t[0; [1024, 128], [1, 1024]] : bfloat16"), copy_t_to_u()]
    )
    assert check(body) == []


MM = "\n".join([
    '  %a = alloc sbuf bfloat16[128, 128] "a" @0:1:5-1:40',
    '  %b = alloc sbuf bfloat16[128, 512] "b" @0:2:5-2:40',
    '  %p = alloc psum float32[128, 512] "p" @0:3:5-3:40',
    f"  memset(dst={tile('a', 128, 128)}, value=0.0) {{}} {at(4)}",
    f"  memset(dst={tile('b', 128, 512)}, value=0.0) {{}} {at(5)}",
])  # fmt: skip


def matmul(line: int, accumulate: str | None) -> str:
    attrs = f"accumulate={accumulate}" if accumulate else ""
    return (
        f"  nc_matmul(dst={tile('p', 128, 512)}, stationary={tile('a', 128, 128)}, "
        f"moving={tile('b', 128, 512)}) {{{attrs}}} {at(line, 9, 70)}"
    )


def test_accumulate_onto_unwritten_psum():
    d = only(check("\n".join([MM, matmul(12, "true")])), "err_psum_accumulate_uninitialized")
    assert (d.loc.line, d.loc.col) == (12, 9)
    assert "`accumulate=True` adds into `p`" in d.message


def test_accumulate_after_overwrite_is_clean():
    assert check("\n".join([MM, matmul(11, "false"), matmul(12, "true")])) == []


def test_inferred_accumulation_is_clean():
    loop = "\n".join([f"  for $i0 = 0 to 4 step 1 affine {at(10)} {{", matmul(11, None), "  }"])
    assert check("\n".join([MM, loop])) == []


def test_explicit_accumulation_in_loop_without_initial_write():
    loop = "\n".join([f"  for $i0 = 0 to 4 step 1 affine {at(10)} {{", matmul(11, "true"), "  }"])
    only(check("\n".join([MM, loop])), "err_psum_accumulate_uninitialized")


def test_tile_allocated_in_the_loop_is_fresh_every_iteration():
    loop = "\n".join([
        f"  for $i0 = 0 to 4 step 1 sequential {at(4)} {{",
        '    %t = alloc sbuf float32[128, 512] "t" @0:5:9-5:40',
        copy_t_to_u(10),
        memset_t(11),
        "  }",
    ])  # fmt: skip
    only(check("\n".join([U, loop])), "err_read_before_write")


def test_read_and_write_by_one_instruction_reads_first():
    add = (
        f"  tensor_tensor(dst={tile('t', 128, 512)}, data1={tile('t', 128, 512)}, "
        f'data2={tile("u", 128, 512)}) {{op="add"}} {at(10)}'
    )
    memset_u = f"  memset(dst={tile('u', 128, 512)}, value=0.0) {{}} {at(5)}"
    d = only(check("\n".join([T, U, memset_u, add])), "err_read_before_write")
    assert d.message == "tensor_tensor: `data1` reads `t` before anything wrote it"


# The indexed search of `_initialised` against the definition it implements: every earlier
# write, and every later one in a common loop that runs twice, taken one by one.


def _reference_state(r, writes, regions, alloc_loops):
    def may_precede(w):
        if w.inst is r.inst:
            return False
        if w.index < r.index:
            return True
        return any(
            lp is lq and lp.trip_count >= 2 and all(lp is not x for x in alloc_loops)
            for lp, lq in zip(w.loops, r.loops)
        )

    target = regions.get(r)
    for w in writes:
        f = regions.get(w)
        if w.index < r.index and w.inst is not r.inst and f[0].kind == target[0].kind:
            if all(lo <= il and ih <= hi for (lo, hi), (il, ih) in zip(f[1], target[1])):
                return df.WRITTEN
    earlier = [w for w in writes if may_precede(w)]
    if not earlier:
        return df.UNWRITTEN
    kind = common_kind(target[0], *(regions.get(w)[0] for w in earlier))
    box = list(regions.get(r, kind)[1])
    boxes = [list(regions.get(w, kind)[1]) for w in earlier]
    meet = [b for b in boxes if all(lo <= th and tl <= hi for (lo, hi), (tl, th) in zip(b, box))]
    if kind != "elements":
        return df.WRITTEN if meet else df.UNWRITTEN
    if covered(box, boxes):
        return df.WRITTEN
    return df.PARTLY if meet else df.UNWRITTEN


def _random_window(rng, loop_vars: list[str]) -> str:
    """A window of t (float32[16, 64]): a box, a strided one, a bfloat16 view (row
    coordinates) or a pattern that is no box of t (flat coordinates), maybe moving with a loop."""
    p, f = int(rng.integers(1, 9)), int(rng.integers(1, 33))
    row, col = int(rng.integers(0, 17 - p)), int(rng.integers(0, 65 - f))
    offset = str(row * 64 + col)
    if loop_vars and rng.random() < 0.5:
        var = loop_vars[int(rng.integers(len(loop_vars)))]
        offset = f"{int(rng.choice([1, 8, 64]))}*{var} + {offset}"
    form = rng.random()
    if form < 0.1:
        return f"%t[{offset}; [128, {max(1, p // 2)}], [1, {f}]] : bfloat16"
    if form < 0.15:
        return f"%t[0; [65, {p}], [1, {f}]]"
    if form < 0.25:
        return f"%t[{offset}; [64, {p}], [2, {max(1, f // 2)}]]"
    return f"%t[{offset}; [64, {p}], [1, {f}]]"


def _random_body(rng, depth: int, loop_vars: list[str], lines: list[str]) -> None:
    for _ in range(int(rng.integers(1, 5))):
        kind = rng.random()
        line = 10 + len(lines)
        if kind < 0.2 and depth < 2:
            var = f"$i{len(lines)}"
            trip = int(rng.integers(0, 4))
            lines.append(f"  for {var} = 0 to {trip} step 1 sequential {at(line)} {{")
            if rng.random() < 0.15 and not any("alloc" in x for x in lines):
                lines.append(f'  %t = alloc sbuf float32[16, 64] "t" {at(line + 1)}')
            _random_body(rng, depth + 1, [*loop_vars, var], lines)
            lines.append("  }")
        elif kind < 0.55:
            lines.append(
                f"  memset(dst={_random_window(rng, loop_vars)}, value=0.0) {{}} {at(line)}"
            )
        elif kind < 0.65:
            w = _random_window(rng, loop_vars)
            lines.append(f'  tensor_tensor(dst={w}, data1={w}, data2={w}) {{op="add"}} {at(line)}')
        else:
            lines.append(
                f"  tensor_copy(dst=%u[0; [64, 1], [1, 1]], src={_random_window(rng, loop_vars)})"
                f" {{}} {at(line)}"
            )


def test_indexed_search_agrees_with_the_definition():
    rng = np.random.default_rng(7)
    compared = {df.WRITTEN: 0, df.PARTLY: 0, df.UNWRITTEN: 0}
    for _ in range(300):
        lines = ['  %u = alloc sbuf float32[16, 64] "u" @0:2:5-2:40']
        _random_body(rng, 0, [], lines)
        if not any("alloc" in x for x in lines[1:]):
            lines.insert(0, '  %t = alloc sbuf float32[16, 64] "t" @0:1:5-1:40')
        kernel = parse_kernel(kernel_text("\n".join(lines)))
        allocs = {id(op.result): loops for op, loops in kernel.walk() if isinstance(op, Alloc)}
        items = [a for a in accesses(kernel) if a.reachable and a.ap.tensor.name == "t"]
        writes = [a for a in items if a.write]
        indexed = df._Writes(writes, df._Regions())
        ends = df._loop_ends(accesses(kernel))
        regions = df._Regions()
        for r in items:
            if r.write:
                continue
            loops = allocs[id(r.ap.tensor)]
            want = _reference_state(r, writes, regions, loops)
            assert df._initialised(r, indexed, loops, ends) == want, "\n".join(lines)
            compared[want] += 1
    assert min(compared.values()) > 50, compared


def _tiles(n: int, written: bool, first_line: int = 10) -> list[str]:
    """`n` unrolled iterations: a fresh tile each, written (or not) then copied to `u`."""
    lines = []
    for i in range(n):
        lines.append(f'  %x{i} = alloc sbuf float32[128, 512] "x{i}" {at(first_line + 3 * i)}')
        if written:
            lines.append(memset_t(first_line + 3 * i + 1, window=tile(f"x{i}", 128, 512)))
        lines.append(
            f"  tensor_copy(dst={tile('u', 128, 512)}, src={tile(f'x{i}', 128, 512)}) {{}} "
            + at(first_line + 3 * i + 2)
        )
    return lines


def test_unrolled_tiles_with_the_same_accesses_are_checked_once(monkeypatch):
    calls = []
    real = df._initialised
    monkeypatch.setattr(df, "_initialised", lambda r, *rest: calls.append(r) or real(r, *rest))
    assert check("\n".join([U, *_tiles(3, written=True)])) == []
    assert [r.ap.tensor.name for r in calls] == ["x0"]


def test_unrolled_tiles_read_before_written_report_each():
    diags = check("\n".join([U, *_tiles(2, written=False)]))
    assert [(d.code, d.loc.line) for d in diags] == [
        ("err_read_before_write", 12),
        ("err_read_before_write", 15),
    ]


def test_tile_with_other_accesses_than_a_clean_twin_is_checked():
    """x1's write covers half of it: not the clean x0's signature."""
    lines = [U, *_tiles(1, written=True)]
    lines.append(f'  %x1 = alloc sbuf float32[128, 512] "x1" {at(20)}')
    lines.append(memset_t(21, window=view("x1", 512, 128, 256)))
    lines.append(
        f"  tensor_copy(dst={tile('u', 128, 512)}, src={tile('x1', 128, 512)}) {{}} {at(22)}"
    )
    d = only(check("\n".join(lines)), "nkic_partly_uninitialised_read")
    assert d.loc.line == 22
