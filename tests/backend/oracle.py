"""A brute-force oracle for the scheduler: enumerate every instruction instance (small loops
only), find every pair of conflicting accesses on different queues, and check that the waits
order them. Happens-before is tracked with vector clocks over queues: an instance starts after
its queue's previous instance started and after every instance it waits for completed; a
queue completes its instances in order."""

from __future__ import annotations

from nkic.backend.schedule import Schedule, reads_outputs, schedule, written_operands
from nkic.ir.core import Inst, Kernel, Loop


def touched(inst, env, slots) -> tuple[set, set]:
    """(bytes read, bytes written) by one instance of `inst`; an accumulating write reads too."""
    written = written_operands(inst)
    reads, writes = set(), set()
    for name, ap in inst.aps():
        b = _bytes(ap, env, slots)
        if name in written:
            writes |= b
            if reads_outputs(inst):
                reads |= b
        else:
            reads |= b
    return reads, writes


def _bytes(ap, env, slots) -> set:
    t = ap.tensor
    base = ap.offset.evaluate(env)
    idxs = [base]
    for step, num in ap.pattern:
        idxs = [i + k * step for i in idxs for k in range(num)]
    k = ap.itemsize
    out = set()
    if t.on_chip:
        row = t.bytes_per_partition // k
        p0, b0 = t.address
        if t.rotate is not None:
            var, count, stride, phase = t.rotate
            b0 += ((slots.get(var, 0) + phase) % count) * stride
        for i in idxs:
            p, f = divmod(i, row)
            out.update((t.buffer, p0 + p, b0 + f * k + j) for j in range(k))
    else:
        out.update((id(t), i * k + j) for i in idxs for j in range(k))
    return out


def check_waits(kernel: Kernel) -> list[str]:
    """Problems found: conflicting instance pairs that no chain of waits orders."""
    sched: Schedule = schedule(kernel)
    queues = sorted({s.queue_of(n) for s in sched.insts for n in range(s.queues)})
    # inst id -> (queue, index on it) of each instance
    issued: dict[int, list[tuple[str, int]]] = {s.id: [] for s in sched.insts}
    # inst id -> what waiting for each instance teaches: it and every earlier one completed
    prefix: dict[int, list[dict[str, int]]] = {s.id: [] for s in sched.insts}
    queue_count = {q: 0 for q in queues}
    start_vc: dict[str, dict[str, int]] = {q: {} for q in queues}  # last start clock per queue
    done_vc: dict[tuple[str, int], dict[str, int]] = {}
    last_done: dict[str, dict[str, int]] = {q: {} for q in queues}
    writer: dict = {}
    readers: dict = {}
    problems: list[str] = []
    slots: dict[str, int] = {}

    def join(a: dict, b: dict) -> dict:
        out = dict(a)
        for q, v in b.items():
            if v > out.get(q, -1):
                out[q] = v
        return out

    def ordered(x: tuple[str, int], vc: dict) -> bool:
        return vc.get(x[0], -1) >= x[1]

    def run(ops, env):
        for op in ops:
            if isinstance(op, Loop):
                for v in range(op.start, op.stop, op.step):
                    env[op.var] = v
                    run(op.body, env)
                    slots[op.var] = slots.get(op.var, 0) + 1
                del env[op.var]
            elif isinstance(op, Inst):
                issue(sched.by_inst[op], env)

    def issue(s, env):
        queue = s.queue_of(len(issued[s.id]))
        vc = dict(start_vc[queue])
        for pid, skip in s.waits:
            if not isinstance(skip, int):
                skip = skip.evaluate(env)
                if skip < 0:
                    problems.append(f"#{s.id} {s.inst.opcode} {dict(env)}: negative skip {skip}")
                    continue
            hist = prefix[pid]
            if len(hist) > skip:
                vc = join(vc, hist[-1 - skip])
        me = (queue, queue_count[queue])
        queue_count[queue] += 1
        issued[s.id].append(me)
        start_vc[queue] = vc
        done = join(join(vc, last_done[queue]), {queue: me[1]})
        done_vc[me] = done
        last_done[queue] = done
        prefix[s.id].append(join(prefix[s.id][-1], done) if prefix[s.id] else done)
        where = f"#{s.id} {s.inst.opcode} {dict(env)}"
        touched_r, touched_w = touched(s.inst, env, slots)
        for byte in touched_r | touched_w:
            w = writer.get(byte)
            if w is not None and w[0][0] != queue and not ordered(w[0], vc):
                problems.append(f"{where} races with {w[1]} on {byte}")
            if byte in touched_w:
                for r in readers.get(byte, ()):
                    if r[0][0] != queue and not ordered(r[0], vc):
                        problems.append(f"{where} overwrites what {r[1]} reads, {byte}")
        for byte in touched_w:
            writer[byte] = (me, where)
            readers[byte] = []
        for byte in touched_r - touched_w:
            readers.setdefault(byte, []).append((me, where))

    run(kernel.body, {})
    return sorted(set(problems))[:20]
