"""The kernel interface: outputs written, inputs left alone, shared HBM at kernel level."""

from __future__ import annotations

from .irkit import at, check, only, tile

A = '  param %a : hbm float32[128, 512] "a" @0:1:12-1:13'
OUT = '  %out = alloc shared_hbm float32[128, 512] "out" @0:2:5-2:60'
S = '  %s = alloc sbuf float32[128, 512] "s" @0:3:5-3:40'


def load(line: int = 4) -> str:
    return f"  dma_copy(dst={tile('s', 128, 512)}, src={tile('a', 128, 512)}) {{}} {at(line)}"


def store(dst: str = "out", line: int = 5) -> str:
    return (
        f"  dma_copy(dst={tile(dst, 128, 512)}, src={tile('s', 128, 512)}) {{}} {at(line, 5, 50)}"
    )


def test_output_never_written():
    d = only(
        check("\n".join([OUT, S, load()]), params=A, returns="%out"),
        "err_tensor_output_not_written_to",
    )
    assert (d.loc.line, d.loc.col) == (2, 5)
    assert "`out` is returned but nothing writes it" == d.message


def test_output_written_is_clean():
    assert check("\n".join([OUT, S, load(), store()]), params=A, returns="%out") == []


def test_output_written_only_in_zero_trip_loop():
    loop = "\n".join([f"  for $i0 = 0 to 0 step 1 affine {at(6)} {{", store(line=7), "  }"])
    only(
        check("\n".join([OUT, S, load(), loop]), params=A, returns="%out"),
        "err_tensor_output_not_written_to",
    )


def test_writing_an_input_that_is_not_returned_warns():
    d = only(
        check("\n".join([S, load(), store("a")]), params=A), "err_cannot_update_immutable_parameter"
    )
    assert d.severity == "warning"
    assert (d.loc.line, d.loc.col) == (5, 5)
    assert d.related[0].loc.line == 1


def test_writing_a_returned_input_is_clean():
    assert check("\n".join([S, load(), store("a")]), params=A, returns="%a") == []


def test_shared_hbm_allocated_in_loop():
    loop = "\n".join([
        f"  for $i0 = 0 to 2 step 1 affine {at(6)} {{",
        '    %o = alloc shared_hbm float32[128, 512] "o" @0:7:9-7:60',
        store("o", 8),
        "  }",
    ])  # fmt: skip
    d = only(check("\n".join([S, load(), loop]), params=A), "err_shared_hbm_must_in_kernel_level")
    assert (d.loc.line, d.loc.col) == (7, 9)
    assert d.related[0].loc.line == 6


def test_shared_hbm_at_kernel_level_is_clean():
    loop = "\n".join([f"  for $i0 = 0 to 2 step 1 sequential {at(6)} {{", store("out", 8), "  }"])
    assert check("\n".join([OUT, S, load(), loop]), params=A, returns="%out") == []
