"""Reads before writes and matmul accumulation onto unwritten PSUM, with symbolic loops."""

from __future__ import annotations

from .irkit import at, check, codes, only, tile, view

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
