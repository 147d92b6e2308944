"""Dependencies between iterations of affine_range loops, solved symbolically."""

from __future__ import annotations

from .irkit import at, check, codes, only, tile

X = '  param %x : hbm float32[128, 512] "x" @0:1:12-1:13'
OUT = '  %out = alloc shared_hbm float32[128, 512] "out" @0:2:5-2:60'
T = '  %t = alloc sbuf float32[128, 512] "t" @0:3:5-3:40'
LOAD = f"  dma_copy(dst={tile('t', 128, 512)}, src={tile('x', 128, 512)}) {{}} {at(4)}"


def loop(*lines: str, mode: str = "affine", stop: int = 4, var: str = "i0", line: int = 6) -> str:
    return "\n".join([f"  for ${var} = 0 to {stop} step 1 {mode} {at(line)} {{", *lines, "  }"])


def store(dst_offset: str, line: int = 7, src_offset: str = "128*$i0") -> str:
    return (
        f"    dma_copy(dst=%out[{dst_offset}; [512, 128], [1, 128]], "
        f"src=%t[{src_offset}; [512, 128], [1, 128]]) {{}} {at(line, 9, 80)}"
    )


def run(*body: str):
    return check("\n".join([OUT, T, LOAD, *body]), params=X, returns="%out")


def test_every_iteration_writes_the_same_block():
    d = only(run(loop(store("0"))), "err_unexpected_output_dependencies")
    assert (d.loc.line, d.loc.col) == (7, 9)
    assert d.message == "dma_copy: iteration i0=0 and i0=1 both write out[0:128, 0:128]"
    assert d.related[-1].loc.line == 6  # the loop
    assert "sequential_range" in d.hint


def test_disjoint_blocks_are_independent():
    assert run(loop(store("128*$i0"))) == []


def test_sequential_loop_may_repeat_writes():
    assert run(loop(store("0"), mode="sequential")) == []


def test_overlapping_windows_collide():
    # blocks of 128 columns starting every 64 columns: neighbours overlap
    d = only(
        run(loop(store("64*$i0", src_offset="64*$i0"), stop=7)),
        "err_unexpected_output_dependencies",
    )
    assert (
        "iteration i0=0 writes out[0:128, 0:128] and iteration i0=1 writes out[0:128, 64:192]"
        in d.message
    )


def test_write_read_dependency_across_iterations():
    body = loop(
        f"    memset(dst=%t[128*$i0; [512, 128], [1, 128]], value=1.0) {{}} {at(7, 9, 60)}",
        f"    dma_copy(dst=%out[128*$i0; [512, 128], [1, 128]], src=%t[0; [512, 128], [1, 128]]) {{}} {at(8, 9, 80)}",
    )
    d = only(run(body), "err_unexpected_output_dependencies")
    assert (d.loc.line, d.related[0].loc.line) == (7, 8)
    assert (
        d.message
        == "memset: iteration i0=0 writes t[0:128, 0:128] while iteration i0=1 reads t[0:128, 0:128]"
    )


def test_tile_allocated_inside_loop_is_private():
    body = loop(
        '    %w = alloc sbuf float32[128, 128] "w" @0:7:9-7:40',
        f"    tensor_copy(dst={tile('w', 128, 128)}, src=%t[128*$i0; [512, 128], [1, 128]]) {{}} {at(8)}",
        f"    dma_copy(dst=%out[128*$i0; [512, 128], [1, 128]], src={tile('w', 128, 128)}) {{}} {at(9)}",
    )
    assert run(body) == []


PSUM = "\n".join([
    '  %a = alloc sbuf bfloat16[128, 512] "a" @0:3:5-3:40',
    '  %p = alloc psum float32[128, 128] "p" @0:4:5-4:40',
    f"  memset(dst={tile('a', 128, 512)}, value=0.0) {{}} {at(5)}",
])  # fmt: skip


def kloop(accumulate: str) -> str:
    return loop(
        f"    nc_matmul(dst={tile('p', 128, 128)}, stationary=%a[128*$i0; [512, 128], [1, 128]], "
        f"moving=%a[128*$i0; [512, 128], [1, 128]]) {{{accumulate}}} {at(7, 9, 90)}"
    )


