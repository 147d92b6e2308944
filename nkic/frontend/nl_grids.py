"""NKI 0.7 tiled and blocked layouts: `nl.tiles`, `nl.blocks`, `nl.alloc_tiles`,
`nl.alloc_blocks` and the grid views they return (`NkiTileGrid`, `NkiBlockGrid`, both
`NkiGrid`s), https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/
nki.language.tiles.html (and the `blocks`, `alloc_tiles`, `alloc_blocks`, `NkiGrid` pages).

A grid is a view: it selects cells (tiles, or blocks of tiles) of a tensor's storage by cell
coordinate, and `.data` is the `NkiTensor` view of the selection, which instructions take. The
`tile_shape` tiles the trailing dimensions; leading HBM dimensions stay untiled (one element per
coordinate; an integer index there drops the dimension from `.element_shape` and `.data`, one
slab at a time). The last cell along a dimension is clamped to the tensor's extent (a
remainder). Indexing a grid keeps a grid (an integer consumes its coordinate, a slice with a
positive step keeps it); `nl.tiles(block_grid)` steps from blocks down to the tiles of the
selected blocks, `nl.blocks(tile_grid, block_shape=)` groups the selected tiles.

Storage of `alloc_tiles` / `alloc_blocks`: HBM holds the compact logical extent; SBUF and PSUM
hold the tiles side by side in one rank-two allocation, `[tile_shape[0], tiles * tile free
size]`, in row-major tile order. A selection whose elements that layout cannot address with one
access pattern (tiles stacked along the partition dimension, or cells selected with gaps) has no
`.data` (`is_data_representable` is False); select one cell, or a row of cells, at a time.
"""

from __future__ import annotations

from ..ir.affine import Affine
from . import nki_api as api
from .tensors import GridView, TensorView, type_name
from .values import BufferValue, Builtin, UserError, norm_int


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _prod(xs) -> int:
    n = 1
    for x in xs:
        n *= x
    return n


class _ViewStorage:
    """A grid over an existing tensor view: a selection is a sub-view of it."""

    def __init__(self, source: TensorView):
        self.source = source

    def view(self, box) -> TensorView | None:
        key = tuple(b if isinstance(b, int) else slice(b[0], b[0] + b[1]) for b in box)
        return self.source.index(key)


class _TiledStorage:
    """An on-chip allocation of `alloc_tiles`: tile after tile (row-major tile order) along
    the free axis of one `[tile_shape[0], tiles * tile free size]` tensor."""

    def __init__(self, whole: TensorView, element_shape, tile_shape):
        self.whole = whole
        self.tile = tuple(tile_shape)
        self.counts = tuple(_ceil_div(e, t) for e, t in zip(element_shape, tile_shape))
        self.tile_free = _prod(self.tile[1:])

    def view(self, box) -> TensorView | None:
        pstep = self.whole.pattern[0][0]
        offset = 0
        pairs = []
        for d, (start, extent) in enumerate(box):
            size = self.tile[d]
            first, last = start // size, (start + extent - 1) // size
            intra = pstep if d == 0 else _prod(self.tile[d + 1 :])
            tile_stride = self.tile_free * _prod(self.counts[d + 1 :])
            if first == last:
                offset += first * tile_stride + (start - first * size) * intra
            elif d > 0 and tile_stride == size * intra:
                offset += start * intra  # the tiles along this dimension are adjacent
            else:
                return None
            pairs.append((intra, extent))
        return TensorView(self.whole.tensor, Affine(offset), pairs, self.whole.dtype)


