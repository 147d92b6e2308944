"""Beta 1 block dimensions: `nl.ndarray((B0, B1, nl.par_dim(P), F), buffer=nl.sbuf)`.

The dimensions before `nl.par_dim` are *block* dimensions: the tensor is B0 x B1 tiles of
shape (P, F), each tile spread over the same P partitions. nkic stores it as one on-chip tensor
(P, B0, B1, F), partition first, and a `BlockTensor` keeps the Beta 1 order for indexing:
`t[i, j]` or `t[i, j, ip, jf]` (i, j compile-time values or loop variables) is the tile (i, j),
a view of that tensor. Indexing that keeps a block dimension whole (`t[:, j]`) is reported as
unsupported rather than computed in another layout.
"""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass

from ..ir.affine import Affine
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
        items = list(key) if isinstance(key, tuple) else [key]
        rank = len(self.shape)
        if any(k is Ellipsis for k in items):
            at = items.index(Ellipsis)
            items[at : at + 1] = [slice(None)] * (rank - len(items) + 1)
        items += [slice(None)] * (rank - len(items))
        if len(items) > rank:
            raise UserError(
                "err_invalid_index", f"too many indices for a tensor of rank {rank}: {len(items)}"
            )
        for d, k in enumerate(items[: self.blocks]):
            k = norm_int(k)
            if isinstance(k, bool) or not isinstance(k, (int, Affine)):
                raise UserError(
                    "err_unsupported_api",
                    f"block dimension {d} of a tensor with block dimensions "
                    f"{list(self.shape[: self.blocks])} must be indexed with a single value "
                    "(an int or a loop variable) in nkic",
                    None,
                    "index each block with its number, e.g. t[i, j] inside loops over i and j",
                )
            if isinstance(k, int) and not 0 <= k < self.shape[d]:
                raise UserError(
                    "err_tensor_access_out_of_bound",
                    f"index {k} is out of bounds for block dimension {d} of size {self.shape[d]}",
                )
        b = self.blocks
        return (items[b], *items[:b], *items[b + 1 :])


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
        result = base(ip, call, storage, *args, **kwargs)
        return BlockTensor(result, blocks)

    return create
