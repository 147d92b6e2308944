"""SBUF/PSUM allocation: a start partition and byte offset for every on-chip tensor.

Liveness is by scope and program order: a tensor is live from its first to its last use, a use
inside a loop nested below the tensor's scope keeps it live for that whole loop, and a tensor
allocated in a loop body is fresh in every iteration. Placement is first-fit in two dimensions
(partitions x bytes) over tensors whose live ranges overlap, honouring `address=` placements,
the start-partition rule and the PSUM bank rule. Tensors allocated in a loop body are then
multi-buffered (`Tensor.rotate`) where space allows, so consecutive iterations can overlap;
when space is short, the most executed (innermost) tensors get their slots first. The tiles
an unrolled loop allocates at one site, one per iteration, rotate over slots the same way
(`_chains`).
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from heapq import heappop, heappush
from itertools import accumulate
from math import gcd
from typing import ClassVar

from ..diagnostics import Related
from ..ir.core import Alloc, Inst, Kernel, Loc, Loop, Op, Tensor
from ..ir.target import ALIGN_BYTES, Target, start_partitions, target
from .base import Pass, PassContext
from .evacuate import hoist_psum_reads
from .regions import loop_ranges, region, runs
from .spill import Candidate, candidates, spill

MATMULS = ("nc_matmul", "nc_matmul_mx")
#: Live ranges are grouped by length, at most each of these many positions; longer ones are
#: few, and the layout keeps them apart. A query looks back only as far as the longest range of
#: a group, so a window of short ranges does not hold every range that started before it.
LENGTHS = (16, 128, 1024)
NOTE_TENSORS = 5
#: Positions per block of `_Occupancy`'s per-block peaks.
OCCUPANCY_BLOCK = 256
#: The buffers whose site chains, where unbroken, reserve their slots between their tiles
#: (`_split_where_full`), so that the chains split later break where the earlier ones took
#: the room. Not SBUF: its chains, up to four slots each, then broke where they did not
#: before and others took their slots; the NKI Library's moe_cte shard_on_i H3072 T1024 E64
#: B512 K8 I3072 (trn2, LNC=2) predicted 24,510.57 us unrolled against 23,794.42 us.
RESERVED_BETWEEN_TILES = ("psum",)
#: The label of one block of a Beta 1 tensor with block dimensions: `qk[3, 1]`.
BLOCK_LABEL = re.compile(r"^(\w+)\[\d+(?:, \d+)*\]$")


def _align(n: int, a: int = ALIGN_BYTES) -> int:
    return -(-n // a) * a


@dataclass(eq=False)
class _Item:
    """An on-chip tensor to place, with its live range in program positions."""

    tensor: Tensor
    loc: Loc
    loops: tuple[Loop, ...]
    order: int
    start: int = -1
    end: int = -1
    span: tuple[int, int] = (0, 0)
    executions: int = 1
    #: an operand of an instruction with tensor indirection, whose start-partition rules
    #: relate its operands: placed at partition 0 (the rules then hold by the views alone)
    at_zero: bool = False
    #: A site chain (`_chains`): the allocations of one source site in successive unrolled
    #: iterations, placed as one rotating tensor when it gets more than one slot.
    members: tuple[_Item, ...] = ()
    #: Whether any instruction accesses it (an unused allocation, e.g. of a list of tiles
    #: the kernel fills only partly, holds no data: it takes part in no chain and gets no
    #: second slot).
    accessed: bool = False
    #: The number of the site chain a part of which this chain is (`_split_where_full`): the
    #: parts of one chain try each slot count together.
    part_of: int = -1

    @property
    def rotatable(self) -> bool:
        repeated = bool(self.loops) or bool(self.members)
        return repeated and self.executions > 1 and self.accessed and not self.tensor.fixed_address

    def interval(self, count: int) -> tuple[int, int]:
        # every slot of a multi-buffered tensor may be in use anywhere in its loop body
        return self.span if count > 1 else (self.start, self.end)


@dataclass
class _Placed:
    item: _Item
    partition: int
    byte: int
    count: int
    stride: int
    ranges: tuple[tuple[int, int], ...]  # absolute [lo, hi) byte ranges, one per slot
    interval: tuple[int, int]

    @property
    def nparts(self) -> int:
        return self.item.tensor.num_partitions


def _footprint(t: Tensor, count: int, tgt: Target) -> tuple[int, tuple[tuple[int, int], ...]]:
    """(slot stride, relative [lo, hi) byte ranges of the slots).

    A tensor occupies exactly its bytes per partition: only slot starts are aligned, so a
    46-byte tile at byte 6012 ends at 6058, where an `address=` placement may put the next."""
    exact = max(1, t.bytes_per_partition)
    size = _align(exact)
    if t.buffer == "psum":
        bank = tgt.psum_bank_bytes
        if size <= bank:  # each slot in its own bank, at the same offset inside it
            stride = bank if count > 1 else size
            return stride, tuple((s * bank, s * bank + size) for s in range(count))
        size = _align(size, bank)  # larger tensors take whole consecutive banks
        return size, ((0, count * size),)
    return size, ((0, (count - 1) * size + exact),)


class _Layout:
    """The placement of every on-chip tensor of one buffer for given slot counts."""

    def __init__(self, buffer: str, tgt: Target, fresh: bool = False):
        self.buffer = buffer
        self.tgt = tgt
        self.capacity = tgt.sbuf_partition_bytes if buffer == "sbuf" else tgt.psum_partition_bytes
        self.placed: list[_Placed] = []
        # for each of LENGTHS, the placement numbers of the tensors live over at most that many
        # positions (and more than the previous length), by first position; and of the others
        self._starts: list[list[int]] = [[] for _ in LENGTHS]
        self._short: list[list[int]] = [[] for _ in LENGTHS]
        self._long: list[int] = []
        #: Prefer bytes no earlier tensor used: reusing the bytes of a tensor whose last
        #: reader (e.g. a DMA store) may still be in flight makes the new tensor's first
        #: writer wait for it, a dependency the kernel does not have.
        self.fresh = fresh
        self._no_fresh_room: set[tuple] = set()

    def _add(self, q: _Placed) -> None:
        n = len(self.placed)
        self.placed.append(q)
        lo, hi = q.interval
        group = bisect_left(LENGTHS, hi - lo)
        if group == len(LENGTHS):
            self._long.append(n)
        else:
            starts = self._starts[group]
            i = bisect_right(starts, lo)
            starts.insert(i, lo)
            self._short[group].insert(i, n)

    def live_with(self, interval: tuple[int, int]) -> list[_Placed]:
        """The placed tensors whose live ranges meet `interval`, in placement order."""
        s, e = interval
        found = list(self._long)
        for length, starts, numbers in zip(LENGTHS, self._starts, self._short):
            found += numbers[bisect_left(starts, s - length) : bisect_right(starts, e)]
        placed = self.placed
        return [
            placed[n]
            for n in sorted(found)
            if placed[n].interval[0] <= e and s <= placed[n].interval[1]
        ]

    def add_fixed(self, item: _Item) -> None:
        t = item.tensor
        stride, rel = _footprint(t, 1, self.tgt)
        p, b = t.address
        ranges = tuple((b + lo, b + hi) for lo, hi in rel)
        self._add(_Placed(item, p, b, 1, stride, ranges, item.interval(1)))

    def _fix_byte(self, b: int, rel) -> int:
        """The first byte >= b where the footprint obeys alignment and the PSUM bank rule."""
        b = _align(b)
        if self.buffer == "psum":
            bank = self.tgt.psum_bank_bytes
            size = rel[0][1] - rel[0][0]
            if (size > bank and b % bank) or (size <= bank and b % bank + size > bank):
                b = _align(b, bank)
        return b

    def _lowest_byte(self, rivals: list[_Placed], rel) -> int | None:
        """The lowest valid byte offset at which no slot range meets a rival's range."""
        forbidden = sorted(
            (qlo - hi + 1, qhi - lo) for q in rivals for qlo, qhi in q.ranges for lo, hi in rel
        )
        b = self._fix_byte(0, rel)
        for start, end in forbidden:
            if end <= b:
                continue
            if start > b:
                break
            b = self._fix_byte(end, rel)
        return b if b + rel[-1][1] <= self.capacity else None

    def place(self, item: _Item, count: int) -> bool:
        if self.fresh:
            # no fresh bytes for a footprint once there were none: placed tensors only add up
            shape = (item.tensor.num_partitions, _footprint(item.tensor, count, self.tgt))
            if shape not in self._no_fresh_room:
                if self._place(item, count, self.placed):
                    return True
                self._no_fresh_room.add(shape)
        return self._place(item, count, self.live_with(item.interval(count)))

    def _place(self, item: _Item, count: int, live: list[_Placed]) -> bool:
        """Place `item` at the lowest bytes no tensor of `live` uses on its partitions."""
        t = item.tensor
        stride, rel = _footprint(t, count, self.tgt)
        interval = item.interval(count)
        nparts = t.num_partitions
        best: tuple[int, int] | None = None
        for p in (0,) if item.at_zero else start_partitions(nparts):
            if p + nparts > self.tgt.partitions:
                continue
            rivals = [q for q in live if q.partition < p + nparts and p < q.partition + q.nparts]
            b = self._lowest_byte(rivals, rel)
            if b is not None and (best is None or (b, p) < best):
                best = (b, p)
        if best is None:
            return False
        b, p = best
        ranges = tuple((b + lo, b + hi) for lo, hi in rel)
        self._add(_Placed(item, p, b, count, stride, ranges, interval))
        return True


