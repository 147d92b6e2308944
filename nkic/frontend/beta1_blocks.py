"""Beta 1 block dimensions: `nl.ndarray((B0, B1, nl.par_dim(P), F), buffer=nl.sbuf)`.

The dimensions before `nl.par_dim` are *block* dimensions: the tensor is B0 x B1 tiles of
shape (P, F), each tile spread over the same P partitions. Beta 1 treated a block dimension as
a list of tiles managed by the compiler: each tile gets its own address and is live only from
its first write to its last read, so the blocks need not all fit in memory at once
(https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/migration/index.html, "Removing
block dimensions from NKI kernels").

* In SBUF, nkic stores the tensor as one on-chip tensor (P, B0, B1, F), partition first, and a
  `BlockTensor` keeps the Beta 1 order for indexing: `t[i, j]` or `t[i, j, ip, jf]` (i, j
  compile-time values or loop variables) is the tile (i, j), a view of that tensor.
* In PSUM (8 banks of 2 KiB per partition, where block tensors are routinely larger than the
  whole buffer, e.g. (8, par_dim(128), 512) float32 takes all 8 banks), a `BlockList` holds one
  tensor per block, as Beta 1 did: the allocator gives each block its own live range and bank,
  and reports a capacity error only when more blocks are live at once than fit. A block index
  must then be a compile-time value: a loop that indexes blocks with its variable is unrolled.
  SBUF tensors get a `BlockList` too when they are larger than SBUF, or placed by a Beta 1
  direct allocation (`ncc.sbuf.mod_alloc(num_free_tiles=...)`, whose blocks share a few
  physical tiles, so the blocks were never meant to be live at once).

Indexing that keeps a block dimension whole (`t[:, j]`) is reported as unsupported rather than
computed in another layout.
"""

from __future__ import annotations

import functools
import inspect
import itertools
from dataclasses import dataclass

from ..ir.affine import Affine
from ..ir.types import DTYPES
from .tensors import TensorView
from .values import BufferValue, UserError, norm_int


class ParDim(int):
    """`nl.par_dim(n)`: the size `n`, marked as the partition dimension of a shape."""


@dataclass
class BlockTensor:
    """An on-chip tensor with block dimensions: `storage` is (P, *blocks, *free)."""

    storage: TensorView
    blocks: int  # how many block dimensions precede the partition dimension

    @property
    def shape(self) -> tuple[int, ...]:
        s = self.storage.shape
        return (*s[1 : 1 + self.blocks], s[0], *s[1 + self.blocks :])

    @property
    def dtype(self) -> str:
        return self.storage.dtype

    def key(self, key) -> tuple:
        """The storage's index for `key` in Beta 1 order (block items moved after the
        partition item); block items must be compile-time values or loop variables."""
        blocks, rest = split_key(key, self.shape, self.blocks)
        return (rest[0], *blocks, *rest[1:])


def split_key(key, shape: tuple[int, ...], nblocks: int) -> tuple[list, list]:
    """(the block items, the other items) of `key` on a tensor of Beta 1 `shape` whose first
    `nblocks` dimensions are block dimensions; each block item is one value."""
    items = list(key) if isinstance(key, tuple) else [key]
    rank = len(shape)
    if any(k is Ellipsis for k in items):
        at = items.index(Ellipsis)
        items[at : at + 1] = [slice(None)] * (rank - len(items) + 1)
    items += [slice(None)] * (rank - len(items))
    if len(items) > rank:
        raise UserError(
            "err_invalid_index", f"too many indices for a tensor of rank {rank}: {len(items)}"
        )
    for d, k in enumerate(items[:nblocks]):
        k = norm_int(k)
        if isinstance(k, bool) or not isinstance(k, (int, Affine)):
            raise UserError(
                "err_unsupported_api",
                f"block dimension {d} of a tensor with block dimensions "
                f"{list(shape[:nblocks])} must be indexed with a single value "
                "(an int or a loop variable) in nkic",
                None,
                "index each block with its number, e.g. t[i, j] inside loops over i and j",
            )
        if isinstance(k, int) and not 0 <= k < shape[d]:
            raise UserError(
                "err_tensor_access_out_of_bound",
                f"index {k} is out of bounds for block dimension {d} of size {shape[d]}",
            )
    return items[:nblocks], items[nblocks:]