class NkiGrid(GridView):
    """A selection of the cells of a tensor by cell coordinate.

    `sel[d]` per dimension of the source: an int (a coordinate consumed by integer indexing)
    or (start, count, step) in cells; cell c of dimension d covers the elements
    [origin[d] + c * cell(d), min(origin[d] + (c + 1) * cell(d), limit[d]))."""

    kind = "grid"

    def __init__(self, storage, buffer, dtype, prefix, tile, block, origin, limit, sel):
        self.storage = storage
        self.buffer_name = buffer
        self.dtype = dtype
        self.prefix = prefix  # the number of leading untiled dimensions
        self.tile = tuple(tile)
        self.block = tuple(block) if block is not None else None
        self.origin = tuple(origin)
        self.limit = tuple(limit)
        self.sel = tuple(sel)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(shape={self.shape}, tile_shape={self.tile})"

    # geometry ---------------------------------------------------------------------------------

    def cell(self, d: int) -> int:
        if d < self.prefix:
            return 1
        t = self.tile[d - self.prefix]
        return t * self.block[d - self.prefix] if self.block is not None else t

    def cells(self, d: int) -> int:
        return _ceil_div(self.limit[d] - self.origin[d], self.cell(d))

    def cell_span(self, d: int, c: int) -> tuple[int, int]:
        lo = self.origin[d] + c * self.cell(d)
        return lo, min(lo + self.cell(d), self.limit[d])

    def selected(self, d: int) -> list[int]:
        s = self.sel[d]
        if isinstance(s, int):
            return [s]
        start, count, step = s
        return [start + i * step for i in range(count)]

    def kept(self, d: int) -> bool:
        """Whether dimension d is in `.element_shape` (a consumed untiled one is not)."""
        return not (d < self.prefix and isinstance(self.sel[d], int))

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(s[1] for s in self.sel if not isinstance(s, int))

    @property
    def element_shape(self) -> tuple[int, ...]:
        out = []
        for d in range(len(self.sel)):
            if self.kept(d):
                out.append(sum(hi - lo for lo, hi in map(lambda c: self.cell_span(d, c),
                                                          self.selected(d))))  # fmt: skip
        return tuple(out)

    @property
    def index_step_elements(self) -> tuple[int, ...]:
        return tuple(s[2] * self.cell(d) for d, s in enumerate(self.sel) if not isinstance(s, int))

    @property
    def is_remainder(self) -> bool:
        """Whether a selected cell is cut short by the tensor's end (or a block holds fewer
        tiles than `block_shape`)."""
        for d in range(self.prefix, len(self.sel)):
            for c in self.selected(d):
                lo, hi = self.cell_span(d, c)
                if hi - lo < self.cell(d):
                    return True
        return False

    def _box(self):
        """The selected elements as one box per dimension, or None when cells with gaps
        between them are selected."""
        box = []
        for d, s in enumerate(self.sel):
            cells = self.selected(d)
            if isinstance(s, int) and d < self.prefix:
                box.append(self.cell_span(d, s)[0])
                continue
            if len(cells) > 1 and s[2] != 1:
                return None
            lo, hi = self.cell_span(d, cells[0])[0], self.cell_span(d, cells[-1])[1]
            box.append((lo, hi - lo))
        return box

    def data_view(self) -> TensorView | None:
        box = self._box()
        return None if box is None else self.storage.view(box)

    def data(self) -> TensorView:
        view = self.data_view()
        if view is None:
            raise UserError(
                "err_invalid_view",
                f"this {type(self).__name__} selection {self.shape} cannot be one tensor "
                "operand: "
                + (
                    "its cells are selected with gaps between them"
                    if self._box() is None
                    else "its tiles are not adjacent in the tiled allocation"
                ),
                None,
                "index one cell (grid[i, j].data), or a row of cells, at a time; "
                "grid.is_data_representable says whether .data exists",
            )
        return view

    # indexing ---------------------------------------------------------------------------------

    def index(self, ip, key) -> NkiGrid:
        items = key if isinstance(key, tuple) else (key,)
        free = [d for d, s in enumerate(self.sel) if not isinstance(s, int)]
        n_ell = sum(1 for k in items if k is Ellipsis)
        if n_ell > 1:
            raise UserError("err_invalid_index", "an index can only have a single ellipsis ('...')")
        explicit = len(items) - n_ell
        if explicit > len(free):
            raise UserError(
                "err_invalid_index",
                f"too many indices for a {type(self).__name__} of shape {self.shape}: "
                f"{explicit} given",
            )
        expanded: list = []
        for k in items:
            if k is Ellipsis:
                expanded += [slice(None)] * (len(free) - explicit)
            else:
                expanded.append(k)
        expanded += [slice(None)] * (len(free) - len(expanded))
        sel = list(self.sel)
        for pos, (d, k) in enumerate(zip(free, expanded)):
            start, count, step = sel[d]
            if isinstance(k, slice):
                parts = [None if p is None else ip.need_int(p, "a grid slice bound")
                         for p in (k.start, k.stop, k.step)]  # fmt: skip
                if parts[2] is not None and parts[2] <= 0:
                    raise UserError(
                        "err_invalid_index",
                        f"grid slices take a positive step, got {parts[2]}",
                    )
                chosen = range(count)[slice(*parts)]
                if not len(chosen):
                    raise UserError(
                        "err_tensor_access_out_of_bound",
                        f"empty grid slice of coordinate {pos} (size {count})",
                    )
                sel[d] = (start + chosen.start * step, len(chosen), step * chosen.step)
            else:
                i = ip.need_int(k, "a grid coordinate (an integer or a slice)")
                if not -count <= i < count:
                    raise UserError(
                        "err_tensor_access_out_of_bound",
                        f"grid coordinate {i} is out of bounds for coordinate {pos} of a "
                        f"{type(self).__name__} of shape {self.shape}",
                    )
                sel[d] = start + (i % count) * step
        return self._with(sel=sel)

    def _with(self, **changes):
        fields = dict(
            storage=self.storage, buffer=self.buffer_name, dtype=self.dtype, prefix=self.prefix,
            tile=self.tile, block=self.block, origin=self.origin, limit=self.limit, sel=self.sel,
        )  # fmt: skip
        kind = changes.pop("kind", type(self))
        fields.update(changes)
        return kind(**fields)

    def regrid(self, kind, block) -> NkiGrid:
        """This selection as the root of a grid of `kind` cells (tiles, or blocks of `block`
        tiles) over the same storage."""
        origin, limit, sel = [], [], []
        for d, s in enumerate(self.sel):
            if isinstance(s, int) and d < self.prefix:  # a consumed slab stays consumed
                origin.append(self.origin[d])
                limit.append(self.limit[d])
                sel.append(s)
                continue
            cells = self.selected(d)
            if len(cells) > 1 and s[2] != 1:
                raise UserError(
                    "err_invalid_view",
                    f"a {type(self).__name__} selection with gaps between its cells cannot be "
                    "regrouped",
                    None,
                    "select a contiguous range of cells (slice step 1)",
                )
            lo, hi = self.cell_span(d, cells[0])[0], self.cell_span(d, cells[-1])[1]
            origin.append(lo)
            limit.append(hi)
            sel.append(None)
        grid = self._with(kind=kind, block=block, origin=origin, limit=limit, sel=sel)
        grid.sel = tuple(s if s is not None else (0, grid.cells(d), 1)
                         for d, s in enumerate(sel))  # fmt: skip
        return grid


