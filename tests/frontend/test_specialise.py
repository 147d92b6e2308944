"""Stage A: specialising kernels into tile IR (loops, indexing, nki.isa binding, creation)."""

from __future__ import annotations

from nkic.frontend.interp import loops as interp_loops
from nkic.ir.affine import Affine
from nkic.ir.core import Alloc, Imm, Inst, Loop
from nkic.ir.parser import parse_kernel
from nkic.ir.printer import print_kernel

from .util import compile_ok, flatten, line_of, loops, opcodes, run, spec

MM = dict(a=spec((1024, 512), "bfloat16"), b=spec((1024, 1024), "bfloat16"))


def test_tiled_matmul_keeps_three_symbolic_loops():
    k = compile_ok("matmul.py", **MM)
    assert [p.label for p in k.params] == ["a", "b"]
    assert all(p.buffer == "hbm" and p.dtype == "bfloat16" for p in k.params)
    m, n, kk = loops(k)
    assert (m.trip_count, n.trip_count, kk.trip_count) == (4, 2, 8)
    assert {m.mode, n.mode, kk.mode} == {"affine"}
    assert kk in [op for op in n.body if isinstance(op, Loop)]
    dma_a, dma_b, mm = [op for op in kk.body if isinstance(op, Inst)]
    src = dma_a.operands["src"]
    assert src.tensor is k.params[0]
    assert src.offset == Affine(0, {m.var: 128, kk.var: 128 * 512})
    assert src.pattern == ((512, 128), (1, 128))
    assert dma_b.operands["src"].offset == Affine(0, {n.var: 512, kk.var: 128 * 1024})
    assert mm.opcode == "nc_matmul" and mm.attrs["accumulate"] is None
    assert mm.operands["dst"].tensor.buffer == "psum"
    assert [t.label for t in k.returns] == ["out"] and k.returns[0].kind == "output"


def test_symbolic_loops_do_not_grow_with_trip_count():
    small = compile_ok("matmul.py", **MM)
    big = compile_ok(
        "matmul.py", a=spec((8192, 4096), "bfloat16"), b=spec((8192, 8192), "bfloat16")
    )
    assert len(list(big.walk())) == len(list(small.walk()))
    assert [lp.trip_count for lp in loops(big)] == [32, 16, 64]


def test_printed_ir_parses_back():
    k = compile_ok("matmul.py", **MM)
    text = print_kernel(k)
    assert print_kernel(parse_kernel(text)) == text


def test_symbolic_and_unrolled_specialisations_agree():
    for name in ("matmul.py", "loops.py", "views.py", "pkg/kernel.py", "isa_calls.py"):
        args = MM if name == "matmul.py" else {}
        kernels = {"loops.py": ["symbolic", "must_unroll", "nested"]}.get(name, [None])
        for kernel in kernels:
            if name == "views.py":
                args = dict(h=spec((4, 128, 32)))
            elif name in ("loops.py", "isa_calls.py", "pkg/kernel.py"):
                args = dict(x=spec((256, 512)))
            sym, d1 = run(name, kernel, **args)
            unrolled, d2 = run(name, kernel, unroll_all=True, **args)
            assert not d1 and not d2
            assert not loops(unrolled)
            assert flatten(sym.body) == flatten(unrolled.body)


def test_loop_structure_symbolic_kernel():
    k = compile_ok("loops.py", "symbolic", x=spec((128, 512)))
    first, second = loops(k)
    assert (first.start, first.stop, first.step, first.mode) == (0, 4, 1, "affine")
    assert (second.start, second.stop, second.step, second.mode) == (1, 9, 2, "sequential")
    assert (first.loc.line, first.loc.col, first.loc.end_line, first.loc.end_col) == (12, 5, 12, 39)
    alloc = first.body[0]
    assert isinstance(alloc, Alloc) and alloc.result.label == "t"
    copy = second.body[0]
    assert copy.operands["src"].offset == Affine(-1, {second.var: 1})


def test_loops_that_need_concrete_values_are_unrolled():
    k = compile_ok("loops.py", "must_unroll", x=spec((128, 512)))
    assert not loops(k)
    values = [i.attrs["value"] for i in k.instructions() if i.opcode == "memset"]
    assert values == [0.0, 1.0, 2.0, 2.0, 3.0, 3.0, 4.0, 4.0, 5.0, 5.0]
    offsets = [i.operands["dst"].offset.const for i in k.instructions() if i.opcode == "memset"]
    assert offsets[:6] == [0, 128, 0, 128, 0, 64]


def test_range_loops_of_a_large_kernel_stay_loops(monkeypatch):
    # past PLAIN_AFTER unrolled iterations (here from the start) the static_range and range
    # loops stay loops: sequential, marked as Python loops
    monkeypatch.setattr(interp_loops, "PLAIN_AFTER", 0)
    k = compile_ok("loops.py", "must_unroll", x=spec((128, 512)))
    assert [(lp.mode, lp.python, lp.trip_count) for lp in loops(k)] == [
        ("sequential", True, 2),
        ("sequential", True, 2),
    ]
    values = [i.attrs["value"] for i in k.instructions() if i.opcode == "memset"]
    assert values == [0.0, 1.0, 2.0, 2.0, 3.0, 3.0, 4.0, 5.0]


