"""Access patterns compiled once per operand: per-iteration offsets, bounds, views, footprints.

An AP addresses elements (in the AP's dtype) of its tensor's row-major storage; on chip the
first pattern pair walks partitions. `locate` turns one iteration's offset into a `Location`:
where the strided view starts in its memory buffer and the footprint (rows × byte columns)
that the semaphore checker compares. Rows are absolute partitions on chip and rows of the
tensor's last dimension in HBM, so footprints of 2-D tiles are exact boxes.
"""

from __future__ import annotations

from math import gcd, prod
from typing import Any, NamedTuple

import numpy as np

from nkirt import dtypes
from nkirt.cost.shapes import OperandShape
from nkirt.cost.tables import PSUM_BANK_BYTES
from nkirt.program import TensorInfo

#: Footprint buckets, so that the semaphore checker compares only nearby accesses.
SBUF_BUCKET_BYTES = 4096
PSUM_BUCKET_BYTES = PSUM_BANK_BYTES
HBM_BUCKET_ROWS = 128
#: Placements an AP remembers before it forgets them all: a loop nest revisits the same
#: offsets (an HBM operand tiled over a [8192, 4096] tensor: 2,048 of them); the bound keeps
#: memory small (~300 bytes each) for programs of many APs.
PLACEMENTS = 4096


class BoundsError(Exception):
    """An access pattern leaves its tensor in this iteration (the caller names the instruction)."""


class Location(NamedTuple):
    """One iteration's placement of an AP."""

    #: Byte offset of element [0, 0, …] in the AP's memory buffer.
    byte: int
    #: Footprint box: rows [row_lo, row_hi] (inclusive), bytes [col_lo, col_hi) of each row.
    row_lo: int
    row_hi: int
    col_lo: int
    col_hi: int
    #: Touched bytes lie at `anchor` + k·lattice + [0, itemsize); -1: any byte of the box.
    anchor: int


