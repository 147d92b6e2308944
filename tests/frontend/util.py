"""Helpers for frontend tests: specialise a kernel file and look at the IR it produced."""

from __future__ import annotations

from pathlib import Path

from nkic.diagnostics import DiagnosticSink
from nkic.frontend import TensorSpec, specialise
from nkic.ir.core import Alloc, Inst, Kernel, Loop
from tests.deprecations import without_loop_deprecations

KERNELS = Path(__file__).resolve().parent / "kernels"


def spec(shape, dtype="float32") -> TensorSpec:
    return TensorSpec(tuple(shape), dtype)


def run(name: str, kernel: str | None = None, target: str = "trn2", unroll_all=False, **args):
    """(Kernel or None, diagnostics) for kernels/<name>."""
    sink = DiagnosticSink()
    k = specialise(str(KERNELS / name), kernel, args, target, sink, unroll_all=unroll_all)
    return k, without_loop_deprecations(sink.items)


def compile_ok(name: str, kernel: str | None = None, **args) -> Kernel:
    k, diags = run(name, kernel, **args)
    assert not [d for d in diags if d.severity == "error"], [
        (d.code, d.loc.line, d.loc.col, d.message) for d in diags
    ]
    assert k is not None
    return k


def opcodes(k: Kernel) -> list[str]:
    return [i.opcode for i in k.instructions()]


def flatten(ops, env=None):
    """The ops of a body with every loop expanded: (opcode, operands as concrete
    (tensor label, offset, pattern, dtype) or immediates, attrs) per executed instruction."""
    env = env or {}
    out = []
    for op in ops:
        if isinstance(op, Loop):
            for i in range(op.start, op.stop, op.step):
                out += flatten(op.body, {**env, op.var: i})
        elif isinstance(op, Inst):
            operands = {}
            for name, v in op.operands.items():
                if hasattr(v, "tensor"):
                    operands[name] = (
                        v.tensor.label,
                        v.tensor.shape,
                        v.offset.evaluate(env),
                        v.pattern,
                        v.dtype,
                    )
                else:
                    operands[name] = v.value
            out.append((op.opcode, operands, op.attrs))
        elif isinstance(op, Alloc):
            t = op.result
            out.append(("alloc", t.buffer, t.dtype, t.shape, t.label))
    return out


def loops(k: Kernel) -> list[Loop]:
    return [op for op, _ in k.walk() if isinstance(op, Loop)]


def line_of(name: str, text: str, nth: int = 0) -> int:
    """1-based line of the nth line of kernels/<name> containing `text`."""
    lines = (KERNELS / name).read_text().splitlines()
    return [i for i, line in enumerate(lines, 1) if text in line][nth]