class _Occupancy:
    """The bytes per partition a layout uses at each position, per quarter of the partitions
    (the start-partition granule of the smallest tensors)."""

    def __init__(self, layout: _Layout):
        self.tgt = tgt = layout.tgt
        self.quarter = max(1, tgt.partitions // 4)
        self.partitions = tgt.partitions
        self.capacity = layout.capacity
        n = max((q.interval[1] for q in layout.placed), default=0) + 2
        deltas = [[0] * n for _ in range(4)]
        for q in layout.placed:
            lo, hi = q.interval
            width = q.ranges[-1][1] - q.ranges[0][0]
            for k in self._quarters(q.partition, q.nparts):
                deltas[k][lo] += width
                deltas[k][hi + 1] -= width
        self.used = [list(accumulate(d)) for d in deltas]
        # the peak of each block of positions, so that the peak over a long range (a chain
        # between two of its tiles may pass the whole program) costs a block scan
        self.blocks = [
            [max(used[b : b + OCCUPANCY_BLOCK]) for b in range(0, n, OCCUPANCY_BLOCK)]
            for used in self.used
        ]

    def _peak(self, k: int, lo: int, hi: int) -> int:
        """The most bytes per partition quarter `k` uses at a position of [lo, hi]."""
        used, n = self.used[k], OCCUPANCY_BLOCK
        first, last = -(-lo // n), (hi + 1) // n  # the whole blocks inside [lo, hi]
        if first >= last:
            return max(used[lo : hi + 1], default=0)
        return max(
            max(used[lo : first * n], default=0),
            max(self.blocks[k][first:last]),
            max(used[last * n : hi + 1], default=0),
        )

    def _quarters(self, partition: int, nparts: int) -> range:
        return range(partition // self.quarter, -(-(partition + nparts) // self.quarter))

    def roomiest(self, t: Tensor, lo: int, hi: int) -> tuple[int, int]:
        """(bytes, start partition): the most bytes per partition free at every position of
        [lo, hi] on a window of partitions where `t` may start, and the first such window."""
        best = (0, 0)
        for p in start_partitions(t.num_partitions):
            if p + t.num_partitions > self.partitions:
                continue
            peak = max(self._peak(k, lo, hi) for k in self._quarters(p, t.num_partitions))
            if self.capacity - peak > best[0]:
                best = (self.capacity - peak, p)
        return best

    def reserve(self, t: Tensor, lo: int, hi: int, width: int, partition: int) -> None:
        """Count `width` bytes per partition as used over [lo, hi], on `t`'s window of
        partitions from `partition` (where `roomiest` found the most room)."""
        n = OCCUPANCY_BLOCK
        for k in self._quarters(partition, t.num_partitions):
            used, blocks = self.used[k], self.blocks[k]
            last = min(hi, len(used) - 1)
            for i in range(lo, last + 1):
                used[i] += width
            for b in range(lo // n, last // n + 1):
                blocks[b] = max(used[b * n : b * n + n])


def _collect(kernel: Kernel) -> list[_Item]:
    """Every on-chip tensor with its live range; positions number ops in program order."""
    items: dict[Tensor, _Item] = {}
    depth: dict[Tensor, int] = {}
    spans: dict[Loop, tuple[int, int]] = {}
    uses: list[tuple[int, Inst, tuple[Loop, ...]]] = []
    pos = 0

    def walk(ops: list[Op], loops: tuple[Loop, ...]) -> None:
        nonlocal pos
        for op in ops:
            pos += 1
            if isinstance(op, Alloc):
                t = op.result
                depth[t] = len(loops)
                if t.on_chip:
                    execs = 1
                    for lp in loops:
                        execs *= lp.trip_count
                    items[t] = _Item(t, op.loc, loops, pos, executions=execs)
            elif isinstance(op, Inst):
                uses.append((pos, op, loops))
            elif isinstance(op, Loop):
                first = pos
                walk(op.body, loops + (op,))
                spans[op] = (first, pos)

    for t in kernel.params:
        depth[t] = 0
        if t.on_chip:
            items[t] = _Item(t, t.loc, (), 0)
    walk(kernel.body, ())
    end_of_kernel = pos + 1
    for p, op, loops in uses:
        indirect = any(
            ap.dynamic is not None and ap.dynamic.kind == "indirect" for _, ap in op.aps()
        )
        for _, ap in op.aps():
            item = items.get(ap.tensor)
            if item is None:
                continue
            item.at_zero |= indirect
            item.accessed = True
            d = depth[ap.tensor]
            lo, hi = spans[loops[d]] if len(loops) > d else (p, p)
            item.start = lo if item.start < 0 else min(item.start, lo)
            item.end = max(item.end, hi)
    for t, item in items.items():
        if item.start < 0:
            item.start = item.end = item.order
        if t in kernel.returns:
            item.end = end_of_kernel
        item.span = spans[item.loops[-1]] if item.loops else (item.start, item.end)
    return sorted(items.values(), key=lambda it: (it.order, it.start))


def _chains(items: list[_Item], layout: _Layout) -> list[_Item]:
    """The site chains of `items`: one item per chain standing for its members.

    An unrolled loop allocates its body's tiles once per iteration, each a tensor of its own
    with the same source site (location and inlining stack) and footprint. The allocations
    of one site whose live ranges follow one another form a chain: in program order, each
    joins the site's chain whose last member was freed least recently (ties: the older
    chain), or starts one when every chain's last member is still live, so interleaved calls
    of a helper make one chain per call. A chain rotates over slots exactly as a symbolic
    loop's tensor does: its n-th tile uses slot n mod count, every slot is live over the
    whole chain, and it is one unit of `Allocate.multi_buffer` with one execution per tile.

    A symbolic loop's body is chained as its unrolled form would be: first the tensors of
    one execution of the body (an unrolled loop inside it), then, across the program, such
    a group (a segment: m tensors, each allocated once per execution) with the site's other
    segments and loop-free tiles, when no loop encloses both (the groups of two nested
    loops' bodies interleave: they chain no further). A group is live from its first
    tensor's first use to its last tensor's last use, as the unrolled tiles of its first and
    last executions are (the executions in between add nothing the chain's slots do not
    cover). A segment's tensors take the slots the fully unrolled program gives their tiles
    where a tensor can hold them (`_segment_slots`).

    An allocation nothing accesses (a list of tiles the kernel fills only partly) holds no
    data and joins no chain: with its empty live range it would start chains of its own that
    the site's next used tiles join, splitting them one way unrolled and another in a
    symbolic loop's body.

    A chain reserves its slots over its whole length, so it breaks where the one-slot
    `layout` leaves no room for two slots between two of its groups (another
    phase of the program fills the buffer there): each part is a chain of its own, and the
    phase between them takes none of its slots. PSUM chains are split together, most
    executed first, each taking its banks between its groups out of the room the next
    finds (`_split_where_full`). A symbolic loop's chain keeps its slots
    across the boundary between two executions, as the unrolled chain does, unless the
    unrolled chain would break there; then it is live over one execution of the body and
    does not meet the phases of the next executions (`_chain_span`)."""
    by_body: dict[tuple, list[_Item]] = {}
    for it in items:
        t = it.tensor
        if t.fixed_address or it.order == 0 or t.loc.file == "<unknown>" or not it.accessed:
            continue
        by_body.setdefault(it.loops, []).append(it)
    groups: list[tuple[int, int, tuple[_Item, ...]]] = []  # (start, end, members of a body)
    for loops, body in by_body.items():
        if not loops:
            groups.extend((it.start, it.end, (it,)) for it in body)
            continue
        for body_chain in _site_chains(body, lambda it: (it.start, it.end)):
            groups.append((body_chain[0].start, body_chain[-1].end, tuple(body_chain)))
    groups.sort(key=lambda g: (g[2][0].order, g[0]))
    found = []
    occupancy = _Occupancy(layout)
    chains = _site_chains(groups, lambda g: (g[0], g[1]), _one_after_the_other)
    # every chain split first, most executed first (the order `Allocate.multi_buffer` gives
    # slots in when not all fit); then the spans across executions, site by site
    by_heat = sorted(
        range(len(chains)),
        key=lambda n: (
            -sum(m.executions for g in chains[n] for m in g[2]),
            chains[n][0][2][0].order,
        ),
    )
    parts = {n: _split_where_full(chains[n], occupancy) for n in by_heat}
    for n in range(len(chains)):
        for chain in parts[n]:
            members = tuple(m for _, _, group in chain for m in group)
            if len(members) < 2:
                continue  # one tensor: a symbolic loop's tile rotates by itself
            first = members[0]
            found.append(
                _Item(
                    first.tensor,
                    first.loc,
                    (),
                    first.order,
                    chain[0][0],
                    chain[-1][1],
                    _chain_span(chain, occupancy),
                    executions=sum(m.executions for m in members),
                    at_zero=any(m.at_zero for m in members),
                    members=members,
                    accessed=True,
                    part_of=n,
                )
            )
    return found


def _chain_span(chain: list[tuple], occupancy: _Occupancy) -> tuple[int, int]:
    """Where the slots of `chain` (groups (start, end, members)) are live when it has more
    than one: from its first group's start to its last group's end, and over the whole loop
    of a symbolic loop's group that the unrolled chain would pass from one execution to the
    next. Unrolled, the site's tiles of execution e + 1 join the chain after those of
    execution e, so its slots stay live across the boundary, over the next execution's
    tensors before the group (they cannot take its bytes); the chain breaks there only where
    those tensors leave no room for two of its slots (`_split_where_full`).

    The chains kept across the boundary must fit there together, not each alone: over the
    whole body, each takes two of its slots out of the room the next chain (in the order of
    `_site_chains`: site by site) finds in `occupancy`. Tested each alone, four chains of
    the down projection in moe_cte each found the two PSUM banks the gate/up projection
    leaves free, so all four took the whole body and none could hold its second bank. Where
    the split reserved the chain's banks between two of its groups (PSUM), the body after
    the earlier group and before the later one is among those positions: only the body
    before the first group and after the last are tested here."""
    t = chain[0][2][0].tensor
    stride, _ = _footprint(t, 2, occupancy.tgt)
    between = t.buffer in RESERVED_BETWEEN_TILES
    lo, hi = chain[0][0], chain[-1][1]
    for n, (start, end, members) in enumerate(chain):
        first = members[0]
        if not first.loops or first.executions < 2:
            continue
        body_lo, body_hi = first.span
        # the body after a group with a next one, and before one with a previous one, lies
        # between two groups: the split reserved the chain's banks there already
        wrap = []
        if not between or n == len(chain) - 1:
            wrap.append((end + 1, body_hi))
        if not between or n == 0:
            wrap.append((body_lo, start - 1))
        wrap = [(a, b) for a, b in wrap if a <= b]
        rooms = [occupancy.roomiest(t, a, b) for a, b in wrap]
        if all(free >= 2 * stride for free, _ in rooms):
            lo, hi = min(lo, body_lo), max(hi, body_hi)
            for (a, b), (_, partition) in zip(wrap, rooms):
                occupancy.reserve(t, a, b, 2 * stride, partition)
    return lo, hi


def _split_where_full(chain: list[tuple], occupancy: _Occupancy) -> list[list[tuple]]:
    """`chain` (groups (start, end, members)) split between two groups where the tensors
    live between them leave less than two of its slots free at some position.

    A PSUM chain that does not break there reserves its two banks over the positions between
    the two groups, on the partitions that had the room: the chains split after it find
    only what is left, as the layout will have to place them together. Tested each alone,
    the chains of two sites whose tiles alternate each found the same two free banks between
    their tiles, none broke, and the layout gave one of them a single bank for every tile
    (`RESERVED_BETWEEN_TILES`)."""
    t = chain[0][2][0].tensor
    stride, _ = _footprint(t, 2, occupancy.tgt)
    parts = [[chain[0]]]
    for last, group in zip(chain, chain[1:]):
        lo, hi = last[1] + 1, group[0] - 1
        free, partition = occupancy.roomiest(t, lo, hi)
        if free < 2 * stride:
            parts.append([])
        elif t.buffer in RESERVED_BETWEEN_TILES:
            occupancy.reserve(t, lo, hi, 2 * stride, partition)
        parts[-1].append(group)
    return parts


def _one_after_the_other(last: tuple, group: tuple) -> bool:
    """Do the tiles of `group` follow every tile of `last` (no loop encloses both)? Groups
    of the bodies of two nested loops interleave: they do not chain."""
    return not set(last[2][0].loops) & set(group[2][0].loops)


def _site_chains(units: list, interval, follows=None) -> list[list]:
    """`units` (in program order) split into the chains of each site by least recently
    freed (`_chains`); `interval(unit)` is its live range, and a unit joins a chain only if
    `follows(its last unit, unit)` (when given)."""
    # per site: its chains, and a heap of (last member's end, chain number)
    sites: dict[tuple, tuple[list[list], list[tuple[int, int]]]] = {}
    for u in units:
        it = u if isinstance(u, _Item) else u[2][0]
        t = it.tensor
        key = (it.loc, t.buffer, t.num_partitions, t.bytes_per_partition)
        start, end = interval(u)
        chains, free = sites.setdefault(key, ([], []))
        if free and free[0][0] < start and (follows is None or follows(chains[free[0][1]][-1], u)):
            n = heappop(free)[1]
            chains[n].append(u)
        else:
            n = len(chains)
            chains.append([u])
        heappush(free, (end, n))
    return [chain for chains, _ in sites.values() for chain in chains]


def _segment_slots(chain: _Item, count: int) -> list[tuple[int, bool]] | None:
    """For each member of `chain` with `count` slots: (slot, rotates). A loop-free member
    takes the slot of its place n in the chain, n mod count. A segment of m tensors in a
    symbolic loop's body, entered after `base` tiles, holds tile base + e·m + k (execution
    e, member k), in slot (base + k + e·m) mod count: member k keeps slot (base + k) mod
    count when count divides m; when m is one more than a multiple of count (a lone tensor,
    or five PSUM tiles on two banks) member k rotates over the slots from slot (base + k)
    mod count (its phase), so that a kept loop after a loop or tiles of the same site takes
    up the rotation where they left it, as the unrolled tiles do. None: a segment cannot
    hold the unrolled slots (three tensors on four SBUF slots would each move back a slot
    every execution)."""
    out: list[tuple[int, bool]] = []
    base, i, members = 0, 0, chain.members
    while i < len(members):
        loops = members[i].loops
        j = i
        while j < len(members) and members[j].loops == loops:
            j += 1
        m = j - i
        if not loops:
            out.extend(((base + k) % count, False) for k in range(m))
            base += m
        elif m % count in (0, 1):
            # a multiple of count: every execution puts member k in the same slot; one more:
            # each execution moves every member on by one slot, so each rotates
            out.extend(((base + k) % count, m % count == 1) for k in range(m))
            base += m * members[i].executions
        else:
            return None
        i = j
    return out


def _bodies(ops: list[Op]) -> list[list[Op]]:
    """`ops` and every loop body nested in it (the lists themselves)."""
    found = [ops]
    for op in ops:
        if isinstance(op, Loop):
            found += _bodies(op.body)
    return found


def _where(t: Tensor) -> str:
    return f"{t.loc.file}:{t.loc.line}" if t.loc.file != "<unknown>" else "unknown location"


def _name(t: Tensor) -> str:
    return f"'{t.label or t.name}'"


@dataclass(frozen=True)
class Allocate(Pass):
    """Assigns `Tensor.address` (and `Tensor.rotate`) to every SBUF and PSUM tensor."""

    name: ClassVar[str] = "allocate"
    max_sbuf_slots: int = 4
    max_psum_slots: int = 2
    #: Off when other checks failed: a matmul output too large for a bank is reported already.
    check_psum_banks: bool = True

    def run(self, kernel: Kernel, ctx: PassContext) -> None:
        tgt = target(kernel.target)
        items = _collect(kernel)
        if not self._psum_fits(items, tgt):
            items = self.fit_psum(kernel, tgt, ctx)
        ok = True
        for buffer in ("sbuf", "psum"):
            mine = [it for it in items if it.tensor.buffer == buffer]
            if not self.check_fixed(mine, buffer, tgt, ctx):
                ok = False
                continue
            counts = {it: 1 for it in mine}
            layout, failed = self.layout(mine, counts, buffer, tgt)
            if failed is not None:
                self.capacity_error(failed, layout, buffer, tgt, ctx)
                ok = False
                continue
            chains = _chains(mine, layout)
            counts.update({c: 1 for c in chains})
            layout, counts = self.multi_buffer(mine, chains, counts, layout, buffer, tgt)
            spread, failed = self.layout(mine, counts, buffer, tgt, fresh=True)
            if failed is None:
                layout = spread
            for q in layout.placed:
                if q.item.members:  # a chain: its tiles in the slots of the unrolled program
                    slots = _segment_slots(q.item, q.count)
                    assert slots is not None  # (multi_buffer gives a chain no other count)
                    for member, (slot, rotates) in zip(q.item.members, slots):
                        t = member.tensor
                        if rotates:  # from slot `slot` on
                            t.address = (q.partition, q.byte)
                            t.rotate = (member.loops[-1].var, q.count, q.stride, slot)
                        else:
                            t.address = (q.partition, q.byte + slot * q.stride)
                            t.rotate = None
                    continue
                t = q.item.tensor
                t.address = (q.partition, q.byte)
                t.rotate = (q.item.loops[-1].var, q.count, q.stride, 0) if q.count > 1 else None
        if ok and self.check_psum_banks:
            self.check_banks(kernel, tgt, ctx)

    def fit_psum(self, kernel: Kernel, tgt: Target, ctx: PassContext) -> list[_Item]:
        """Make the PSUM tiles fit when program order does not: read each tile out as soon as
        it is final; if that is not enough, spill the fewest tiles (longest wait first) to HBM
        in the original order instead. The items of the kernel as it then is."""
        bodies = _bodies(kernel.body)
        saved = [list(b) for b in bodies]
        if hoist_psum_reads(kernel):
            items = _collect(kernel)  # PSUM tiles now read out as soon as they are final
            if self._psum_fits(items, tgt):
                return items
        for body, ops in zip(bodies, saved):
            body[:] = ops
        spillable = candidates(kernel)
        original = list(kernel.body)

        def fits(n: int) -> bool:
            kernel.body[:] = original
            spill(kernel, spillable[:n])
            return self._psum_fits(_collect(kernel), tgt)

        if not spillable or not fits(len(spillable)):
            kernel.body[:] = original
            hoist_psum_reads(kernel)  # as close as it gets: the capacity error tells the rest
            return _collect(kernel)
        lo, hi = 1, len(spillable)  # fits(hi)
        while lo < hi:
            mid = (lo + hi) // 2
            if fits(mid):
                hi = mid
            else:
                lo = mid + 1
        kernel.body[:] = original
        chosen = spillable[:hi]
        spilled = spill(kernel, chosen)
        self.spill_warning(chosen, spilled, tgt, ctx)
        return _collect(kernel)

    def spill_warning(
        self, chosen: list[Candidate], spilled: int, tgt: Target, ctx: PassContext
    ) -> None:
        first = chosen[0].tensor
        names = sorted({BLOCK_LABEL.sub(r"\1", c.tensor.label or c.tensor.name) for c in chosen})
        total = sum(len(c.reads) for c in chosen)
        ctx.sink.warning(
            "nkic_psum_spill",
            f"spilled {spilled} bytes of PSUM ({len(chosen)} tile(s) of "
            + ", ".join(f"'{n}'" for n in names)
            + f") to HBM: the PSUM tiles live at once need more than the "
            f"{tgt.psum_partition_bytes} bytes per partition of {tgt.name}; each is stored once "
            f"and reloaded into SBUF before each later read ({total} reloads)",
            first.loc,
            hint="read each PSUM tile out before computing the next ones (e.g. compute what "
            "depends on all tiles in a second pass over SBUF copies) to avoid the HBM traffic",
        )

    def _psum_fits(self, items: list[_Item], tgt: Target) -> bool:
        mine = [it for it in items if it.tensor.buffer == "psum"]
        return self.layout(mine, {it: 1 for it in mine}, "psum", tgt)[1] is None

    def layout(
        self,
        items: list[_Item],
        counts: dict[_Item, int],
        buffer: str,
        tgt: Target,
        fresh: bool = False,
    ):
        """(layout, first item that did not fit or None); `fresh` places each tensor in bytes
        no earlier tensor used while there is room (`_Layout.fresh`). A site chain (`_chains`)
        with more than one slot is placed where its first member was, in place of its
        members; with one, its members are placed one by one."""
        layout = _Layout(buffer, tgt, fresh)
        for it in items:
            if it.tensor.fixed_address:
                layout.add_fixed(it)
        rotating = {m: c for c in counts if counts[c] > 1 for m in c.members}
        for it in items:
            if it.tensor.fixed_address:
                continue
            chain = rotating.get(it)
            if chain is not None:
                if it is not chain.members[0]:
                    continue
                it = chain
            if not layout.place(it, counts.get(it, 1)):
                return layout, it
        return layout, None

    def multi_buffer(self, items, chains, counts, layout, buffer: str, tgt: Target):
        """(layout, slot counts): raise slot counts of loop-body tensors and of site chains
        level by level while everything still fits: all at once if possible, else one tensor
        at a time, most-executed first, each trial a fresh layout kept only if it fits. A hot
        inner tile therefore gets its next slot before a rarely executed outer tensor can take
        the space. A symbolic loop's tile and the chain of the same loop unrolled are the same
        unit (executions: the body's, slots: at most the same), so they get the same slots."""
        top = self.max_sbuf_slots if buffer == "sbuf" else self.max_psum_slots
        chained = {m for c in chains for m in c.members}
        hot_first = sorted(
            (it for it in items + chains if it.rotatable and it not in chained),
            key=lambda it: (-it.executions, it.order),
        )
        stuck: set[_Item] = set()  # no room for its next slot count: stays where it is

        def goal(it: _Item, level: int) -> int | None:
            """The slot count `it` tries in the round of `level`: a chain whose segments
            cannot hold `level` slots (eight tiles of one execution on three) tries the next
            count they can hold, in this round, as its unrolled form takes its slot here
            before the less executed tensors take theirs; None when it has that count."""
            for count in range(level, top + 1):
                if not it.members or _segment_slots(it, count) is not None:
                    break
            else:
                return None
            if it.executions < count or counts.get(it, 1) >= count:
                return None
            return count

        for level in range(2, top + 1):
            want = {}
            for it in hot_first:
                if it.executions >= level and it not in stuck:
                    count = goal(it, level)
                    if count is not None:
                        want[it] = count
            if not want:
                continue
            trial = dict(counts)
            trial.update(want)
            new, failed = self.layout(items, trial, buffer, tgt)
            if failed is None:
                counts, layout = trial, new
                continue
            # the parts of one broken chain as one trial: one trial each would make the trials,
            # each a layout of the whole buffer, grow with the phases of the program
            units: dict[object, list[_Item]] = {}
            for it in want:
                units.setdefault(it.part_of if it.part_of >= 0 else it, []).append(it)
            for unit in units.values():
                trial = dict(counts)
                trial.update({it: want[it] for it in unit})
                new, failed = self.layout(items, trial, buffer, tgt)
                if failed is None:
                    counts, layout = trial, new
                else:
                    stuck.update(unit)
        return layout, counts

    def check_fixed(self, items: list[_Item], buffer: str, tgt: Target, ctx: PassContext) -> bool:
        ok = True
        fixed = [it for it in items if it.tensor.fixed_address]
        capacity = tgt.sbuf_partition_bytes if buffer == "sbuf" else tgt.psum_partition_bytes
        bank = tgt.psum_bank_bytes
        for it in fixed:
            t = it.tensor
            p, b = t.address
            n = t.num_partitions
            if p not in start_partitions(n) or p + n > tgt.partitions:
                ok = False
                ctx.sink.error(
                    "nkic_partition_window",
                    f"{buffer} tensor {_name(t)} with {n} partitions cannot start at partition "
                    f"{p}: legal start partitions are " + ", ".join(map(str, start_partitions(n))),
                    it.loc,
                    hint="tensors with more than 64 partitions start at 0; with 33-64 at 0 or "
                    "64; with at most 32 at 0, 32, 64 or 96",
                )
            if buffer == "psum" and b % bank:
                ok = False
                ctx.sink.error(
                    "nkic_psum_bank_align",
                    f"PSUM tensor {_name(t)} is placed at byte {b}, not at the start of a "
                    f"{bank}-byte PSUM bank",
                    it.loc,
                    hint=f"use a multiple of {bank} (bank_id * {bank}) as the byte address",
                )
            _, rel = _footprint(t, 1, tgt)
            if b < 0 or b + rel[-1][1] > capacity:
                ok = False
                ctx.sink.error(
                    f"err_{buffer}_capacity_exceeded",
                    f"{buffer} tensor {_name(t)} placed at byte {b} needs "
                    f"{t.bytes_per_partition} bytes per partition, beyond the {capacity} usable "
                    f"bytes per partition of {tgt.name}",
                    it.loc,
                )
        layout = _Layout(buffer, tgt)
        for it in fixed:
            t = it.tensor
            _, rel = _footprint(t, 1, tgt)
            mine = [(t.address[1] + lo, t.address[1] + hi) for lo, hi in rel]
            n = t.num_partitions
            for q in layout.live_with(it.interval(1)):
                qn = q.item.tensor.num_partitions
                parts = q.partition < t.address[0] + n and t.address[0] < q.partition + qn
                if parts and any(lo < qhi and qlo < hi for qlo, qhi in q.ranges for lo, hi in mine):
                    ok = False
                    other = q.item.tensor
                    ctx.sink.error(
                        "nkic_address_conflict",
                        f"{buffer} tensor {_name(t)} at address {t.address} overlaps "
                        f"{_name(other)} at address {other.address} while both are live",
                        it.loc,
                        hint="move one of the two address= placements",
                        related=(Related(other.loc, "the other tensor is allocated here"),),
                    )
            layout.add_fixed(it)
        return ok

    def capacity_error(self, item: _Item, layout: _Layout, buffer: str, tgt: Target, ctx):
        t = item.tensor
        live = layout.live_with(item.interval(1))
        used = sum(q.item.tensor.bytes_per_partition * q.count for q in live)
        largest = sorted(live, key=lambda q: -q.item.tensor.bytes_per_partition * q.count)
        notes = tuple(
            f"live: {_name(q.item.tensor)} {q.item.tensor.bytes_per_partition * q.count} bytes "
            f"per partition ({_where(q.item.tensor)})"
            for q in largest[:NOTE_TENSORS]
        )
        what = "SBUF" if buffer == "sbuf" else "PSUM"
        hint = (
            "use smaller tiles, or allocate tiles inside the loop that uses them so they "
            "are not live for the whole kernel"
        )
        block = BLOCK_LABEL.match(t.label or "")
        if block:  # a Beta 1 block tensor, one tensor per block
            base = block.group(1)
            live_blocks = sum(1 for q in live if (q.item.tensor.label or "").startswith(base + "["))
            hint = (
                f"{live_blocks + 1} blocks of '{base}' would be live at once here (a block is live "
                "from its first write to its last read): read each block before writing more "
                "of them, or allocate the tensor inside the loop that uses its blocks"
            )
        ctx.sink.error(
            f"err_{buffer}_capacity_exceeded",
            f"cannot allocate {what} tensor {_name(t)} ({t.bytes_per_partition} bytes per "
            f"partition, {t.num_partitions} partitions): {used} bytes per partition are already "
            f"live here and {tgt.name} has {layout.capacity} usable",
            item.loc,
            hint=hint,
            notes=("largest live tensors:",) + notes if notes else (),
        )

    def check_banks(self, kernel: Kernel, tgt: Target, ctx: PassContext) -> None:
        bank = tgt.psum_bank_bytes * tgt.matmul_psum_banks
        for op, loops in kernel.walk():
            if not (isinstance(op, Inst) and op.opcode in MATMULS and runs(loops)):
                continue
            dst = op.operands.get("dst")
            if dst is None or dst.tensor.buffer != "psum" or dst.tensor.address is None:
                continue
            ranges = loop_ranges(loops)
            r = region(dst, ranges).to_bytes(base_byte=dst.tensor.address[1])
            lo, hi = r.free_bounds(ranges)
            if lo // bank == hi // bank:
                continue
            g = bank
            for _, c in r.free.terms:
                g = gcd(g, c)
            width = r.free_hi - r.free_lo + 1
            if (r.free.const + r.free_lo) % g + width <= g:
                continue  # every single access stays inside one bank
            ctx.sink.error(
                "err_psum_bank_violation",
                f"{op.opcode} writes {width} bytes per partition of PSUM tensor "
                f"{_name(dst.tensor)} crossing a {bank}-byte PSUM bank boundary (bytes "
                f"[{lo}, {hi}] of the partition)",
                op.loc,
                hint=f"a matmul output must fit in {bank} bytes of PSUM (at most {bank // 4} "
                "fp32 elements per partition) without crossing that boundary",
            )
