"""The verifier accepts well-formed IR and names every broken structural rule."""

from __future__ import annotations

import pytest

from nkic.ir.affine import Affine
from nkic.ir.builder import Builder, imm, whole
from nkic.ir.core import AccessPattern, Dynamic, Inst, Kernel, Loc, Loop, Tensor
from nkic.ir.verifier import VerifierError, verify, verify_or_raise

LOC = Loc("k.py", 1, 1, 1, 5)


def base() -> tuple[Kernel, Builder, Tensor, Tensor]:
    k = Kernel("k", "trn2")
    b = Builder(k)
    a = b.param("hbm", "float32", (128, 512), "a", LOC)
    t = b.alloc("sbuf", "float32", (128, 512), "t", LOC)
    b.inst("dma_copy", {"dst": whole(t), "src": whole(a)}, {}, LOC)
    return k, b, a, t


def only(k: Kernel, fragment: str) -> None:
    problems = verify(k)
    assert len(problems) == 1, problems
    assert fragment in problems[0]


def test_well_formed_kernel_has_no_problems():
    k, b, a, t = base()
    with b.loop(0, 4, 1, "affine", LOC) as i:
        u = b.alloc("sbuf", "float32", (128, 128), "u", LOC)
        src = AccessPattern(t, i * 128, ((512, 128), (1, 128)), "float32")
        b.inst("tensor_copy", {"dst": whole(u), "src": src}, {}, LOC)
    b.mark_output(a)
    assert verify(k) == []
    verify_or_raise(k)


def test_use_before_definition():
    k, b, a, t = base()
    b.inst("tensor_copy", {"dst": whole(t), "src": whole(t)}, {}, LOC)
    late = b.alloc("sbuf", "float32", (128, 512), "late", LOC)
    k.body[-2].operands["src"] = whole(late)  # used one op before its alloc
    only(k, "%t2 is not defined in an enclosing scope")


def test_tensor_from_a_loop_body_is_not_visible_after_the_loop():
    k, b, a, t = base()
    with b.loop(0, 2, 1, "affine", LOC):
        inner = b.alloc("sbuf", "float32", (128, 512), "inner", LOC)
    b.inst("tensor_copy", {"dst": whole(t), "src": whole(inner)}, {}, LOC)
    only(k, "%t2 is not defined")


def test_tensor_from_a_loop_body_is_not_visible_in_a_later_loop():
    k, b, a, t = base()
    with b.loop(0, 2, 1, "affine", LOC):
        with b.loop(0, 2, 1, "affine", LOC):
            inner = b.alloc("sbuf", "float32", (128, 512), "inner", LOC)
            b.inst("tensor_copy", {"dst": whole(inner), "src": whole(t)}, {}, LOC)
        b.inst("tensor_copy", {"dst": whole(t), "src": whole(t)}, {}, LOC)
    with b.loop(0, 2, 1, "affine", LOC):
        b.inst("tensor_copy", {"dst": whole(t), "src": whole(inner)}, {}, LOC)
    only(k, "%t2 is not defined")
    # the outer scope keeps its own tensors: only the body's are taken out
    b.mark_output(t)
    assert len(verify(k)) == 1


def test_affine_variable_must_belong_to_an_enclosing_loop():
    k, b, a, t = base()
    src = AccessPattern(a, Affine.var("i9"), ((512, 128), (1, 512)), "float32")
    b.inst("dma_copy", {"dst": whole(t), "src": src}, {}, LOC)
    only(k, "$i9 is not an enclosing loop variable")


def test_loop_variables_are_unique_and_steps_positive():
    k, b, a, t = base()
    k.body.append(Loop("i0", 0, 4, 1, "affine", [Loop("i0", 0, 2, 0, "affine", [], LOC)], LOC))
    problems = verify(k)
    assert any("not unique" in p for p in problems)
    assert any("step 0 must be > 0" in p for p in problems)


def test_unknown_opcode():
    k, b, a, t = base()
    b.inst("nc_fly", {"dst": whole(t)}, {}, LOC)
    only(k, "unknown opcode 'nc_fly'")


def test_missing_required_operand():
    k, b, a, t = base()
    b.inst("tensor_tensor", {"dst": whole(t), "data1": whole(t)}, {"op": "add"}, LOC)
    only(k, "missing required operand 'data2'")


def test_output_operand_must_be_an_access_pattern():
    k, b, a, t = base()
    b.inst("tensor_copy", {"dst": imm(1.0), "src": whole(t)}, {}, LOC)
    only(k, "output operand 'dst' must be an access pattern")


def test_unknown_operand_and_attribute_given_as_operand_each_time_they_occur():
    k, b, a, t = base()
    for line in (7, 8):
        at = Loc("k.py", line, 3, line, 9)
        b.inst("tensor_copy", {"dst": whole(t), "src": whole(t), "sauce": whole(t)}, {}, at)
        operands = {"dst": whole(t), "data": whole(t), "op0": imm("add")}
        b.inst("tensor_scalar", operands, {}, at)
    assert verify(k) == [
        "tensor_copy at k.py:7:3: unknown operand 'sauce'",
        "tensor_scalar at k.py:7:3: 'op0' is an attribute, not an operand",
        "tensor_scalar at k.py:7:3: missing required operand 'operand0'",
        "tensor_copy at k.py:8:3: unknown operand 'sauce'",
        "tensor_scalar at k.py:8:3: 'op0' is an attribute, not an operand",
        "tensor_scalar at k.py:8:3: missing required operand 'operand0'",
    ]


