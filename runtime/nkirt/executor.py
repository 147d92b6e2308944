"""Runs a program on the simulated NeuronCore: numerics in program order, timing per queue.

Program order is a valid sequential semantics of the instruction streams, so every instance is
computed as it is issued; alongside, its start and completion times are derived from its queue
(in order), its semaphore waits and the cost model, and the semaphore checker verifies that the
waits really order every conflicting access: by happens-before over the waits and queue order
(vector clocks, nkirt.hazards), not by the simulated times.
"""

from __future__ import annotations

import copy
import dataclasses
import importlib
import math
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from nkirt import dtypes, indirect
from nkirt.access import AccessPattern, BoundsError
from nkirt.cost import ComputeCost, DmaPlan, InstructionShape, compute_cost, dma_plan
from nkirt.cost.tables import (
    DMA_FIXED_NS,
    PSUM_BANK_BYTES,
    PSUM_PARTITION_BYTES,
    TARGETS,
    TargetTable,
)
from nkirt.cost.throttle import TensorThrottle
from nkirt.dma_engines import DmaEngines, Transfer
from nkirt.errors import NeffError, RunError, RuntimeFault
from nkirt.hazards import (
    ALL_ORDERED,
    FIELD,
    FIELD_BITS,
    Access,
    Hazard,
    SemaphoreChecker,
    clock_entry,
    guard_bits,
    lane_field,
    make_clock,
)
from nkirt.memory import Memory
from nkirt.ports import PortArbiter, bank_claims, per_bank, port_claims
from nkirt.program import QUEUES, Program, TensorInfo
from nkirt.roles import CROSS_CORE, PREPARES, operand_roles
from nkirt.scratch import Scratch

QUEUE_INDEX = {name: i for i, name in enumerate(QUEUES)}
DMA0 = QUEUE_INDEX["dma0"]

TENSOR_QUEUE = QUEUE_INDEX["tensor"]

#: Instances between two sweeps of the semaphore checker's memory.
SWEEP_EVERY = 4096
#: every bit of one lane in a vector clock (its count and guard bit)
FIELD_ONES = (1 << FIELD_BITS) - 1

#: Why an instance started later than its queue allowed (kept per trace record).
STALL_NONE, STALL_SEMAPHORE, STALL_INTERLOCK, STALL_PORT = 0, 1, 2, 3
#: the numbers in an instance's record (`Executor.records`)
RECORD_FIELDS = 8

#: Instructions that accumulate into PSUM (Hardware §4): only onto values TensorE wrote.
MATMULS = frozenset({"nc_matmul", "nc_matmul_mx"})
#: instructions that only move elements: with one dtype throughout they cannot create Inf/NaN
SAME_DTYPE_COPIES = frozenset({"dma_copy", "tensor_copy"})


@dataclass
class ExecContext:
    """What instruction semantics may use: the target, a seeded Generator, persistent state."""

    target: str
    rng: np.random.Generator
    state: dict[str, Any] = field(default_factory=dict)
    #: what the instruction being executed reported through `warn` (collected by the executor)
    pending: list[str] = field(default_factory=list)
    #: sum matmul products in contraction order, one fp32 rounding per step, as the PE array
    #: does (slow); otherwise one BLAS product per matmul (docs/numerics.md bounds the difference)
    exact_accumulation: bool = False
    #: the temporaries of the instruction being executed (active only in `Executor._compute`)
    scratch: Scratch = field(default_factory=Scratch)

    def warn(self, message: str) -> None:
        """Report something the hardware would do differently from the values computed."""
        self.pending.append(message)


class StaticInstruction:
    """One instruction of the program, with everything that does not depend on the iteration."""

    __slots__ = (
        "index",
        "id",
        "op",
        "engine",
        "queue",
        "queues",
        "stride",
        "where",
        "short_where",
        "stack",
        "inputs",
        "outputs",
        "reads_outputs",
        "immediates",
        "attrs",
        "semantics",
        "waits",
        "cost",
        "dma_side",
        "history",
        "unless_first",
        "dynamic",
        "count",
        "busy_ns",
        "ports",
        "bank_ports",
        "loop_names",
        "cross_core",
        "unrolled_env",
        "site",
    )

    def describe(self, env: dict[str, int]) -> str:
        """`op at file:line`, plus the loop iteration (`name=value`, source names) when inside
        loops."""
        names = self.loop_names
        iteration = ", ".join(
            [f"{name}={value}" for name, value in self.unrolled_env.items()]
            + [f"{names.get(var, var)}={value}" for var, value in env.items()]
        )
        return f"{self.op} at {self.where}" + (f" [{iteration}]" if iteration else "")


def _placed(inst: StaticInstruction, aps, env: dict[str, int], executions) -> list[tuple]:
    """Each AP with its location in this iteration; leaving its tensor is a fault that names
    the instruction, the operand, the tensor and the elements and bytes reached."""
    out = []
    for ap in aps:
        try:
            out.append((ap, ap.locate(env, executions)))
        except BoundsError as e:
            raise RuntimeFault(
                f"out-of-bounds access: {inst.describe(env)}: operand {ap.name!r} reaches "
                f"{e} of {ap.tensor.name} in {ap.tensor.buffer}"
            ) from None
    return out


@dataclass
class Loop:
    var: str
    values: range
    body: list
    #: the loop variable as the kernel source spells it (neff `name`, else `var`)
    name: str = ""
    #: Executions of the body so far in this run (selects slots of rotating tensors).
    executions: int = 0


@dataclass
class DynLoop:
    """A loop whose trip count is read from registers at run time (neff `dynloop`): a counted
    `for` (`start`/`stop` an int or a register tensor, read once on entry) or a `while` on the
    register `cond`. Every queue joins the others on entry, after each iteration and on exit."""

    var: str
    kind: str
    body: list
    name: str
    start: object = 0
    stop: object = 0
    step: int = 1
    counter: object = None
    cond: object = None
    where: str = ""
    #: instances one iteration of the body issues on each queue
    per_iteration: list = field(default_factory=list)
    executions: int = 0
    #: (first value, step, trip count) of each execution so far (to replay iterations)
    runs: list = field(default_factory=list)


#: Iterations a dynamic loop may run before the run stops with a fault (a runaway `while`).
MAX_DYNAMIC_ITERATIONS = 1 << 20


def semantics_table() -> tuple[dict | None, str]:
    """The instruction semantics of nkirt.isa, or None and why they cannot be loaded."""
    try:
        return importlib.import_module("nkirt.isa").SEMANTICS, ""
    except (ImportError, AttributeError) as e:
        return None, str(e)


def _skip(raw, ranges: dict[str, range]):
    """A wait's skip as an int, or (constant, ((var, coeff), ...), clamp) when it depends on
    the iteration (an affine `{"c", "t"}` as AP offsets use; `clamp`: negative values mean
    0), with the largest value it takes."""
    if isinstance(raw, int):
        return raw, raw
    const = raw.get("c", 0)
    terms = tuple((var, coeff) for var, coeff in raw.get("t", {}).items() if coeff)
    clamp = raw.get("clamp", False)
    deepest = const
    for var, coeff in terms:
        values = ranges[var]
        if len(values):
            deepest += max(coeff * values[0], coeff * values[-1])
    if not terms:
        return (max(0, const) if clamp else const), max(0, deepest)
    return (const, terms, clamp), max(0, deepest)