class NkiTileGrid(NkiGrid):
    kind = "tile"


class NkiBlockGrid(NkiGrid):
    kind = "block"


# ---------------------------------------------------------------------------------------------
# attributes


def attribute(ip, grid: NkiGrid, name: str):
    """`grid.<name>`; None when the grid has no such attribute."""
    simple = {
        "shape": lambda: grid.shape,
        "tile_shape": lambda: grid.tile,
        "element_shape": lambda: grid.element_shape,
        "index_step_elements": lambda: grid.index_step_elements,
        "is_remainder": lambda: grid.is_remainder,
        "is_data_representable": lambda: grid.data_view() is not None,
        "data": grid.data,
        "dtype": lambda: grid.dtype,
        "buffer": lambda: BufferValue(grid.buffer_name),
    }
    if isinstance(grid, NkiBlockGrid):
        simple["block_shape"] = lambda: grid.block
    if name in simple:
        return simple[name]()
    return None


# ---------------------------------------------------------------------------------------------
# nl.tiles / nl.blocks / nl.alloc_tiles / nl.alloc_blocks


def _shape(ip, v, what: str, minimum: int = 1) -> tuple[int, ...]:
    if not isinstance(v, (tuple, list)):
        raise UserError("err_invalid_argument", f"{what} must be a tuple of ints, got "
                        f"{type_name(v)}")  # fmt: skip
    out = tuple(ip.need_int(x, f"integers in {what}") for x in v)
    if len(out) < minimum:
        raise UserError(
            "err_invalid_argument",
            f"{what} needs at least {minimum} dimensions, got {out}",
        )
    if any(x <= 0 for x in out):
        raise UserError("err_invalid_argument", f"{what} entries must be positive, got {out}")
    return out


