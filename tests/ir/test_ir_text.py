"""The IR text form prints and parses back to the same text."""

from __future__ import annotations

import pytest

from nkic.ir.affine import Affine
from nkic.ir.builder import Builder, imm, whole
from nkic.ir.core import AccessPattern, Kernel, Loc
from nkic.ir.parser import IRParseError, parse_kernel
from nkic.ir.printer import print_kernel, same_text
from nkic.ir.verifier import verify

TEXT = """\
kernel @k target=trn2 {
  file 0 "kernel.py"
  file 1 "helpers.py"
  param %a : hbm bfloat16[256, 512] "a" @0:1:1-1:20
  %out = alloc shared_hbm bfloat16[256, 512] "out" output @0:2:3-2:30
  %w = alloc sbuf float32[64, 16] "w" address(64, 4096) fixed @0:3:3-3:30
  for $i0 = 0 to 2 step 1 affine @0:4:3-4:40 {
    %t = alloc sbuf bfloat16[128, 512] "t" address(0, 0) rotate($i0, 2, 1024) @1:7:5-7:30 via [0:5:5-5:20]
    dma_copy[dma](dst=%t[0; [512, 128], [1, 512]], src=%a[65536*$i0; [512, 128], [1, 512]]) {} @0:6:5-6:40
    for $i1 = 3 to 100 step 7 sequential {
      tensor_scalar[vector](dst=%t[2*$i1 - 6; [512, 128], [1, 8]], data=%t[0; [512, 128], [1, 8]] : uint16, operand0=-1.5, operand1=true) {op0="add", op1="multiply", reverse0=false, reverse1=none, flag=7, neg=-3, big=1e+30, name="x\\"y", empty=(), one=(1,), many=(1, 2.5, "s", (none, true))} @0:8:7-8:50 via [0:5:5-5:20, 1:2:3-2:9]
    }
    dma_copy(dst=%out[65536*$i0; [512, 128], [1, 512]], src=%t[0; [512, 128], [1, 512]]) {}
  }
  return %out
}
"""


def test_text_round_trips_exactly():
    k = parse_kernel(TEXT)
    assert print_kernel(k) == TEXT
    assert verify(k) == []


def test_same_text_is_equality_of_the_printed_kernels():
    lines = TEXT.splitlines(keepends=True)
    variants = [
        TEXT,
        TEXT.replace("[1, 8]] : uint16", "[1, 9]] : uint16"),  # inside a loop
        TEXT.replace("dst=%out[65536*$i0", "dst=%out[0"),  # the last op of a loop
        TEXT.replace('"out" output', '"o" output'),  # the first op
        TEXT.replace("  return %out\n", "  return\n"),  # the end
        "".join(lines[:5] + lines[6:]),  # an op fewer
    ]
    kernels = [parse_kernel(t) for t in variants]
    for a in kernels:
        for b in kernels:
            assert same_text(a, b) == (print_kernel(a) == print_kernel(b))
    assert sum(same_text(kernels[0], b) for b in kernels) == 1


def test_parsed_kernel_carries_rotate_address_and_stacks():
    k = parse_kernel(TEXT)
    loop = k.body[2]
    t = loop.body[0].result
    assert t.rotate == ("i0", 2, 1024, 0)
    assert t.address == (0, 0) and not t.fixed_address
    w = k.body[1].result
    assert w.address == (64, 4096) and w.fixed_address
    inst = loop.body[2].body[0]
    assert inst.engine == "vector"
    assert inst.loc.file == "kernel.py" and [s.file for s in inst.loc.stack] == [
        "kernel.py",
        "helpers.py",
    ]
    assert inst.attrs["many"] == (1, 2.5, "s", (None, True))
    assert inst.attrs["one"] == (1,) and inst.attrs["empty"] == ()
    assert inst.operands["data"].dtype == "uint16"
    assert inst.operands["dst"].offset == Affine(-6, {"i1": 2})


def test_builder_kernel_round_trips():
    loc = Loc("k.py", 3, 5, 3, 20)
    k = Kernel("add", "trn1")
    b = Builder(k)
    a = b.param("hbm", "float32", (128, 1024), "a", loc)
    o = b.alloc("shared_hbm", "float32", (128, 1024), "o", loc)
    with b.loop(0, 2, 1, "affine", loc.with_stack((Loc("k.py", 9, 1, 9, 4),))) as i:
        t = b.alloc("sbuf", "float32", (128, 512), "t", loc, address=(0, 512))
        src = AccessPattern(a, i * 512, ((1024, 128), (1, 512)), "float32")
        b.inst("dma_copy", {"dst": whole(t), "src": src}, {}, loc)
        b.inst("memset", {"dst": whole(t)}, {"value": 0.0}, loc)
        b.inst("tensor_scalar", {"dst": whole(t), "data": whole(t), "operand0": imm(2)}, {}, loc)
        dst = AccessPattern(o, i * 512, ((1024, 128), (1, 512)), "float32")
        b.inst("dma_copy", {"dst": dst, "src": whole(t)}, {}, loc)
    b.mark_output(o)
    text = print_kernel(k)
    again = print_kernel(parse_kernel(text))
    assert again == text
    assert "address(0, 512) fixed" in text


def test_rotate_without_address_round_trips():
    text = TEXT.replace("address(0, 0) rotate", "rotate")
    assert print_kernel(parse_kernel(text)) == text


def test_malformed_rotate_is_a_parse_error():
    with pytest.raises(IRParseError):
        parse_kernel(TEXT.replace("rotate($i0, 2, 1024)", "rotate(i0, 2)"))


def test_a_returned_view_round_trips():
    text = TEXT.replace("  return %out\n", "  return %out view([512, 256], 0, [1, 512])\n")
    k = parse_kernel(text)
    assert k.return_views == [((512, 256), 0, (1, 512))]
    assert print_kernel(k) == text


def test_a_rotation_from_a_later_slot_round_trips():
    text = TEXT.replace("rotate($i0, 2, 1024)", "rotate($i0, 2, 1024, phase 1)")
    k = parse_kernel(text)
    assert k.body[2].body[0].result.rotate == ("i0", 2, 1024, 1)
    assert print_kernel(k) == print_kernel(parse_kernel(print_kernel(k)))
    assert "rotate($i0, 2, 1024, phase 1)" in print_kernel(k)
