"""The NeuronCore's memories as byte buffers: HBM tensors, SBUF and PSUM, with init tracking.

SBUF is 128 partitions × the target's partition size and PSUM 128 × 16 KiB, both flat uint8
buffers, partition-major. Every byte reads as 0xFF until it is written, a NaN in every float
format (and -1 in every signed integer), and a shadow buffer marks the bytes written so far so
that reading never-written memory is reported instead of silently computing on garbage.

The 0xFF is applied lazily: buffers are allocated without being filled (the operating system
hands out their pages on first touch), and the bytes a read could observe unwritten — the
current contents an instruction reads back from its own outputs, operands of which only a part
was written, and the outputs returned — are set to 0xFF where the shadow says nothing wrote them
(`settle`). Reading an operand of which nothing was written is a fault, so no other read can see
the difference.

An input that no instruction writes, given as an array already in its storage dtype and
layout, is not copied: its buffer is a read-only view of the caller's array (`load`).

The SBUF and PSUM buffers and every shadow come from a small process-wide pool (`_Pool`) and go
back to it when the run ends (`Memory.release`): the next run reuses pages already mapped
instead of faulting in fresh ones, which on a virtual machine costs more than the simulation of
an element-wise kernel itself (a fresh 32 MiB shadow: 50 to 300 ms to touch, measured; a reused
one: under 5 ms to clear). A reused shadow is all zero when it is handed out (SBUF and PSUM
shadows are cleared when the run ends, only in the partition columns it marked; the others
when taken again), and a reused buffer needs no clearing: its stale bytes are unwritten by its
shadow, so they are never read (above). A run that ends in a fault does not give its arrays back.

On chip, a kernel writes and reads the same tiles over and over: SBUF and PSUM remember the
exact regions (offset, shape, strides) whose every element is marked written (`whole`), and
the PSUM regions TensorE wrote last (`by_tensor`), so that reading such a region again, or
marking it again, skips the pass over its shadow. A region leaves `whole` when any of its
elements is marked unwritten (`mark_unwritten` forgets all of its buffer's), and `by_tensor`
is forgotten whenever another engine writes PSUM: the answers are those of the shadow.

A DMA that loads an SBUF tile from an input no instruction writes (so its bytes cannot change
during the run) is not copied when it executes: the tile region keeps a read-only view of the
input (`defer_load`), and a read of exactly that region gets the view. Any other access to SBUF
bytes the region covers (a write, a read of another shape, a gather, a settle) first copies the
deferred bytes in (`_materialize`), so every value read is the one a copy would give; the
written-shadow is marked at the load as for any write.

An HBM tensor's shadow is made only when something needs it (`_Shadows`): until then the
tensor keeps the byte ranges written into it, as long as every write is one contiguous range
(a tile of whole rows). A kernel that writes its output tile by tile and never reads it back
needs no shadow at all: when the run ends, the ranges cover the tensor. Any other use of the
shadow (a strided write, a read of the tensor, a partly written output) makes it from the
ranges first, so every answer is the one the shadow would give.
"""

from __future__ import annotations

import threading

import numpy as np

from nkirt import dtypes
from nkirt.access import AccessPattern, Location
from nkirt.cost.tables import PARTITIONS, PSUM_PARTITION_BYTES, TargetTable
from nkirt.program import Program, TensorInfo

UNWRITTEN = 0xFF
_MARK_DTYPES = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
#: the "written" mark of an element of each size: all its bytes 0xFF
_MARK = {size: (1 << (8 * size)) - 1 for size in _MARK_DTYPES}


