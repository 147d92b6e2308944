"""`NkiTensor` views at specialisation time: indexing (Language §7.1, the 0.5+ partition
rule) and the view primitives (`reshape`, `view`, `permute`, `broadcast`, `ap`, …), each
producing a new view of the same storage as an offset plus [step, num] pairs."""

from __future__ import annotations

from contextvars import ContextVar

from ..ir.affine import Affine
from ..ir.core import AccessPattern, Dynamic, Tensor
from ..ir.types import DTYPES
from .values import DynSlice, UserError, is_symbolic, norm_int


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


class TensorView:
    """A view of a tensor's storage: `offset` (affine in loop variables) and [step, num] pairs,
    in elements of `dtype`. For on-chip tensors pair 0 is the partition dimension."""

    __slots__ = ("tensor", "offset", "pattern", "dtype", "dynamic")

    def __init__(self, tensor: Tensor, offset: Affine, pattern, dtype: str, dynamic=None):
        self.tensor = tensor
        self.offset = offset if type(offset) is Affine else Affine.of(offset)
        self.pattern = tuple([(int(s), int(n)) for s, n in pattern])
        self.dtype = dtype
        #: a runtime offset: (kind "vector"|"scalar", index tile view, indirect dim, elements
        #: one index unit moves) of `.ap(vector_offset= / scalar_offset=)`, bound to a DMA
        #: operand (Language §8); or ("indirect", index tile, 1, elements one offset moves,
        #: size of the viewed free dimension) of `.indirect(index)`, a compute operand (trn3).
        self.dynamic: tuple | None = dynamic

    @staticmethod
    def whole(tensor: Tensor) -> TensorView:
        return TensorView(tensor, Affine(0), tensor.full_pattern(), tensor.dtype)

    # metadata -------------------------------------------------------------------------------

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(n for _, n in self.pattern)

    @property
    def strides(self) -> tuple[int, ...]:
        return tuple(s for s, _ in self.pattern)

    @property
    def on_chip(self) -> bool:
        return self.tensor.on_chip

    @property
    def buffer(self) -> str:
        return self.tensor.buffer

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    def partition_step(self) -> int:
        """Elements per partition of the storage, in units of this view's dtype."""
        nbytes = self.tensor.free_elems * self.tensor.itemsize
        return nbytes // DTYPES[self.dtype].itemsize

    def to_ap(self) -> AccessPattern:
        if self.dynamic is not None and self.dynamic[0] == "indirect":
            raise UserError(
                "err_invalid_argument",
                "a tensor-indirection view (.indirect(index)) is an operand of a compute "
                "instruction (nisa.tensor_copy, nisa.tensor_tensor, nisa.activation, "
                "nisa.nc_matmul, ...) only",
                None,
                "gather into a tile with nisa.tensor_copy(dst=tile, src=t.indirect(index)) "
                "and use the tile",
            )
        if self.dynamic is not None:
            raise UserError(
                "err_unsupported_api",
                "a view with a dynamic offset (.ap(vector_offset=/scalar_offset=)) can only be "
                "an operand of nisa.dma_copy, nisa.dma_compute or nisa.dma_transpose in nkic",
                None,
                "copy the rows with nisa.dma_copy into a tile, then use the tile",
            )
        for _, num in self.pattern:
            if num == 0:
                empty = [dim for dim, (_, num) in enumerate(self.pattern) if num == 0]
                break
        else:
            empty = None
        if empty:
            raise UserError(
                "err_tensor_access_out_of_bound",
                f"this operand is an empty view of `{self.tensor.label or self.tensor.name}` "
                f"(dimension {empty[0]} "
                f"has no elements, shape {self.shape}); an instruction accesses at least one "
                "element",
                None,
                "skip the instruction when the size is 0 (e.g. `if n > 0:`)",
            )
        return AccessPattern(self.tensor, self.offset, self.pattern, self.dtype)

    def to_dynamic_ap(self, index_operand: str) -> tuple[AccessPattern, AccessPattern]:
        """(this view as an access pattern whose offset is read at run time from the operand
        `index_operand`, that operand's access pattern)."""
        kind, index, dim, unit, *extent = self.dynamic
        ap = AccessPattern(
            self.tensor,
            self.offset,
            self.pattern,
            self.dtype,
            Dynamic(kind, index_operand, dim, unit, *extent),
        )
        return ap, index.to_ap()

    def describe(self) -> str:
        label = f", name={self.tensor.label!r}" if self.tensor.label else ""
        return (
            f"NkiTensor(shape={self.shape}, dtype={self.dtype}, buffer={self.buffer}, "
            f"offset={self.offset}, strides={self.strides}{label})"
        )

    def __repr__(self) -> str:
        return self.describe()

    def substitute(self, env) -> TensorView:
        dynamic = self.dynamic
        if dynamic is not None:
            dynamic = (dynamic[0], dynamic[1].substitute(env), *dynamic[2:])
        offset = self.offset.substitute(env)
        return TensorView(self.tensor, offset, self.pattern, self.dtype, dynamic)

    def static_only(self, what: str) -> None:
        """Views are built on static views only: `.ap()` with a dynamic offset comes last."""
        if self.dynamic is not None and self.dynamic[0] == "indirect":
            raise UserError(
                "err_invalid_view",
                f"{what} of a tensor-indirection view (.indirect(index))",
                None,
                "apply .indirect(index) last, to the view you need",
            )
        if self.dynamic is not None:
            raise UserError(
                "err_invalid_view",
                f"{what} of a view with a dynamic offset (.ap(vector_offset=/scalar_offset=))",
                None,
                "apply .ap(..., vector_offset=/scalar_offset=) last, to the view you need",
            )

    # indexing -------------------------------------------------------------------------------

    def _index_plain(self, key: tuple) -> TensorView | None:
        """`index` for the most frequent keys: ints, slices and `nl.ds` of ints, all within
        bounds, on a static view. None for anything else (`index` then takes its general path,
        which also reports every error)."""
        pattern = self.pattern
        if len(key) > len(pattern):
            return None
        on_chip = self.tensor.on_chip
        moved = 0
        kept: list = []
        dropped = dropped_step = -1  # position in `kept` and step of the last int-indexed
        # free dim
        n_dropped = 0
        dim = 0
        for item in key:
            step, num = pattern[dim]
            kind = type(item)
            if kind is slice:
                start, stop, sstep = item.start, item.stop, item.step
                if start is None:
                    start = 0
                elif type(start) is not int:
                    return None
                elif start < 0:
                    start += num
                if stop is None:
                    stop = num
                elif type(stop) is not int:
                    return None
                elif stop < 0:
                    stop += num
                if sstep is None:
                    sstep = 1
                elif type(sstep) is not int or sstep < 1 or (sstep != 1 and on_chip and not dim):
                    return None
                if not 0 <= start < stop <= num:
                    return None
                moved += start * step
                kept.append((step * sstep, -((start - stop) // sstep)))
            elif kind is DynSlice:  # `nl.ds(start, size)`: the slice start:start+size
                start, size = item.start, item.size
                if type(start) is not int or type(size) is not int:
                    return None
                if not (0 <= start and 0 < size and start + size <= num):
                    return None
                moved += start * step
                kept.append((step, size))
            elif kind is int:
                idx = item + num if item < 0 else item
                if not 0 <= idx < num:
                    return None
                moved += idx * step
                if on_chip and not dim:
                    kept.append((step, 1))
                else:
                    dropped = len(kept)
                    dropped_step = step
                    n_dropped += 1
                    kept.append(None)
            else:
                return None
            dim += 1
        kept += pattern[dim:]
        if n_dropped:
            if len(kept) - n_dropped < (2 if on_chip else 1):
                kept[dropped] = (dropped_step, 1)
            kept = [k for k in kept if k is not None]
        view = TensorView.__new__(TensorView)
        view.tensor = self.tensor
        view.offset = self.offset + moved
        view.pattern = tuple(kept)
        view.dtype = self.dtype
        view.dynamic = None
        return view

    def index(self, key: tuple) -> TensorView:
        """`t[key]` for ints, slices, `nl.ds` and `...` (Language §7.1)."""
        if self.dynamic is None:
            plain = self._index_plain(key)
            if plain is not None:
                return plain
        if self.dynamic is not None:
            self.static_only("indexing")
        rank = len(self.pattern)
        n_ell = 0
        for k in key:
            if k is Ellipsis:
                n_ell += 1
        if n_ell > 1:
            raise UserError("err_invalid_index", "an index can only have a single ellipsis ('...')")
        explicit = len(key) - n_ell
        if explicit > rank:
            raise UserError(
                "err_invalid_index",
                f"too many indices for a tensor of rank {rank}: {explicit} given",
            )
        if n_ell:
            items: list = []
            for k in key:
                if k is Ellipsis:
                    items += [slice(None)] * (rank - explicit)
                else:
                    items.append(k)
        else:
            items = list(key)
        if len(items) < rank:
            items += [slice(None)] * (rank - len(items))

        offset = self.offset
        on_chip = self.tensor.on_chip
        kept: list[tuple[int, int] | None] = []  # None marks an int-indexed free dim
        dropped: list[tuple[int, tuple[int, int]]] = []
        for dim, (item, (step, num)) in enumerate(zip(items, self.pattern)):
            partition = on_chip and dim == 0
            if isinstance(item, DynSlice):
                item = slice(item.start, item.start + item.size, 1)
            if isinstance(item, slice):
                start, count, sstep = _slice_bounds(item, num, dim)
                if partition and sstep != 1:
                    raise UserError(
                        "err_invalid_view",
                        "the partition dimension of an on-chip tensor cannot be strided",
                        hint="partitions must be contiguous; use a physical copy instead",
                    )
                offset = offset + start * step
                kept.append((step * sstep, count))
            elif isinstance(item, (int, Affine)) and not isinstance(item, bool):
                idx = _int_index(item, num, dim)
                offset = offset + idx * step
                if partition:
                    kept.append((step, 1))
                else:
                    kept.append(None)
                    dropped.append((len(kept) - 1, (step, 1)))
            else:
                raise UserError(
                    "err_invalid_index",
                    f"a tensor index must be an integer, a slice, nl.ds(...) or '...', "
                    f"not {type_name(item)}",
                    hint="dynamic (tensor) indices are written with .ap(vector_offset=...)",
                )
        if dropped and len(kept) - len(dropped) < (2 if on_chip else 1):
            pos, pair = dropped[-1]
            kept[pos] = pair
        pattern = [k for k in kept if k is not None] if dropped else kept
        return TensorView(self.tensor, offset, pattern, self.dtype)

    # view primitives ------------------------------------------------------------------------

    def _free_start(self) -> int:
        return 1 if self.on_chip else 0

    def is_contiguous(self) -> bool:
        expect = 1
        for step, num in reversed(self.pattern[self._free_start() :]):
            if num != 1 and step != expect:
                return False
            expect *= num
        return True

    def reshape(self, shape: tuple) -> TensorView:
        shape = tuple(shape)
        if any(not isinstance(d, int) or isinstance(d, bool) for d in shape):
            raise UserError(
                "err_invalid_view", f"reshape: shape must be a tuple of ints, got {shape}"
            )
        if sum(1 for d in shape if d == -1) > 1:
            raise UserError("err_invalid_view", "reshape: only one dimension can be -1")
        known = 1
        for d in shape:
            if d != -1:
                if d <= 0:
                    raise UserError("err_invalid_view", f"reshape: invalid dimension {d}")
                known *= d
        if -1 in shape:
            if self.size % known:
                raise UserError(
                    "err_invalid_view", f"cannot reshape a tensor of shape {self.shape} to {shape}"
                )
            shape = tuple(self.size // known if d == -1 else d for d in shape)
        total = 1
        for d in shape:
            total *= d
        if total != self.size:
            raise UserError(
                "err_invalid_view",
                f"cannot reshape a tensor of shape {self.shape} ({self.size} elements) "
                f"to {shape} ({total} elements)",
            )
        if self.on_chip and shape[0] != self.shape[0]:
            raise UserError(
                "err_invalid_view",
                f"reshape of an on-chip tensor must keep the partition dimension "
                f"({self.shape[0]}), got {shape}",
            )
        if len(shape) < (2 if self.on_chip else 1):
            raise UserError("err_invalid_view", "on-chip tensors must stay at least 2-D")
        start = self._free_start()
        new_free = shape[start:]
        strides = _nocopy_strides(self.pattern[start:], new_free)
        if strides is None:
            raise UserError(
                "err_invalid_view",
                f"cannot reshape a view with shape {self.shape} and strides {self.strides} to "
                f"{shape} without copying",
                hint="copy the data into a contiguous tile first, or use .ap(...) for the pattern",
            )
        pairs = list(zip(strides, new_free))
        if self.on_chip:
            pairs.insert(0, self.pattern[0])
        return TensorView(self.tensor, self.offset, pairs, self.dtype)

    def view(self, dtype: str) -> TensorView:
        old, new = DTYPES[self.dtype].itemsize, DTYPES[dtype].itemsize
        if old == new:
            return TensorView(self.tensor, self.offset, self.pattern, dtype)
        last_step, last_num = self.pattern[-1]
        if last_step != 1 and last_num != 1:
            raise UserError(
                "err_invalid_view",
                "view(dtype) needs the last dimension to be contiguous",
            )
        if old > new:
            r = old // new
            pattern = [(s * r, n) for s, n in self.pattern[:-1]] + [(1, last_num * r)]
            return TensorView(self.tensor, self.offset * r, pattern, dtype)
        r = new // old
        if last_num % r or any(s % r for s, _ in self.pattern[:-1]):
            raise UserError(
                "err_invalid_view",
                f"cannot view a tensor of shape {self.shape} and dtype {self.dtype} as {dtype}: "
                f"the last dimension must be divisible by {r}",
            )
        try:
            offset = self.offset.floordiv(r)
        except ValueError:
            raise UserError(
                "err_invalid_view", f"the view's offset is not aligned to {dtype}"
            ) from None
        pattern = [(s // r, n) for s, n in self.pattern[:-1]] + [(1, last_num // r)]
        return TensorView(self.tensor, offset, pattern, dtype)

    def permute(self, dims: tuple) -> TensorView:
        dims = tuple(dims)
        if sorted(dims) != list(range(len(self.pattern))):
            raise UserError(
                "err_invalid_view",
                f"permute: {dims} is not a permutation of {len(self.pattern)} dims",
            )
        if self.on_chip and dims[0] != 0:
            raise UserError(
                "err_invalid_view",
                "permute of an on-chip tensor must keep the partition dimension first",
                hint="moving data across partitions needs a transpose (nisa.nc_transpose)",
            )
        return TensorView(self.tensor, self.offset, [self.pattern[d] for d in dims], self.dtype)

    def broadcast(self, dim: int, size: int) -> TensorView:
        dim = self._dim(dim)
        if self.pattern[dim][1] != 1:
            raise UserError(
                "err_invalid_view",
                f"broadcast: dimension {dim} has size {self.pattern[dim][1]}, not 1",
            )
        if self.on_chip and dim == 0:
            raise UserError(
                "err_invalid_view", "cannot broadcast the partition dimension of a tile"
            )
        pattern = list(self.pattern)
        pattern[dim] = (0, size)
        return TensorView(self.tensor, self.offset, pattern, self.dtype)

    def expand_dim(self, dim: int) -> TensorView:
        if not -len(self.pattern) - 1 <= dim <= len(self.pattern):
            raise UserError("err_invalid_view", f"expand_dim: dimension {dim} out of range")
        dim = dim if dim >= 0 else dim + len(self.pattern) + 1
        if self.on_chip and dim == 0:
            raise UserError(
                "err_invalid_view", "cannot insert a dimension before the partition dim"
            )
        pattern = list(self.pattern)
        pattern.insert(dim, (1, 1))
        return TensorView(self.tensor, self.offset, pattern, self.dtype)

    def squeeze_dim(self, dim: int) -> TensorView:
        dim = self._dim(dim)
        if self.pattern[dim][1] != 1:
            raise UserError(
                "err_invalid_view", f"squeeze_dim: dimension {dim} does not have size 1"
            )
        if self.on_chip and dim == 0:
            raise UserError("err_invalid_view", "cannot squeeze the partition dimension")
        pattern = list(self.pattern)
        del pattern[dim]
        return TensorView(self.tensor, self.offset, pattern, self.dtype)

    def reshape_dim(self, dim: int, sizes: tuple) -> TensorView:
        """Split dimension `dim` into `sizes` (one may be -1): always a view."""
        dim = self._dim(dim)
        step, num = self.pattern[dim]
        sizes = tuple(sizes)
        if not sizes or any(not isinstance(d, int) or isinstance(d, bool) for d in sizes):
            raise UserError(
                "err_invalid_view", f"reshape_dim: shape must be a tuple of ints, got {sizes}"
            )
        if sum(1 for d in sizes if d == -1) > 1 or any(d == 0 or d < -1 for d in sizes):
            raise UserError("err_invalid_view", f"reshape_dim: invalid shape {sizes}")
        known = 1
        for d in sizes:
            known *= d if d != -1 else 1
        if -1 in sizes:
            if num % known:
                raise UserError(
                    "err_invalid_view",
                    f"reshape_dim: cannot split dimension {dim} of size {num} into {sizes}",
                )
            sizes = tuple(num // known if d == -1 else d for d in sizes)
        total = 1
        for d in sizes:
            total *= d
        if total != num:
            raise UserError(
                "err_invalid_view",
                f"reshape_dim: {sizes} has {total} elements, dimension {dim} has {num}",
            )
        if self.on_chip and dim == 0 and len(sizes) > 1 and total != sizes[0]:
            raise UserError(
                "err_invalid_view", "reshape_dim cannot split the partition dimension of a tile"
            )
        pairs = []
        stride = step
        for d in reversed(sizes):
            pairs.append((stride, d))
            stride *= d
        pattern = list(self.pattern)
        pattern[dim : dim + 1] = reversed(pairs)
        return TensorView(self.tensor, self.offset, pattern, self.dtype)

    def flatten_dims(self, start: int, end: int) -> TensorView:
        """Merge dimensions `start`..`end` (inclusive), which must be contiguous in storage."""
        start, end = self._dim(start), self._dim(end)
        if start > end:
            raise UserError(
                "err_invalid_view", f"flatten_dims: start_dim {start} is after end_dim {end}"
            )
        if self.on_chip and start == 0 and end > 0:
            raise UserError(
                "err_invalid_view",
                "flatten_dims cannot merge the partition dimension of a tile",
                hint="start at dimension 1",
            )
        group = [(s, n) for s, n in self.pattern[start : end + 1] if n != 1]
        for (s0, _), (s1, n1) in zip(group, group[1:]):
            if s0 != s1 * n1:
                raise UserError(
                    "err_invalid_view",
                    f"flatten_dims: dimensions {start}..{end} of a view with shape "
                    f"{self.shape} and strides {self.strides} are not contiguous",
                    hint="copy the data into a contiguous tile first",
                )
        total = 1
        for _, n in self.pattern[start : end + 1]:
            total *= n
        step = group[-1][0] if group else self.pattern[end][0]
        pattern = list(self.pattern)
        pattern[start : end + 1] = [(step, total)]
        return TensorView(self.tensor, self.offset, pattern, self.dtype)

    def rearrange(self, src: tuple, dst: tuple, sizes: dict) -> TensorView:
        """einops-style `rearrange`: split the grouped source dimensions, reorder the named
        dimensions as `dst` lists them, merge the grouped destination dimensions."""

        def names(pattern, what):
            if not isinstance(pattern, (tuple, list)):
                raise UserError(
                    "err_invalid_view", f"rearrange: the {what} pattern must be a tuple"
                )
            out = []
            for item in pattern:
                group = tuple(item) if isinstance(item, (tuple, list)) else (item,)
                if not group or not all(isinstance(n, str) for n in group):
                    raise UserError(
                        "err_invalid_view",
                        f"rearrange: {what} pattern entries are names or tuples of names, "
                        f"got {item!r}",
                    )
                out.append(group)
            return out

        src_groups, dst_groups = names(src, "source"), names(dst, "destination")
        if len(src_groups) != len(self.pattern):
            raise UserError(
                "err_invalid_view",
                f"rearrange: the source pattern has {len(src_groups)} entries, the tensor "
                f"{len(self.pattern)} dimensions",
            )
        flat_src = [n for g in src_groups for n in g]
        flat_dst = [n for g in dst_groups for n in g]
        if sorted(flat_src) != sorted(flat_dst) or len(set(flat_src)) != len(flat_src):
            raise UserError(
                "err_invalid_view",
                f"rearrange: the patterns must name the same dimensions once each, got "
                f"{flat_src} and {flat_dst}",
            )
        view = self
        dim = 0
        for group in src_groups:
            if len(group) > 1:
                split = tuple(sizes.get(n, -1) for n in group)
                view = view.reshape_dim(dim, split)
            dim += len(group)
        view = view.permute(tuple(flat_src.index(n) for n in flat_dst))
        dim = 0
        for group in dst_groups:
            if len(group) > 1:
                view = view.flatten_dims(dim, dim + len(group) - 1)
            dim += 1
        return view

    def slice_dim(self, dim: int, start, end, step: int = 1) -> TensorView:
        dim = self._dim(dim)
        key = [slice(None)] * len(self.pattern)
        key[dim] = slice(start, end, step)
        return self.index(tuple(key))

    def select(self, dim: int, index) -> TensorView:
        dim = self._dim(dim)
        if not isinstance(index, (int, Affine)) or isinstance(index, bool):
            raise UserError(
                "err_unsupported_api",
                "select with a dynamic (tensor) index is not supported by nkic yet",
            )
        idx = _int_index(index, self.pattern[dim][1], dim)
        pattern = list(self.pattern)
        step = pattern.pop(dim)[0]
        return TensorView(self.tensor, self.offset + idx * step, pattern, self.dtype)

    def ap(self, pattern, offset=None, dtype: str | None = None) -> TensorView:
        """`.ap()`: a raw access pattern over the storage (Language §8).

        `offset=None` keeps the view's storage offset; an explicit offset is absolute in the
        storage (the recommendation of §15.2). Steps and offsets are in elements of `dtype`."""
        dtype = dtype or self.dtype
        pairs = []
        for pair in pattern:
            if not isinstance(pair, (list, tuple)) or len(pair) != 2:
                raise UserError(
                    "err_invalid_view", f"ap: pattern entries are [step, num], got {pair!r}"
                )
            step, num = pair
            if type(step) is not int or type(num) is not int:
                step, num = norm_int(step), norm_int(num)
                if not all(isinstance(x, int) and not isinstance(x, bool) for x in (step, num)):
                    raise UserError(
                        "err_invalid_view", "ap: pattern steps and sizes must be integers"
                    )
            if num <= 0:
                raise UserError(
                    "err_invalid_view", f"ap: pattern sizes must be positive, got {num}"
                )
            pairs.append((step, num))
        if not pairs:
            raise UserError(
                "err_invalid_view", "ap: the pattern must have at least one [step, num]"
            )
        ratio_num, ratio_den = DTYPES[self.dtype].itemsize, DTYPES[dtype].itemsize
        if offset is None:
            base = self.offset * ratio_num
            if ratio_den != 1:
                try:
                    base = base.floordiv(ratio_den)
                except ValueError:
                    raise UserError(
                        "err_invalid_view", f"the view's offset is not aligned to {dtype}"
                    ) from None
        else:
            base = Affine.of(offset)
        view = TensorView(self.tensor, base, pairs, dtype)
        if self.on_chip:
            pstep = view.partition_step()
            if pairs[0][0] != pstep:
                raise UserError(
                    "err_invalid_view",
                    f"the first [step, num] of an on-chip access pattern is the partition "
                    f"dimension; its step must be {pstep} (elements per partition), got "
                    f"{pairs[0][0]}",
                    hint="partitions cannot be strided; the free dims follow the first pair",
                )
        return view

    def get_pattern(self) -> list[list[int]]:
        return [[s, n] for s, n in self.pattern]

    def _dim(self, dim: int) -> int:
        rank = len(self.pattern)
        if not isinstance(dim, int) or not -rank <= dim < rank:
            raise UserError("err_invalid_view", f"dimension {dim} out of range for rank {rank}")
        return dim % rank


class GridView:
    """The base of the NKI 0.7 grid views (`nl_grids.py`), named here so that instruction
    binding can recognise a grid passed where a tensor is needed."""


def _nocopy_strides(pattern, new_shape: tuple[int, ...]) -> list[int] | None:
    """Strides viewing `pattern` ([step, num] pairs) as `new_shape` without a copy, or None
    (numpy's no-copy reshape: each group of merged or split dims must be contiguous)."""
    olds = [(n, s) for s, n in pattern if n != 1]
    strides = [1] * len(new_shape)
    ni = oi = 0
    while ni < len(new_shape) and oi < len(olds):
        nj, oj = ni + 1, oi + 1
        np_, op = new_shape[ni], olds[oi][0]
        while np_ != op:
            if np_ < op:
                np_ *= new_shape[nj]
                nj += 1
            else:
                op *= olds[oj][0]
                oj += 1
        for k in range(oi, oj - 1):
            if olds[k][1] != olds[k + 1][0] * olds[k + 1][1]:
                return None
        strides[nj - 1] = olds[oj - 1][1]
        for k in range(nj - 1, ni, -1):
            strides[k - 1] = strides[k] * new_shape[k]
        ni, oi = nj, oj
    return strides


def type_name(v: object) -> str:
    from .values import Instance, IteratorValue

    if isinstance(v, TensorView):
        return "a tensor"
    if isinstance(v, Instance):
        return f"a {v.cls.name} object"
    if isinstance(v, IteratorValue):
        return v.kind
    if isinstance(v, Affine):
        return "int"
    return type(v).__name__


# (min, max) of an affine expression over the iterations of the symbolic loops being
# specialised, or None for a variable of no such loop; set by the specialiser.
loop_bounds: ContextVar = ContextVar("loop_bounds", default=None)


def _wrap_negative(v: Affine, num: int):
    """A symbolic index or slice bound with Python's negative wrap-around: `v + num` when `v`
    is negative in every iteration, `v` when it never is; mixed signs need concrete values."""
    bounds = loop_bounds.get()
    if bounds is None:
        return v
    lo_hi = bounds(v)
    if lo_hi is None or (lo_hi[0] < 0 <= lo_hi[1]):
        raise NonConstExtent(v)
    return norm_int(v + num) if lo_hi[1] < 0 else v


def _int_index(item, num: int, dim: int):
    item = norm_int(item)
    if is_symbolic(item):
        return _wrap_negative(item, num)
    idx = item + num if item < 0 else item
    if not 0 <= idx < num:
        raise UserError(
            "err_tensor_access_out_of_bound",
            f"index {item} is out of bounds for dimension {dim} of size {num}",
        )
    return idx


def _slice_bounds(s: slice, num: int, dim: int) -> tuple[object, int, int]:
    """(start, count, step) of a slice over a dimension of size `num`."""
    start, stop, step = s.start, s.stop, s.step
    if (
        (start is None or type(start) is int)
        and (stop is None or type(stop) is int)
        and (step is None or type(step) is int)
    ):  # the common case, plain ints in range, without building index expressions
        start = 0 if start is None else start + num if start < 0 else start
        stop = num if stop is None else stop + num if stop < 0 else stop
        step = 1 if step is None else step
        if step >= 1 and 0 <= start < stop <= num:
            return start, _ceil_div(stop - start, step), step
    step = 1 if s.step is None else norm_int(s.step)
    if not isinstance(step, int) or isinstance(step, bool) or step < 1:
        raise UserError("err_invalid_index", f"slice steps must be integers >= 1, got {step}")
    start = 0 if s.start is None else norm_int(s.start)
    stop = num if s.stop is None else norm_int(s.stop)
    for v in (start, stop):
        if not isinstance(v, (int, Affine)) or isinstance(v, bool):
            raise UserError(
                "err_invalid_index", f"slice bounds must be integers, not {type_name(v)}"
            )
    if isinstance(start, int) and start < 0:
        start += num
    elif is_symbolic(start):
        start = _wrap_negative(start, num)
    if isinstance(stop, int) and stop < 0:
        stop += num
    elif is_symbolic(stop):
        stop = _wrap_negative(stop, num)
    extent = norm_int(Affine.of(stop) - Affine.of(start))
    if is_symbolic(extent):
        raise NonConstExtent(extent)
    if extent < 0 or extent == 0 and not 0 <= start <= num:
        raise UserError(
            "err_tensor_access_out_of_bound",
            f"empty slice {_fmt(start)}:{_fmt(stop)} of dimension {dim} (size {num})",
        )
    if (isinstance(start, int) and start < 0) or (isinstance(stop, int) and stop > num):
        raise UserError(
            "err_tensor_access_out_of_bound",
            f"slice {_fmt(start)}:{_fmt(stop)} is out of bounds for dimension {dim} of size {num}",
        )
    return start, _ceil_div(extent, step), step


class NonConstExtent(Exception):
    """A slice whose size, or an index whose sign, depends on a loop variable (the loop must be
    unrolled)."""

    def __init__(self, extent: Affine):
        self.extent = extent


def _fmt(v) -> str:
    return str(v)