def test_operand_problem_names_the_instruction_location_and_operand():
    k, b, a, t = base()
    src = AccessPattern(a, Affine.var("i9"), ((512, 128), (1, 512)), "float32")
    b.inst("dma_copy", {"dst": whole(t), "src": src}, {}, Loc("k.py", 12, 5, 12, 30))
    assert verify(k) == ["dma_copy at k.py:12:5 operand src: $i9 is not an enclosing loop variable"]


def test_unknown_dtype():
    k, b, a, t = base()
    b.alloc("sbuf", "float64", (128, 4), "x", LOC)
    only(k, "unknown dtype 'float64'")


def test_on_chip_pattern_starts_with_the_partition_pair():
    k, b, a, t = base()
    bad = AccessPattern(t, Affine(0), ((1, 128), (128, 4)), "float32")
    b.inst("tensor_copy", {"dst": whole(t), "src": bad}, {}, LOC)
    only(k, "must start with the partition pair [512, P], got [1, 128]")


def test_partition_pair_step_uses_the_view_dtype():
    k, b, a, t = base()
    as_bf16 = AccessPattern(t, Affine(0), ((1024, 128), (1, 1024)), "bfloat16")
    b.inst("tensor_copy", {"dst": as_bf16, "src": as_bf16}, {}, LOC)
    assert verify(k) == []


def test_partition_limit_is_a_user_check_not_a_verifier_rule():
    # More than 128 partitions is a kernel error (err_num_partition_exceed_arch_limit, reported
    # by the operand-rules check with its source span), not malformed IR.
    k, b, a, t = base()
    wide = AccessPattern(t, Affine(0), ((512, 256), (1, 512)), "float32")
    b.inst("tensor_copy", {"dst": wide, "src": whole(t)}, {}, LOC)
    assert verify(k) == []


def test_pattern_nums_are_positive():
    k, b, a, t = base()
    empty = AccessPattern(t, Affine(0), ((512, 128), (1, 0)), "float32")
    b.inst("tensor_copy", {"dst": empty, "src": whole(t)}, {}, LOC)
    only(k, "pattern nums must be >= 1")


def test_returned_tensor_must_be_defined_at_kernel_scope():
    k, b, a, t = base()
    with b.loop(0, 2, 1, "affine", LOC):
        inner = b.alloc("shared_hbm", "float32", (4,), "inner", LOC)
    k.returns.append(inner)
    only(k, "return of %t2")


def test_rotate_names_the_innermost_loop():
    k, b, a, t = base()
    t.rotate = ("i0", 2, 2048, 0)
    only(k, "rotate names $i0, not the innermost enclosing loop")


def test_engine_must_be_allowed_for_the_opcode():
    k, b, a, t = base()
    k.body.append(
        Inst(
            "nc_matmul",
            {"dst": whole(t), "stationary": whole(t), "moving": whole(t)},
            {},
            LOC,
            engine="vector",
        )
    )
    only(k, "engine 'vector' cannot run nc_matmul")


def test_accumulate_names_enclosing_loops():
    k, b, a, t = base()
    b.inst(
        "nc_matmul",
        {"dst": whole(t), "stationary": whole(t), "moving": whole(t)},
        {"accumulate": ("i7",)},
        LOC,
    )
    only(k, "accumulate names $i7")


def test_verifier_error_lists_problems():
    k, b, a, t = base()
    b.inst("nc_fly", {}, {}, LOC)
    with pytest.raises(VerifierError, match="unknown opcode"):
        verify_or_raise(k, "after test")


def test_unknown_target():
    k, b, a, t = base()
    k.target = "trn9"
    only(k, "unknown target 'trn9'")


def gather_operands(a: Tensor, idx: Tensor, index: str = "src.vector_offset") -> dict:
    dyn = Dynamic("vector", index, 0)
    src = AccessPattern(a, Affine(0), ((512, 128), (1, 512)), "float32", dyn)
    return {"src": src, "src.vector_offset": whole(idx)}


def test_a_dma_gather_with_its_index_operand_is_well_formed():
    k, b, a, t = base()
    idx = b.alloc("sbuf", "int32", (128, 1), "idx", LOC)
    b.inst("dma_copy", {"dst": whole(t), **gather_operands(a, idx)}, {}, LOC)
    assert verify(k) == []


def test_a_dynamic_operand_outside_dma_or_without_its_index_is_rejected():
    k, b, a, t = base()
    idx = b.alloc("sbuf", "int32", (128, 1), "idx", LOC)
    b.inst("tensor_copy", {"dst": whole(t), **gather_operands(a, idx)}, {}, LOC)
    only(k, "has a dynamic offset; only DMA may")
    k, b, a, t = base()
    idx = b.alloc("sbuf", "int32", (128, 1), "idx", LOC)
    b.inst("dma_copy", {"dst": whole(t), **gather_operands(a, idx, "src.missing")}, {}, LOC)
    assert any(
        "index operand 'src.missing' of src is neither on chip nor a register" in p
        for p in verify(k)
    )