def _all_marked(shadow: np.ndarray) -> bool:
    """Whether every byte of a shadow is marked written (a min-reduction, in wide words)."""
    wide = shadow[: shadow.size // 8 * 8].view(np.uint64)
    return (wide.size == 0 or int(wide.min()) == _MARK[8]) and (
        shadow.size % 8 == 0 or int(shadow[wide.size * 8 :].min()) == UNWRITTEN
    )


#: regions each of `Memory.whole`/`by_tensor` remembers at most (forgetting is always safe)
_REMEMBER = 4096


#: SBUF loads `Memory.deferred` holds at most (beyond, they are copied in first)
_DEFERRED = 64


def _remember(regions: set[tuple], region: tuple) -> None:
    if len(regions) >= _REMEMBER:
        regions.clear()
    regions.add(region)


class _Shadows(dict):
    """The shadow of each buffer (key -> array, or None for a buffer written whole). A deferred
    key (`defer`) has no shadow yet, only the byte ranges [lo, hi) marked written so far
    (`ranges`); reading it (`shadow[key]`) makes its shadow from them with `make(key)`."""

    #: ranges a deferred shadow keeps at most before it is made (a bound on the bookkeeping)
    LIMIT = 4096

    def __init__(self, make):
        super().__init__()
        self.make = make
        self.ranges: dict[object, list[tuple[int, int]]] = {}

    def defer(self, key: object) -> None:
        self.ranges[key] = []

    def __setitem__(self, key, value) -> None:
        self.ranges.pop(key, None)
        super().__setitem__(key, value)

    def __missing__(self, key):
        if key not in self.ranges:
            raise KeyError(key)
        shadow = self.make(key)
        for lo, hi in self.ranges.pop(key):
            shadow[lo:hi] = UNWRITTEN
        super().__setitem__(key, shadow)
        return shadow

    def add_range(self, key: object, lo: int, hi: int) -> bool:
        """Record bytes [lo, hi) of a deferred key written (False if `key` is not deferred, or
        keeps too many ranges: then its shadow is made and the caller marks it)."""
        ranges = self.ranges.get(key)
        if ranges is None:
            return False
        if ranges and ranges[-1][1] == lo:  # the next tile of a sequential write
            ranges[-1] = (ranges[-1][0], hi)
        elif len(ranges) < self.LIMIT:
            ranges.append((lo, hi))
        else:
            self[key]  # noqa: B018 (makes the shadow)
            return False
        return True

    def covered(self, key: object, size: int) -> bool | None:
        """For a deferred key: whether its ranges cover bytes [0, size). None if not deferred."""
        ranges = self.ranges.get(key)
        if ranges is None:
            return None
        end = 0
        for lo, hi in sorted(ranges):
            if lo > end:
                return False
            end = max(end, hi)
        return end >= size


def _contiguous(ap: AccessPattern) -> bool:
    """Whether the AP's elements are one contiguous run of bytes in C order."""
    expected = ap.itemsize
    for n, stride in zip(reversed(ap.nums), reversed(ap.view_strides)):
        if n != 1 and stride != expected:
            return False
        expected *= n
    return True


class _Pool:
    """Byte arrays of finished runs, by size, for the next runs of the process (at most
    `limit` bytes held, the largest first given back when over it)."""

    def __init__(self, limit: int):
        self.limit = limit
        #: size -> [(array, whether it is all zero)]
        self.free: dict[int, list[tuple[np.ndarray, bool]]] = {}
        self.held = 0
        self.lock = threading.Lock()

    def take(self, size: int, zeroed: bool) -> np.ndarray:
        """A uint8 array of `size` bytes: all zero if `zeroed`, else of unspecified contents."""
        array, clean = None, False
        with self.lock:
            arrays = self.free.get(size, [])
            if arrays:
                # a zeroed array for a shadow, any other for a buffer (its bytes are not read)
                i = next((i for i, (_, c) in enumerate(arrays) if c == zeroed), len(arrays) - 1)
                array, clean = arrays.pop(i)
                self.held -= size
        if array is None:
            # np.zeros is calloc: its pages are mapped (zeroed) on first touch
            return np.zeros(size, np.uint8) if zeroed else np.empty(size, np.uint8)
        if zeroed and not clean:
            array.fill(0)
        return array

    def give(self, arrays: list[tuple[np.ndarray, bool]]) -> None:
        """Keep (array, whether it is all zero) pairs for later runs, within the limit."""
        with self.lock:
            for array, clean in arrays:
                if self.held + array.size > self.limit:
                    continue
                self.free.setdefault(array.size, []).append((array, clean))
                self.held += array.size

    def clear(self) -> None:
        with self.lock:
            self.free.clear()
            self.held = 0


#: SBUF + PSUM and their shadows take about 60 MiB; the rest is for HBM tensors' shadows
POOL = _Pool(256 << 20)


class Memory:
    """Byte buffers of one simulated NeuronCore and the 'written' shadow of each."""

    def __init__(self, program: Program, table: TargetTable, written: frozenset[int] = frozenset()):
        """`written`: the ids of the tensors some instruction writes (inputs outside it may be
        borrowed from the caller without a copy)."""
        self.program = program
        #: the arrays taken from `POOL`, given back by `release`
        self.pooled: list[np.ndarray] = []
        # unfilled: see the module docstring (0xFF is applied where a read can observe it)
        self.buffers: dict[object, np.ndarray] = {
            "sbuf": self._take(PARTITIONS * table.sbuf_partition_bytes, zeroed=False),
            "psum": self._take(PARTITIONS * PSUM_PARTITION_BYTES, zeroed=False),
        }
        inputs = {tensor.id for tensor in program.inputs}
        outputs = {tensor.id for tensor in program.outputs}
        #: inputs whose buffer may be the caller's array: never written, never returned
        self.borrowable = inputs - written - outputs
        for tensor in program.tensors.values():
            if not tensor.on_chip and tensor.id not in self.borrowable:
                self.buffers[tensor.id] = np.empty(tensor.nbytes, np.uint8)
        # a borrowable input's buffer is made when it is loaded or filled (`_input_buffer`)
        #: the 'written' shadow of each buffer; None for a buffer written whole (an input once
        #: loaded, a constant): it needs no shadow, which keeps a run's memory at about the
        #: kernel's own tensors
        #: (an HBM tensor's shadow is made when first needed: `_Shadows`)
        self.written = _Shadows(lambda key: self._take(self.buffers[key].size, zeroed=True))
        for key, buf in self.buffers.items():
            if key in inputs:
                self.written[key] = None
            elif key in ("sbuf", "psum"):
                self.written[key] = self._take(buf.size, zeroed=True)
            else:
                self.written.defer(key)
        self.written.update(dict.fromkeys(self.borrowable))
        #: PSUM bytes whose last writer was TensorE (matmul/transpose): only those may be
        #: accumulated onto by a matmul (Hardware §4: accumulation is controlled only by TensorE).
        self.psum_by_tensor = self._take(PARTITIONS * PSUM_PARTITION_BYTES, zeroed=True)
        #: per on-chip buffer, the regions (`_region`) whose every element is marked written
        self.whole: dict[object, set[tuple]] = {"sbuf": set(), "psum": set()}
        #: the PSUM regions whose every byte TensorE wrote last
        self.by_tensor: set[tuple] = set()
        #: SBUF regions (`_region`) loaded from an input nothing writes and not copied yet:
        #: region -> (its footprint, the input's elements as a read-only view); no two of them
        #: share a byte
        self.deferred: dict[tuple, tuple[Location, np.ndarray]] = {}
        #: per on-chip shadow, the byte columns [lo, hi) of a partition that any mark touched
        #: ("by_tensor": `psum_by_tensor`): `release` clears only those to give them back zeroed
        self.dirty: dict[object, list[int]] = {"sbuf": [0, 0], "psum": [0, 0], "by_tensor": [0, 0]}
        for tensor in program.tensors.values():
            if tensor.data is not None:
                self.buffers[tensor.id][:] = np.frombuffer(tensor.data, np.uint8)
                self.written[tensor.id] = None

    def _take(self, size: int, zeroed: bool) -> np.ndarray:
        array = POOL.take(size, zeroed)
        self.pooled.append(array)
        return array

    def _touch(self, name: str, where: Location | None) -> None:
        """Widen the dirty columns of an on-chip shadow to a mark at `where` (None, or a
        footprint that is not a box of partition columns: all of them)."""
        dirty = self.dirty[name]
        if where is None or where.anchor == -1:
            dirty[0], dirty[1] = 0, 1 << 62
        elif dirty[0] == dirty[1]:
            dirty[0], dirty[1] = where.col_lo, where.col_hi
        else:
            dirty[0], dirty[1] = min(dirty[0], where.col_lo), max(dirty[1], where.col_hi)

    def release(self) -> None:
        """Give the pooled arrays back (the run is over: nothing reads this memory again; the
        outputs returned are HBM buffers, never pooled). The on-chip shadows go back zeroed,
        their dirty columns cleared; the others are cleared when taken again."""
        shadows = {
            id(self.written["sbuf"]): "sbuf",
            id(self.written["psum"]): "psum",
            id(self.psum_by_tensor): "by_tensor",
        }
        given = []
        for array in self.pooled:
            name = shadows.get(id(array))
            if name is not None:
                lo, hi = self.dirty[name]
                if lo < hi:
                    array.reshape(PARTITIONS, -1)[:, lo:hi] = 0
            given.append((array, name is not None))
        POOL.give(given)
        self.pooled = []
        self.deferred = {}
        self.buffers, self.written = {}, _Shadows(None)

    def share(self, core0: Memory) -> None:
        """Make this core's shared tensors (`TensorInfo.shared`) core 0's memory (once core 0's
        inputs are loaded: the shadow of a loaded input is replaced, not updated)."""
        for tensor in self.program.tensors.values():
            if tensor.shared is not None:
                self.buffers[tensor.id] = core0.buffers[tensor.shared]
                self.written[tensor.id] = core0.written[tensor.shared]

    @staticmethod
    def _region(ap: AccessPattern, where: Location) -> tuple:
        return (where.byte, ap.nums, ap.view_strides, ap.itemsize)

    @staticmethod
    def key(ap: AccessPattern) -> object:
        return ap.buffer if ap.buffer != "hbm" else ap.tensor.id

    def load(self, tensor_id: int, array: np.ndarray) -> None:
        """Place an input tensor's bytes in its HBM buffer: a read-only view of `array` (no
        copy) when no instruction writes the tensor and `array` is C-contiguous, else a copy."""
        data = np.ascontiguousarray(array).view(np.uint8).reshape(-1)
        if tensor_id in self.borrowable and data.size == self.program.tensors[tensor_id].nbytes:
            data.flags.writeable = False  # `data` is a view object of our own, not `array`
            self.buffers[tensor_id] = data
        else:
            self._input_buffer(tensor_id)[:] = data
        self.written[tensor_id] = None

    def load_in_place(self, tensor_id: int) -> None:
        """An input whose bytes were written through `tensor_view` is now loaded."""
        self.written[tensor_id] = None

    def _input_buffer(self, tensor_id: int) -> np.ndarray:
        if tensor_id not in self.buffers:
            self.buffers[tensor_id] = np.empty(self.program.tensors[tensor_id].nbytes, np.uint8)
        return self.buffers[tensor_id]

    def tensor_view(self, tensor: TensorInfo) -> np.ndarray:
        """An HBM tensor's buffer as a writable array of its storage dtype and shape (no copy):
        inputs are filled in place, and outputs returned without a copy."""
        storage = dtypes.storage_dtype(tensor.dtype)
        return self._input_buffer(tensor.id).view(storage).reshape(tensor.shape)

    def settle(self, ap: AccessPattern, where: Location) -> None:
        """Make the AP's never-written bytes read as 0xFF (before a read that may observe them;
        the caller knows some are unwritten: `is_written` said so)."""
        shadow = self.written[self.key(ap)]
        if shadow is None:
            return
        if self.deferred and ap.buffer == "sbuf":
            self._materialize(where)
        shape, strides = (*ap.nums, ap.itemsize), (*ap.view_strides, 1)
        data = np.ndarray(shape, np.uint8, self.buffers[self.key(ap)], where.byte, strides)
        marks = np.ndarray(shape, np.uint8, shadow, where.byte, strides)
        np.bitwise_or(data, np.invert(marks), out=data)

    def settle_tensor(self, tensor: TensorInfo) -> None:
        """Make a whole HBM tensor's never-written bytes read as 0xFF (an output returned)."""
        if self.written.covered(tensor.id, self.buffers[tensor.id].size):
            return
        shadow = self.written[tensor.id]
        if shadow is None or shadow.size == 0 or _all_marked(shadow):
            return
        np.putmask(self.buffers[tensor.id], shadow == 0, UNWRITTEN)

    def tensor_written(self, tensor: TensorInfo) -> bool:
        """Whether every byte of an HBM tensor was written."""
        if self.written.covered(tensor.id, self.buffers[tensor.id].size):
            return True
        shadow = self.written[tensor.id]
        return shadow is None or shadow.size == 0 or _all_marked(shadow)

    def tensor_array(self, tensor: TensorInfo) -> np.ndarray:
        """A copy of an HBM tensor's contents in its storage dtype and shape."""
        return self.tensor_view(tensor).copy()

    def defer_load(self, ap: AccessPattern, where: Location, values: np.ndarray) -> None:
        """Let the SBUF elements of `ap` at `where` hold `values` — a read-only view of an input
        that no instruction writes, of the AP's shape and dtype — without copying them yet."""
        region = self._region(ap, where)
        self.deferred.pop(region, None)  # the load replaces an earlier one of that region
        if len(self.deferred) >= _DEFERRED:
            self._materialize(None)
        else:
            self._materialize(where)
        self.deferred[region] = (where, values)

    def _materialize(self, where: Location | None) -> None:
        """Copy into SBUF the deferred loads that may share a byte with `where` (all: None)."""
        deferred = self.deferred
        if where is None or where.anchor == -1:  # (a footprint that is not a box: all)
            hits = list(deferred)
        else:  # the loads whose box may share a byte with `where`'s
            row_lo, row_hi, col_lo, col_hi = where.row_lo, where.row_hi, where.col_lo, where.col_hi
            hits = [
                region
                for region, (placed, _) in deferred.items()
                if placed.anchor == -1
                or (
                    placed.row_lo <= row_hi
                    and row_lo <= placed.row_hi
                    and placed.col_lo < col_hi
                    and col_lo < placed.col_hi
                )
            ]
        if not hits:
            return
        sbuf = self.buffers["sbuf"]
        for region in hits:
            values = deferred.pop(region)[1]
            byte, nums, strides, _ = region
            np.ndarray(nums, values.dtype, sbuf, byte, strides)[...] = values

    def view(self, ap: AccessPattern, where: Location, writable: bool) -> np.ndarray:
        """The AP's elements as a strided numpy view of the memory (no copy)."""
        if self.deferred and ap.buffer == "sbuf":
            if not writable:
                loaded = self.deferred.get(self._region(ap, where))
                if loaded is not None and loaded[1].dtype == ap.np_dtype:
                    return loaded[1]
            self._materialize(where)
        array = np.ndarray(
            ap.nums,
            ap.np_dtype,
            buffer=self.buffers[self.key(ap)],
            offset=where.byte,
            strides=ap.view_strides,
        )
        if not writable:
            array.flags.writeable = False
        return array

    def _marks(self, ap: AccessPattern, where: Location) -> np.ndarray:
        return np.ndarray(
            ap.nums,
            _MARK_DTYPES[ap.itemsize],
            buffer=self.written[self.key(ap)],
            offset=where.byte,
            strides=ap.view_strides,
        )

    def gather(self, ap: AccessPattern, elements: np.ndarray, rows: np.ndarray):
        """(the elements at flat indices `elements` of a dynamic AP's tensor — zeros in the
        first-dimension entries not in `rows` —, whether all gathered ones were written)."""
        key, marks = self.key(ap), _MARK_DTYPES[ap.itemsize]
        if self.deferred and key == "sbuf":
            self._materialize(None)
        values = np.zeros(elements.shape, ap.np_dtype)
        values[rows] = self.buffers[key].view(ap.np_dtype)[elements[rows]]
        if self.written[key] is None:
            return values, True
        written = self.written[key].view(marks)[elements[rows]] == _MARK[ap.itemsize]
        return values, bool(written.all())

    def scatter(self, ap: AccessPattern, elements: np.ndarray, values: np.ndarray) -> None:
        """Write `values` at flat indices `elements` of a dynamic AP's tensor."""
        key, marks = self.key(ap), _MARK_DTYPES[ap.itemsize]
        if self.deferred and key == "sbuf":
            self._materialize(None)
        self.buffers[key].view(ap.np_dtype)[elements] = values
        if self.written[key] is not None:
            self.written[key].view(marks)[elements] = _MARK[ap.itemsize]
            if key in self.dirty:
                self._touch(key, None)

    def mark_written(self, ap: AccessPattern, where: Location, rows=Ellipsis) -> None:
        """Mark the AP's elements written (only the first-dimension entries `rows` if given)."""
        key = self.key(ap)
        if rows is Ellipsis and key in self.written.ranges and _contiguous(ap):
            size = int(np.prod(ap.nums)) * ap.itemsize
            if self.written.add_range(key, where.byte, where.byte + size):
                return
        if self.written[key] is None:
            return
        whole = self.whole.get(key)
        if whole is None or rows is not Ellipsis:
            if key in self.dirty:
                self._touch(key, where)
            self._marks(ap, where)[rows] = _MARK[ap.itemsize]
            return
        region = self._region(ap, where)
        if region not in whole:
            self._touch(key, where)
            self._marks(ap, where)[...] = _MARK[ap.itemsize]
            _remember(whole, region)

    def _psum_marks(self, ap: AccessPattern, where: Location) -> np.ndarray:
        return np.ndarray(
            ap.nums,
            _MARK_DTYPES[ap.itemsize],
            buffer=self.psum_by_tensor,
            offset=where.byte,
            strides=ap.view_strides,
        )

    def mark_psum_writer(self, ap: AccessPattern, where: Location, by_tensor: bool) -> None:
        """Record whether TensorE wrote these PSUM bytes last."""
        if not by_tensor:
            self.by_tensor.clear()
            self._psum_marks(ap, where)[...] = 0
            return
        region = self._region(ap, where)
        if region not in self.by_tensor:
            self._touch("by_tensor", where)
            self._psum_marks(ap, where)[...] = _MARK[ap.itemsize]
            _remember(self.by_tensor, region)

    def written_by_tensor(self, ap: AccessPattern, where: Location) -> bool:
        region = self._region(ap, where)
        if region in self.by_tensor:
            return True
        marks = self._psum_marks(ap, where)
        if marks.size == 0 or int(marks.min()) == _MARK[marks.itemsize]:
            _remember(self.by_tensor, region)
            return True
        return False

    def any_written(self, ap: AccessPattern, where: Location) -> bool:
        """Whether some element of the AP was written (`is_written`: all of them)."""
        key = self.key(ap)
        if self.written[key] is None or self._region(ap, where) in self.whole.get(key, ()):
            return True
        marks = self._marks(ap, where)
        return marks.size == 0 or int(marks.max()) == _MARK[marks.itemsize]

    def unwritten_as_zero(self, ap: AccessPattern, where: Location) -> np.ndarray:
        """A copy of the AP's elements whose never-written bytes read as 0x00 instead of 0xFF
        (the second value of unwritten memory that `Executor` computes with, to find which
        results depend on it)."""
        data = self.view(ap, where, writable=False).copy()
        shadow = self.written[self.key(ap)]
        if shadow is not None:
            shape, strides = (*ap.nums, ap.itemsize), (*ap.view_strides, 1)
            marks = np.ndarray(shape, np.uint8, shadow, where.byte, strides)
            np.bitwise_and(
                data.view(np.uint8).reshape(shape), marks, out=data.view(np.uint8).reshape(shape)
            )
        return data

    def mark_unwritten(self, ap: AccessPattern, where: Location, elements: np.ndarray) -> None:
        """Mark the AP's `elements` (a boolean mask of its shape) never written again: their
        values were computed from unwritten memory."""
        key = self.key(ap)
        if self.written[key] is not None:
            self._marks(ap, where)[elements] = 0
            if key in self.whole:
                self.whole[key].clear()

    def is_written(self, ap: AccessPattern, where: Location) -> bool:
        key = self.key(ap)
        if self.written[key] is None:
            return True
        whole = self.whole.get(key)
        if whole is not None:
            region = self._region(ap, where)
            if region in whole:
                return True
        marks = self._marks(ap, where)
        # a min-reduction allocates nothing (a comparison would build a bool array)
        if marks.size == 0 or int(marks.min()) == _MARK[marks.itemsize]:
            if whole is not None:
                _remember(whole, region)
            return True
        return False
