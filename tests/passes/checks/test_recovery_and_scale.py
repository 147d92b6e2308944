"""Every error in one run, and checks that never enumerate loop iterations."""

from __future__ import annotations

from .irkit import at, check, codes, tile


def test_five_errors_five_reports():
    body = "\n".join([
        '  %big = alloc sbuf float32[256, 512] "big" @0:1:5-1:40',
        '  %i = alloc sbuf int32[128, 512] "i" @0:2:5-2:40',
        '  %p = alloc psum float32[128, 512] "p" @0:3:5-3:40',
        '  %u = alloc sbuf float32[128, 512] "u" @0:4:5-4:40',
        '  %v = alloc sbuf float32[128, 512] "v" @0:5:5-5:40',
        f"  memset(dst={tile('big', 256, 512)}, value=0.0) {{}} {at(10)}",
        f"  memset(dst={tile('i', 128, 512)}, value=0.5) {{}} {at(11)}",
        f"  memset(dst={tile('p', 128, 512)}, value=0.0) {{}} {at(12)}",
        f"  dma_copy(dst={tile('out', 128, 512)}, src={tile('p', 128, 512)}) {{}} {at(13)}",
        f"  tensor_copy(dst={tile('v', 128, 512)}, src={tile('u', 128, 512)}) {{}} {at(14)}",
        f"  for $i0 = 0 to 8 step 1 affine {at(15)} {{",
        f"    memset(dst={tile('v', 128, 512)}, value=1.0) {{}} {at(16)}",
        "  }",
        f"  dma_copy(dst={tile('out', 128, 512)}, src={tile('v', 128, 512)}) {{}} {at(17)}",
    ])  # fmt: skip
    diags = check(
        body, params='  param %out : hbm float32[128, 512] "out" @0:1:1-1:2', returns="%out"
    )
    assert [(d.code, d.loc.line) for d in diags] == [
        ("err_num_partition_exceed_arch_limit", 10),
        ("err_dtype_mismatch", 11),
        ("err_unsupported_memory", 13),
        ("err_read_before_write", 14),
        ("err_unexpected_output_dependencies", 16),
    ]


MILLION = 10**6


def stream(dst_offset: str) -> str:
    """A loop of a million iterations nested in another, storing one row per iteration."""
    return "\n".join([
        '  %out = alloc shared_hbm float32[1000000, 1000000] "out" @0:2:5-2:60',
        '  %row = alloc sbuf float32[1, 1000000] "row" @0:3:5-3:40',
        f"  for $j = 0 to {MILLION} step 1 sequential {at(4)} {{",
        f"    memset(dst=%row[$j; [1000000, 1], [1, 1]], value=0.0) {{}} {at(5)}",
        "  }",
        f"  for $i0 = 0 to {MILLION} step 1 affine {at(6)} {{",
        f"    for $i1 = 0 to {MILLION} step 1 affine {at(7)} {{",
        f"      dma_copy(dst=%out[{dst_offset}; [1, 1]], src=%row[$i1; [1000000, 1], [1, 1]]) {{}} {at(8)}",
        "    }",
        "  }",
    ])  # fmt: skip


def test_million_iteration_loops_are_checked_symbolically():
    assert check(stream("1000000*$i0 + $i1"), returns="%out") == []
    diags = check(stream("$i1"), returns="%out")
    assert codes(diags) == ["err_unexpected_output_dependencies"]
    assert "iteration i0=0 and i0=1 both write out[0:1, 0:1000000]" in diags[0].message


def test_million_iteration_partial_initialisation_is_found():
    body = stream("1000000*$i0 + $i1").replace(
        f"to {MILLION} step 1 sequential", f"to {MILLION - 1} step 1 sequential"
    )
    assert codes(check(body, returns="%out")) == ["err_read_before_write"]