def _root(kind, storage, buffer, dtype, element_shape, tile, block) -> NkiGrid:
    prefix = len(element_shape) - len(tile)
    grid = kind(storage, buffer, dtype, prefix, tile, block, (0,) * len(element_shape),
                element_shape, [None] * len(element_shape))  # fmt: skip
    grid.sel = tuple((0, grid.cells(d), 1) for d in range(len(element_shape)))
    return grid


def _check_tile(view_shape, tile, on_chip: bool, what: str) -> None:
    if len(tile) > len(view_shape):
        raise UserError(
            "err_invalid_argument",
            f"{what}: tile_shape {tile} has more dimensions than the tensor {view_shape}",
        )
    if on_chip and len(tile) != len(view_shape):
        raise UserError(
            "err_invalid_argument",
            f"{what}: on SBUF and PSUM the tile_shape tiles every dimension; {tile} does not "
            f"match the rank of {view_shape}",
            None,
            "only HBM tensors have leading untiled dimensions",
        )
    if on_chip and tile[0] > 128:
        raise UserError(
            "err_invalid_argument",
            f"{what}: a tile spans at most 128 partitions, got tile_shape {tile}",
        )


def _grid_of(ip, source, tile_shape, block_shape, kind, what: str) -> NkiGrid:
    if isinstance(source, NkiGrid):
        if tile_shape is not None:
            tile = _shape(ip, tile_shape, "tile_shape", 2)
            if tile != source.tile:
                source = _grid_of(ip, source.data(), tile, None, NkiTileGrid, what)
                return source if kind is NkiTileGrid else source.regrid(kind, block_shape)
        return source.regrid(kind, block_shape)
    if not isinstance(source, TensorView):
        raise UserError(
            "err_invalid_argument",
            f"{what} takes an NkiTensor or a grid, got {type_name(source)}",
        )
    if tile_shape is None:
        raise UserError(
            "err_missing_argument",
            f"{what} of a tensor needs tile_shape=",
            None,
            "give the shape of one tile, e.g. tile_shape=(128, 512)",
        )
    source.static_only(what)
    tile = _shape(ip, tile_shape, "tile_shape", 2)
    _check_tile(source.shape, tile, source.on_chip, what)
    return _root(kind, _ViewStorage(source), source.buffer, source.dtype, source.shape, tile,
                 block_shape)  # fmt: skip


def _block_shape(ip, block_shape, tile_rank: int) -> tuple[int, ...]:
    block = _shape(ip, block_shape, "block_shape")
    if len(block) != tile_rank:
        raise UserError(
            "err_invalid_argument",
            f"block_shape {block} must have the rank of tile_shape ({tile_rank})",
        )
    return block


def tiles(ip, call, source, *, tile_shape=None):
    """`nl.tiles(source, tile_shape=)`: a tile-coordinate view of a tensor or a grid."""
    return _located(call, lambda: _grid_of(ip, source, tile_shape, None, NkiTileGrid, "nl.tiles"))


def blocks(ip, call, source, *, block_shape, tile_shape=None):
    """`nl.blocks(source, tile_shape=, block_shape=)`: blocks of `block_shape` tiles."""

    def make():
        if tile_shape is not None:
            rank = len(_shape(ip, tile_shape, "tile_shape", 2))
        elif isinstance(source, NkiGrid):
            rank = len(source.tile)
        else:
            return _grid_of(ip, source, None, None, NkiBlockGrid, "nl.blocks")  # the error
        block = _block_shape(ip, block_shape, rank)
        return _grid_of(ip, source, tile_shape, block, NkiBlockGrid, "nl.blocks")

    return _located(call, make)


