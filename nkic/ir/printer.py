"""Prints a Kernel in the IR text form (docs/ir.md); `parser.parse_kernel` reads it back."""

from __future__ import annotations

import json
from collections.abc import Iterator
from itertools import zip_longest

from .core import AccessPattern, Alloc, DynLoop, Imm, Inst, Kernel, Loc, Loop, Op, Tensor


def format_literal(v: object) -> str:
    if v is None:
        return "none"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, (tuple, list)):
        inner = ", ".join(format_literal(x) for x in v)
        return f"({inner},)" if len(v) == 1 else f"({inner})"
    raise TypeError(f"cannot print attribute value {v!r}")


class Printer:
    def __init__(self, kernel: Kernel):
        self.kernel = kernel
        self.files = {f: i for i, f in enumerate(kernel.files())}
        self.lines: list[str] = []

    def loc(self, loc: Loc) -> str:
        def one(lc: Loc) -> str:
            return f"{self.files[lc.file]}:{lc.line}:{lc.col}-{lc.end_line}:{lc.end_col}"

        if loc.file not in self.files:
            return ""
        text = " @" + one(loc)
        if loc.stack:
            text += " via [" + ", ".join(one(s) for s in loc.stack) + "]"
        return text

    @staticmethod
    def ttype(t: Tensor) -> str:
        return f"{t.buffer} {t.dtype}[{', '.join(map(str, t.shape))}]"

    def emit(self, depth: int, text: str) -> None:
        self.lines.append("  " * depth + text)

    def operand(self, o: object) -> str:
        if isinstance(o, AccessPattern):
            return str(o)
        assert isinstance(o, Imm)
        return format_literal(o.value)

    def op(self, op: Op, depth: int) -> None:
        if isinstance(op, Alloc):
            t = op.result
            extra = ""
            if t.address is not None:
                extra += f" address({t.address[0]}, {t.address[1]})"
                if t.fixed_address:
                    extra += " fixed"
            if t.rotate is not None:
                var, count, stride, phase = t.rotate
                extra += f" rotate(${var}, {count}, {stride}"
                extra += f", phase {phase})" if phase else ")"
            kind = f" {t.kind}" if t.kind != "internal" else ""
            self.emit(
                depth,
                f"%{t.name} = alloc {self.ttype(t)} {json.dumps(t.label)}{kind}{extra}{self.loc(op.loc)}",
            )
        elif isinstance(op, Inst):
            engine = f"[{op.engine}]" if op.engine else ""
            operands = ", ".join(f"{k}={self.operand(v)}" for k, v in op.operands.items())
            attrs = ", ".join(f"{k}={format_literal(v)}" for k, v in op.attrs.items())
            self.emit(depth, f"{op.opcode}{engine}({operands}) {{{attrs}}}{self.loc(op.loc)}")
        elif isinstance(op, DynLoop):
            self.emit(depth, f"{op.header()} as ${op.var}{self.loc(op.loc)} {{")
            for inner in op.body:
                self.op(inner, depth + 1)
            self.emit(depth, "}")
        elif isinstance(op, Loop):
            self.emit(
                depth,
                f"for ${op.var} = {op.start} to {op.stop} step {op.step} {op.mode}"
                f"{self.loc(op.loc)} {{",
            )
            for inner in op.body:
                self.op(inner, depth + 1)
            self.emit(depth, "}")
        else:
            raise TypeError(f"unknown op {op!r}")

    def kernel_text(self) -> str:
        for _ in self.parts():
            pass
        return "\n".join(self.lines) + "\n"

    def parts(self) -> Iterator[int]:
        """Print the kernel piece by piece (its header, each top-level op, its end), yielding
        the number of lines printed so far after each."""
        k = self.kernel
        self.emit(0, f"kernel @{k.name} target={k.target} {{")
        for f, i in self.files.items():
            self.emit(1, f"file {i} {json.dumps(f)}")
        for p in k.params:
            self.emit(
                1, f"param %{p.name} : {self.ttype(p)} {json.dumps(p.label)}{self.loc(p.loc)}"
            )
        yield len(self.lines)
        for op in k.body:
            self.op(op, 1)
            yield len(self.lines)
        views = k.return_views or [None] * len(k.returns)
        returned = ", ".join(f"%{t.name}{_view(v)}" for t, v in zip(k.returns, views))
        self.emit(1, "return" + (" " + returned if returned else ""))
        self.emit(0, "}")
        yield len(self.lines)


def print_kernel(kernel: Kernel) -> str:
    return Printer(kernel).kernel_text()


def same_text(a: Kernel, b: Kernel) -> bool:
    """`print_kernel(a) == print_kernel(b)`, printing both only up to their first difference
    (the programs of an LNC launch usually differ in their first instructions)."""
    pa, pb = Printer(a), Printer(b)
    start = 0
    for end_a, end_b in zip_longest(pa.parts(), pb.parts()):
        if end_a != end_b or pa.lines[start:end_a] != pb.lines[start:end_b]:
            return False
        start = end_a
    return True


def _view(view: tuple | None) -> str:
    """` view([shape], offset, [strides])` of a returned view, "" for a whole tensor."""
    if view is None:
        return ""
    shape, offset, strides = view
    ints = lambda xs: "[" + ", ".join(map(str, xs)) + "]"  # noqa: E731
    return f" view({ints(shape)}, {offset}, {ints(strides)})"