def compile_program(program: Program, table: TargetTable, semantics: dict | None, body=None):
    """The body (`body`, else the program's) as Loop/StaticInstruction trees, the flat
    instruction list, and instance counts per queue."""
    instructions: list[StaticInstruction] = []
    by_id: dict[int, int] = {}
    waits_raw: list[list] = []
    per_queue = [0] * len(QUEUES)

    ranges: dict[str, range] = {}
    #: IR loop variable -> source name, shared by every instruction (for `describe`)
    loop_names: dict[str, str] = {}
    #: the access patterns met so far (`_access_pattern`)
    patterns: dict[tuple, AccessPattern] = {}

    def build(nodes: list[dict], trips: int, starts: dict[str, int]) -> list:
        out = []
        for node in nodes:
            if node["kind"] == "dynloop":
                out.append(_dynamic_loop(program, node, build, trips, starts, per_queue))
                ranges[node["var"]] = range(0, 1)
                loop_names[node["var"]] = out[-1].name
            elif node["kind"] == "loop":
                values = range(node["start"], node["stop"], node["step"])
                inner = {**starts, node["var"]: node["start"]}
                ranges[node["var"]] = values
                name = loop_names[node["var"]] = node.get("name", node["var"])
                body = build(node["body"], trips * len(values), inner)
                out.append(Loop(node["var"], values, body, name))
            else:
                inst = _instruction(
                    program, table, semantics, node, len(instructions), starts, patterns
                )
                inst.loop_names = loop_names
                by_id[inst.id] = inst.index
                instructions.append(inst)
                waits_raw.append([(p, _skip(s, ranges)) for p, s in node.get("waits", [])])
                for queue, count in _instances_per_queue(inst, trips, ranges):
                    per_queue[queue] += count
                out.append(inst)
        return out

    tree = build(program.body if body is None else body, 1, {})
    # one site per source instruction: the copies of an unrolled loop's instruction share it,
    # so summaries count them together, as they count a kept loop's instances
    sites: dict[tuple, int] = {}
    for inst in instructions:
        inst.site = sites.setdefault((inst.op, inst.where, inst.stack), inst.index)
    depth = [0] * len(instructions)
    for inst, waits in zip(instructions, waits_raw):
        # (the instruction waited for, its skip)
        inst.waits = tuple((instructions[by_id[producer]], skip) for producer, (skip, _) in waits)
        for producer, (_, deepest) in waits:
            depth[by_id[producer]] = max(depth[by_id[producer]], deepest)
    for inst in instructions:
        inst.history = deque(maxlen=depth[inst.index] + 1)
    return tree, instructions, per_queue


#: What a run changes on the compiled instructions (everything else is fixed at load).
RUN_STATE = ("history", "count", "busy_ns")
_FIXED = tuple(name for name in StaticInstruction.__slots__ if name not in RUN_STATE)


def fresh_copy(compiled: tuple) -> tuple:
    """A copy of `compile_program`'s result for one run: new instructions and loops with
    fresh run state (`RUN_STATE`, loop executions), sharing what a run only reads (access
    patterns, costs, attributes). The program compiled at load is never run itself, so runs
    of one program are independent, and a run's result keeps its own instructions."""
    tree, instructions, per_queue = compiled
    copies = []
    for inst in instructions:
        twin = StaticInstruction()
        for name in _FIXED:
            setattr(twin, name, getattr(inst, name))
        twin.history = deque(maxlen=inst.history.maxlen)
        twin.count, twin.busy_ns = 0, 0.0
        copies.append(twin)
    for twin in copies:
        twin.waits = tuple((copies[producer.index], skip) for producer, skip in twin.waits)

    def copy_nodes(nodes: list) -> list:
        out = []
        for node in nodes:
            if type(node) is Loop:
                out.append(Loop(node.var, node.values, copy_nodes(node.body), node.name))
            elif type(node) is DynLoop:
                body = copy_nodes(node.body)
                out.append(dataclasses.replace(node, body=body, executions=0, runs=[]))
            else:
                out.append(copies[node.index])
        return out

    return copy_nodes(tree), copies, list(per_queue)


def _instances_per_queue(inst: StaticInstruction, trips: int, ranges: dict[str, range]):
    """(queue, instances) of an instruction's `trips` instances: all on its queue, or
    instance n on `dma((first + n * stride) mod queues)` for a rotating DMA (with an affine
    stride, the instance at loop values v on `dma((first + stride(v)) mod queues)`)."""
    if inst.queues == 1:
        return [(inst.queue, trips)]
    first = inst.queue - DMA0
    if type(inst.stride) is not int:
        const, terms = inst.stride
        queues = inst.queues
        for var, _ in terms:
            trips //= max(len(ranges[var]), 1)
        counts = [0] * queues
        counts[(first + const) % queues] = trips
        for var, coeff in terms:
            values = ranges[var]
            residues = [0] * queues  # how many values move the queue on by r (period: queues)
            for i in range(min(queues, len(values))):
                residues[coeff * values[i] % queues] += len(range(i, len(values), queues))
            counts = [
                sum(counts[(q - r) % queues] * residues[r] for r in range(queues))
                for q in range(queues)
            ]
        return [(DMA0 + q, n) for q, n in enumerate(counts) if n]
    period = inst.queues // math.gcd(inst.stride, inst.queues)
    rounds, rest = divmod(trips, period)
    return [
        (DMA0 + (first + m * inst.stride) % inst.queues, rounds + (m < rest)) for m in range(period)
    ]


