"""`Inst.aps` is found once per version of an instruction's operands: every change to them
(as passes and the Beta 1 frontend make in place) gives the new access patterns."""

from __future__ import annotations

from nkic.ir.affine import Affine
from nkic.ir.builder import Builder, imm, whole
from nkic.ir.core import AccessPattern, Inst, Kernel, Loc

LOC = Loc("k.py", 1, 1, 1, 5)


def copy_inst() -> tuple[Inst, AccessPattern, AccessPattern, AccessPattern]:
    k = Kernel("k", "trn2")
    b = Builder(k)
    a = b.param("hbm", "float32", (128, 512), "a", LOC)
    t = b.alloc("sbuf", "float32", (128, 512), "t", LOC)
    u = b.alloc("sbuf", "float32", (128, 512), "u", LOC)
    inst = b.inst("dma_copy", {"dst": whole(t), "src": whole(a)}, {}, LOC)
    return inst, whole(t), whole(a), whole(u)


def test_access_patterns_are_found_once():
    inst, dst, src, _ = copy_inst()
    first = inst.aps()
    assert first == (("dst", dst), ("src", src))
    assert inst.aps() is first


def test_an_operand_replaced_in_place_is_seen():
    # as `apply-views` re-addresses a view argument onto its buffer
    inst, dst, src, other = copy_inst()
    inst.aps()
    moved = AccessPattern(src.tensor, Affine(4096), src.pattern, src.dtype)
    inst.operands["src"] = moved
    assert inst.aps() == (("dst", dst), ("src", moved))
    inst.operands["dst"] = other
    assert inst.aps() == (("dst", other), ("src", moved))


def test_every_change_to_the_operands_is_seen():
    inst, dst, src, other = copy_inst()
    changes = [
        (lambda ops: ops.pop("src"), (("dst", dst),)),
        (lambda ops: ops.update(src=other), (("dst", dst), ("src", other))),
        (lambda ops: ops.__delitem__("dst"), (("src", other),)),
        (lambda ops: ops.setdefault("dst", dst), (("src", other), ("dst", dst))),
        (lambda ops: ops.popitem(), (("src", other),)),
        (lambda ops: ops.__ior__({"extra": src}), (("src", other), ("extra", src))),
        (lambda ops: ops.update({"scale": imm(2.0)}), (("src", other), ("extra", src))),
        (lambda ops: ops.clear(), ()),
    ]
    for change, expected in changes:
        inst.aps()
        change(inst.operands)
        assert inst.aps() == expected


def test_the_instruction_keeps_its_own_copy_of_the_operands():
    k = Kernel("k", "trn2")
    b = Builder(k)
    a = b.param("hbm", "float32", (128, 512), "a", LOC)
    t = b.alloc("sbuf", "float32", (128, 512), "t", LOC)
    given = {"dst": whole(t), "src": whole(a)}
    inst = Inst("dma_copy", given, {}, LOC)
    inst.aps()
    given["src"] = whole(t)  # the caller's mapping is not the instruction's
    assert inst.aps() == (("dst", whole(t)), ("src", whole(a)))