class AccessPattern:
    """The static part of one AP operand; `locate(env)` is the per-iteration part."""

    __slots__ = (
        "name",
        "tensor",
        "dtype",
        "np_dtype",
        "itemsize",
        "buffer",
        "const",
        "terms",
        "nums",
        "steps",
        "shape",
        "row_elems",
        "rows",
        "base_row",
        "base_byte",
        "part_step",
        "part_span",
        "free_lo",
        "free_hi",
        "row_lo",
        "row_hi",
        "col_lo",
        "col_hi",
        "partition_bytes",
        "rotate",
        "view_strides",
        "lattice",
        "row_period",
        "row_reach",
        "dense",
        "bucket",
        "dynamic",
        "dynamic_unit",
        "key",
        "placed",
    )

    def __init__(self, name: str, raw: dict[str, Any], tensor: TensorInfo, partition_bytes: int):
        self.name = name
        self.tensor = tensor
        self.dtype = raw.get("dtype", tensor.dtype)
        self.np_dtype = dtypes.storage_dtype(self.dtype)
        self.itemsize = self.np_dtype.itemsize
        self.buffer = tensor.buffer if tensor.on_chip else "hbm"
        #: the memory the semaphore checker files this AP's accesses under (nkirt.memory)
        self.key = self.buffer if tensor.on_chip else tensor.id
        #: element offset, or (offset, rotation slot) -> Location: the placements met so far
        #: (bounded)
        self.placed: dict[int | tuple[int, int], Location] = {}
        self.const, self.terms = _offset(raw.get("offset", 0))
        self.steps = tuple(pair[0] for pair in raw["pattern"])
        self.nums = tuple(pair[1] for pair in raw["pattern"])
        isz = self.itemsize
        self.rotate = tensor.rotate
        if tensor.on_chip:
            row_bytes = tensor.partition_bytes
            self.rows = tensor.shape[0]
            self.base_row, self.base_byte = tensor.address
            free = list(zip(self.steps[1:], self.nums[1:]))
            dynamic = raw.get("dynamic")
            if dynamic is not None and dynamic["kind"] == "indirect":
                # tensor indirection: the footprint is the whole viewed free dimension
                free = [(dynamic["unit"], dynamic["extent"])]
            self.bucket = SBUF_BUCKET_BYTES if self.buffer == "sbuf" else PSUM_BUCKET_BYTES
        else:
            row_bytes = tensor.shape[-1] * tensor.itemsize if tensor.shape else tensor.itemsize
            self.rows = max(1, tensor.nbytes // row_bytes)
            self.base_row, self.base_byte = 0, 0
            free = list(zip(self.steps, self.nums))
            self.bucket = HBM_BUCKET_ROWS
        self.row_elems = row_bytes // isz
        if tensor.on_chip:
            self.part_step = self.steps[0] // self.row_elems if self.nums[0] > 1 else 1
            self.part_span = (self.nums[0] - 1) * self.part_step
            self.view_strides = (self.part_step * partition_bytes,) + tuple(
                s * isz for s, _ in free
            )
            row_dims = [(self.part_step, self.nums[0])]
            col_dims = free
        else:
            self.part_step, self.part_span = 1, 0
            self.view_strides = tuple(s * isz for s in self.steps)
            # HBM footprints split into row-moving dims (steps of whole rows) and the rest
            row_dims = [(s // self.row_elems, n) for s, n in free if s % self.row_elems == 0]
            col_dims = [(s, n) for s, n in free if s % self.row_elems != 0]
        self.partition_bytes = partition_bytes
        self.free_lo = sum(min(0, s * (n - 1)) for s, n in free)
        self.free_hi = sum(max(0, s * (n - 1)) for s, n in free)
        self.row_lo = sum(min(0, s * (n - 1)) for s, n in row_dims)
        self.row_hi = sum(max(0, s * (n - 1)) for s, n in row_dims)
        self.col_lo = sum(min(0, s * (n - 1)) for s, n in col_dims)
        self.col_hi = sum(max(0, s * (n - 1)) for s, n in col_dims)
        self.lattice = isz
        moving = [abs(s) for s, n in col_dims if n > 1 and s]
        if moving:
            self.lattice = 0
            for step in moving:
                self.lattice = gcd(self.lattice, step * isz)
            self.lattice = max(self.lattice, isz)
        self.row_period, self.row_reach = _row_period(row_dims)
        cols = prod(n for s, n in col_dims if s)
        rows = prod(n for s, n in row_dims if s)
        self.dense = cols == self.col_hi - self.col_lo + 1 and rows == self.row_hi - self.row_lo + 1
        self.shape = OperandShape(
            self.buffer,
            self.dtype,
            self.nums,
            self.steps,
            self.part_step if tensor.on_chip else 1,
        )
        #: runtime offset {"kind", "index", "dim"} (docs/neff-format.md), and the elements (of
        #: this AP's dtype) that one index unit moves: one row (vector) or a block of `dim`.
        self.dynamic = raw.get("dynamic")
        self.dynamic_unit = 0
        if self.dynamic is not None and "unit" in self.dynamic:
            self.dynamic_unit = self.dynamic["unit"]
        elif self.dynamic is not None:
            first = 1 if self.dynamic["kind"] == "vector" else self.dynamic["dim"] + 1
            self.dynamic_unit = prod(tensor.shape[first:]) * tensor.itemsize // isz

    def moved(self, raw_offset) -> AccessPattern:
        """This AP at another offset (a raw NEFF `offset`: an int or an affine `{"c", "t"}`):
        every static field shared, none recomputed (a program names the same tile pattern
        at many offsets), with placements of its own."""
        twin = object.__new__(AccessPattern)
        for name in _SHARED_FIELDS:
            setattr(twin, name, getattr(self, name))
        twin.placed = {}
        twin.const, twin.terms = _offset(raw_offset)
        return twin

    def dynamic_elements(self, env: dict[str, int], index: np.ndarray):
        """(element indices of a dynamic AP, shape `nums`, into its tensor's flat storage in
        this AP's dtype; mask of the first dimension's entries whose elements all lie inside
        the tensor). `index` holds the index tile's values: one per entry of the first
        dimension (vector) or one (scalar)."""
        off = self.const + sum(coeff * env[var] for var, coeff in self.terms)
        grids = np.ix_(*(np.arange(n) for n in self.nums))
        inner = sum(g * s for g, s in zip(grids[1:], self.steps[1:]))
        index = index.reshape(-1).astype(np.int64)
        if self.dynamic["kind"] == "vector":
            first = (index * self.dynamic_unit).reshape((-1,) + (1,) * (len(self.nums) - 1))
        else:
            first = grids[0] * self.steps[0] + int(index[0]) * self.dynamic_unit
        elements = np.broadcast_to(off + first + inner, self.nums)
        total = self.tensor.nbytes // self.itemsize
        inside = ((elements >= 0) & (elements < total)).reshape(self.nums[0], -1).all(axis=1)
        return elements, inside

    def locate(self, env: dict[str, int], executions: dict[str, int]) -> Location:
        """Place the AP for loop variables `env`; `executions` counts the executions of each
        enclosing loop's body so far (it selects the slot of a rotating tensor). A dynamic AP
        may touch any element: its footprint is the whole tensor, its bounds checked when its
        index is known (`dynamic_elements`)."""
        off = self.const
        for var, coeff in self.terms:
            off += coeff * env[var]
        # placements are remembered by offset, and by (offset, slot) for a rotating tensor
        key = off
        if self.rotate is not None and self.buffer != "hbm":
            var, slots, _, phase = self.rotate
            key = (off, (executions[var] + phase) % slots)
        placed = self.placed.get(key)
        if placed is None:
            placed = self._place(off, key[1] if type(key) is tuple else 0)
            if len(self.placed) >= PLACEMENTS:
                self.placed.clear()
            self.placed[key] = placed
        return placed

    def _place(self, off: int, slot: int) -> Location:
        """The Location of element offset `off` in rotation slot `slot` (BoundsError if it
        leaves the tensor)."""
        isz = self.itemsize
        if self.dynamic is not None and not self.tensor.on_chip:
            return Location(off * isz, 0, self.rows - 1, 0, self.row_elems * isz, -1)
        row, col = divmod(off, self.row_elems)
        if self.buffer != "hbm":
            base_byte = self.base_byte
            if self.rotate is not None:
                base_byte += slot * self.rotate[2]
            lo, hi = row + self.row_lo, row + self.row_hi
            if lo < 0 or hi >= self.rows:
                raise BoundsError(
                    f"partitions {lo}..{hi} of a {self.rows}-partition tensor (offset {off})"
                )
            if col + self.free_lo < 0 or col + self.free_hi >= self.row_elems:
                raise BoundsError(
                    f"elements {col + self.free_lo}..{col + self.free_hi} of a "
                    f"{self.row_elems}-element partition (offset {off})"
                )
            base = base_byte + col * isz
            return Location(
                (self.base_row + row) * self.partition_bytes + base,
                self.base_row + lo,
                self.base_row + hi,
                base + self.col_lo * isz,
                base + (self.col_hi + 1) * isz,
                base,
            )
        total = self.rows * self.row_elems
        if off + self.free_lo < 0 or off + self.free_hi >= total:
            raise BoundsError(
                f"elements {off + self.free_lo}..{off + self.free_hi} (bytes "
                f"{(off + self.free_lo) * isz}..{(off + self.free_hi + 1) * isz - 1}) of a "
                f"{total}-element tensor of {total * isz} bytes (offset {off})"
            )
        if col + self.col_lo < 0 or col + self.col_hi >= self.row_elems:
            # the access runs across rows: its footprint is every row it reaches, whole, and
            # the column lattice does not apply (anchor -1)
            first, last = off + self.free_lo, off + self.free_hi
            return Location(
                off * isz,
                first // self.row_elems,
                last // self.row_elems,
                0,
                self.row_elems * isz,
                -1,
            )
        return Location(
            off * isz,
            row + self.row_lo,
            row + self.row_hi,
            (col + self.col_lo) * isz,
            (col + self.col_hi + 1) * isz,
            col * isz,
        )


def _offset(raw) -> tuple[int, tuple[tuple[str, int], ...]]:
    """(constant, ((loop variable, coefficient), ...)) of a raw NEFF `offset`."""
    if isinstance(raw, dict):
        return raw["c"], tuple((var, coeff) for var, coeff in raw["t"].items() if coeff)
    return raw, ()


#: what `AccessPattern.moved` shares: everything but the offset and the placements met so far
_SHARED_FIELDS = tuple(
    name for name in AccessPattern.__slots__ if name not in ("const", "terms", "placed")
)


def _row_period(row_dims: list[tuple[int, int]]) -> tuple[int, int]:
    """(P, r): the rows an AP touches (from its first row) lie in k·P + [0, r), P the largest
    row step, when the other row dims span fewer than P rows (even and odd rows of a tensor
    have P = 2, r = 1); (0, 0) when they do not or a step is negative."""
    moving = sorted((s, n) for s, n in row_dims if n > 1 and s)
    if not moving or moving[0][0] < 0:
        return 0, 0
    period = moving[-1][0]
    reach = 1 + sum(s * (n - 1) for s, n in moving[:-1])
    return (period, reach) if reach <= period else (0, 0)
