"""One instruction between staged operands (see common.py for the operand specs)."""

import nki
from common import apply


@nki.jit
def isa(a=None, b=None, c=None, d=None, instr="", ins=None, outs=None, attrs=None):
    return apply([a, b, c, d], instr, ins, outs, attrs)
