"""Reading PSUM tiles out early when PSUM is short: an instruction that reads a PSUM tensor's
final value moves up to just after the tensor's last write.

Kernels often compute several matmul results into separate PSUM tiles and copy them all out
afterwards:

    for i in range(n):              # tile i: every matmul into psum[i]
        nc_matmul(psum[i], ...)
    for i in range(n):              # then every copy out
        tensor_copy(sbuf[i], psum[i])

In program order all `n` tiles are live at once; `n` banks may be more than PSUM has. The NKI
compiler schedules instructions by their dependencies, so each copy may run as soon as its
tile is final and the tile's bank is free again. The allocator does the same when the program
order does not fit: it moves each such read up past every instruction it does not depend on,
and allocates again. An instruction moves only past instructions (and loops) that neither
write what it reads nor touch what it writes; it moves at all only when every operand is
on-chip and it neither meets the other core nor uses registers or random numbers. Nothing
moves past a cross-core instruction or a dynamic loop. The allocation of a tensor it uses
moves up with it, within the same loop body.
"""

from __future__ import annotations

from ..ir.core import Alloc, DynLoop, Inst, Kernel, Loop, Op
from ..ir.isa import CROSS_CORE, REGISTER_OPS
from .checks.accesses import is_write

#: Instructions whose result depends on engine state other instructions change.
_STATEFUL = frozenset(
    {"rng", "rand2", "dropout", "rand_get_state", "rand_set_state", "set_rng_seed"}
)
_FRESH_REDUCE = frozenset({"idle", "reset_reduce"})
#: Op list length times PSUM tensors above which a list is left as it is (the search is their
#: product).
_BUDGET = 50_000_000


class _Effects:
    """The tensors (by id) an op reads and writes, and whether nothing may cross it."""

    __slots__ = ("allocs", "barrier", "reads", "writes")

    def __init__(self) -> None:
        self.reads: set[int] = set()
        self.writes: set[int] = set()
        self.allocs: set[int] = set()
        self.barrier = False


def _effects(op: Op) -> _Effects:
    e = _Effects()
    _gather(op, e)
    return e


def _gather(op: Op, e: _Effects) -> None:
    if isinstance(op, Alloc):
        e.allocs.add(id(op.result))
    elif isinstance(op, Inst):
        if op.opcode in CROSS_CORE or op.opcode in REGISTER_OPS or op.opcode in _STATEFUL:
            e.barrier = True
        for name, ap in op.aps():
            (e.writes if is_write(op, name) else e.reads).add(id(ap.tensor))
    elif isinstance(op, Loop):
        if isinstance(op, DynLoop):
            e.barrier = True
        for inner in op.body:
            _gather(inner, e)


def _movable(op: Op) -> bool:
    """An instruction whose meaning does not depend on when it runs, given its operands."""
    if not isinstance(op, Inst):
        return False
    if op.opcode in CROSS_CORE or op.opcode in REGISTER_OPS or op.opcode in _STATEFUL:
        return False
    if op.attrs.get("reduce_cmd", "idle") not in _FRESH_REDUCE:
        return False
    return all(ap.tensor.buffer in ("sbuf", "psum") for _, ap in op.aps())


def hoist_psum_reads(kernel: Kernel) -> int:
    """Move reads of PSUM tensors' final values up (in every op list of the kernel); the
    number of instructions moved."""
    return _hoist_all(kernel.body)


def _hoist_all(ops: list[Op]) -> int:
    moved = 0
    for op in ops:
        if isinstance(op, Loop):
            moved += _hoist_all(op.body)
    return moved + _hoist(ops)


def _hoist(ops: list[Op]) -> int:
    effects = [_effects(op) for op in ops]
    psum = {
        id(ap.tensor): ap.tensor
        for op in ops
        if isinstance(op, Inst)
        for _, ap in op.aps()
        if ap.tensor.buffer == "psum"
    }
    if len(psum) * len(ops) > _BUDGET:
        return 0
    # each tensor's writers and readers, and every op's current position: a tensor's reads
    # are visited in order without scanning the ops between them
    writers: dict[int, list[int]] = {}
    readers: dict[int, list[int]] = {}
    for i, e in enumerate(effects):
        for key in e.writes:
            writers.setdefault(key, []).append(id(ops[i]))
        for key in e.reads:
            readers.setdefault(key, []).append(id(ops[i]))
    at = {id(op): i for i, op in enumerate(ops)}
    moved = 0
    for key in psum:
        if key not in writers:
            continue
        place = max(at[w] for w in writers[key]) + 1  # where the next read out of it goes
        # after the last write, in order (a move only reorders ops up to the read it moves)
        for r in sorted(at[o] for o in readers.get(key, ())):
            if r < place or not _movable(ops[r]):
                continue
            e = effects[r]
            to = _earliest(effects, r, place)
            if to < r:
                # the allocations of what it uses come along (an allocation only names
                # its tensor; it stays in the same loop body)
                uses = e.reads | e.writes
                span = range(to, r)
                first = [k for k in span if effects[k].allocs & uses] + [r]
                rest = [k for k in span if not effects[k].allocs & uses]
                order = first + rest
                ops[to : r + 1] = [ops[k] for k in order]
                effects[to : r + 1] = [effects[k] for k in order]
                for k in range(to, r + 1):
                    at[id(ops[k])] = k
                moved += 1
                to += len(first) - 1
            place = to + 1
    return moved


def _earliest(effects: list[_Effects], r: int, floor: int) -> int:
    """The lowest position >= `floor` that op `r` can move up to without passing an op it
    depends on (or that depends on it); allocations of its tensors move with it."""
    me = effects[r]
    uses = me.reads | me.writes
    k = r
    while k > floor:
        x = effects[k - 1]
        if x.barrier or x.writes & uses or x.reads & me.writes:
            break
        k -= 1
    return k