def _dynamic_loop(program: Program, node: dict, build, trips: int, starts: dict, per_queue):
    """The DynLoop of a neff `dynloop` node, its body built by `build`."""
    before = list(per_queue)
    body = build(node["body"], trips, {**starts, node["var"]: 0})
    name = node.get("name", node["var"])
    loop = DynLoop(node["var"], node["loop"], body, name, where=program.where(node["loc"]))
    loop.per_iteration = [(a - b) // max(trips, 1) for a, b in zip(per_queue, before)]
    if node["loop"] == "for":
        loop.start, loop.stop = _bound(program, node["start"]), _bound(program, node["stop"])
        loop.step = node["step"]
        if "counter" in node:
            loop.counter = program.tensors[node["counter"]]
    else:
        loop.cond = program.tensors[node["cond"]]
    return loop


def _bound(program: Program, raw: dict):
    """A dynamic loop bound: an int, or the register tensor holding it."""
    return program.tensors[raw["reg"]] if "reg" in raw else raw["imm"]


def _access_pattern(
    patterns: dict, name: str, raw: dict, tensor: TensorInfo, row: int
) -> AccessPattern:
    """The access pattern of an operand. Equal operands share one (an unrolled loop body
    names the same tiles in every copy): an AccessPattern is read-only but for the placements
    it remembers, which depend only on the pattern. Equal but for the offset, they share
    every static field (`AccessPattern.moved`)."""
    if "dynamic" in raw:
        return AccessPattern(name, raw, tensor, row)
    raw_offset = raw.get("offset", 0)
    offset = raw_offset
    if isinstance(offset, dict):
        offset = (offset["c"], tuple(offset["t"].items()))
    shape = (name, tensor.id, raw.get("dtype"), tuple(map(tuple, raw["pattern"])))
    key = (shape, offset)
    ap = patterns.get(key)
    if ap is None:
        # the same pattern at another offset (a tile of an unrolled loop): its static part
        template = patterns.get(shape)
        if template is None:
            ap = patterns[shape] = AccessPattern(name, raw, tensor, row)
        else:
            ap = template.moved(raw_offset)
        patterns[key] = ap
    return ap


_NO_ITERATION: dict[str, int] = {}


def _instruction(
    program: Program,
    table: TargetTable,
    semantics: dict | None,
    node: dict,
    index: int,
    loop_starts: dict[str, int],
    patterns: dict,
) -> StaticInstruction:
    inst = StaticInstruction()
    inst.index, inst.id, inst.op, inst.engine = index, node["id"], node["op"], node["engine"]
    inst.queue = QUEUE_INDEX[node["queue"]]
    inst.queues, inst.stride = node.get("queues", 1), node.get("stride", 1)
    if isinstance(inst.stride, dict):  # per loop variable: (constant, ((var, coeff), ...))
        inst.stride = (inst.stride.get("c", 0), tuple(inst.stride.get("t", {}).items()))
    inst.where = program.where(node["loc"])
    inst.short_where = program.short_where(node["loc"])
    # call sites of the helpers the instruction was inlined from, innermost first
    inst.stack = tuple(program.where(frame) for frame in reversed(node.get("stack", [])))
    # the iteration of the loops the compiler unrolled around it (source names)
    unrolled = node.get("unrolled")
    inst.unrolled_env = (
        dict(zip(program.unrolled_names[unrolled[0]], unrolled[1:]))
        if unrolled is not None
        else _NO_ITERATION
    )
    attrs = node.get("attrs", {})
    raw = node["operands"]
    aps = {}
    for name, operand in raw.items():
        if "imm" not in operand:
            tensor = program.tensors[operand["tensor"]]
            row = PSUM_PARTITION_BYTES if tensor.buffer == "psum" else table.sbuf_partition_bytes
            aps[name] = _access_pattern(patterns, name, operand, tensor, row)
    inst.immediates = {name: op["imm"] for name, op in raw.items() if "imm" in op}
    inst.semantics = semantics.get(inst.op) if semantics is not None else None
    read, written, inst.reads_outputs = operand_roles(inst.op, list(raw), attrs, inst.semantics)
    inst.inputs = [aps[n] for n in read if n in aps]
    inst.outputs = [aps[n] for n in written if n in aps]
    inst.attrs = {
        **attrs,
        "_dtypes": {name: ap.dtype for name, ap in aps.items()},
        "_shapes": {name: ap.nums for name, ap in aps.items()},  # outputs sized by their operand
    }
    # nc_matmul accumulate {"unless_first": [vars]}: overwrite on the first iteration of all
    inst.unless_first = None
    accumulate = attrs.get("accumulate")
    if isinstance(accumulate, dict):
        inst.unless_first = tuple((v, loop_starts[v]) for v in accumulate["unless_first"])
    # a dynamic operand's index tile is read by the DMA's descriptor generation, not moved
    indices = {ap.dynamic["index"] for ap in aps.values() if ap.dynamic is not None}
    inst.dynamic = bool(indices)
    shape = InstructionShape(
        inst.op,
        inst.engine,
        attrs,
        {name: ap.shape for name, ap in aps.items() if name not in indices},
        tuple(n for n in read if n not in indices),
        tuple(written),
        inst.immediates,
    )
    try:
        inst.cost = dma_plan(shape, table) if inst.engine == "dma" else compute_cost(shape, table)
    except KeyError as e:
        raise NeffError(
            f"instruction {inst.id} ({inst.op}) at {inst.where} lacks operand {e}"
        ) from None
    # the DMA engines of a transfer are those of its SBUF side's partitions (cost/dma.py)
    sbuf = [ap for ap in (*inst.outputs, *inst.inputs) if ap.buffer != "hbm"]
    inst.dma_side = sbuf[0] if inst.engine == "dma" and sbuf else None
    # shared SBUF/PSUM ports (Hardware §8): v2 whole ports; v3+ VectorE/ScalarE per PSUM bank
    buffers = {ap.buffer for ap in aps.values()}
    inst.ports = port_claims(inst.engine, buffers, table)
    inst.bank_ports = per_bank(inst.engine, buffers, table)
    inst.count = 0
    inst.cross_core = inst.op in CROSS_CORE or inst.op in PREPARES
    inst.busy_ns = 0.0
    return inst


def _written_tensors(instructions: list[StaticInstruction]) -> frozenset[int]:
    """The ids of the tensors some instruction writes."""
    return frozenset(ap.tensor.id for inst in instructions for ap in inst.outputs)


def _unfixed(transfer: Transfer | float) -> tuple[tuple | list, float]:
    """The transfers of one queue up to `transfer` whose completions are not fixed yet, oldest
    first, and the fixed completion below them (each transfer follows the one before it)."""
    if type(transfer) is float:
        return (), transfer
    if transfer.value is not None:
        return (), transfer.value
    after = transfer.after
    if type(after) is float:  # the usual case: the queue's previous transfer is fixed
        return (transfer,), after
    if after.value is not None:
        return (transfer,), after.value
    chain = []
    while type(transfer) is not float and transfer.value is None:
        chain.append(transfer)
        transfer = transfer.after
    chain.reverse()
    return chain, transfer if type(transfer) is float else transfer.value


class Executor:
    """One run of a program: device memory, queue clocks, DMA engines, semaphore checker."""

    def __init__(
        self,
        program: Program,
        *,
        seed: int,
        timing_only: bool,
        ideal_waits: bool = False,
        exact_accumulation: bool = False,
    ):
        self.program = program
        #: The launch this core belongs to and its physical core (set by nkirt.launch).
        self.launch = None
        self.core = 0
        #: The prepare slot: (collective, metadata values or None, setup done ns) or None.
        self.prepared: tuple | None = None
        #: (the busy intervals of the core's HBM stack, its GB/s): every byte the core's DMAs
        #: read from or write to HBM passes it; the two cores of an LNC launch share one
        #: (launch.py). Not where a measured sustained rate already bounds the core (trn1).
        self.shared_hbm: tuple[DmaEngines, float] | None = None
        self.table = TARGETS[program.target]
        #: a dynamic loop's trip count is data: such a program always computes its values
        self.functional = not timing_only or program.has_dynamic_loops
        #: What-if analysis: ignore the program's semaphore waits and wait instead for exactly
        #: the earlier accesses (any other queue) whose footprints conflict with this one's.
        self.ideal_waits = ideal_waits
        semantics, why = semantics_table()
        if self.functional and semantics is None:
            raise RunError(f"instruction semantics (package nkirt.isa) are not available: {why}")
        # compiled when the program was loaded (nkirt.neff), else now
        compiled = program.compiled or compile_program(program, self.table, semantics)
        self.tree, self.instructions, self.remaining = fresh_copy(compiled)
        #: the latest completion of any instance issued so far (what a barrier waits for)
        self.latest = 0.0
        if self.functional:
            for inst in self.instructions:
                if inst.semantics is None and not inst.cross_core:
                    raise RunError(f"the simulator has no semantics for {inst.op} at {inst.where}")
        device_seed = np.random.SeedSequence(seed).spawn(2)[1]
        self.ctx = ExecContext(
            program.target,
            np.random.default_rng(device_seed),
            exact_accumulation=exact_accumulation,
        )
        #: the first instruction instance whose output held Inf/NaN computed from finite inputs
        self.non_finite: dict | None = None
        #: per tensor id, the instruction instance that first read unwritten memory to compute
        #: the latest of its elements left unwritten (a later read of them names it)
        self.garbage: dict[int, str] = {}
        self.memory = (
            Memory(program, self.table, _written_tensors(self.instructions))
            if self.functional
            else None
        )
        self.queue_free = [0.0] * len(QUEUES)
        #: per queue, its latest transfer (a `Transfer` until its completion is fixed)
        self.dma_done: list[Transfer | float] = [0.0] * len(QUEUES)
        #: record number -> the transfer whose completion is not fixed yet
        self.transfers: dict[int, Transfer] = {}
        #: with ideal waits, id of a memory access -> its transfer while not fixed
        self.unfixed_accesses: dict[int, Transfer] = {}
        self.mm_start = self.mm_end = self.ls_end = 0.0
        #: TensorE dI/dt throttling (trn2/trn3; cost/throttle.py), None where not modelled
        self.throttle = TensorThrottle() if self.table.tensor_throttle else None
        self.rings = DmaEngines(self.horizon)
        #: the core's sustained HBM-side DMA rate as one shared resource (trn1; cost/tables.py)
        self.hbm_rate = self.table.dma_sustained_gbps
        self.hbm = DmaEngines(self.horizon, count=1) if self.hbm_rate else None
        if self.table.hbm_stack_gbps and not self.hbm_rate:
            self.shared_hbm = (DmaEngines(self.horizon, count=1), self.table.hbm_stack_gbps)
        self.ports = PortArbiter(self.horizon)
        self.checker = SemaphoreChecker(self.horizon, None if ideal_waits else self.settled)
        #: the memories (`AccessPattern.key`) no instruction writes (input tensors only read):
        #: a read of one can neither race nor wait for a write, so the checker never sees it
        self.unwritten = frozenset(ap.key for i in self.instructions for ap in i.inputs) - {
            ap.key for i in self.instructions for ap in i.outputs
        }
        #: vector clocks have one entry per queue the program uses: that queue's lane
        used = [q for q, left in enumerate(self.remaining) if left > 0]
        self.lane_of = [used.index(q) if q in used else -1 for q in range(len(QUEUES))]
        #: per lane, the vector clock its next instance starts with at least (program order);
        #: a vector clock is one int (nkirt.hazards): each lane's bits and their guard bits
        self.clocks: list[int] = [0] * len(used)
        self.fields = [lane_field(r) for r in range(len(used))]
        self.guards = guard_bits(len(used))
        #: instances issued so far per lane (the next instance's number on its queue)
        self.issued = [0] * len(used)
        #: (instruction index, start, busy end, completion, stall from, producer record, stall,
        #: queue)
        self.records: list[tuple] = []
        #: (data start, data end) of every DMA transfer: when its packets move
        self.dma_data: list[tuple[float, float]] = []
        #: instruction index -> its first warning (`ExecContext.warn`) and how many instances warned
        self.warnings: dict[int, dict] = {}

    def horizon(self) -> float:
        """No instance still to be issued can start before this time."""
        pending = [t for t, left in zip(self.queue_free, self.remaining) if left > 0]
        return min(pending) if pending else float("inf")

    def settled(self) -> int:
        """Per queue r, as a vector clock: how many of r's instances are ordered before every
        instance still to be issued on another queue (their accesses can no longer race)."""
        live = [self.lane_of[q] for q, left in enumerate(self.remaining) if left > 0]
        return make_clock(
            min((clock_entry(self.clocks[q], r) for q in live if q != r), default=FIELD)
            for r in range(len(self.clocks))
        )

    def run(self) -> None:
        self._nodes(self.tree, {}, {})
        self._fix_transfers()

    def _fix_transfers(self) -> None:
        """Fix every transfer's completion (nothing issued later can share the engines with
        them before the next instance is issued: a barrier, a meeting of cores, the end)."""
        for transfer in list(self.transfers.values()):
            self._fix(transfer)

    def _fix(self, transfer: Transfer | float) -> float:
        """A transfer's completion, fixed: the end of its data on the engines, no earlier than
        its floor and the completion of the previous transfer of its queue. What was recorded
        of it at issue (its record, data interval, busy time, memory accesses, the latest
        completion) takes the fixed value."""
        chain, below = _unfixed(transfer)
        if not chain:
            return below
        records, dma_data = self.records, self.dma_data
        fix = self.rings.fix
        for t in chain:
            moved = fix(t)
            if t.hbm is not None:
                hbm = self._hbm_resource().fix(t.hbm)
                if hbm > moved:
                    moved = hbm
            if t.floor > moved:
                moved = t.floor
            done = moved if moved > below else below
            t.value, t.after, below = done, 0.0, done
            del self.transfers[t.record]
            dma_data[t.data] = (dma_data[t.data][0], moved)
            if self.unfixed_accesses:
                for accesses in t.accesses:
                    for access, _, _ in accesses:
                        self.unfixed_accesses.pop(id(access), None)
            if done != t.provisional:
                record = records[t.record]
                records[t.record] = (*record[:2], done, done, *record[4:])
                self.instructions[record[0]].busy_ns += done - t.provisional
                for accesses in t.accesses:
                    for access, _, _ in accesses:
                        access.end = done
                if done > self.latest:
                    self.latest = done
            t.accesses = ()
        return below

    def _provisional(self, transfer: Transfer | float) -> float:
        """A transfer's completion as the transfers submitted so far leave it (it may still
        move later when it is not fixed)."""
        chain, below = _unfixed(transfer)
        for t in chain:
            below = max(self.rings.completion(t), t.floor, below)
            if t.hbm is not None:
                below = max(self._hbm_resource().completion(t.hbm), below)
        return below

    def _stack(self, transfer: Transfer) -> float:
        return self.shared_hbm[0].completion(transfer.hbm)

    def _hbm_resource(self) -> DmaEngines:
        return self.hbm if self.hbm is not None else self.shared_hbm[0]

    def _waited(self, transfer: Transfer | float) -> float:
        """What a wait for a transfer waits for: its fixed completion, and for a rotating
        DMA that of every earlier instance too."""
        if type(transfer) is not float:
            if transfer.waited is not None:
                return transfer.waited
            rotated = transfer.rotated
            if type(rotated) is not float and rotated.waited is not None:
                rotated = rotated.waited  # a rotating DMA's previous instance, waited for
            if type(rotated) is float:  # the usual case (a chain of one)
                below = self._fix(transfer)
                if rotated > below:
                    below = rotated
                transfer.waited, transfer.rotated = below, 0.0
                return below
        chain = []
        while type(transfer) is not float and transfer.waited is None:
            chain.append(transfer)
            transfer = transfer.rotated
        below = transfer if type(transfer) is float else transfer.waited
        for t in reversed(chain):
            below = max(self._fix(t), below)
            t.waited, t.rotated = below, 0.0
        return below

    def _nodes(self, nodes: list, env: dict[str, int], executions: dict[str, int]) -> None:
        for node in nodes:
            if type(node) is StaticInstruction:
                if not node.cross_core:  # (the usual case first)
                    self._issue(node, env, executions)
                elif node.op in PREPARES:
                    self._prepare(node, env, executions)
                else:
                    self._meet(node, env, executions)
            elif type(node) is Loop:
                var = node.var
                for value in node.values:
                    env[var] = value
                    executions[var] = node.executions
                    node.executions += 1
                    self._nodes(node.body, env, executions)
                del env[var], executions[var]
            else:
                self._dynamic_loop(node, env, executions)

    def _dynamic_loop(self, node: DynLoop, env: dict[str, int], executions) -> None:
        """Run a dynamic loop with the values its registers hold now; every queue joins the
        others before each compare-and-branch, so each iteration starts with all earlier work
        complete (the schedule relies on it, whatever the trip count)."""
        self._barrier()
        values = range(0)
        if node.kind == "for":
            start, stop = self._register(node, node.start), self._register(node, node.stop)
            values = range(start, stop, node.step)
        count = 0
        while True:
            self._branch()
            if node.kind == "for":
                if count >= len(values):
                    break
                value = values[count]
                if node.counter is not None:
                    self._set_register(node.counter, value)
            else:
                if self._register(node, node.cond) == 0:
                    break
                value = count
            if count >= MAX_DYNAMIC_ITERATIONS:
                raise RuntimeFault(
                    f"dynamic loop at {node.where} ran more than {MAX_DYNAMIC_ITERATIONS} "
                    "iterations (does its condition register ever become 0?)"
                )
            if count:  # the body's instances of this iteration are still to be issued
                self._add_remaining(node, 1)
            env[node.var] = value
            executions[node.var] = node.executions
            node.executions += 1
            self._nodes(node.body, env, executions)
            self._barrier()
            count += 1
        if not count:
            self._add_remaining(node, -1)
        first = values[0] if len(values) else 0
        node.runs.append((first, node.step if node.kind == "for" else 1, count))
        if self.launch is not None:
            self.launch.trips(self.core, node, count)
        env.pop(node.var, None)
        executions.pop(node.var, None)

    def _add_remaining(self, node: DynLoop, sign: int) -> None:
        for q, n in enumerate(node.per_iteration):
            self.remaining[q] += sign * n

    def _register(self, node: DynLoop, bound) -> int:
        """A loop bound: an int, or the signed 32-bit value a register holds now."""
        if not isinstance(bound, TensorInfo):
            return bound
        written = self.memory.written[bound.id]
        if written is not None and not written.all():
            raise RuntimeFault(
                f"uninitialised read: dynamic loop at {node.where} reads register "
                f"{bound.name} before anything wrote it"
            )
        return int(self.memory.buffers[bound.id].view(np.int32)[0])

    def _set_register(self, reg: TensorInfo, value: int) -> None:
        self.memory.buffers[reg.id].view(np.int32)[0] = np.int32(value)
        written = self.memory.written[reg.id]
        if written is not None:
            written[:] = 0xFF

    def _barrier(self) -> None:
        """Every queue waits until every instance issued so far has completed (a semaphore
        join of the engine sequencers)."""
        self._fix_transfers()
        t = max(self.latest, *self.queue_free)
        for q in range(len(self.queue_free)):
            self.queue_free[q] = t
        self.ls_end = max(self.ls_end, t)
        self.mm_start = max(self.mm_start, t)
        self.clocks = [make_clock(self.issued)] * len(self.clocks)

    def _branch(self) -> None:
        """Each engine sequencer's compare-and-branch of a dynamic loop (cost/tables.py)."""
        for q in range(len(self.queue_free)):
            self.queue_free[q] += self.table.branch_ns

    def _meet(self, inst, env: dict[str, int], executions) -> None:
        """Issue an instruction that meets the other cores of the launch (nkirt/launch.py)."""
        inputs = _placed(inst, inst.inputs, env, executions)
        outputs = _placed(inst, inst.outputs, env, executions)
        if self.memory is not None and inst.op != "core_barrier":
            for ap, where in inputs:
                if not self.memory.is_written(ap, where):
                    raise RuntimeFault(
                        f"uninitialised read: {inst.describe(env)} sends operand {ap.name!r} "
                        f"({ap.tensor.name}) before anything wrote it"
                    )
        self._time(inst, env, False, inputs, outputs)
        self._fix_transfers()
        if self.launch is None:
            raise RuntimeFault(
                f"{inst.describe(env)} meets the other core of an LNC=2 launch, but the kernel "
                "runs on one core"
            )
        self.launch.meet(self.core, inst, env, inputs, outputs)

    def _prepare(self, inst, env: dict[str, int], executions) -> None:
        """The metadata setup of a split `_v` collective: it reads the counts now (the
        trigger uses these) and completes one DMA round trip after its issue; the core's one
        prepare slot holds it until the trigger."""
        inputs = _placed(inst, inst.inputs, env, executions)
        if self.prepared is not None:
            raise RuntimeFault(
                f"{inst.describe(env)}: a prepare while another waits for its trigger (prepares "
                "share one slot)"
            )
        self._time(inst, env, False, inputs, [])
        values = None
        if self.memory is not None:
            ap, where = inputs[0]
            if not self.memory.is_written(ap, where):
                raise RuntimeFault(
                    f"uninitialised read: {inst.describe(env)} reads the metadata "
                    f"({ap.tensor.name}) before anything wrote it"
                )
            values = np.array(self.memory.view(ap, where, writable=False))
        self.prepared = (
            inst.op.removesuffix("_prepare"),
            values,
            self.records[-1][1] + DMA_FIXED_NS,
        )

    def settle(self, inst, done: float) -> None:
        """The cross-core instruction just issued completes at `done` (its engine waits)."""
        self._fix_transfers()
        record = list(self.records[-1])
        record[3] = done
        self.records[-1] = tuple(record)
        inst.history[-1] = (done, *inst.history[-1][1:])
        self.queue_free[inst.queue] = max(self.queue_free[inst.queue], done)

    def iterations(self, wanted: set[int]) -> dict[int, dict[str, int]]:
        """The loop variables (source names) of the instances whose record numbers are
        `wanted` (records are in issue order, so a second walk of the loop tree finds them)."""
        found: dict[int, dict[str, int]] = {}
        if not wanted:
            return found
        last = max(wanted)
        counter = 0
        env: dict[str, int] = {}
        replayed: dict[int, int] = {}  # executions of each dynamic loop walked so far

        def walk(nodes: list) -> bool:
            nonlocal counter
            for node in nodes:
                if type(node) is Loop or type(node) is DynLoop:
                    if type(node) is Loop:
                        values = node.values
                    else:  # the iterations of its next execution
                        n = replayed[id(node)] = replayed.get(id(node), -1) + 1
                        first, step, count = node.runs[n]
                        values = range(first, first + step * count, step)
                    for value in values:
                        env[node.name] = value
                        if walk(node.body):
                            return True
                    env.pop(node.name, None)
                else:
                    if counter in wanted:
                        found[counter] = {**node.unrolled_env, **env}
                    counter += 1
                    if counter > last:
                        return True
            return False

        walk(self.tree)
        return found

    def _issue(self, inst: StaticInstruction, env: dict[str, int], executions) -> None:
        try:
            inputs = [(ap, ap.locate(env, executions)) for ap in inst.inputs]
            outputs = [(ap, ap.locate(env, executions)) for ap in inst.outputs]
        except BoundsError:  # again, operand by operand, for the fault that names it
            inputs = _placed(inst, inst.inputs, env, executions)
            outputs = _placed(inst, inst.outputs, env, executions)
        reads_outputs = inst.reads_outputs
        if inst.unless_first is not None:
            reads_outputs = False  # (accumulates unless on the first iteration of them all)
            for var, start in inst.unless_first:
                if env[var] != start:
                    reads_outputs = True
                    break
            if self.functional:
                self._compute(
                    inst, env, {**inst.attrs, "accumulate": reads_outputs}, inputs, outputs
                )
        elif self.functional:
            self._compute(inst, env, inst.attrs, inputs, outputs)
        self._time(inst, env, reads_outputs, inputs, outputs)

    def _compute(self, inst, env, attrs, inputs, outputs) -> None:
        memory = self.memory
        ops: dict[str, Any] = dict(inst.immediates)
        partly: list[tuple] = []  # input operands of which only some elements were written
        dynamic = self._dynamic(inst, env, attrs, inputs, outputs) if inst.dynamic else {}
        if dynamic is None:  # oob_mode skip of a scalar offset outside its tensor: no transfer
            return
        if dynamic and inst.op == "dma_compute" and attrs.get("unique_indices") is False:
            self._row_by_row(inst, env, attrs, inputs, outputs, dynamic)
            return
        for ap, where in inputs:
            if ap.name in dynamic:
                elements, keep = dynamic[ap.name]
                values, written = memory.gather(ap, elements, keep)
                if not written:
                    raise RuntimeFault(
                        f"uninitialised read: {inst.describe(env)} gathers operand {ap.name!r} "
                        f"from elements of {ap.tensor.name} that nothing wrote"
                    )
                ops[ap.name] = values
                continue
            if not memory.is_written(ap, where):
                if not memory.any_written(ap, where):
                    raise RuntimeFault(
                        f"uninitialised read: {inst.describe(env)} reads operand {ap.name!r} "
                        f"({ap.tensor.name} in {ap.tensor.buffer}) before anything wrote it"
                        + self._garbage_source(ap)
                    )
                # a part was written: the lanes computed from the rest stay unwritten (below)
                memory.settle(ap, where)
                partly.append((ap, where))
            ops[ap.name] = memory.view(ap, where, writable=False)
        accumulates = inst.op in MATMULS and attrs.get("accumulate") is True
        unwritten = set()
        gathered = {}  # the current values of scattered outputs (tensor indirection)
        if inst.semantics.reads_outputs or accumulates:
            unwritten = {
                ap.name
                for ap, where in outputs
                if ap.name not in dynamic and not memory.is_written(ap, where)
            }
            for ap, _ in outputs:
                if ap.name in dynamic:
                    gathered[ap.name], written = memory.gather(ap, *dynamic[ap.name])
                    if not written:
                        raise RuntimeFault(
                            f"uninitialised read: {inst.describe(env)} reads the current "
                            f"values of its scattered operand {ap.name!r} "
                            f"({ap.tensor.name}), which nothing wrote"
                        )
        if inst.semantics.reads_outputs:
            for ap, where in outputs:
                if ap.name in gathered:
                    ops[ap.name] = gathered[ap.name]
                    continue
                if ap.name in unwritten:
                    memory.settle(ap, where)
                ops[ap.name] = memory.view(ap, where, writable=False)
        if accumulates:
            for ap, where in outputs:
                if ap.buffer != "psum" or ap.name in gathered:
                    continue
                if ap.name in unwritten:
                    raise RuntimeFault(
                        f"uninitialised read: {inst.describe(env)} accumulates onto "
                        f"{ap.tensor.name} in psum before anything wrote it"
                    )
                if not memory.written_by_tensor(ap, where):
                    raise RuntimeFault(
                        f"PSUM accumulation onto a non-matmul value: {inst.describe(env)} "
                        f"accumulates onto {ap.tensor.name} in psum, last written by another "
                        f"engine (only TensorE results may be accumulated onto, Hardware §4)"
                    )
        # engine accumulator registers are per physical partition (lane), not per tile row
        on_chip = [where for ap, where in (*inputs, *outputs) if ap.buffer != "hbm"]
        if on_chip:
            attrs = {**attrs, "_first_partition": on_chip[0].row_lo}
        alternate = self._unwritten_as_zero(inst, attrs, ops, partly) if partly else None
        # the result may be temporaries of the scratch: written to memory before the next call
        self.ctx.scratch.begin()
        try:
            self._store(inst, env, attrs, ops, outputs, dynamic, partly, alternate)
        finally:
            self.ctx.scratch.end()

    def _store(self, inst, env, attrs, ops, outputs, dynamic, partly, alternate) -> None:
        """Compute the instruction's results and write them to its outputs."""
        memory = self.memory
        try:
            result = inst.semantics.fn(self.ctx, ops, attrs)
        except Exception as e:
            raise RuntimeFault(f"{inst.describe(env)}: {type(e).__name__}: {e}") from e
        if self.ctx.pending:
            self._warn(inst, env)
        if self.non_finite is None:
            self._check_finite(inst, env, ops, attrs, result)
        # rows every dynamic operand moves (oob_mode skip drops the others)
        keep = np.logical_and.reduce([k for _, k in dynamic.values()]) if dynamic else None
        # a load of an input nothing writes: its SBUF tile is copied only when it must be
        deferrable = (
            inst.op == "dma_copy"
            and not dynamic
            and "src" in ops
            and result.get("dst") is ops["src"]
            and self._immutable_source(inst)
        )
        for ap, where in outputs:
            if ap.name not in result:
                raise RuntimeFault(f"{inst.describe(env)}: no value computed for {ap.name!r}")
            value = np.asarray(result[ap.name])
            if value.dtype != ap.np_dtype:
                value = dtypes.cast(value, ap.dtype, self.ctx.scratch)
            if value.shape != ap.nums:
                if value.size != np.prod(ap.nums):
                    raise RuntimeFault(
                        f"{inst.describe(env)}: computed {ap.name!r} of shape {value.shape} "
                        f"for an operand of shape {ap.nums}"
                    )
                value = value.reshape(ap.nums)
            if ap.name in dynamic:
                elements = dynamic[ap.name][0]
                memory.scatter(ap, elements[keep], value[keep])
                if ap.buffer == "psum":
                    indirect.mark_psum_writer(memory, ap, elements, inst.engine == "tensor")
                continue
            if keep is not None and not keep.all():  # oob_mode skip: those rows stay as they are
                memory.view(ap, where, writable=True)[keep] = value[keep]
                memory.mark_written(ap, where, keep)
                continue
            if deferrable and ap.buffer == "sbuf" and where.anchor != -1:
                memory.defer_load(ap, where, value)
            else:
                memory.view(ap, where, writable=True)[...] = value
            memory.mark_written(ap, where)
            if partly:
                self._unmark_dependent(inst, env, ap, where, value, alternate, partly)
            if ap.buffer == "psum":
                memory.mark_psum_writer(ap, where, inst.engine == "tensor")

    def _immutable_source(self, inst) -> bool:
        """Whether the instruction's `src` is an input that no instruction writes (of an LNC=2
        launch, never: the other core's instructions may write a shared input)."""
        if self.launch is not None:
            return False
        borrowable = self.memory.borrowable
        return any(ap.name == "src" and ap.tensor.id in borrowable for ap in inst.inputs)

    def _unwritten_as_zero(self, inst, attrs, ops, partly) -> dict | None:
        """The instruction's results with the never-written bytes of its partly written
        operands read as 0x00 instead of 0xFF (None if it fails on them), computed on a copy of
        the device state. A result element that differs from the real run's depends on memory
        nothing wrote: on hardware it is garbage, harmless while nothing reads it (a lane no
        later instruction uses, e.g. the other GpSimd cores' partitions of nonzero_with_count)."""
        ctx = self.ctx
        zeroed = dict(ops)
        for ap, where in partly:
            zeroed[ap.name] = self.memory.unwritten_as_zero(ap, where)
        state, rng, pending = (
            copy.deepcopy(ctx.state),
            ctx.rng.bit_generator.state,
            len(ctx.pending),
        )
        try:
            return inst.semantics.fn(ctx, zeroed, attrs)
        except Exception:
            return None
        finally:
            ctx.state, ctx.rng.bit_generator.state = state, rng
            del ctx.pending[pending:]

    def _unmark_dependent(self, inst, env, ap, where, value, alternate, partly) -> None:
        """Leave unwritten the output elements computed from unwritten memory (those that
        differ between the two values unwritten memory was given), so reading them faults."""
        other = None if alternate is None else alternate.get(ap.name)
        if other is None:
            differs = np.ones(ap.nums, bool)
        else:
            other = np.asarray(other)
            if other.dtype != ap.np_dtype:
                other = dtypes.cast(other, ap.dtype)
            shape = (*ap.nums, ap.itemsize)
            mine = np.ascontiguousarray(value).view(np.uint8).reshape(shape)
            theirs = np.ascontiguousarray(other.reshape(ap.nums)).view(np.uint8).reshape(shape)
            differs = (mine != theirs).any(axis=-1)
        if differs.any():
            self.memory.mark_unwritten(ap, where, differs)
            origins = [self.garbage[a.tensor.id] for a, _ in partly if a.tensor.id in self.garbage]
            self.garbage[ap.tensor.id] = origins[0] if origins else inst.describe(env)

    def _garbage_source(self, ap) -> str:
        source = self.garbage.get(ap.tensor.id)
        if source is None:
            return ""
        return (
            f"; elements of {ap.tensor.name} were computed from memory nothing wrote (by "
            f"{source}), which leaves them unwritten"
        )

    def _time(self, inst, env, reads_outputs: bool, inputs, outputs) -> None:
        # the per-instance hot path of every run: attributes are read once into locals
        queue = inst.queue
        if inst.queues > 1:  # a rotating DMA: instance n on dma((first + n·stride) mod queues)
            stride = inst.stride
            if type(stride) is int:
                queue = DMA0 + (queue - DMA0 + inst.count * stride) % inst.queues
            else:  # (or on dma((first + stride(loop values)) mod queues))
                step = stride[0]
                for var, coeff in stride[1]:
                    step += coeff * env[var]
                queue = DMA0 + (queue - DMA0 + step) % inst.queues
        records = self.records
        checker = self.checker
        lane_of = self.lane_of
        ready = stall_from = self.queue_free[queue]
        producer, stall = -1, STALL_NONE
        lane = lane_of[queue]
        clock = self.clocks[lane]
        seq = self.issued[lane]
        fields, guards = self.fields, self.guards
        field, shift = fields[lane], FIELD_BITS * lane
        mark = seq << shift
        ideal_waits = self.ideal_waits
        if ideal_waits:
            ideal, waited = self._ideal_ready(inst, queue, reads_outputs, inputs, outputs)
            if ideal > ready:
                ready, stall = ideal, STALL_SEMAPHORE
                # the latest instance of the conflicting instruction (for the critical path)
                producer = waited.history[-1][1] if waited.history else -1
        else:
            for producer_inst, skip in inst.waits:
                if type(skip) is not int:
                    const, terms, clamp = skip
                    skip = const
                    for var, coeff in terms:
                        skip += coeff * env[var]
                    if skip < 0 and clamp:
                        skip = 0
                    elif skip < 0:
                        raise RuntimeFault(
                            f"{inst.describe(env)}: semaphore wait on "
                            f"{producer_inst.op} has a negative skip ({skip})"
                        )
                history = producer_inst.history
                if len(history) > skip:
                    done, record, done_clock = history[-1 - skip]
                    if type(done) is not float:  # a transfer: fixed now that it is waited for
                        fixed = done.waited
                        done = self._waited(done) if fixed is None else fixed
                    waited = fields[lane_of[producer_inst.queue]]
                    if producer_inst.queues > 1 or done_clock & waited > clock & waited:
                        # (a clock that already covers this instance covers all it knew);
                        # elementwise max (`clock_max`, inline): usually the producer's clock
                        # covers this one's
                        kept = ((done_clock | guards) - clock) & guards
                        if kept == guards:
                            clock = done_clock
                        else:
                            pick = (kept >> (FIELD_BITS - 1)) * FIELD_ONES
                            clock ^= (done_clock ^ clock) & pick
                    if done > ready:
                        ready, producer, stall = done, record, STALL_SEMAPHORE
        read_accesses = []
        interlocks = queue != TENSOR_QUEUE
        unwritten = self.unwritten
        for ap, where in (inputs + outputs) if reads_outputs else inputs:
            if ap.key in unwritten:
                continue
            access = Access(ap, where, 0.0, queue, field, mark, inst)
            buckets = checker.buckets(ap.key, ap, where)
            read_accesses.append((access, buckets, ap.name))
            if interlocks:
                # the PE array orders its own PSUM accumulation; other engines interlock
                locked = checker.interlock(access, buckets)
                if locked > ready:
                    ready, producer, stall = locked, -1, STALL_INTERLOCK
        cost = inst.cost
        transfer = None
        if queue == TENSOR_QUEUE:
            start = max(ready, self.ls_end, self.mm_start)
            self.ls_end = ls_end = start + cost.load_stationary_ns
            mm_start = self.mm_start = max(ls_end, self.mm_end)
            busy = cost.busy_ns
            if self.throttle is not None:
                busy = self.throttle.duration(mm_start, busy)
                self.throttle.record(mm_start, mm_start + busy)
            self.mm_end = busy_end = mm_start + busy
            completion = busy_end + cost.latency_ns
            self.queue_free[queue] = max(ls_end, mm_start)
        elif type(cost) is ComputeCost:
            start = ready
            claims = inst.ports
            if inst.bank_ports:
                banks = set()
                for ap, where in (*inputs, *outputs):
                    if ap.buffer == "psum":
                        first = where.col_lo // PSUM_BANK_BYTES
                        banks.update(range(first, (where.col_hi - 1) // PSUM_BANK_BYTES + 1))
                claims = claims + bank_claims(inst.engine, banks)
            if claims:
                start = self.ports.place(claims, ready, cost.busy_ns)
                if start > ready:
                    producer, stall = -1, STALL_PORT
            busy_end = start + cost.busy_ns
            completion = busy_end + cost.latency_ns
            self.queue_free[queue] = busy_end
        else:
            # the queue spends the fixed cost on this transfer, then sets up the next one while
            # the DMA engines move the data; transfers of one queue complete in order
            # (round-robin over the engines: the completion is provisional until fixed)
            start = ready
            data_start = start + cost.fixed_ns
            transfer = self._transfer(inst, cost, queue, data_start, inputs, outputs)
            transfer.after = self.dma_done[queue]
            moved = self.rings.completion(transfer)
            # (the HBM stack, faster than one core's engines, enters when the transfer is
            # fixed; the issue-time value only fills the record until then)
            if transfer.hbm is not None and (self.hbm is not None or ideal_waits):
                hbm = self.hbm.completion(transfer.hbm) if self.hbm else self._stack(transfer)
                if hbm > moved:
                    moved = hbm
            if transfer.floor > moved:
                moved = transfer.floor
            transfer.data = len(self.dma_data)
            self.dma_data.append((data_start, moved))
            after = transfer.after
            if type(after) is not float:
                after = after.value if after.value is not None else self._provisional(after)
            completion = moved if moved > after else after
            transfer.provisional = busy_end = completion
            transfer.record = len(records)
            self.dma_done[queue] = transfer
            self.transfers[transfer.record] = transfer
            self.queue_free[queue] = data_start
            if self.launch is not None and self.shared_hbm is not None:
                self.launch.step(self.core, start)
        # with ideal waits every conflicting access is waited for by construction
        order = ALL_ORDERED if ideal_waits else clock
        try:
            if read_accesses:
                checker.check_reads(read_accesses, order)
            write_accesses = []
            for ap, where in outputs:
                write_accesses.append(
                    (
                        Access(ap, where, completion, queue, field, mark, inst),
                        checker.buckets(ap.key, ap, where),
                        ap.name,
                    )
                )
            checker.check_writes(write_accesses, order)
        except Hazard as hazard:
            raise RuntimeFault(self._missing_semaphore(inst, env, hazard)) from None
        self.clocks[lane] = clock
        self.issued[lane] = seq + 1
        checker.record(read_accesses, write_accesses, completion)
        # what an instance waiting for this one's completion learns: this queue up to it, and
        # for a rotating DMA what its previous instance's waiter learnt (its waiter waits for
        # every earlier instance too: one semaphore per queue it rotates over, each counting
        # that queue's completions): one elementwise max, this queue's entry at least seq + 1
        history = inst.history
        number = len(records)
        waited_done, waited_record = completion, number
        if inst.queues > 1 and history:
            done, record, before = history[-1]
            kept = ((clock | guards) - before) & guards  # (`clock_max`, inline)
            if kept == guards:
                known = clock
            else:
                pick = (kept >> (FIELD_BITS - 1)) * FIELD_ONES
                known = before ^ ((clock ^ before) & pick)
            if mark + (1 << shift) > before & field:
                known = (known & ~field) | (mark + (1 << shift))
            if transfer is not None:
                transfer.rotated = done
            elif done > completion:  # (its waiter waits for the later completion)
                waited_done, waited_record = done, record
        else:
            known = (clock & ~field) | (mark + (1 << shift))
        if transfer is not None:
            transfer.accesses = (read_accesses, write_accesses)
            if ideal_waits:
                for accesses in transfer.accesses:
                    for access, _, _ in accesses:
                        self.unfixed_accesses[id(access)] = transfer
            history.append((transfer, number, known))
        else:
            history.append((waited_done, waited_record, known))
        inst.count += 1
        inst.busy_ns += busy_end - start
        if completion > self.latest:
            self.latest = completion
        self.remaining[queue] -= 1
        records.append(
            (inst.index, start, busy_end, completion, stall_from, producer, stall, queue)
        )
        if (number + 1) % SWEEP_EVERY == 0:
            checker.sweep()

    def _ideal_ready(self, inst, queue: int, reads_outputs: bool, inputs, outputs):
        """When this instance could start with perfectly fine-grained semaphores: after every
        conflicting access issued before it on another queue (RAW, WAR, WAW); and the
        instruction of the access it waits for last."""
        checker, ready, waited = self.checker, 0.0, None
        sides = [(ap, where, (checker.writes,)) for ap, where in inputs]
        if reads_outputs:
            sides += [(ap, where, (checker.writes,)) for ap, where in outputs]
        sides += [(ap, where, (checker.writes, checker.reads)) for ap, where in outputs]
        for ap, where, tables in sides:
            access = Access(ap, where, 0.0, queue, 0, 0, inst)
            for bucket in checker.buckets(ap.key, ap, where):
                for table in tables:
                    for other in table.get(bucket, ()):
                        if other.queue != queue and other.overlaps(access):
                            transfer = self.unfixed_accesses.get(id(other))
                            if transfer is not None:  # waited for: fixed now
                                self._fix(transfer)
                            if other.end > ready:
                                ready, waited = other.end, other.inst
        return ready, waited

    def _transfer(
        self, inst, plan: DmaPlan, queue: int, data_start: float, inputs, outputs
    ) -> Transfer:
        """Submit a transfer whose data may move from `data_start` to the DMA engines (and
        reserve its HBM-side bytes)."""
        first = 0
        if inst.dma_side is not None:
            for ap, where in (*outputs, *inputs):
                if ap is inst.dma_side:
                    first = where.row_lo
                    break
        uniform = plan.uniform(first)
        if uniform is not None:
            transfer = self.rings.submit(data_start, float(uniform), queue)
        else:
            transfer = self.rings.submit(data_start, plan.chunks(first), queue)
        transfer.floor = data_start
        # its HBM-side bytes share the core's sustained rate (trn1) or the HBM stack the same
        # way, round-robin with the other rings' (the cores' of a launch: one ring per queue)
        if plan.hbm_bytes:
            if self.hbm is not None:
                transfer.hbm = self.hbm.submit(data_start, plan.hbm_bytes / self.hbm_rate, queue)
            elif self.shared_hbm is not None:
                stack, gbps = self.shared_hbm
                ring = self.core * len(QUEUES) + queue
                transfer.hbm = stack.submit(data_start, plan.hbm_bytes / gbps, ring)
        return transfer

    def _row_by_row(self, inst, env, attrs, inputs, outputs, dynamic) -> None:
        """`dma_compute(..., unique_indices=False)`: the rows of the transfer one after another,
        each reading what the previous ones wrote, so that rows with the same index (a
        read-modify-write onto one destination row) all accumulate, in row order, as the DMA
        serialises them."""
        memory = self.memory
        keep = np.logical_and.reduce([k for _, k in dynamic.values()])
        ops: dict[str, Any] = dict(inst.immediates)
        for ap, where in inputs:
            if ap.name not in dynamic:
                if not memory.is_written(ap, where):
                    raise RuntimeFault(
                        f"uninitialised read: {inst.describe(env)} reads operand {ap.name!r} "
                        f"({ap.tensor.name} in {ap.tensor.buffer}) before anything wrote it"
                    )
                ops[ap.name] = memory.view(ap, where, writable=False)
        one = np.ones(1, bool)
        for row in np.flatnonzero(keep):
            row_ops = {}
            for name, value in ops.items():
                sliced = isinstance(value, np.ndarray) and value.ndim and len(value) == len(keep)
                row_ops[name] = value[row : row + 1] if sliced else value
            for ap, _ in inputs:
                if ap.name in dynamic:
                    values, written = memory.gather(ap, dynamic[ap.name][0][row : row + 1], one)
                    if not written:
                        raise RuntimeFault(
                            f"uninitialised read: {inst.describe(env)} gathers operand "
                            f"{ap.name!r} from elements of {ap.tensor.name} that nothing wrote"
                        )
                    row_ops[ap.name] = values
            try:
                result = inst.semantics.fn(self.ctx, row_ops, attrs)
            except Exception as e:
                raise RuntimeFault(f"{inst.describe(env)}: {type(e).__name__}: {e}") from e
            for ap, where in outputs:
                value = np.asarray(result[ap.name])
                if value.dtype != ap.np_dtype:
                    value = dtypes.cast(value, ap.dtype)
                value = value.reshape((1, *ap.nums[1:]))
                if ap.name in dynamic:
                    memory.scatter(ap, dynamic[ap.name][0][row : row + 1], value)
                else:
                    memory.view(ap, where, writable=True)[row : row + 1] = value
                    memory.mark_written(ap, where, slice(row, row + 1))

    def _dynamic(self, inst, env, attrs, inputs, outputs) -> dict[str, tuple] | None:
        """For each dynamic operand: (its flat element indices, mask of the first dimension's
        entries to move). An index outside the tensor is a fault, or with `oob_mode` skip
        drops its row (vector), or the whole transfer (scalar offset: None)."""
        memory, out = self.memory, {}
        views = {ap.name: (ap, where) for ap, where in (*inputs, *outputs)}
        indices = {ap.dynamic["index"] for ap, _ in views.values() if ap.dynamic is not None}
        for ap, placed in (*inputs, *outputs):
            if ap.dynamic is None:
                continue
            index_ap, where = views[ap.dynamic["index"]]
            if ap.dynamic["kind"] == "indirect":
                out[ap.name] = self._indirect(inst, env, ap, placed, index_ap, where)
                continue
            if not memory.is_written(index_ap, where):
                raise RuntimeFault(
                    f"uninitialised read: {inst.describe(env)} reads index operand "
                    f"{index_ap.name!r} before anything wrote it"
                )
            index = np.array(memory.view(index_ap, where, writable=False))
            elements, inside = ap.dynamic_elements(env, index)
            if ap.dynamic["kind"] == "scalar":
                inside = np.full_like(inside, inside.all())
            if not inside.all():
                if attrs.get("oob_mode") != "skip":
                    row = int(np.argmin(inside))
                    value = int(index.reshape(-1)[row if ap.dynamic["kind"] == "vector" else 0])
                    reached = elements.reshape(len(inside), -1)[row]
                    first, last = int(reached.min()), int(reached.max())
                    size = ap.itemsize
                    raise RuntimeFault(
                        f"out-of-bounds dynamic access: {inst.describe(env)}: operand "
                        f"{ap.name!r} with index {value} (at partition {row} of "
                        f"{index_ap.name!r}) leaves {ap.tensor.name} of shape "
                        f"{list(ap.tensor.shape)} ({ap.tensor.nbytes} bytes): it reaches bytes "
                        f"{first * size}..{(last + 1) * size - 1}"
                    )
                if ap.dynamic["kind"] == "scalar":
                    return None  # the whole transfer is skipped
                if any(o.nums[0] != ap.nums[0] for o, _ in views.values() if o.name not in indices):
                    raise RuntimeFault(
                        f"{inst.describe(env)}: oob_mode skip needs src and dst with the same "
                        "first dimension (nkic)"
                    )
            out[ap.name] = (elements, inside)
        return out

    def _indirect(self, inst, env, ap, placed, index_ap, where) -> tuple:
        """The elements of a tensor-indirection operand (nkirt/indirect.py), its offsets read
        from the index tile now; an offset outside the viewed free dimension is a fault."""
        memory = self.memory
        if not memory.is_written(index_ap, where):
            raise RuntimeFault(
                f"uninitialised read: {inst.describe(env)} reads index operand "
                f"{index_ap.name!r} before anything wrote it"
            )
        index = np.array(memory.view(index_ap, where, writable=False))
        count, extent = ap.nums[1], ap.dynamic["extent"]
        try:
            offsets = indirect.snake_offsets(index, count, indirect.group_size(inst.engine))
        except IndexError as e:
            raise RuntimeFault(f"{inst.describe(env)}: operand {ap.name!r}: {e}") from None
        bad = (offsets < 0) | (offsets >= extent)
        if bad.any():
            i = int(np.argmax(bad))
            raise RuntimeFault(
                f"out-of-bounds tensor indirection: {inst.describe(env)}: operand "
                f"{ap.name!r} reads offset {int(offsets[i])} (offset {i} of {count} in "
                f"{index_ap.name!r}) of a free dimension of {extent} elements of "
                f"{ap.tensor.name}"
            )
        return indirect.elements(ap, placed.byte, offsets), np.ones(ap.nums[0], bool)

    def _warn(self, inst, env) -> None:
        """Keep the first warning of each static instruction (with the iteration it came from)
        and count the instances that warned."""
        first = self.warnings.get(inst.index)
        if first is None:
            self.warnings[inst.index] = {
                "loc": inst.where,
                "op": inst.op,
                "message": f"{inst.describe(env)}: {self.ctx.pending[0]}",
                "count": 1,
            }
        else:
            first["count"] += 1
        self.ctx.pending.clear()

    def _check_finite(self, inst, env, ops: dict, attrs: dict, result: dict) -> None:
        """Remember the first instruction instance that turned finite inputs into Inf/NaN."""
        if (
            inst.op in SAME_DTYPE_COPIES
            and len({getattr(v, "dtype", None) for v in (*ops.values(), *result.values())}) == 1
        ):
            return  # a copy without conversion cannot create Inf/NaN
        bad = [name for name, value in result.items() if not _all_finite(value)]
        if not bad:
            return
        if not all(_all_finite(v) for v in ops.values()):
            return
        if not all(_all_finite(v) for k, v in attrs.items() if not k.startswith("_")):
            return
        self.non_finite = {
            "loc": inst.where,
            "op": inst.op,
            "outputs": sorted(bad),
            "message": (
                f"non-finite values from finite inputs: {inst.describe(env)} wrote Inf/NaN to "
                f"{', '.join(repr(b) for b in sorted(bad))}"
            ),
        }

    def _missing_semaphore(self, inst, env, hazard: Hazard) -> str:
        producer = hazard.producer
        tensor = next(
            (ap.tensor.name for ap in (*inst.inputs, *inst.outputs) if ap.name == hazard.operand),
            hazard.producer_tensor,
        )
        also = (
            ""
            if tensor == hazard.producer_tensor
            else f", accessed there as {hazard.producer_tensor}"
        )
        return (
            f"missing semaphore (compiler bug): {inst.describe(env)} waits for nothing on "
            f"{producer.op} at {producer.where} ({hazard.kind} hazard on operand "
            f"{hazard.operand!r}, tensor {tensor}{also})"
        )


def _all_finite(value: Any) -> bool:
    """Whether a float operand (array or scalar) holds no Inf/NaN; other values count as finite."""
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, (list, tuple)):
        return all(_all_finite(v) for v in value)
    if not isinstance(value, np.ndarray | np.generic):
        return True
    return dtypes.all_finite(np.asarray(value))
