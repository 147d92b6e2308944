"""The NeuronCore's memories as byte buffers: HBM tensors, SBUF and PSUM, with init tracking.

SBUF is 128 partitions × the target's partition size and PSUM 128 × 16 KiB, both flat uint8
buffers, partition-major. Every byte starts as 0xFF, a NaN in every float format (and -1 in
every signed integer), and a shadow buffer marks the bytes written so far so that reading
never-written memory is reported instead of silently computing on garbage.
"""

from __future__ import annotations

import numpy as np

from nkirt import dtypes
from nkirt.access import AccessPattern, Location
from nkirt.cost.tables import PARTITIONS, PSUM_PARTITION_BYTES, TargetTable
from nkirt.program import Program, TensorInfo

UNWRITTEN = 0xFF
_MARK_DTYPES = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


class Memory:
    """Byte buffers of one simulated NeuronCore and the 'written' shadow of each."""

    def __init__(self, program: Program, table: TargetTable):
        self.buffers: dict[object, np.ndarray] = {
            "sbuf": np.full(PARTITIONS * table.sbuf_partition_bytes, UNWRITTEN, np.uint8),
            "psum": np.full(PARTITIONS * PSUM_PARTITION_BYTES, UNWRITTEN, np.uint8),
        }
        for tensor in program.tensors.values():
            if not tensor.on_chip:
                self.buffers[tensor.id] = np.full(tensor.nbytes, UNWRITTEN, np.uint8)
        self.written = {key: np.zeros_like(buf) for key, buf in self.buffers.items()}
        #: PSUM bytes whose last writer was TensorE (matmul/transpose): only those may be
        #: accumulated onto by a matmul (Hardware §4: accumulation is controlled only by TensorE).
        self.psum_by_tensor = np.zeros(PARTITIONS * PSUM_PARTITION_BYTES, np.uint8)
        for tensor in program.tensors.values():
            if tensor.data is not None:
                self.buffers[tensor.id][:] = np.frombuffer(tensor.data, np.uint8)
                self.written[tensor.id][:] = UNWRITTEN

    @staticmethod
    def key(ap: AccessPattern) -> object:
        return ap.buffer if ap.buffer != "hbm" else ap.tensor.id

    def load(self, tensor_id: int, array: np.ndarray) -> None:
        """Place an input tensor's bytes in its HBM buffer."""
        self.buffers[tensor_id][:] = np.ascontiguousarray(array).view(np.uint8).reshape(-1)
        self.written[tensor_id][:] = UNWRITTEN

    def tensor_array(self, tensor: TensorInfo) -> np.ndarray:
        """A copy of an HBM tensor's contents in its storage dtype and shape."""
        storage = dtypes.storage_dtype(tensor.dtype)
        return self.buffers[tensor.id].view(storage).reshape(tensor.shape).copy()

    def view(self, ap: AccessPattern, where: Location, writable: bool) -> np.ndarray:
        """The AP's elements as a strided numpy view of the memory (no copy)."""
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
        values = np.zeros(elements.shape, ap.np_dtype)
        values[rows] = self.buffers[key].view(ap.np_dtype)[elements[rows]]
        written = self.written[key].view(marks)[elements[rows]] == np.iinfo(marks).max
        return values, bool(written.all())

    def scatter(self, ap: AccessPattern, elements: np.ndarray, values: np.ndarray) -> None:
        """Write `values` at flat indices `elements` of a dynamic AP's tensor."""
        key, marks = self.key(ap), _MARK_DTYPES[ap.itemsize]
        self.buffers[key].view(ap.np_dtype)[elements] = values
        self.written[key].view(marks)[elements] = np.iinfo(marks).max

    def mark_written(self, ap: AccessPattern, where: Location, rows=Ellipsis) -> None:
        """Mark the AP's elements written (only the first-dimension entries `rows` if given)."""
        self._marks(ap, where)[rows] = np.iinfo(_MARK_DTYPES[ap.itemsize]).max

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
        marks = self._psum_marks(ap, where)
        marks[...] = np.iinfo(marks.dtype).max if by_tensor else 0

    def written_by_tensor(self, ap: AccessPattern, where: Location) -> bool:
        marks = self._psum_marks(ap, where)
        return bool((marks == np.iinfo(marks.dtype).max).all())

    def is_written(self, ap: AccessPattern, where: Location) -> bool:
        marks = self._marks(ap, where)
        return bool((marks == np.iinfo(marks.dtype).max).all())
