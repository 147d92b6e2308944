"""A readable assembly listing: one instruction stream per queue, with waits and source lines."""

from __future__ import annotations

from ..ir.core import AccessPattern, DynLoop, Inst, Kernel, Loop, Op
from ..ir.printer import format_literal
from .schedule import Clamped, Schedule, Scheduled, Skip, schedule_once

QUEUE_ORDER = ("tensor", "vector", "scalar", "gpsimd")


def _queue_key(q: str) -> tuple[int, int]:
    if q in QUEUE_ORDER:
        return (QUEUE_ORDER.index(q), 0)
    return (len(QUEUE_ORDER), int(q[3:]))


def _operand(o) -> str:
    return str(o) if isinstance(o, AccessPattern) else format_literal(o.value)


def _skip(skip: Skip) -> str:
    """`~3`, or `~(63 - 64*$bn - $k)` for a per-iteration skip; empty for 0."""
    if isinstance(skip, int):
        return f"~{skip}" if skip else ""
    if isinstance(skip, Clamped):
        return f"~max(0, {_skip(skip.expr)[1:].strip('()')})"
    text = str(skip.const) if skip.const else ""
    for v, c in skip.terms:
        term = f"${v}" if abs(c) == 1 else f"{abs(c)}*${v}"
        if not text:
            text = term if c > 0 else f"-{term}"
        else:
            text += f" {'+' if c > 0 else '-'} {term}"
    return f"~({text})"


def _line(s: Scheduled, sched: Schedule) -> str:
    op = s.inst
    operands = ", ".join(f"{k}={_operand(v)}" for k, v in op.operands.items())
    attrs = ", ".join(f"{k}={format_literal(v)}" for k, v in op.attrs.items())
    text = f"#{s.id} {op.opcode}({operands})"
    if attrs:
        text += f" {{{attrs}}}"
    if s.queues > 1:
        step = s.stride if s.steps is None else f"({s.steps})"
        text += f" rotate(dma0..dma{s.queues - 1}, stride {step})"
    if s.waits:
        ws = []
        for pid, skip in s.waits:
            p = sched.insts[pid]
            ws.append(f"#{pid}@{p.queue}" + _skip(skip))
        text += " wait " + " ".join(ws)
    loc = op.loc
    text += f"  ; {loc.file}:{loc.line}"
    for frame in reversed(loc.stack):
        text += f" <- {frame.file}:{frame.line}"
    return text


def _has(op: Op, sched: Schedule, queue: str) -> bool:
    if isinstance(op, Loop):
        return any(_has(o, sched, queue) for o in op.body)
    s = sched.by_inst.get(op) if isinstance(op, Inst) else None
    return s is not None and s.queue == queue


def emit_asm(kernel: Kernel) -> str:
    """The per-queue listing of an allocated kernel (`~k` after a wait: skip k instances)."""
    sched = schedule_once(kernel)
    out = [
        f"; kernel @{kernel.name} target={kernel.target}",
        "; `wait #7@dma0~1`: before starting, wait until the instance of instruction 7 one",
        "; older than its latest issued one has completed (no ~: the latest); `~(63 - $k)`:",
        "; a skip that depends on the iteration (affine in the loop variables);",
        "; `rotate(dma0..dma15, stride 2)`: instance n runs on the queue 2n after this one,",
        "; cyclically",
        "; tensors:",
    ]
    for t in kernel.tensors():
        where = ""
        if t.address is not None:
            where = f" at partition {t.address[0]} byte {t.address[1]}"
        if t.rotate is not None:
            var, count, stride, phase = t.rotate
            where += f" rotate(${var}, {count} slots, stride {stride}"
            where += f", from slot {phase})" if phase else ")"
        out.append(
            f";   %{t.name} {t.label!r} {t.buffer} {t.dtype}[{', '.join(map(str, t.shape))}] "
            f"{t.kind}{where}"
        )

    def emit(ops: list[Op], queue: str, depth: int) -> None:
        for op in ops:
            pad = "  " * depth
            if isinstance(op, DynLoop):  # every queue runs the loop and meets the others
                out.append(f"{pad}barrier")
                out.append(f"{pad}{op.header()} {{")
                emit(op.body, queue, depth + 1)
                out.append(f"{pad}  barrier")
                out.append(pad + "}")
                out.append(f"{pad}barrier")
                continue
            if not _has(op, sched, queue):
                continue
            if isinstance(op, Loop):
                out.append(
                    f"{pad}for ${op.var} = {op.start} to {op.stop} step {op.step} {op.mode} {{"
                )
                emit(op.body, queue, depth + 1)
                out.append(pad + "}")
            else:
                out.append(pad + _line(sched.by_inst[op], sched))

    for queue in sorted({s.queue for s in sched.insts}, key=_queue_key):
        out.append("")
        out.append(f"queue {queue}:")
        emit(kernel.body, queue, 1)
    return "\n".join(out) + "\n"