@dataclass
class BlockList:
    """A PSUM tensor with block dimensions: one tensor of shape (P, *free) per block, in
    row-major block order, each allocated and kept live on its own."""

    tiles: list[TensorView]
    block_shape: tuple[int, ...]

    def __post_init__(self) -> None:
        self._shape = (*self.block_shape, *self.tiles[0].shape)

    @property
    def shape(self) -> tuple[int, ...]:
        return self._shape

    @property
    def dtype(self) -> str:
        return self.tiles[0].dtype

    def label(self, name: str) -> None:
        """Names the blocks `name[i, j]` (in diagnostics and the IR) unless already named."""
        for index, tile in zip(itertools.product(*map(range, self.block_shape)), self.tiles):
            if not tile.tensor.label:
                tile.tensor.label = f"{name}[{', '.join(map(str, index))}]"

    def get(self, ip, key):
        """The view `key` selects: the block its block items name (compile-time values: a
        loop variable there unrolls its loop), indexed with the other items."""
        blocks, rest = split_key(key, self.shape, len(self.block_shape))
        flat = 0
        for d, (size, k) in enumerate(zip(self.block_shape, blocks)):
            k = ip.need_concrete(k, "the index of a PSUM block")
            if not 0 <= k < size:
                raise UserError(
                    "err_tensor_access_out_of_bound",
                    f"index {k} is out of bounds for block dimension {d} of size {size}",
                )
            flat = flat * size + k
        return ip.getitem(self.tiles[flat], tuple(rest))


#: More blocks than this stay one tensor (`BlockTensor`) even in PSUM.
MAX_BLOCK_TILES = 4096


@dataclass(frozen=True)
class DirectAllocation(BufferValue):
    """`ncc.sbuf.mod_alloc(...)`, `ncc.psum.alloc(func)`: a Beta 1 direct allocation in the
    buffer `name`. nkic places the tensor itself (the placement only decides which addresses
    blocks reuse, not what the kernel computes), but a block tensor so placed is a list of
    tiles (`BlockList`)."""


def _per_block(ip, buffer, storage: tuple, count: int, itemsize: int) -> bool:
    """Whether a block tensor in `buffer` is a `BlockList` (see the module's docstring)."""
    from ..ir.target import target

    if not isinstance(buffer, BufferValue) or count > MAX_BLOCK_TILES:
        return False
    if buffer.name == "psum" or isinstance(buffer, DirectAllocation):
        return True
    per_partition = itemsize
    for d in storage[1:]:
        per_partition *= d
    return buffer.name == "sbuf" and per_partition > target(ip.target).sbuf_partition_bytes


def split_shape(shape) -> tuple[tuple, int] | None:
    """(the storage shape, partition first; the number of block dimensions) when `shape` has
    `nl.par_dim` after its first dimension; None otherwise."""
    if not isinstance(shape, (tuple, list)):
        return None
    marks = [i for i, d in enumerate(shape) if isinstance(d, ParDim)]
    if not marks or marks[0] == 0:
        return None
    if len(marks) > 1:
        raise UserError("err_invalid_argument", "a shape has at most one nl.par_dim")
    k = marks[0]
    return (int(shape[k]), *shape[:k], *shape[k + 1 :]), k


def creation(base):
    """`nl.ndarray` / `nl.zeros` / ...: a `BlockTensor` when the shape has block dimensions."""

    signature = inspect.signature(base)

    @functools.wraps(base)
    def create(ip, call, shape, *args, **kwargs):
        split = split_shape(shape)
        if split is None:
            return base(ip, call, shape, *args, **kwargs)
        storage, blocks = split
        try:
            bound = signature.bind_partial(ip, call, shape, *args, **kwargs).arguments
        except TypeError:  # bad arguments: the call itself reports them
            return base(ip, call, shape, *args, **kwargs)
        buffer = bound.get("buffer")
        if isinstance(buffer, BufferValue) and buffer.name not in ("sbuf", "psum"):
            return base(ip, call, tuple(int(d) for d in shape), *args, **kwargs)  # HBM
        count = 1
        for d in storage[1 : 1 + blocks]:
            count *= ip.need_int(d, "a block dimension")
        dtype = bound.get("dtype")
        itemsize = DTYPES[dtype].itemsize if isinstance(dtype, str) and dtype in DTYPES else 4
        if _per_block(ip, buffer, storage, count, itemsize):
            tile = (storage[0], *storage[1 + blocks :])
            tiles = [base(ip, call, tile, *args, **kwargs) for _ in range(count)]
            return BlockList(tiles, tuple(storage[1 : 1 + blocks]))
        result = base(ip, call, storage, *args, **kwargs)
        return BlockTensor(result, blocks)

    return create