def test_nested_loops_unroll_only_where_needed():
    k = compile_ok("loops.py", "nested", x=spec((128, 512)))
    outer, inner, outer2 = loops(k)
    assert inner in outer.body
    assert not [op for op in outer2.body if isinstance(op, Loop)]
    (scale,) = [op for op in outer2.body if isinstance(op, Inst)]
    assert scale.operands["dst"].offset == Affine(0, {outer2.var: 256})


def test_tensor_from_symbolic_loop_used_after_it_unrolls_that_loop():
    k = compile_ok("loops.py", "escaped", x=spec((128, 512)))
    assert not loops(k)
    tiles = [op.result for op in k.body if isinstance(op, Alloc) and op.result.label == "t"]
    assert len(tiles) == 4
    last_copy = list(k.instructions())[-1]
    assert last_copy.operands["src"].tensor is tiles[-1]


def test_isa_binding():
    k = compile_ok("isa_calls.py", x=spec((128, 512)))
    insts = list(k.instructions())
    assert opcodes(k) == [
        "dma_copy", "tensor_tensor", "tensor_tensor", "tensor_scalar", "activation",
        "tensor_reduce", "tensor_copy", "nc_matmul", "iota", "dma_compute", "activation",
        "dma_copy",
    ]  # fmt: skip
    dma, tt1, tt2, ts, act, red, copy, mm, iota, dmac, act2, _ = insts
    assert dma.attrs == {
        "oob_mode": "error", "dge_mode": "hwdge", "engine": "unknown", "name": None
    }  # fmt: skip
    assert tt1.attrs["op"] == "add" and tt2.attrs["engine"] == "gpsimd"
    assert ts.operands["operand0"] == Imm(2) and ts.operands["operand1"].shape == (128, 1)
    assert ts.attrs["op0"] == "multiply" and ts.attrs["op1"] == "add"
    assert act.attrs["op"] == "exp" and act.operands["scale"] == Imm(0.5)
    assert "reduce_res" not in act.operands
    assert red.attrs["axis"] == (1,) and red.attrs["keepdims"] is True
    assert copy.attrs["engine"] == "vector"
    assert mm.attrs["accumulate"] is True and mm.operands["dst"].pattern == ((512, 128), (1, 128))
    assert iota.attrs["pattern"] == ((0, 1),) and iota.attrs["offset"] == 3
    assert set(dmac.operands) == {"dst", "srcs.0", "srcs.1"}
    assert act2.attrs["reduce_cmd"] == "reset_reduce" and "reduce_res" in act2.operands


def test_creation_apis():
    k = compile_ok("creation.py", x=spec((128, 512)))
    allocs = [op.result for op, _ in k.walk() if isinstance(op, Alloc)]
    a, b, z, o, f, zl, el, out = allocs
    assert (a.label, a.dtype, a.buffer) == ("a_tile", "bfloat16", "sbuf")
    assert b.address == (0, 2048) and b.fixed_address and b.buffer == "psum"
    memsets = [i for i in k.instructions() if i.opcode == "memset"]
    assert [m.attrs["value"] for m in memsets] == [0, 1.0, 7.0, 0.0]
    assert [m.operands["dst"].tensor for m in memsets] == [z, o, f, zl]
    assert el.dtype == "float32" and el.shape == (128, 64)
    assert out.buffer == "shared_hbm" and k.returns == [out]


def test_target_is_recorded_and_visible_to_kernels():
    k, diags = run("isa_calls.py", target="trn3", x=spec((128, 512)))
    assert k is None and diags[0].code == "err_assert_failed"
    assert compile_ok("isa_calls.py", x=spec((128, 512))).target == "trn2"


def test_print_in_a_symbolic_loop_prints_every_iteration(tmp_path, capsys):
    f = tmp_path / "p.py"
    f.write_text(
        "import nki\nimport nki.language as nl\n\n@nki.jit\ndef k(x):\n"
        "    for i in nl.affine_range(3):\n        print('iteration')\n"
    )
    from nkic.diagnostics import DiagnosticSink
    from nkic.frontend import specialise

    k = specialise(str(f), None, {"x": spec((1, 1))}, "trn2", DiagnosticSink())
    assert k is not None and capsys.readouterr().err == "iteration\n" * 3


def test_a_failed_assert_in_a_loop_names_the_failing_iteration_and_ends_the_kernel():
    _, diags = run("assert_loops.py", "fails_at_iteration", x=spec((128, 1024)))
    assert [(d.code, d.message) for d in diags] == [
        (
            "err_assert_failed",
            "assertion failed: tile 3 is past the limit (iteration i=3 of the loop at line 10)",
        )
    ]
    assert diags[0].loc.line == line_of("assert_loops.py", "assert i < LIMIT")


def test_an_assert_that_holds_in_every_iteration_keeps_the_loop_symbolic():
    k = compile_ok("assert_loops.py", "guard_in_loop", x=spec((128, 1024)))
    loops = [op for op in k.body if isinstance(op, Loop)]
    assert len(loops) == 1 and (loops[0].start, loops[0].stop) == (0, 8)