def _allocate(ip, call, kind, tile_shape, block_shape, element_shape, buffer, dtype, address,
              name):  # fmt: skip
    what = "nl.alloc_tiles" if kind is NkiTileGrid else "nl.alloc_blocks"

    def make():
        tile = _shape(ip, tile_shape, "tile_shape", 2)
        shape = _shape(ip, element_shape, "element_shape")
        block = None if block_shape is None else _block_shape(ip, block_shape, len(tile))
        buf = api.buffer_arg(buffer)
        on_chip = buf in ("sbuf", "psum")
        _check_tile(shape, tile, on_chip, what)
        if not on_chip:
            whole = api.ndarray(ip, call, shape, dtype, buffer, name, address)
            return _root(kind, _ViewStorage(whole), whole.buffer, whole.dtype, shape, tile, block)
        count = _prod(_ceil_div(e, t) for e, t in zip(shape, tile))
        storage_shape = (tile[0], count * _prod(tile[1:]))
        whole = api.ndarray(ip, call, storage_shape, dtype, buffer, name, address)
        storage = _TiledStorage(whole, shape, tile)
        return _root(kind, storage, whole.buffer, whole.dtype, shape, tile, block)

    return _located(call, make)


def alloc_tiles(ip, call, *, tile_shape, element_shape, buffer, dtype, address=None, name=""):
    """`nl.alloc_tiles(...)`: new, uninitialised storage navigated as a tile grid."""
    return _allocate(ip, call, NkiTileGrid, tile_shape, None, element_shape, buffer, dtype,
                     address, name)  # fmt: skip


def alloc_blocks(ip, call, *, tile_shape, block_shape, element_shape, buffer, dtype,
                 address=None, name=""):  # fmt: skip
    """`nl.alloc_blocks(...)`: new storage with the tile geometry of `alloc_tiles`, navigated
    as blocks of `block_shape` tiles."""
    return _allocate(ip, call, NkiBlockGrid, tile_shape, block_shape, element_shape, buffer,
                     dtype, address, name)  # fmt: skip


def empty_like(ip, call, grid, dtype=None, buffer=None, name=""):
    """`nl.empty_like(x)` of NKI 0.7: for a grid, new storage with the grid's geometry (its
    element extent, tile shape and block grouping); for a tensor, as before."""
    if not isinstance(grid, NkiGrid):
        return api.empty_like(ip, call, grid, dtype, buffer, name)
    block = grid.block if isinstance(grid, NkiBlockGrid) else None
    return _allocate(ip, call, type(grid), grid.tile, block, grid.element_shape,
                     BufferValue(grid.buffer_name) if buffer is None else buffer,
                     grid.dtype if dtype is None else dtype, None, name)  # fmt: skip


def _located(call, make):
    try:
        return make()
    except UserError as err:
        if err.node is None:
            err.node = call.node
        raise


def bindings() -> dict[str, object]:
    """The `nki.language` names of the tiled layout (NKI 0.7)."""
    from .values import PyType

    return {
        "tiles": Builtin("nl.tiles", tiles),
        "blocks": Builtin("nl.blocks", blocks),
        "alloc_tiles": Builtin("nl.alloc_tiles", alloc_tiles, nki_api=True),
        "alloc_blocks": Builtin("nl.alloc_blocks", alloc_blocks, nki_api=True),
        "empty_like": Builtin("nl.empty_like", empty_like, nki_api=True),
        "NkiGrid": PyType("NkiGrid", (NkiGrid,)),
        "NkiTileGrid": PyType("NkiTileGrid", (NkiTileGrid,)),
        "NkiBlockGrid": PyType("NkiBlockGrid", (NkiBlockGrid,)),
    }


def norm_key(key):
    """A grid subscript's items with symbolic integers normalised."""
    items = key if isinstance(key, tuple) else (key,)
    return tuple(k if isinstance(k, slice) or k is Ellipsis else norm_int(k) for k in items)