def test_psum_accumulation_over_loop_variable_is_allowed():
    assert check("\n".join([PSUM, kloop("")])) == []
    assert (
        check(
            "\n".join(
                [
                    PSUM,
                    f"  memset(dst={tile('p', 128, 128)}, value=0.0) {{}} {at(6)}",
                    kloop("accumulate=true"),
                ]
            )
        )
        == []
    )


def test_psum_overwrite_in_every_iteration_races():
    d = only(
        check("\n".join([PSUM, kloop("accumulate=false")])), "err_unexpected_output_dependencies"
    )
    assert d.message == "nc_matmul: iteration i0=0 and i0=1 both write p[0:128, 0:128]"


def test_inner_loop_writes_are_part_of_the_iteration():
    inner = "\n".join([
        f"    for $i1 = 0 to 4 step 1 sequential {at(7)} {{",
        f"      dma_copy(dst=%out[128*$i0 + 32*$i1; [512, 128], [1, 32]], src=%t[0; [512, 128], [1, 32]]) {{}} {at(8)}",
        "    }",
    ])  # fmt: skip
    assert run(loop(inner)) == []
    clash = inner.replace("128*$i0 + 32*$i1", "32*$i0 + 32*$i1")
    only(run(loop(clash)), "err_unexpected_output_dependencies")


def test_outer_loop_variable_is_shared_by_both_iterations():
    body = "\n".join([
        f"  for $j = 0 to 2 step 1 sequential {at(5)} {{",
        loop(
            f"    dma_copy(dst=%out[256*$j + 128*$i0; [512, 128], [1, 128]], src=%t[0; [512, 128], [1, 128]]) {{}} {at(7)}",
            stop=2,
        ),
        "  }",
    ])  # fmt: skip
    assert run(body) == []


def test_one_report_per_tensor_and_loop():
    body = loop(store("0", 7), store("0", 8))
    assert codes(run(body)) == ["err_unexpected_output_dependencies"]


def test_interleaved_slots_of_nested_loops_are_independent():
    # slot = 2*i1 + i0 (i1 inner): iterations of i0 use disjoint (even/odd) slots
    sums = '  %s = alloc sbuf float32[128, 4, 512] "sums" @0:3:5-3:40'
    init = f"  memset(dst=%s[0; [2048, 128], [512, 4], [1, 512]], value=0.0) {{}} {at(4)}"

    def body(slot: str) -> str:
        ap = f"%s[{slot}; [2048, 128], [1, 512]]"
        return "\n".join([
            f"  for $i0 = 0 to 2 step 1 affine {at(5)} {{",
            f"    for $i1 = 0 to 2 step 1 affine {at(6)} {{",
            f"      tensor_tensor(dst={ap}, data1={ap}, data2={ap}) {{op=\"add\"}} {at(7)}",
            "    }",
            "  }",
        ])  # fmt: skip

    assert check("\n".join([sums, init, body("1024*$i1 + 512*$i0")])) == []
    d = only(
        check("\n".join([sums, init, body("512*$i1 + 512*$i0")])),
        "err_unexpected_output_dependencies",
    )
    assert d.message == (
        "tensor_tensor: iteration i0=0 writes sums[0:128, 0:2, 0:512] while iteration i0=1 reads "
        "sums[0:128, 1:3, 0:512]"
    )


def test_message_uses_the_source_loop_variable(tmp_path):
    src = tmp_path / "kernel.py"
    src.write_text("\n" * 5 + "    for row in nl.affine_range(4):\n")
    body = "\n".join([OUT, T, LOAD, loop(store("0"))])
    d = only(
        check(body, params=X, returns="%out", file=str(src)), "err_unexpected_output_dependencies"
    )
    assert d.message == "dma_copy: iteration row=0 and row=1 both write out[0:128, 0:128]"


def test_reinterpreted_views_are_compared_per_partition_byte():
    # bf16 views of an fp32 tile: each iteration writes its own half of every row
    def body(offset: str) -> str:
        view = f"%t[{offset}; [1024, 128], [1, 512]] : bfloat16"
        return loop(f"    memset(dst={view}, value=0.0) {{}} {at(7)}", stop=2)

    assert check("\n".join([T, body("512*$i0")])) == []
    d = only(check("\n".join([T, body("256*$i0")])), "err_unexpected_output_dependencies")
    assert d.message == (
        "memset: iteration i0=0 writes t[0:128, bytes 0:1024] and iteration i0=1 writes "
        "t[0:128, bytes 512:1536], which overlap"
    )
