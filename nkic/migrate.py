"""`nkic migrate`: rewrite a Beta 1 (`neuronxcc.nki`) kernel file into current NKI.

The rewrite works on a concrete syntax tree (libcst), so everything it does not touch —
comments, blank lines, formatting — stays as the user wrote it. It follows the official
migration guide (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/migration/index.html):

* imports: `neuronxcc.nki[.language|.isa|.typing]` → `nki[...]`;
* index grids: `nl.arange(n)[:, None]` / `nl.arange(n)[None, :]` / `nl.mgrid[a:b, c:d]` are
  removed and every index written with them (`t[i * 128 + i_p, i_f]`) becomes the slice it
  selects (`t[i * 128:i * 128 + 128, 0:512]`);
* value-returning `nisa` calls become an explicit destination tile and a dst-first call
  (`y = nisa.activation(nl.exp, t)` → `y = nl.ndarray(t.shape, dtype=t.dtype,
  buffer=nl.sbuf)` + `nisa.activation(dst=y, op=nl.exp, data=t)`), the same instruction;
  `acc += nisa.nc_matmul(a, b)` becomes `nisa.nc_matmul(dst=acc, stationary=a, moving=b)`;
* operators on tiles (`x + y`) become the `nl` function (`nl.add(x, y)`);
* `nl.par_dim(n)` → `n`; numpy functions used as operators (`op=np.add`) → `nl.add`;
* block dimensions before `nl.par_dim` become a free dimension after it, or, for blocks that
  rotate over a few physical tiles (PSUM, a rotating direct allocation), a list of tiles
  (`_BlockedTensors`).

* `mask=` predicates comparing an index-grid expression with a bound (`i * 128 + i_p < N`,
  joined with `&`) are dropped and the subscripts of the call they mask are shortened to what
  they keep (`a[i * 128:min(i * 128 + 128, N), 0:512]`): the explicit tail tile.

What it cannot rewrite (other masks, grids that transpose, anything it does not recognise) stays in
place under a `# TODO(nkic migrate): ...` comment, and is returned as a `Todo`.
"""

from __future__ import annotations

import ast
import difflib
import itertools
import math
import re
from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

IMPORTS = {
    "neuronxcc.nki": "nki",
    "neuronxcc.nki.language": "nki.language",
    "neuronxcc.nki.isa": "nki.isa",
    "neuronxcc.nki.typing": "nki.typing",
    "neuronxcc.nki.compiler": "nki.compiler",
}

TILE_OPERATORS = {
    cst.Add: "add", cst.Subtract: "subtract", cst.Multiply: "multiply", cst.Divide: "divide",
    cst.Power: "power", cst.LeftShift: "left_shift", cst.RightShift: "right_shift",
    cst.BitAnd: "bitwise_and", cst.BitOr: "bitwise_or", cst.BitXor: "bitwise_xor",
}  # fmt: skip

#: in-place operators on tile views (`t[...] += x`) and the ALU operator each applies
AUG_OPERATORS = {
    cst.AddAssign: "add", cst.SubtractAssign: "subtract", cst.MultiplyAssign: "multiply",
    cst.DivideAssign: "divide", cst.BitAndAssign: "bitwise_and", cst.BitOrAssign: "bitwise_or",
    cst.BitXorAssign: "bitwise_xor",
}  # fmt: skip

NUMPY_OPS = {
    "add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "equal",
    "not_equal", "greater", "greater_equal", "less", "less_equal", "logical_and",
    "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift",
    "right_shift", "exp", "log", "tanh", "sqrt", "square", "abs", "negative", "sin", "cos",
    "reciprocal", "copy",
}  # fmt: skip

#: dtypes numpy and `nl` both name
NL_DTYPES = {
    "float32", "float16", "int8", "int16", "int32", "uint8", "uint16", "uint32",
}  # fmt: skip

#: numpy reductions Beta 1 accepted as operators, and the ALU operator they name
NUMPY_ALIASES = {
    "max": "maximum", "min": "minimum", "amax": "maximum", "amin": "minimum", "sum": "add",
}  # fmt: skip

#: scheduling hints of Beta 1 loops, which current NKI's loops do not take (no result changes)
LOOP_HINTS = ("directives", "precise_schedule")

#: value-returning Beta 1 instructions: their positional parameter names and where the
#: destination's shape and dtype come from: an operand (its shape and dtype), "matmul"
#: ((stationary.shape[-1], moving.shape[-1]) in PSUM, float32), "transpose" (the operand's two
#: dimensions swapped, in PSUM), "shape" (the `shape=` and `dtype=` arguments, memset),
#: "bounds" ((P, 2, F) of the segment ids, sequence_bounds), "annotation" (the shape of the
#: statement's `tensor[...]` annotation), or
#: (operand, free size, dtype) for results of a fixed width per partition.
RETURNING = {
    "nc_matmul": (("stationary", "moving"), "matmul"),
    "nc_transpose": (("data",), "transpose"),
    "dma_transpose": (("src", "axes"), "transpose"),
    "activation": (("op", "data", "bias", "scale"), "data"),
    "tensor_tensor": (("data1", "data2", "op"), "data1"),
    "tensor_scalar": (("data", "op0", "operand0", "reverse0", "op1", "operand1", "reverse1"), "data"),
    "tensor_copy": (("src",), "src"),
    "reciprocal": (("data",), "data"),
    "dropout": (("data", "prob"), "data"),
    "memset": (("shape", "value", "dtype"), "shape"),
    "range_select": (("on_true_tile", "comp_op0", "comp_op1", "bound0", "bound1", "reduce_cmd",
                      "reduce_res", "reduce_op", "range_start", "on_false_value"), "on_true_tile"),
    "max8": (("src",), ("src", "8", None)),
    "nc_find_index8": (("data", "vals"), ("data", "8", "uint32")),
    "bn_stats": (("data",), ("data", "6", None)),
    "bn_aggr": (("data",), ("data", "2", None)),
    "nc_match_replace8": (("data", "vals", "imm", "dst_idx"), "data"),
    "tensor_reduce": (("op", "data", "axis", "negate", "keepdims"), "reduce"),
    "tensor_partition_reduce": (("op", "data"), "partition_reduce"),
    "tensor_scalar_reduce": (("data", "op0", "operand0", "reduce_op", "reduce_res", "reverse0"),
                             "data"),
    "activation_reduce": (("op", "data", "reduce_op", "reduce_res", "bias", "scale"), "data"),
    "scalar_tensor_tensor": (("data", "op0", "operand0", "op1", "operand1", "reverse0",
                              "reverse1"), "data"),
    "tensor_tensor_scan": (("data0", "data1", "initial", "op0", "op1", "reverse0", "reverse1"),
                           "data0"),
    "sequence_bounds": (("segment_ids",), "bounds"),
    "local_gather": (("src_buffer", "index", "num_elem_per_idx", "num_valid_indices"),
                     "annotation"),
}  # fmt: skip

#: Beta 1 instructions computing a linear form of index grids: their positional parameters
PATTERN_GENERATORS = {
    "iota": ("expr", "dtype", "mask"),
    "affine_select": ("pred", "on_true_tile", "on_false_value", "dtype", "mask"),
}

#: a comparison of two index expressions, as the ALU operator comparing their difference with 0
COMPARISONS = {
    cst.LessThan: "less", cst.LessThanEqual: "less_equal", cst.GreaterThan: "greater",
    cst.GreaterThanEqual: "greater_equal", cst.Equal: "equal", cst.NotEqual: "not_equal",
}  # fmt: skip

#: the attributes of an `nl.mgrid[...]` value naming its axes
MGRID_AXES = ("p", "x", "y", "z")

#: Beta 1 dtype names that NKI 0.2.0 removed
DTYPE_ALIASES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}

#: `nl.fp32.min` / `.max`: numpy's float32 bounds (exact as Python floats)
FLOAT32_LIMITS = {"min": "-3.4028234663852886e38", "max": "3.4028234663852886e38"}

#: Beta 1 tensor buffers that current NKI names differently where a kernel returns the tensor
RETURNED_BUFFERS = {"hbm": "shared_hbm"}

#: loops that NKI 0.7 deprecated: plain Python `range` is the same loop there
RANGES = ("affine_range", "sequential_range", "static_range")

#: Beta 1 entry points that current NKI spells `nki.jit`
JIT_ENTRY_POINTS = ("baremetal", "benchmark", "profile", "trace", "simulate_kernel")

#: compiler hints with no current equivalent that change nothing a kernel computes
DROPPED_DECORATORS = ("skip_middle_end_transformations",)

#: parameters of `nl` / `nisa` calls that take an ALU operator
ALU_PARAMETERS = {
    "op", "op0", "op1", "reduce_op", "comp_op0", "comp_op1", "cmp_op", "acc_op", "dst_rmw_op",
}  # fmt: skip

#: numpy scalar types (`np.float32(0.0)` as an immediate) and the kind of number they hold
SCALAR_TYPES = {
    "float32": "float", "float16": "float", "float64": "float", "int32": "int", "int16": "int",
    "int8": "int", "uint32": "int", "uint16": "int", "uint8": "int",
}  # fmt: skip

#: elementwise binary `nl` operations (Beta 1 broadcast their operands)
ELEMENTWISE = {
    "add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "equal",
    "not_equal", "greater", "greater_equal", "less", "less_equal", "logical_and", "logical_or",
    "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift",
}  # fmt: skip

#: `nl` operations of the Tensor engine, whose results are in PSUM
PSUM_RESULTS = ("transpose", "matmul")

#: `nl` reductions taking `axis=`
REDUCTIONS = ("sum", "max", "min", "prod", "mean", "all", "any")

#: `nl` calls that do not produce a tile
NOT_TILES = {"arange", "mgrid", "program_id", "num_programs", "par_dim", "ndarray_shape"}


#: the code of the diagnostic each manual step is reported with
MANUAL_STEP = "nkic_migrate_manual_step"
#: the migration targets: NKI 0.7 is the current language, 0.3 the first after Beta 2
TARGETS = ("0.7", "0.3")


@dataclass
class Todo:
    """A rewrite left to the user: written above `line` as a `# TODO(nkic migrate):` comment."""

    line: int
    message: str
    col: int = 1

    def diagnostic(self, path: str):
        from .diagnostics import Diagnostic
        from .ir.core import Loc

        return Diagnostic(
            MANUAL_STEP,
            self.message,
            Loc(path, self.line, self.col, self.line, self.col + 1),
            severity="warning",
            hint="the statement is left as it was, under a `# TODO(nkic migrate):` comment",
        )


@dataclass
class Migration:
    source: str
    text: str
    todos: list[Todo] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.source != self.text

    def diff(self, path: str) -> str:
        return "".join(
            difflib.unified_diff(
                self.source.splitlines(keepends=True),
                self.text.splitlines(keepends=True),
                path,
                f"{path} (migrated)",
            )
        )


@dataclass(frozen=True)
class _Grid:
    start: str
    size: str  # an int or an expression, as source text
    step: int
    axis: int
    rank: int = 0  # the number of axes of the grid's space (0: not known)


_Term = int | str  # an integer, or an expression as source text


_ATOM = re.compile(r"-?[\w.]+(\[[^\[\]()]*\])*")


def _paren(t: _Term) -> str:
    text = str(t)
    return text if _ATOM.fullmatch(text) else f"({text})"


def _term(text: str) -> _Term:
    try:
        return int(text)
    except ValueError:
        return text


def _add(a: _Term, b: _Term) -> _Term:
    if isinstance(a, int) and isinstance(b, int):
        return a + b
    if a == 0:
        return b
    if b == 0:
        return a
    if isinstance(b, int) and b < 0:
        return f"{a} - {-b}"
    return f"{a} + {b}"


def _mul(a: _Term, b: _Term) -> _Term:
    if isinstance(a, int) and isinstance(b, int):
        return a * b
    if a == 0 or b == 0:
        return 0
    if a == 1:
        return b
    if b == 1:
        return a
    if a == -1:
        return f"-{_paren(b)}"
    if b == -1:
        return f"-{_paren(a)}"
    return f"{_paren(a)} * {_paren(b)}"


@dataclass(frozen=True)
class _Linear:
    """An index expression as `const + sum(coefs[axis] * grid axis)`; `sizes` holds each axis's
    size (source text), `rank` the number of axes of the grids' space."""

    coefs: dict[int, _Term]
    const: _Term = 0
    sizes: dict[int, str] = field(default_factory=dict)
    rank: int = 0

    def plus(self, other: _Linear) -> _Linear:
        coefs = dict(self.coefs)
        for axis, c in other.coefs.items():
            coefs[axis] = _add(coefs.get(axis, 0), c)
        return _Linear(
            coefs,
            _add(self.const, other.const),
            {**self.sizes, **other.sizes},
            max(self.rank, other.rank),
        )

    def scaled(self, k: _Term) -> _Linear:
        return _Linear(
            {a: _mul(c, k) for a, c in self.coefs.items()},
            _mul(self.const, k),
            self.sizes,
            self.rank,
        )


def _annotated_shape(annotation) -> str:
    """`(128, 4, 16)` of the annotation `tensor[128, 4, 16]` (also `nt.tensor[...]`); "" for
    any other annotation."""
    if not (isinstance(annotation, cst.Subscript) and (_dotted(annotation.value) or "").endswith(
            "tensor")):  # fmt: skip
        return ""
    dims = [e.slice for e in annotation.slice]
    if not all(isinstance(d, cst.Index) for d in dims):
        return ""
    return "(" + ", ".join(_code(d.value) for d in dims) + ("," if len(dims) == 1 else "") + ")"


def _writable(target):
    """`t.ap(...)`, an access pattern the rewrite put where a subscript was assigned to, as
    the assignable `t.ap(...)[...]`."""
    if isinstance(target, cst.Call) and isinstance(target.func, cst.Attribute):
        if target.func.attr.value == "ap":
            return cst.Subscript(target, [cst.SubscriptElement(cst.Index(cst.Ellipsis()))])
    return target


def _is_return(stmt) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and isinstance(stmt.body[0], cst.Return)


def _names(node: cst.CSTNode) -> set[str]:
    found: set[str] = set()

    class Finder(cst.CSTVisitor):
        def visit_Name(self, n):
            found.add(n.value)

    node.visit(Finder())
    return found


def _calls(node: cst.CSTNode) -> bool:
    found = []

    class Finder(cst.CSTVisitor):
        def visit_Call(self, n):
            found.append(n)

    node.visit(Finder())
    return bool(found)


def _code(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)


def _dotted(node) -> str | None:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr.value}" if base else None
    return None


def _int(node) -> int | None:
    if isinstance(node, cst.Integer):
        return int(node.value, 0)
    return None


class _Migrator(cst.CSTTransformer):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(
        self,
        grid: tuple[int, ...] = (),
        source: str = "",
        to: str = "0.7",
        keep: frozenset[tuple[tuple[str, ...], str]] = frozenset(),
        blocked: dict | None = None,
        full: frozenset = frozenset(),
    ):
        super().__init__()
        #: (enclosing functions, name) of the masked calls' results that keep their full
        #: shape (`_MaskedResults`), and the shape each got (source text per dimension)
        self.full = full
        self.full_shapes: dict[tuple, list[str]] = {}
        #: the full-shape result the statement being rewritten makes: (name, its grid axes,
        #: their sizes, dtype, the kept ranges of its mask)
        self.full_result: tuple | None = None
        #: (enclosing functions, name) of `full` -> the masks (`_kept_key`) of the call that
        #: makes it and of the calls that read it: one mask for all keeps the kept shape
        self.full_masks: dict[tuple, set] = {}
        #: the last simple statement rewritten, and the block it is in
        self.previous: tuple[int, cst.SimpleStatementLine] | None = None
        self.blocks: list[int] = [0]
        self.opened = itertools.count(1)
        #: (enclosing functions, name) -> (block dimensions, rank, on chip) of the tensors
        #: allocated with block dimensions before `nl.par_dim` whose every use is a subscript
        #: (`_BlockedTensors`): their layout becomes (p, blocks..., f...)
        self.blocked = blocked or {}
        #: the mask of the call assigned by the statement being rewritten (`_mask_bounds`)
        self.assign_mask = None
        #: the blocked tensor whose allocation is being rewritten
        self.allocating: tuple | None = None
        #: the target of the assignment being rewritten (its original node)
        self.written = None
        #: names bound to a `nki.compiler` allocator (`sb_mod = nki.compiler.sbuf.mod_alloc`)
        #: and the buffer it allocates in
        self.allocators: dict[str, str] = {}
        self.grid = grid
        self.to = to
        self.source = source
        #: whether the file names a 4-byte integer dtype (`_exact_broadcast`)
        self.names_int32 = "int32" in source
        #: (enclosing functions, name) of the index grids a use of which cannot be rewritten:
        #: left as they are
        self.keep = keep
        #: (enclosing functions, grid name) of the grids the rewrite removed (a use left
        #: behind needs its definition back)
        self.removed: set[tuple[tuple[str, ...], str]] = set()
        self.scope: list[str] = []
        #: the names of the enclosing scopes while a function is rewritten
        self.outer: list[tuple] = []
        #: tiles known to be in PSUM (Beta 1 stores them; current NKI copies them out first)
        self.psum: set[str] = set()
        #: the float32 ones among them (a matmul may write them directly)
        self.psum_f32: set[str] = set()
        #: the grids (of `keep`) now in scope
        self.kept_names: set[str] = set()
        #: the statement being rewritten (its original node)
        self.statement = None
        #: the statement being rewritten defines a kept grid
        self.grid_definition = False
        #: names bound to an `nl.mgrid[...]` value, read as `g.p`, `g.x`
        self.mgrids: dict[str, list[_Grid]] = {}
        #: `t[...] = nl.loop_reduce(x, op, ...)` calls, rewritten with their statements
        self.reductions: set[cst.Call] = set()
        #: the names `from torch_neuronx import nki_jit` binds
        self.torch_jit: set[str] = set()
        #: the names `from neuronxcc.nki import jit, benchmark, ...` binds
        self.entry_aliases: set[str] = set()
        #: the names bound to `nki.simulate_kernel` (`simulate_kernel = nki.simulate_kernel`)
        self.simulate_aliases: set[str] = set()
        #: the names bound to `neuronxcc.nki.compiler`
        self.compiler: set[str] = set()
        #: `nl.par_dim(...)` calls after a block dimension (kept, with a TODO)
        self.block_dims: set = set()
        #: the names `from neuronxcc.nki.language import par_dim` binds
        self.par_dims: set[str] = set()
        #: the loop variable of each grid axis (a name the file does not use yet)
        self.pids = [
            next(n for n in (f"pid{a}", f"grid_pid{a}", f"_grid_pid{a}") if n not in source)
            for a in range(len(grid))
        ]
        self.reads_program: list[bool] = []  # per function being rewritten
        self.todos: list[Todo] = []
        self.nl = {"nl", "nki.language"}
        #: the names an `import ... isa as X` of the file binds
        self.isa_imported: set[str] = set()
        self.nisa = {"nisa", "nki.isa"}
        self.np = {"np", "numpy"}
        self.grids: dict[str, _Grid] = {}
        #: tiles made by a reduction along axis 1: (P, 1) columns
        self.columns: set[str] = set()
        #: tiles whose shape is written as numbers (`_static_shape`)
        self.shapes: dict[str, tuple[int, ...]] = {}
        #: names bound to linear forms of grids (`expr_c = expr_a * -1`), read through them
        self.exprs: dict[str, _Linear] = {}
        self.tiles: set[str] = set()
        #: identities made by `nl.shared_identity_matrix`: shared HBM in Beta 1, an SBUF tile in
        #: current NKI, so a load of them is an on-chip copy
        self.identities: set[str] = set()
        self.unresolved: set[str] = set()
        #: TODO messages of the statement being rewritten (written above it as comments)
        self.pending: list[str] = []
        #: masks assigned to names (`inside = (i * 128 + i_p < N) & ...`)
        self.masks: dict[str, cst.BaseExpression] = {}
        #: the kept ranges of the mask of each call being rewritten (None: no mask, or not one
        #: nkic migrate turns into slices)
        self.mask_stack: list[dict | None] = []

    # helpers ---------------------------------------------------------------------------------

    def _line(self, node) -> tuple[int, int]:
        try:
            start = self.get_metadata(PositionProvider, node).start
        except KeyError:  # a node the rewrite built: the statement being rewritten
            if self.statement is None or node is self.statement:
                return 0, 1
            return self._line(self.statement)
        return start.line, start.column + 1

    def _todo(self, node, message: str) -> None:
        line, col = self._line(node)
        self.todos.append(Todo(line, message, col))
        self.pending.append(message)

    def _nisa(self) -> str:
        """The name the file binds `nki.isa` to (`nki.isa` written out when it binds none)."""
        if not self.isa_imported:
            return "nki.isa"
        return "nisa" if "nisa" in self.isa_imported else sorted(self.isa_imported)[0]

    def _nl(self) -> str:
        """The name the file binds `nki.language` to."""
        return "nl" if "nl" in self.nl else sorted(self.nl)[0]

    def _is(self, node, module: set[str], name: str | None = None) -> str | None:
        """`nl.X` → "X" when node is an attribute of one of the module aliases (or of the
        module written out: `nki.isa.X`)."""
        if isinstance(node, cst.Attribute):
            base = _dotted(node.value)
            if base in module and (name is None or node.attr.value == name):
                return node.attr.value
        return None

    # entry points ----------------------------------------------------------------------------

    def leave_Decorator(self, original, updated):
        expr = updated.decorator
        func = expr.func if isinstance(expr, cst.Call) else expr
        dotted = _dotted(func) or ""
        last = dotted.rsplit(".", 1)[-1]
        if last in DROPPED_DECORATORS and dotted.split(".")[0] == "nki":
            return cst.RemovalSentinel.REMOVE
        jit = cst.Decorator(decorator=cst.parse_expression("nki.jit"))
        if dotted in self.torch_jit:
            return updated.with_changes(decorator=jit.decorator)
        if dotted.startswith("nki.") and last in JIT_ENTRY_POINTS:
            return updated.with_changes(decorator=jit.decorator)
        if dotted in self.entry_aliases:
            return updated.with_changes(decorator=jit.decorator)
        return updated

    # imports ---------------------------------------------------------------------------------

    def leave_Import(self, original, updated):
        names = []
        for alias in updated.names:
            full = _dotted(alias.name)
            new = IMPORTS.get(full)
            if new is not None:
                alias = alias.with_changes(name=cst.parse_expression(new))
                if alias.asname and alias.asname.name.value == new:
                    alias = alias.with_changes(asname=None)  # `import nki as nki`
                local = alias.asname.name.value if alias.asname else new.split(".")[0]
                self._alias(new, local)
            names.append(alias)
        return updated.with_changes(names=names)

    def leave_ImportFrom(self, original, updated):
        module = _dotted(updated.module) if updated.module else None
        if module == "torch_neuronx" and not isinstance(updated.names, cst.ImportStar):
            names = [a for a in updated.names if a.name.value == "nki_jit"]
            if names:  # `@nki_jit` is `@nki.jit` in current NKI
                self.torch_jit.update(
                    (a.asname.name.value if a.asname else "nki_jit") for a in names
                )
                rest = [a for a in updated.names if a.name.value != "nki_jit"]
                if not rest:
                    return cst.Import(names=[cst.ImportAlias(name=cst.Name("nki"))])
                rest[-1] = rest[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
                return updated.with_changes(names=rest)
        if module == "neuronxcc.nki" and not isinstance(updated.names, cst.ImportStar):
            entry = [a for a in updated.names if a.name.value in ("jit", *JIT_ENTRY_POINTS)]
            if entry and len(entry) == len(updated.names):
                # `from neuronxcc.nki import benchmark` ... `@benchmark(...)`: `@nki.jit`
                self.entry_aliases.update(
                    (a.asname.name.value if a.asname else a.name.value) for a in entry
                )
                return cst.Import(names=[cst.ImportAlias(name=cst.Name("nki"))])
        if module == "neuronxcc.nki.language" and not isinstance(updated.names, cst.ImportStar):
            # `from neuronxcc.nki.language import par_dim`: `par_dim(n)` is `n` now
            gone = {a.name.value: a for a in updated.names if a.name.value == "par_dim"}
            for a in gone.values():
                self.par_dims.add(a.asname.name.value if a.asname else "par_dim")
            rest = [a for a in updated.names if a.name.value not in gone]
            if gone and not rest:
                return cst.RemovalSentinel.REMOVE
            if gone:
                rest[-1] = rest[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
                updated = updated.with_changes(names=rest)
        if module == "neuronxcc.nki.isa.constants":
            return updated.with_changes(module=cst.parse_expression("nki.isa"))
        if module == "neuronxcc" and not isinstance(updated.names, cst.ImportStar):
            if [a.name.value for a in updated.names] == ["nki"]:
                return cst.Import(
                    names=[cst.ImportAlias(name=cst.Name("nki"), asname=updated.names[0].asname)]
                )
        if module in IMPORTS:
            return updated.with_changes(module=cst.parse_expression(IMPORTS[module]))
        return updated

    def _alias(self, module: str, local: str) -> None:
        if module == "nki.language":
            self.nl.add(local)
        elif module == "nki.isa":
            self.nisa.add(local)
            self.isa_imported.add(local)
        elif module == "nki.compiler":
            self.compiler.add(local)

    # index grids -----------------------------------------------------------------------------

    def _grid_of(self, value) -> _Grid | None:
        """`nl.arange(n)[:, None]` / `[None, :]` / `nl.arange(n)`."""
        call, axis, rank = value, 0, 1
        if isinstance(value, cst.Subscript):
            call = value.value
            items = [e.slice for e in value.slice]
            kinds = [
                "none" if isinstance(i, cst.Index) and _dotted(i.value) == "None" else
                "all" if isinstance(i, cst.Slice) and i.lower is None and i.upper is None else "?"
                for i in items
            ]  # fmt: skip
            if "?" in kinds or kinds.count("all") != 1:
                return None
            axis, rank = kinds.index("all"), len(kinds)
        if not (isinstance(call, cst.Call) and self._is(call.func, self.nl, "arange")):
            return None
        args = [a.value for a in call.args]
        if len(args) == 1:
            return _Grid("0", _code(args[0]), 1, axis, rank)
        if len(args) == 2:
            lo, hi = _code(args[0]), _code(args[1])
            return _Grid(lo, f"{hi} - {lo}" if lo != "0" else hi, 1, axis, rank)
        return None

    def _shifted_grid(self, value) -> _Grid | None:
        """`X + nl.arange(n)[:, None]` (or a grid name), `nl.arange(...)[...] + X`."""
        if not (isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Add)):
            return None
        for grid_side, other in ((value.right, value.left), (value.left, value.right)):
            grid = self._grid_of(grid_side)
            if grid is None and isinstance(grid_side, cst.Name):
                grid = self.grids.get(grid_side.value)
            if grid is not None and not self._uses_grid(other) and self._grid_of(other) is None:
                offset = _code(other)
                start = offset if grid.start == "0" else f"{offset} + {grid.start}"
                return _Grid(start, grid.size, grid.step, grid.axis, grid.rank)
        return None

    def _mgrid(self, value) -> list[_Grid] | None:
        if not (isinstance(value, cst.Subscript) and self._is(value.value, self.nl, "mgrid")):
            return None
        grids = []
        for axis, element in enumerate(value.slice):
            s = element.slice
            if not isinstance(s, cst.Slice) or s.step is not None:
                return None
            if s.upper is None:
                return None
            lo = _code(s.lower) if s.lower is not None else "0"
            hi = _code(s.upper)
            grids.append(
                _Grid(lo, f"{hi} - ({lo})" if lo != "0" else hi, 1, axis, len(value.slice))
            )
        return grids

    def visit_Assign(self, node):
        # `t[...] = nl.load(..., mask=...)`: Beta 1's mask keeps the same elements of the target
        value = node.value
        mask = None
        if isinstance(value, cst.Call):
            mask = next((a for a in value.args if a.keyword and a.keyword.value == "mask"), None)
        self.assign_mask = self._mask_bounds(mask.value) if mask is not None else None
        target = node.targets[0].target if len(node.targets) == 1 else None
        if isinstance(value, cst.Call) and self._is(value.func, self.nl, "loop_reduce"):
            if isinstance(target, cst.Subscript):
                self.reductions.add(value)  # rewritten with its statement
        if isinstance(target, cst.Name) and (tuple(self.scope), target.value) in self.blocked:
            self.allocating = (tuple(self.scope), target.value)
        if (isinstance(target, cst.Name) and (tuple(self.scope), target.value) in self.full
                and self.assign_mask is not None):  # fmt: skip
            self.full_result = self._result_grid(target.value, value)
            key = (tuple(self.scope), target.value)
            self.full_masks.setdefault(key, set()).add(_kept_key(self.assign_mask))
        return True

    def _result_grid(self, name: str, call: cst.Call) -> tuple | None:
        """(name, grid axes, their sizes, dtype, kept ranges) of the masked `nl` call assigned
        to `name` (`nl.load(a[i_p, i_f], mask=...)`, `nl.max(t[i_p, i_k, i_f], axis=[1],
        mask=...)`): its result has the shape of its index grids' space without the reduced
        axes; None when that is not known from the source."""
        func = self._is(call.func, self.nl)
        if func is None or func in NOT_TILES:
            return None
        data = call.args[0] if call.args else None
        if data is None or data.keyword is not None or not isinstance(data.value, cst.Subscript):
            return None
        sizes: dict[int, str] = {}
        rank = 0
        for element in data.value.slice:
            if not isinstance(element.slice, cst.Index):
                return None
            form = self._linear(element.slice.value)
            if form is None:
                return None
            sizes.update(form.sizes)
            rank = max(rank, form.rank)
        if not rank or sorted(sizes) != list(range(rank)):
            return None
        axis = next((a.value for a in call.args if a.keyword and a.keyword.value == "axis"),
                    call.args[1].value if func in REDUCTIONS and len(call.args) > 1
                    and call.args[1].keyword is None else None)  # fmt: skip
        reduced: list[int | None] = []
        if axis is not None:
            elements = axis.elements if isinstance(axis, cst.List | cst.Tuple) else [axis]
            reduced = [_int(getattr(e, "value", e)) for e in elements]
            if None in reduced:
                return None
        axes = [a for a in range(rank) if a not in reduced]
        dtype = next((a.value for a in call.args if a.keyword and a.keyword.value == "dtype"),
                     None)  # fmt: skip
        base = data.value.value
        if dtype is None and not isinstance(base, cst.Name):
            return None
        dtype_text = _code(dtype) if dtype is not None else f"{_code(base)}.dtype"
        return name, axes, [sizes[a] for a in axes], dtype_text, self.assign_mask

    def _kept_slices(self, node, kept: dict, axes: list[int], sizes: list[str]) -> str | None:
        """The slices `0:n, ...` of a full-shape result (its dimensions the grid axes `axes`,
        of `sizes`) that a mask (`kept`, `_mask_bounds`) keeps."""
        slices = []
        for axis, size in zip(axes, sizes):
            if axis not in kept:
                slices.append(f"0:{size}")
                continue
            clamped = self._clamp(node, kept[axis], _Grid("0", size, 1, axis), "0", size)
            if clamped is None:
                return None
            slices.append(f"{clamped[0]}:{clamped[1]}")
        return ", ".join(slices)

    def _full_result(self, line, stmt):
        """`t = nl.max(...)` (its mask already turned into slices) whose result keeps the full
        shape of its grids (`_MaskedResults`): `t = nl.ndarray(<full shape>, ...)`, then the
        call writes the view its mask kept (a load as one DMA into it)."""
        found, self.full_result = self.full_result, None
        if found is None or not isinstance(stmt, cst.Assign) or len(stmt.targets) != 1:
            return None
        name, axes, sizes, dtype, kept = found
        target = stmt.targets[0].target
        if not (isinstance(target, cst.Name) and target.value == name):
            return None
        view = self._kept_slices(self.statement, kept, axes, sizes)
        if view is None:
            return None
        self.full_shapes[(tuple(self.scope), name)] = sizes
        shape = ", ".join(sizes) + ("," if len(sizes) == 1 else "")
        allocation = cst.parse_statement(
            f"{name} = {self._nl()}.ndarray(({shape}), dtype={dtype}, buffer={self._nl()}.sbuf)\n"
        ).with_changes(leading_lines=line.leading_lines)
        write = cst.parse_statement(f"{name}[{view}] = {_code(stmt.value)}\n")
        write = self._load_into_view(write, write.body[0]) or write
        write = write.with_changes(trailing_whitespace=line.trailing_whitespace)
        previous = self.previous
        if (
            previous is not None
            and previous[0] == self.blocks[-1]
            and _same_code(previous[1].body[0], allocation.body[0])
        ):  # the line above allocates the same tile (Beta 1 then rebound the name)
            return write.with_changes(leading_lines=line.leading_lines)
        return cst.FlattenSentinel([allocation, write])

    def _full_operand(self, node, kept: dict, value):
        """A full-shape result (`_full_result`) read whole by a masked call: the view the call's
        mask keeps (its dimensions the grid axes in order)."""
        if not isinstance(value, cst.Name):
            return value
        sizes = self.full_shapes.get((tuple(self.scope), value.value))
        if sizes is None:
            return value
        view = self._kept_slices(node, kept, list(range(len(sizes))), sizes)
        return value if view is None else cst.parse_expression(f"{value.value}[{view}]")

    def _unblocked(self, updated):
        """The allocation of a blocked tensor with the partition dimension first, or (blocks
        that rotate, `_BlockedTensors`) a list of tiles."""
        key, self.allocating = self.allocating, None
        blocks, _, on_chip, listed = self.blocked[key]
        call = updated.value
        if not on_chip:
            return updated  # an HBM tensor keeps its layout; nl.par_dim is gone
        args = []
        counts = []
        for i, a in enumerate(call.args):
            shape = (a.keyword is None and i == 0) or (a.keyword and a.keyword.value == "shape")
            if shape and isinstance(a.value, cst.Tuple | cst.List):
                dims = [_code(e.value) for e in a.value.elements]
                counts = dims[:blocks]
                dims = dims[blocks:] if listed else [dims[blocks], *counts, *dims[blocks + 1 :]]
                a = a.with_changes(value=cst.parse_expression("(" + ", ".join(dims) + ")"))
            args.append(a)
        value = call.with_changes(args=args)
        if listed:
            return updated.with_changes(value=_tile_list(value, counts))
        return updated.with_changes(value=value)

    def _blocked_subscript(self, original, updated):
        """`t[i]`, `t[i, 0:128, 0:64]` of a blocked tensor: `t[:, i, :]`, `t[0:128, i, 0:64]`;
        of a list of tiles, `t[i]`, `t[i][0:128, 0:64]`."""
        if not isinstance(updated.value, cst.Name):
            return updated
        found = self.blocked.get((tuple(self.scope), updated.value.value))
        if found is None or not found[2]:
            return updated
        blocks, rank, _, listed = found
        elements = [_code(e.slice) for e in updated.slice]
        if listed:
            if original is self.written and len(elements) == blocks:
                # `t[i] = x` writes into the tile; `t[i] = x` of a list would rebind the item
                elements += [":"] * (rank - blocks)
            return _tile_of_list(updated.value.value, elements, blocks)
        if any(e.strip() == "..." for e in elements) or len(elements) > rank:
            return updated
        elements += [":"] * (rank - len(elements))
        order = [elements[blocks], *elements[:blocks], *elements[blocks + 1 :]]
        return updated.with_changes(slice=cst.parse_expression(f"x[{', '.join(order)}]").slice)

    def visit_AssignTarget(self, node):
        self.mask_stack.append(self.assign_mask)
        self.written = node.target
        return True

    def visit_AugAssign(self, node):
        self.written = node.target
        return True

    def leave_AnnAssign(self, original, updated):
        # `qk: nt.tensor[128, 512] = nl.matmul(...)`: a tile, like an assignment's
        value = updated.value
        if isinstance(updated.target, cst.Name) and isinstance(value, cst.Call):
            name = self._is(value.func, self.nl)
            if (name and name not in NOT_TILES) or self._is(value.func, self.nisa):
                self.tiles.add(updated.target.value)
            if name in PSUM_RESULTS:
                self.psum.add(updated.target.value)
        return updated

    def leave_AssignTarget(self, original, updated):
        self.mask_stack.pop()
        return updated.with_changes(target=_writable(updated.target))

    def leave_AugAssign(self, original, updated):
        return updated.with_changes(target=_writable(updated.target))

    def leave_Assign(self, original, updated):
        if self.allocating is not None:
            updated = self._unblocked(updated)
        if len(updated.targets) != 1:
            return updated
        target, value = updated.targets[0].target, updated.value
        entry = _dotted(value) or ""
        if (
            isinstance(target, cst.Name)
            and entry.startswith("nki.")
            and (entry.split(".", 1)[1] in JIT_ENTRY_POINTS[:-1])
        ):
            # `nki_jit = nki.trace`: current NKI has nki.jit
            self.entry_aliases.add(target.value)
            return updated.with_changes(value=cst.parse_expression("nki.jit"))
        if isinstance(target, cst.Name):
            if isinstance(value, cst.Call) and self._is(value.func, self.nl) == (
                "shared_identity_matrix"
            ):
                self.identities.add(target.value)
            else:
                self.identities.discard(target.value)
        kind = self._allocator(value)
        if isinstance(target, cst.Name) and kind and not isinstance(value, cst.Call):
            # `sb_mod = nki.compiler.sbuf.mod_alloc`: its allocations go to the buffer
            self.allocators[target.value] = kind
            return cst.RemovalSentinel.REMOVE
        if isinstance(target, cst.Name) and _dotted(value) == "nki.simulate_kernel":
            # `simulate_kernel = nki.simulate_kernel`: its calls become nki.simulate(k)(...)
            self.simulate_aliases.add(target.value)
            return cst.RemovalSentinel.REMOVE
        if isinstance(target, cst.Name) and self._kept(target.value):
            # still known, so that its uses are explained, but neither removed nor rewritten
            grid = self._grid_of(value) or self._shifted_grid(value)
            grids = self._mgrid(value)
            form = (
                self._linear(value) if self._uses_grid(value) or self._has_grid_api(value) else None
            )
            if grid is not None:
                self.grids[target.value] = grid
                self.kept_names.add(target.value)
            elif form is not None and form.coefs:
                self.exprs[target.value] = form
                self.kept_names.add(target.value)
            elif grids is not None and len(grids) <= len(MGRID_AXES):
                self.mgrids[target.value] = grids
                for attr, g in zip(MGRID_AXES, grids):
                    self.grids[_mgrid_axis(target.value, attr)] = g
                    self.kept_names.add(_mgrid_axis(target.value, attr))
            self._todo(original, f"the index grid {target.value} is used where a slice "
                       "cannot replace it: write its uses with slices (or a nisa.iota "
                       "pattern) and remove it")  # fmt: skip
            self.grid_definition = True
            return updated
        if isinstance(target, cst.Name):
            grid = self._grid_of(value) or self._shifted_grid(value)
            if grid is not None:
                self.grids[target.value] = grid
                self.kept_names.discard(target.value)
                self._removed(target.value)
                return cst.RemovalSentinel.REMOVE
            grids = self._mgrid(value)
            if grids is not None and len(grids) <= len(MGRID_AXES):
                self.mgrids[target.value] = grids
                for attr, g in zip(MGRID_AXES, grids):
                    self.grids[_mgrid_axis(target.value, attr)] = g
                    self.kept_names.discard(_mgrid_axis(target.value, attr))
                self._removed(target.value)
                return cst.RemovalSentinel.REMOVE
            form = (
                self._linear(value) if self._uses_grid(value) or self._has_grid_api(value) else None
            )
            if form is not None and form.coefs:
                # `expr_c = expr_a * -1`: read through where it is used
                self.exprs[target.value] = form
                self._removed(target.value)
                return cst.RemovalSentinel.REMOVE
            if self._uses_grid(value) and self._mask_bounds(value) is not None:
                self.masks[target.value] = value  # becomes the slices of the calls it masks
                return cst.RemovalSentinel.REMOVE
            if self._column(value):
                self.columns.add(target.value)
            else:
                self.columns.discard(target.value)
            shape = self._static_shape(value)
            if shape is None:
                self.shapes.pop(target.value, None)
            else:
                self.shapes[target.value] = shape
            while isinstance(value, cst.ListComp):  # a list of PSUM tiles (`_tile_list`)
                value = value.elt
            if isinstance(value, cst.Call):
                fn = value.func
                nl_name = self._is(fn, self.nl)
                if (nl_name and nl_name not in NOT_TILES) or self._is(fn, self.nisa):
                    self.tiles.add(target.value)
                buffer = next(
                    (a.value for a in value.args if a.keyword and a.keyword.value == "buffer"),
                    None,
                )
                dtype = next(
                    (a.value for a in value.args if a.keyword and a.keyword.value == "dtype"),
                    None,
                )
                in_psum = buffer is not None and self._is(buffer, self.nl, "psum")
                if nl_name in PSUM_RESULTS or (nl_name and in_psum):
                    self.psum.add(target.value)
                    if dtype is not None and (_dotted(dtype) or "").split(".")[-1] == "float32":
                        self.psum_f32.add(target.value)
                else:
                    self.psum.discard(target.value)
                    self.psum_f32.discard(target.value)
        elif isinstance(target, cst.Tuple):
            grids = self._mgrid(value)
            names = [e.value for e in target.elements]
            if grids and len(grids) == len(names) and all(isinstance(n, cst.Name) for n in names):
                if any(self._kept(n.value) for n in names):
                    for n, g in zip(names, grids):
                        self.grids[n.value] = g
                        self.kept_names.add(n.value)
                    self._todo(original, "index grids used where a slice cannot replace them: "
                               "write their uses with slices and remove them")  # fmt: skip
                    self.grid_definition = True
                    return updated
                for n, g in zip(names, grids):
                    self.grids[n.value] = g
                    self.kept_names.discard(n.value)
                    self._removed(n.value)
                return cst.RemovalSentinel.REMOVE
        return updated

    def _affine(self, node) -> tuple[_Grid, str] | None:
        """`grid`, `X + grid`, `grid + X`, `k * grid`, `k * grid + X`: (grid scaled, offset)."""
        if isinstance(node, cst.Name) and node.value in self.grids:
            return self.grids[node.value], "0"
        if isinstance(node, cst.BinaryOperation):
            if isinstance(node.operator, cst.Multiply):
                k = _int(node.left) if _int(node.left) is not None else _int(node.right)
                other = node.right if _int(node.left) is not None else node.left
                inner = self._affine(other)
                if k is not None and inner is not None and inner[1] == "0":
                    g = inner[0]
                    start = f"{k} * {g.start}" if g.start != "0" else "0"
                    return _Grid(start, g.size, g.step * k, g.axis, g.rank), "0"
            if isinstance(node.operator, cst.Add):
                for grid_side, other in ((node.left, node.right), (node.right, node.left)):
                    inner = self._affine(grid_side)
                    if inner is not None and not self._uses_grid(other):
                        g, off = inner
                        text = _code(other)
                        return g, text if off == "0" else f"{off} + {text}"
        return None

    def _linear(self, node) -> _Linear | None:
        """`node` as a linear form of index-grid axes: sums, differences and multiples (by
        expressions without grids) of grids and of names bound to such forms; None for anything
        else (a product of two grids, a tile, a call on a grid)."""
        if isinstance(node, cst.Name) and node.value in self.grids:
            g = self.grids[node.value]
            return _Linear({g.axis: g.step}, _term(g.start), {g.axis: g.size}, g.rank)
        if isinstance(node, cst.Name) and node.value in self.exprs:
            return self.exprs[node.value]
        g = self._grid_of(node)
        if g is not None:  # `2 * nl.arange(64)[:, None]`
            return _Linear({g.axis: g.step}, _term(g.start), {g.axis: g.size}, g.rank)
        if isinstance(node, cst.Integer):
            return _Linear({}, int(node.value, 0))
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
            inner = self._linear(node.expression)
            return None if inner is None else inner.scaled(-1)
        if isinstance(node, cst.BinaryOperation) and isinstance(
            node.operator, cst.Add | cst.Subtract | cst.Multiply
        ):
            left, right = self._linear(node.left), self._linear(node.right)
            if left is None or right is None:
                return None
            if isinstance(node.operator, cst.Add):
                return left.plus(right)
            if isinstance(node.operator, cst.Subtract):
                return left.plus(right.scaled(-1))
            if left.coefs and right.coefs:
                return None  # a product of grids is not affine
            if left.coefs:
                return left.scaled(right.const)
            return right.scaled(left.const)
        if self._uses_grid(node) or _names(node) & self.tiles or _calls(node):
            return None
        return _Linear({}, _term(_code(node)))

    def _access_pattern(self, original, updated) -> cst.BaseExpression | None:
        """`t[e0, e1, ...]` with each index a linear form of index grids (an integer too) as
        the access pattern it reads, `t.ap(pattern=[[step, num], ...], offset=...)`: element
        [a0, a1, ...] of the grids' space is t's element sum_i e_i * stride_i. None when the
        subscript is not of that form."""
        base = _dotted(updated.value)
        if base is None:
            return None
        forms = []
        for element in updated.slice:
            if not isinstance(element.slice, cst.Index) or element.slice.star is not None:
                return None
            form = self._linear(element.slice.value)
            if form is None:
                return None
            forms.append(form)
        total = _Linear({}, 0)
        n = len(forms)
        for i, form in enumerate(forms):
            stride: _Term = 1
            for j in range(i + 1, n):
                stride = _mul(stride, f"{base}.shape[{j}]")
            total = total.plus(form.scaled(stride))
        rank = max(f.rank for f in forms)
        if not total.coefs or rank == 0 or max(total.sizes, default=0) >= rank:
            return None
        if 0 not in total.sizes:
            return None  # no index reads the partition axis: its size is not known
        # an axis no index reads has size 1 (`idx[i_p]` of a 1-D tensor: a (n, 1) column)
        steps = {a: total.coefs.get(a, 0) if a in total.sizes else 1 for a in range(rank)}
        sizes: dict[int, _Term] = {a: total.sizes.get(a, "1") for a in range(rank)}
        offset = total.const
        mask = self.mask_stack[-1] if self.mask_stack else None
        for axis, (start, lows, highs) in (mask or {}).items():
            # the mask keeps positions a of the axis with low <= start + a < high
            if axis not in sizes:
                return None
            first: _Term = 0
            for low in lows:
                first = f"max({first}, {low} - {_paren(start)})"
            end: _Term = sizes[axis]
            for high in highs:
                end = f"min({end}, {high} - {_paren(start)})"
            sizes[axis] = end if first == 0 else f"{end} - {first}"
            offset = _add(offset, _mul(steps[axis], first))
        pattern = [f"[{steps[a]}, {sizes[a]}]" for a in range(rank)]
        text = f"{base}.ap(pattern=[{', '.join(pattern)}], offset={offset})"
        return cst.parse_expression(text)

    def _indirect_access(self, updated) -> cst.BaseExpression | None:
        """`t[idx_tile, i_f]` (Beta 1's indirect DMA: row idx_tile[p] of t for partition p,
        the other indices linear forms of grids) as the access pattern with a vector offset,
        `t.ap(pattern=[[row, idx.shape[0]], [step, num], ...], offset=...,
        vector_offset=idx_tile, indirect_dim=0)`."""
        base = _dotted(updated.value)
        elements = list(updated.slice)
        if base is None or len(elements) < 2:
            return None
        if not all(isinstance(e.slice, cst.Index) and e.slice.star is None for e in elements):
            return None
        index = elements[0].slice.value
        stem = index.value if isinstance(index, cst.Subscript) else index
        if not (isinstance(stem, cst.Name) and stem.value in self.tiles):
            return None
        if self.mask_stack and self.mask_stack[-1]:
            return None
        forms = [self._linear(e.slice.value) for e in elements[1:]]
        if any(f is None for f in forms) or not any(f.coefs for f in forms):
            return None
        n = len(elements)
        total = _Linear({}, 0)
        for i, form in enumerate(forms, 1):
            stride: _Term = 1
            for j in range(i + 1, n):
                stride = _mul(stride, f"{base}.shape[{j}]")
            total = total.plus(form.scaled(stride))
        if 0 in total.coefs or any(a not in total.sizes for a in range(1, total.rank)):
            return None
        row: _Term = 1
        for j in range(1, n):
            row = _mul(row, f"{base}.shape[{j}]")
        idx = _code(index)
        pattern = [f"[{row}, {_paren(idx)}.shape[0]]"] + [
            f"[{total.coefs.get(a, 0)}, {total.sizes[a]}]" for a in range(1, total.rank)
        ]
        return cst.parse_expression(
            f"{base}.ap(pattern=[{', '.join(pattern)}], offset={total.const}, "
            f"vector_offset={idx}, indirect_dim=0)"
        )

    def _uses_grid(self, node) -> bool:
        found = []

        class Finder(cst.CSTVisitor):
            def visit_Name(inner, n):
                if n.value in self.grids or n.value in self.exprs:
                    found.append(n)

        node.visit(Finder())
        return bool(found)

    def leave_Attribute(self, original, updated):
        base = updated.value
        axis = updated.attr.value
        if isinstance(base, cst.Name) and base.value in self.mgrids and axis in MGRID_AXES:
            # `g.p` of `g = nl.mgrid[...]`: read as the grid it names (a Name written back as
            # `g.p` where the rewrite leaves it)
            return cst.Name(_mgrid_axis(base.value, axis))
        limit = FLOAT32_LIMITS.get(updated.attr.value)
        dtype = (
            self._is(updated.value, self.nl) if isinstance(updated.value, cst.Attribute) else None
        )
        if limit and dtype in ("fp32", "float32"):
            return cst.parse_expression(limit)  # Beta 1's numpy finfo(float32) bounds
        name = self._is(updated, self.nl)
        if name in DTYPE_ALIASES:
            return updated.with_changes(attr=cst.Name(DTYPE_ALIASES[name]))
        return updated

    def _whole_mgrid(self, updated):
        """`t[nl.mgrid[0:128, 0:512]]`: the slices the grid selects."""
        if len(updated.slice) != 1 or not isinstance(updated.slice[0].slice, cst.Index):
            return None
        grids = self._mgrid(updated.slice[0].slice.value)
        if grids is None:
            return None
        if self.mask_stack and self.mask_stack[-1]:
            return None  # a masked call: sliced by the mask's rewrite or left with a TODO
        text = ", ".join(
            f"{g.start}:{g.size if g.start == '0' else f'{g.start} + {g.size}'}" for g in grids
        )
        return updated.with_changes(slice=cst.parse_expression(f"x[{text}]").slice)

    def leave_Subscript(self, original, updated):
        updated = self._blocked_subscript(original, updated)
        whole = self._whole_mgrid(updated)
        if whole is not None:
            return whole
        indirect = self._indirect_access(updated)
        if indirect is not None:
            return indirect
        if not any(
            self._uses_grid(e.slice) for e in updated.slice if isinstance(e.slice, cst.Index)
        ):
            return updated
        # grids kept for another use are not rewritten into access patterns
        kept_grid = bool(self._grid_names(updated) & self.kept_names)
        rank = 0
        elements = []
        axes = []
        for element in updated.slice:
            s = element.slice
            if isinstance(s, cst.Index) and self._uses_grid(s.value):
                found = self._affine(s.value)
                if found is None or found[0].step < 1:
                    pattern = None if kept_grid else self._access_pattern(original, updated)
                    if pattern is not None:
                        return pattern
                    self._todo(original, f"index {_code(s.value)} is not start + step * grid")
                    self.unresolved.update(self._grid_names(s.value))
                    return updated
                grid, offset = found
                axes.append(grid.axis)
                rank = max(rank, grid.rank)
                start = (
                    grid.start
                    if offset == "0"
                    else (offset if grid.start == "0" else f"{offset} + {grid.start}")
                )
                # the stop just past the last element (a slice may not end past the dimension)
                if grid.step == 1:
                    span = grid.size
                elif grid.size.isdigit():
                    span = str(grid.step * (int(grid.size) - 1) + 1)
                else:
                    span = f"{grid.step} * ({grid.size} - 1) + 1"
                stop = span if start == "0" else f"{start} + {span}"
                kept = self.mask_stack[-1] if self.mask_stack else None
                if kept and grid.axis in kept:
                    clamped = self._clamp(original, kept[grid.axis], grid, start, stop)
                    if clamped is None:
                        return updated
                    start, stop = clamped
                text = f"{start}:{stop}" + (f":{grid.step}" if grid.step != 1 else "")
                elements.append(
                    element.with_changes(slice=cst.parse_expression(f"x[{text}]").slice[0].slice)
                )
            else:
                elements.append(element)
        if axes != sorted(axes) or len(set(axes)) != len(axes):
            pattern = None if kept_grid else self._access_pattern(original, updated)
            if pattern is not None:
                return pattern
            self._todo(
                original, "index grids transpose the tensor: load it in order and transpose it"
            )
            return updated
        if kept_grid:
            return updated  # its grid stays (its definition says why)
        if rank > len(elements) and not kept_grid:
            # the grids' space has more axes than the tensor (`idx[i_p]` of a 1-D tensor)
            pattern = self._access_pattern(original, updated)
            if pattern is not None:
                return pattern
        return updated.with_changes(slice=elements)

    def _uses_compiler(self, node) -> bool:
        """Whether `node` reads `nki.compiler` (or a name bound to it)."""
        found = []

        class Finder(cst.CSTVisitor):
            def visit_Attribute(inner, n):
                if _dotted(n) == "nki.compiler" or _dotted(n.value) in self.compiler:
                    found.append(n)

        (node if isinstance(node, cst.CSTNode) else cst.Module(list(node.nodes))).visit(Finder())
        return bool(found)

    def _has_grid_api(self, node) -> bool:
        found = []

        class Finder(cst.CSTVisitor):
            def visit_Attribute(inner, n):
                if self._is(n, self.nl, "arange") or self._is(n, self.nl, "mgrid"):
                    found.append(n)

        (node if isinstance(node, cst.CSTNode) else cst.Module(list(node.nodes))).visit(Finder())
        return bool(found)

    def _grid_names(self, node) -> set[str]:
        names = set()

        class Finder(cst.CSTVisitor):
            def visit_Name(inner, n):
                if n.value in self.grids or n.value in self.exprs:
                    names.add(n.value)

        node.visit(Finder())
        return names

    # calls and operators ---------------------------------------------------------------------

    # SPMD grids ------------------------------------------------------------------------------

    def visit_FunctionDef(self, node):
        self.reads_program.append(False)
        self.scope.append(node.name.value)
        # a function's grids are its own: it starts from its enclosing scope's (closures)
        names = (self.grids, self.mgrids, self.kept_names, self.masks, self.tiles, self.psum,
                 self.exprs, self.shapes, self.psum_f32, self.identities)  # fmt: skip
        self.outer.append(names)
        self.grids, self.mgrids, self.masks = dict(self.grids), dict(self.mgrids), dict(self.masks)
        self.exprs, self.shapes, self.psum_f32 = dict(self.exprs), {}, set(self.psum_f32)
        self.kept_names, self.tiles, self.psum = set(self.kept_names), set(self.tiles), set()
        self.identities = set(self.identities)
        return True

    def _kept(self, name: str) -> bool:
        return (tuple(self.scope), name) in self.keep

    def _removed(self, name: str) -> None:
        self.removed.add((tuple(self.scope), name))

    def _program_call(self, call: cst.Call):
        """`nl.program_id(a)`, `nl.num_programs(a)`, `nl.program_ndim()` with the grid's
        value: the loop variable of axis a, the grid's sizes; None for other calls."""
        name = self._is(call.func, self.nl)
        if name not in ("program_id", "num_programs", "program_ndim"):
            return None
        if self.reads_program:
            self.reads_program[-1] = True
        if not self.grid:
            return None
        if name == "program_ndim":
            return cst.Integer(str(len(self.grid)))
        axis = _int(call.args[0].value) if call.args else None
        if name == "program_id" and axis is not None and 0 <= axis < len(self.grid):
            return cst.Name(self.pids[axis])
        if name == "num_programs":
            if not call.args:
                return cst.Integer(str(math.prod(self.grid)))
            if axis is not None and 0 <= axis < len(self.grid):
                return cst.Integer(str(self.grid[axis]))
        return None

    def leave_FunctionDef(self, original, updated):
        updated = self._returned_in_shared_hbm(updated)
        self.scope.pop()
        names = self.outer.pop()
        (self.grids, self.mgrids, self.kept_names, self.masks, self.tiles, self.psum,
         self.exprs, self.shapes, self.psum_f32, self.identities) = names  # fmt: skip
        reads = self.reads_program.pop() if self.reads_program else False
        if not reads:
            return updated
        if not self.grid:  # one program: nl.program_id() is 0 in current NKI too (LNC=1)
            return updated
        return updated.with_changes(body=self._grid_loops(updated.body))

    def _returned_in_shared_hbm(self, func: cst.FunctionDef) -> cst.FunctionDef:
        """Beta 1 kernels could return tensors allocated in `nl.hbm`; current NKI returns
        `nl.shared_hbm` tensors only, so the returned names are allocated there."""
        returned: set[str] = set()
        nl_names = self.nl

        class Returns(cst.CSTVisitor):
            def visit_FunctionDef(inner, node):
                return node is func  # not the returns of nested functions

            def visit_Return(inner, node):
                value = node.value
                items = value.elements if isinstance(value, cst.Tuple) else [value]
                for item in items:
                    item = item.value if isinstance(item, cst.BaseElement) else item
                    if isinstance(item, cst.Name):
                        returned.add(item.value)

        func.visit(Returns())
        if not returned:
            return func

        class Buffers(cst.CSTTransformer):
            def leave_Assign(inner, original, node):
                target = node.targets[0].target if len(node.targets) == 1 else None
                if not (isinstance(target, cst.Name) and target.value in returned):
                    return node
                if not isinstance(node.value, cst.Call):
                    return node
                args = []
                for a in node.value.args:
                    v = a.value
                    if (
                        a.keyword
                        and a.keyword.value == "buffer"
                        and isinstance(v, cst.Attribute)
                        and _dotted(v.value) in nl_names
                        and v.attr.value in RETURNED_BUFFERS
                    ):
                        a = a.with_changes(value=v.with_changes(
                            attr=cst.Name(RETURNED_BUFFERS[v.attr.value])))  # fmt: skip
                    args.append(a)
                return node.with_changes(value=node.value.with_changes(args=args))

        return func.with_changes(body=func.body.visit(Buffers()))

    def _grid_loops(self, block: cst.IndentedBlock) -> cst.IndentedBlock:
        """The kernel body as loops over the grid: the statements before the first that uses
        a program id stay first (the outputs' allocations), a final `return` stays last."""
        body = list(block.body)
        tail = [body.pop()] if body and _is_return(body[-1]) else []
        pids = set(self.pids)
        first = next((i for i, st in enumerate(body) if _names(st) & pids), len(body))
        head, inner = body[:first], body[first:]
        if not inner:
            return block
        nl = self._nl()
        code = "".join(cst.Module([]).code_for_node(st) for st in inner)
        # an axis no statement reads only repeats the same program: no loop for it
        used = [
            (pid, n)
            for pid, n in zip(self.pids, self.grid)
            if any(pid in _names(st) for st in inner)
        ]
        loop = "range" if self.to == "0.7" else f"{nl}.affine_range"
        text = ""
        for depth, (pid, size) in enumerate(used):
            text += "    " * depth + f"for {pid} in {loop}({size}):\n"
        pad = "    " * len(used)
        text += "".join(pad + line if line.strip() else line for line in code.splitlines(True))
        loop = cst.parse_statement(text)
        return block.with_changes(body=[*head, loop, *tail])

    # masks -----------------------------------------------------------------------------------

    def visit_Tuple(self, node):
        """`(n, nl.par_dim(p), f)`: Beta 1 block dimensions before the partition dimension; in
        current NKI the first dimension is the partition one, a layout change left to the user."""
        if self.allocating is not None:
            return True  # rewritten by leave_Assign
        for element in node.elements[1:]:
            call = element.value
            if isinstance(call, cst.Call) and (
                self._is(call.func, self.nl, "par_dim")
                or (isinstance(call.func, cst.Name) and call.func.value in self.par_dims)
            ):
                self.block_dims.add(call)
                self._todo(node, "block dimensions before nl.par_dim: allocate the partition "
                           "dimension first, (p, n, f), and index the blocks as t[:, i, :]")  # fmt: skip
        return True

    def visit_IndentedBlock(self, node):
        self.blocks.append(next(self.opened))
        self.previous = None
        return True

    def leave_IndentedBlock(self, original, updated):
        self.blocks.pop()
        self.previous = None
        return updated

    def visit_Call(self, node):
        mask = next((a for a in node.args if a.keyword and a.keyword.value == "mask"), None)
        self.mask_stack.append(self._mask_bounds(mask.value) if mask is not None else None)
        return True

    def _mask_bounds(self, expr) -> dict[int, tuple[str, list[str], list[str]]] | None:
        """The mask `expr` as {grid axis: (the grid expression's start, lower bounds
        (inclusive), upper bounds (exclusive))}; None when it is not comparisons of a grid
        expression (step 1) with a bound, joined with &."""
        if isinstance(expr, cst.Name) and expr.value in self.masks:
            expr = self.masks[expr.value]
        if self._grid_names(expr) & self.kept_names:
            return None  # its grid stays, and the mask with it
        both = (
            isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.BitAnd)
        ) or (isinstance(expr, cst.BooleanOperation) and isinstance(expr.operator, cst.And))
        if both:  # `a & b`, and `a and b` as Beta 1 read it in a mask
            left, right = self._mask_bounds(expr.left), self._mask_bounds(expr.right)
            if left is None or right is None:
                return None
            for axis, (start, lows, highs) in right.items():
                if axis in left:
                    if left[axis][0] != start:
                        return None
                    left[axis] = (start, left[axis][1] + lows, left[axis][2] + highs)
                else:
                    left[axis] = (start, lows, highs)
            return left
        if not (isinstance(expr, cst.Comparison) and len(expr.comparisons) == 1):
            return None
        op = type(expr.comparisons[0].operator)
        sides = ((expr.left, expr.comparisons[0].comparator, False),
                 (expr.comparisons[0].comparator, expr.left, True))  # fmt: skip
        for grid_side, other, flipped in sides:
            found = self._affine(grid_side)
            if found is None or self._uses_grid(other):
                continue
            grid, offset = found
            if grid.step != 1:
                return None
            start = grid.start if offset == "0" else (
                offset if grid.start == "0" else f"{offset} + {grid.start}")  # fmt: skip
            if flipped:  # `N > grid` is `grid < N`
                op = {cst.LessThan: cst.GreaterThan, cst.GreaterThan: cst.LessThan,
                      cst.LessThanEqual: cst.GreaterThanEqual,
                      cst.GreaterThanEqual: cst.LessThanEqual}.get(op)  # fmt: skip
            bound = _code(other)
            if op is cst.LessThan:
                return {grid.axis: (start, [], [bound])}
            if op is cst.LessThanEqual:
                return {grid.axis: (start, [], [f"{bound} + 1"])}
            if op is cst.GreaterThan:
                return {grid.axis: (start, [f"{bound} + 1"], [])}
            if op is cst.GreaterThanEqual:
                return {grid.axis: (start, [bound], [])}
            return None
        return None

    def _clamp(self, node, kept, grid: _Grid, start: str, stop: str) -> tuple[str, str] | None:
        """The slice `start:stop` of an index grid shortened to what the call's mask keeps."""
        mask_start, lows, highs = kept
        if grid.step != 1:
            self._todo(node, "the mask is written on another index expression than the "
                       "subscript: slice the operands to the rows and columns it keeps")  # fmt: skip
            return None
        # the mask bounds the grid's position a (mask_start + a < high): the subscript, at
        # start + a, keeps the same positions
        origin = start

        def moved(bound: str) -> str:  # the bound on mask_start + a, moved to origin + a
            if mask_start == origin:
                return bound
            head = "" if origin == "0" else f"{origin} + "
            return f"{head}{bound} - {_paren(mask_start)}"

        for low in lows:
            start = f"max({start}, {moved(low)})"
        for high in highs:
            stop = f"min({stop}, {moved(high)})"
        return start, stop

    def leave_Call(self, original, updated):
        kept = self.mask_stack.pop() if self.mask_stack else None
        program = self._program_call(updated)
        if program is not None:
            return program
        simulate = _dotted(updated.func)
        if simulate == "nki.simulate_kernel" or simulate in self.simulate_aliases:
            if updated.args and updated.args[0].keyword is None and not updated.args[0].star:
                # Beta 1's simulate_kernel(kernel, *args) is nki.simulate(kernel)(*args)
                kernel, *rest = updated.args
                inner = cst.Call(
                    cst.parse_expression("nki.simulate"),
                    [kernel.with_changes(comma=cst.MaybeSentinel.DEFAULT)],
                )
                return updated.with_changes(func=inner, args=rest)
        bare = isinstance(updated.func, cst.Name) and updated.func.value in self.par_dims
        block = original in self.block_dims  # stays: its statement has a TODO
        if (
            (bare or self._is(updated.func, self.nl, "par_dim"))
            and len(updated.args) == 1
            and not block
        ):
            return updated.args[0].value
        numpy_dtype = self._numpy_dtype(updated)
        if numpy_dtype is not None:
            return numpy_dtype
        loop = self._is(updated.func, self.nl)
        if loop in REDUCTIONS:
            updated = self._trailing_reduction(updated)
        if loop == "loop_reduce" and original not in self.reductions:
            self._todo(original, "nl.loop_reduce has no current equivalent: accumulate into the "
                       "destination inside the loop (nisa.tensor_tensor(dst=acc, data1=acc, "
                       "data2=x, op=nl.add))")  # fmt: skip
        if self.to == "0.7" and loop in RANGES:
            # the same loop in NKI 0.7; `directives=` (a scheduling hint) has no equivalent
            kept = [a for a in updated.args if not (a.keyword and a.keyword.value in LOOP_HINTS)]
            if all(a.keyword is None for a in kept):
                kept[-1:] = [a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in kept[-1:]]
                return updated.with_changes(func=cst.Name("range"), args=kept)
        if loop == "rand" and not any(a.keyword and a.keyword.value == "dtype" for a in
                                      updated.args) and len(updated.args) < 2:  # fmt: skip
            # Beta 1's default dtype; current NKI asks for one
            dtype = cst.Arg(cst.parse_expression(f"{self._nl()}.float32"), cst.Name("dtype"))
            return updated.with_changes(args=[*updated.args, dtype])
        if loop == "store":
            updated = self._store_from_psum(updated)
        if loop == "load":
            updated = self._column_load(updated)
            updated = self._identity_copy(updated)
        if loop == "shared_constant":
            updated = self._shared_identity(updated)
        func = updated.func
        if (isinstance(func, cst.Attribute) and func.attr.value == "broadcast_to"
                and not self._is(func, self.nl) and not self._is(func, self.np)):  # fmt: skip
            # Beta 1's tile method: `nl.broadcast_to(tile, shape)` in current NKI
            tile = cst.Arg(func.value)
            return updated.with_changes(
                func=cst.parse_expression(f"{self._nl()}.broadcast_to"), args=[tile, *updated.args]
            )
        if self._is(updated.func, self.nisa) == "dma_copy":
            updated = self._dma_compute(updated)
        if loop == "matmul":
            updated = self._transposed_matmul(updated)
        if loop in ELEMENTWISE and len(updated.args) >= 2:
            x, y = updated.args[0], updated.args[1]
            if x.keyword is None and y.keyword is None:
                bx, by = self._broadcast(_code(x.value), _code(y.value))
                args = [x.with_changes(value=cst.parse_expression(bx)),
                        y.with_changes(value=cst.parse_expression(by)), *updated.args[2:]]  # fmt: skip
                updated = updated.with_changes(args=args)
                self._result_shape(_code(updated), _code(x.value), _code(y.value))
        kernel_api = bool(self._is(updated.func, self.nl) or self._is(updated.func, self.nisa))
        if kept is not None:
            for a in original.args:
                base = a.value
                while isinstance(base, cst.Subscript):
                    base = base.value
                key = (tuple(self.scope), base.value) if isinstance(base, cst.Name) else None
                if key in self.full:
                    self.full_masks.setdefault(key, set()).add(_kept_key(kept))
        args = []
        for a in updated.args:
            np_name = self._is(a.value, self.np)
            np_name = NUMPY_ALIASES.get(np_name, np_name)
            if kernel_api and np_name in NUMPY_OPS:  # a numpy function as a value: an operator
                a = a.with_changes(value=cst.parse_expression(f"{self._nl()}.{np_name}"))
            if kernel_api:
                a = a.with_changes(value=self._argument(updated, a))
            if kept is not None:
                a = a.with_changes(value=self._full_operand(original, kept, a.value))
            if a.keyword is not None and a.keyword.value == "mask":
                if kept is not None:
                    continue  # its subscripts are sliced to what it keeps
                self._todo(original, "mask= has no current equivalent: slice the operands to the "
                           "rows and columns the mask keeps")  # fmt: skip
            args.append(a)
        if args and kept is not None:
            last = updated.args[-1]
            if "\n" in _code(updated) and args[-1] is not last and last.keyword is not None:
                # the mask, last of arguments written a line each, went (its comment, about
                # the mask, with it): the new last argument ends as it did
                args[-1] = _ends_as(args[-1], last)
            else:
                args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        if loop == "load_transpose2d":
            return self._transposed_load(updated.with_changes(args=args))
        return updated.with_changes(args=args)

    def _transposed_load(self, call: cst.Call) -> cst.BaseExpression:
        """`nl.load_transpose2d(t)`: Beta 1 transposed 2- and 4-byte elements, current NKI's
        DMA transpose 2-byte ones only. The same call for `bfloat16` / `float16` tensors, else
        a load of the transposing access pattern (the DMA reads `t` column by column: any
        dtype, the same bits, element by element)."""
        src = call.args[0].value if call.args and call.args[0].keyword is None else None
        if not isinstance(src, cst.Name | cst.Attribute):  # a view: its pattern is not `t.ap`
            return call
        t, nl = _code(src), self._nl()
        rest = "".join(f", {_code(a)}" for a in call.args[1:])
        pattern = f"[[1, {t}.shape[1]], [{t}.shape[1], {t}.shape[0]]]"
        text = (
            f"({_code(call)} if {t}.dtype in ({nl}.bfloat16, {nl}.float16) "
            f"else {nl}.load({t}.ap(pattern={pattern}, offset=0){rest}))"
        )
        return cst.parse_expression(text)

    def _numpy_dtype(self, call: cst.Call) -> cst.BaseExpression | None:
        """`np.dtype(np.float32)`, `np.dtype("float16")` in kernel code (Beta 1 took numpy
        dtypes): the `nl` dtype, `nl.float32`; None for any other call."""
        if self._is(call.func, self.np) != "dtype" or len(call.args) != 1:
            return None
        value = call.args[0].value
        name = self._is(value, self.np)
        if isinstance(value, cst.SimpleString):
            name = value.evaluated_value
        if not isinstance(name, str) or name not in NL_DTYPES:
            return None
        return cst.parse_expression(f"{self._nl()}.{name}")

    def _shared_identity(self, call: cst.Call) -> cst.Call:
        """`nl.shared_constant(np.identity(n, dtype=np.int8), dtype=d)` (Beta 1 converted the
        constant to `dtype=`; current NKI's `shared_constant` takes no dtype and reads no numpy
        call): `nl.shared_identity_matrix(n=n, dtype=d)`, the same values in an SBUF tile."""
        args = call.args
        if not args or args[0].keyword is not None or not isinstance(args[0].value, cst.Call):
            return call
        inner = args[0].value
        if self._is(inner.func, self.np) not in ("identity", "eye") or not inner.args:
            return call
        size, *options = inner.args
        if size.keyword is not None or any(a.keyword is None for a in options):
            return call
        keywords = {a.keyword.value: a.value for a in [*args[1:], *options] if a.keyword}
        if set(keywords) - {"dtype"}:
            return call
        # Beta 1's dtype= wins over the array's own (np.identity's default is float64, which
        # Beta 1 stored as float32)
        dtype = next((a.value for a in args[1:] if a.keyword and a.keyword.value == "dtype"),
                     keywords.get("dtype"))  # fmt: skip
        nl = self._nl()
        np_name = self._is(dtype, self.np) if dtype is not None else "float32"
        spelled = f"{nl}.{np_name}" if np_name else _code(dtype)
        text = f"{nl}.shared_identity_matrix(n={_code(size.value)}, dtype={spelled})"
        return cst.parse_expression(text)

    def _identity_copy(self, call: cst.Call) -> cst.Call:
        """`nl.load(identity)` of a `nl.shared_identity_matrix` (shared HBM in Beta 1, an SBUF
        tile in current NKI): `nl.copy(identity)`, the same values (and `dtype=`)."""
        src = call.args[0].value if call.args and call.args[0].keyword is None else None
        if isinstance(src, cst.Subscript):
            src = src.value
        if not (isinstance(src, cst.Name) and src.value in self.identities):
            return call
        return call.with_changes(func=cst.parse_expression(f"{self._nl()}.copy"))

    def _transposed_matmul(self, call: cst.Call) -> cst.Call:
        """`nl.matmul(x, y)` (Beta 1 transposed `x` itself when `transpose_x` was False, its
        default): current NKI takes `x` transposed only, so `nl.transpose(x)` is passed with
        `transpose_x=True`."""
        args = list(call.args)
        flag = next((i for i, a in enumerate(args) if a.keyword and a.keyword.value ==
                     "transpose_x"), None)  # fmt: skip
        for i, a in enumerate(args):  # Beta 1 copied PSUM operands to SBUF itself
            if (a.keyword is None and i == 1) or (a.keyword and a.keyword.value == "y"):
                if isinstance(a.value, cst.Name) and a.value.value in self.psum:
                    copy = cst.parse_expression(f"{self._nl()}.copy({a.value.value})")
                    args[i] = a.with_changes(value=copy)
        call = call.with_changes(args=args)
        if flag is not None and _dotted(args[flag].value) != "False":
            return call
        if flag is None and len(args) > 2 and args[2].keyword is None:
            return call  # transpose_x given by position
        at = next((i for i, a in enumerate(args) if (a.keyword is None and i == 0) or
                   (a.keyword and a.keyword.value == "x")), None)  # fmt: skip
        if at is None or any(a.star for a in args):
            return call
        x = args[at]
        args[at] = x.with_changes(
            value=cst.parse_expression(
                f"{self._nl()}.copy({self._nl()}.transpose({_code(x.value)}))"
            )
        )
        true = cst.parse_expression("f(transpose_x=True)").args[0]
        if flag is None:
            args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            args.append(true)
        else:
            args[flag] = args[flag].with_changes(value=cst.Name("True"))
        return call.with_changes(args=args)

    def _dma_compute(self, call: cst.Call) -> cst.Call:
        """`nisa.dma_copy(dst=d, src=s, dst_rmw_op=np.add)` (Beta 1's read-modify-write DMA) is
        `nisa.dma_compute(dst=d, srcs=[d, s], reduce_op=nl.add)` in current NKI."""
        named = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
        if "dst_rmw_op" not in named or "dst" not in named or "src" not in named:
            return call
        if any(a.keyword is None for a in call.args):
            return call
        op = named["dst_rmw_op"]
        name = self._is(op, self.np) or self._is(op, self.nl)
        if name != "add":
            return call  # current NKI's dma_compute adds only: left for the check to report
        dst = _code(named["dst"])
        rest = "".join(
            f", {k}={_code(v)}" for k, v in named.items() if k not in ("dst", "src", "dst_rmw_op")
        )
        nisa = _code(call.func).rsplit(".", 1)[0]
        return cst.parse_expression(
            f"{nisa}.dma_compute(dst={dst}, srcs=[{dst}, {_code(named['src'])}], "
            f"reduce_op={self._nl()}.add{rest})"
        )

    def leave_Return(self, original, updated):
        kind = self._allocator(updated.value) if isinstance(updated.value, cst.Call) else None
        if kind is None:
            return updated
        # a helper that returns a direct allocation (`return sb_mod(base_addr=a)`) for a
        # `buffer=` argument: the buffer itself, as there (nkic places the tensor)
        return updated.with_changes(value=cst.parse_expression(f"{self._nl()}.{kind}"))

    def _allocator(self, node) -> str | None:
        """ "sbuf" / "psum" when `node` is a `nki.compiler` allocator or a call of one
        (`ncc.sbuf.mod_alloc(base_addr=0)`, `nki.compiler.psum.alloc(f)`, `sb_mod(...)`)."""
        if isinstance(node, cst.Call):
            node = node.func
        dotted = _dotted(node) or ""
        if dotted in self.allocators:
            return self.allocators[dotted]
        parts = dotted.split(".")
        head = 2 if parts[:2] == ["nki", "compiler"] else 1 if parts[0] in self.compiler else 0
        if head and len(parts) > head and parts[head] in ("sbuf", "psum"):
            return parts[head]
        return None

    def _argument(self, call: cst.Call, arg: cst.Arg) -> cst.BaseExpression:
        """An argument of an `nl` / `nisa` call in the form current NKI takes: `nl.max` as an
        ALU operator is `nl.maximum`, a numpy scalar `np.float32(0.0)` the plain number, a
        `perf_mode` string the `nisa.matmul_perf_mode` member."""
        value = arg.value
        key = arg.keyword.value if arg.keyword is not None else None
        nl_name = self._is(value, self.nl)
        if key in ALU_PARAMETERS and nl_name in NUMPY_ALIASES:
            return cst.parse_expression(f"{self._nl()}.{NUMPY_ALIASES[nl_name]}")
        if (isinstance(value, cst.Call) and len(value.args) == 1 and value.args[0].keyword is None
                and self._is(value.func, self.np) in SCALAR_TYPES):  # fmt: skip
            number = value.args[0].value
            kind = SCALAR_TYPES[self._is(value.func, self.np)]
            if isinstance(number, cst.Float) and kind == "float":
                return number
            if isinstance(number, cst.Integer):
                return cst.Float(f"{number.value}.0") if kind == "float" else number
        if key == "buffer" and self._allocator(value):
            # direct allocation (`ncc.sbuf.mod_alloc(...)`): nkic allocates the tensor itself
            return cst.parse_expression(f"{self._nl()}.{self._allocator(value)}")
        if key == "perf_mode" and isinstance(value, cst.SimpleString):
            mode = value.evaluated_value
            member = "double_row" if str(mode).startswith("double_row") else "none"
            nisa = _code(call.func).rsplit(".", 1)[0]
            if self._is(call.func, self.nisa) == "nc_matmul":
                return cst.parse_expression(f"{nisa}.matmul_perf_mode.{member}")
        return value

    def _trailing_reduction(self, call: cst.Call) -> cst.Call:
        """`nl.sum(t.ap(pattern=[...]), axis=[2, 4])` (an access pattern the rewrite wrote):
        current NKI reduces trailing free dimensions only, so the pattern lists the reduced
        axes last (the same elements, the kept axes in their order) and `axis` names them."""
        if not call.args or call.args[0].keyword is not None:
            return call
        data = call.args[0].value
        axis_arg = next((a for a in call.args if a.keyword and a.keyword.value == "axis"), None)
        if axis_arg is None and len(call.args) > 1 and call.args[1].keyword is None:
            axis_arg = call.args[1]
        if axis_arg is None or not isinstance(axis_arg.value, cst.List | cst.Tuple):
            return call
        axes = [_int(e.value) for e in axis_arg.value.elements]
        if not (isinstance(data, cst.Call) and isinstance(data.func, cst.Attribute)
                and data.func.attr.value == "ap" and None not in axes):  # fmt: skip
            return call
        pattern = next((a for a in data.args if a.keyword and a.keyword.value == "pattern"), None)
        if pattern is None or not isinstance(pattern.value, cst.List):
            return call
        pairs = [e.value for e in pattern.value.elements]
        rank = len(pairs)
        if not all(0 < a < rank for a in axes) or axes == list(range(rank - len(axes), rank)):
            return call
        order = [a for a in range(rank) if a not in axes] + sorted(axes)
        text = "[" + ", ".join(_code(pairs[a]) for a in order) + "]"
        new_pattern = pattern.with_changes(value=cst.parse_expression(text))
        data = data.with_changes(args=[new_pattern if a is pattern else a for a in data.args])
        trailing = "[" + ", ".join(str(a) for a in range(rank - len(axes), rank)) + "]"
        args = []
        for a in call.args:
            if a is call.args[0]:
                a = a.with_changes(value=data)
            elif a is axis_arg:
                a = a.with_changes(value=cst.parse_expression(trailing))
            args.append(a)
        return call.with_changes(args=args)

    def _column_load(self, call: cst.Call) -> cst.Call:
        """`nl.load(t[a:b, j])`: Beta 1 loaded the partition range as a (b - a, 1) column; in
        current NKI the integer index drops the dimension, so it becomes `j:j + 1`."""
        if not call.args or call.args[0].keyword is not None:
            return call
        src = call.args[0].value
        if not (isinstance(src, cst.Subscript) and len(src.slice) >= 2):
            return call
        *head, last = src.slice
        if not isinstance(last.slice, cst.Index) or last.slice.star is not None:
            return call
        if not any(isinstance(e.slice, cst.Slice) for e in head):
            return call
        index = last.slice.value
        # an integer expression only: not nl.ds(...), a tile (indirect), a grid or `...`
        integer = isinstance(index, cst.Integer | cst.Name | cst.BinaryOperation)
        if not integer or _calls(index) or _names(index) & self.tiles or self._uses_grid(index):
            return call
        j = _code(index)
        if j == "None":
            return call
        column = cst.parse_expression(f"x[{j}:{j} + 1]").slice[0]
        new = src.with_changes(slice=[*head, last.with_changes(slice=column.slice)])
        return call.with_changes(args=[call.args[0].with_changes(value=new), *call.args[1:]])

    def _store_from_psum(self, call: cst.Call) -> cst.Call:
        """`nl.store(t, value=psum_tile)`: Beta 1 stored PSUM tiles (through SBUF); current NKI
        stores from SBUF only, so the value is copied there first (`nl.copy`, bit-exact)."""
        args = list(call.args)
        for i, a in enumerate(args):
            named = a.keyword is not None and a.keyword.value == "value"
            if not (named or (a.keyword is None and i == 1)):
                continue
            base = a.value
            while isinstance(base, cst.Subscript):  # `t[i][0:128, :]` of a list of tiles too
                base = base.value
            if isinstance(base, cst.Name) and base.value in self.psum:
                copy = cst.parse_expression(f"{self._nl()}.copy({_code(a.value)})")
                args[i] = a.with_changes(value=copy)
        return call.with_changes(args=args)

    def leave_BinaryOperation(self, original, updated):
        name = TILE_OPERATORS.get(type(updated.operator))
        if name is None:
            return updated
        if self._is_tile(updated.left) or self._is_tile(updated.right):
            nl = self._nl()
            x, y = self._broadcast(_code(updated.left), _code(updated.right))
            text = f"{nl}.{name}({x}, {y})"
            self._result_shape(text, _code(updated.left), _code(updated.right))
            return cst.parse_expression(text)
        return updated

    def _static_shape(self, value) -> tuple[int, ...] | None:
        """The shape of a tile whose every dimension is written as a number: `nl.load(t[0:128,
        0:1])`, `nl.ndarray((128, 512), ...)`."""
        if not isinstance(value, cst.Call) or not value.args:
            return None
        name = self._is(value.func, self.nl)
        first = value.args[0].value if value.args[0].keyword is None else None
        if name == "load" and isinstance(first, cst.Subscript):
            dims = []
            for element in first.slice:
                s = element.slice
                if not isinstance(s, cst.Slice) or s.step is not None:
                    return None
                lo = 0 if s.lower is None else _int(s.lower)
                hi = _int(s.upper) if s.upper is not None else None
                if lo is None or hi is None:
                    return None
                dims.append(hi - lo)
            return tuple(dims)
        if name in ALLOCATIONS and isinstance(first, cst.Tuple | cst.List):
            dims = [_int(e.value) for e in first.elements]
            return None if None in dims else tuple(dims)
        return None

    def _result_shape(self, result: str, x: str, y: str) -> None:
        """The shape of an elementwise operation's result (source text), where its operands'
        are known: the operation it is part of may broadcast it in turn."""
        sx, sy = self.shapes.get(x), self.shapes.get(y)
        if sx is not None and sy is not None and len(sx) == len(sy):
            self.shapes[result] = tuple(max(a, b) for a, b in zip(sx, sy))

    def _column(self, value) -> bool:
        """Whether `value` is a reduction along axis 1 (`nl.max(t, axis=1)`): a (P, 1) column
        of a 2-D tile."""
        if not isinstance(value, cst.Call) or self._is(value.func, self.nl) not in REDUCTIONS:
            return False
        axis = next((a.value for a in value.args if a.keyword and a.keyword.value == "axis"),
                     value.args[1].value if len(value.args) > 1 and value.args[1].keyword is None
                     else None)  # fmt: skip
        if isinstance(axis, cst.List | cst.Tuple) and len(axis.elements) == 1:
            axis = axis.elements[0].value
        return _int(axis) == 1

    def _broadcast(self, x: str, y: str) -> tuple[str, str]:
        """Beta 1's implicit broadcasting of the operands of an elementwise `nl` operation,
        where both shapes are written as numbers ((128, 1) with (128, 512), (1, 512) with
        (128, 512)): current NKI broadcasts explicitly, a size-1 free dimension by a view
        (`b.broadcast(1, 512)`), a single partition by `nl.broadcast_to`."""
        for column, tile in ((x, y), (y, x)):
            # a row reduction against the tile it was reduced from (softmax's max and sum)
            if column in self.columns and tile in self.tiles and tile not in self.columns:
                widened = f"{column}.broadcast(1, {tile}.shape[1])"
                return (widened, y) if column == x else (x, widened)
        sx, sy = self.shapes.get(x), self.shapes.get(y)
        if sx is None or sy is None or sx == sy or len(sx) != 2 or len(sy) != 2:
            return x, y
        if any(a != b and 1 not in (a, b) for a, b in zip(sx, sy)):
            return x, y
        full = tuple(max(a, b) for a, b in zip(sx, sy))
        nl = self._nl()

        def widened(code: str, shape: tuple[int, ...]) -> str:
            if shape[0] != full[0]:
                return f"{nl}.broadcast_to({code}, shape={full})"
            if shape[1] != full[1]:
                return f"{code}.broadcast(1, {full[1]})"
            return code

        return widened(x, sx), widened(y, sy)

    def _is_tile(self, node) -> bool:
        if isinstance(node, cst.Name):
            return node.value in self.tiles
        if isinstance(node, cst.Subscript):  # a view of a tile: `t[0:128, 0:64]`
            return self._is_tile(node.value)
        if isinstance(node, cst.Call):
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value == "ap":
                return self._is_tile(func.value)  # an access pattern of a tile
            return bool(
                self._is(node.func, self.nl) and self._is(node.func, self.nl) not in NOT_TILES
            )
        return False

    def leave_SimpleStatementLine(self, original, updated):
        if not updated.body:  # every statement of the line removed
            if any(e.comment is not None for e in original.leading_lines):
                # its comments stay, above the statement that follows
                return cst.SimpleStatementLine(
                    [cst.Pass()],
                    leading_lines=original.leading_lines,
                    trailing_whitespace=cst.TrailingWhitespace(comment=cst.Comment(_CARRIED)),
                )
            return updated
        self.statement = original
        result = self._statement(updated)
        self.statement = None
        if isinstance(result, cst.SimpleStatementLine):
            self.previous = (self.blocks[-1], result)
        definition, self.grid_definition = self.grid_definition, False
        imports = isinstance(original.body[0], cst.Import | cst.ImportFrom)
        if (
            not isinstance(result, cst.RemovalSentinel)
            and not imports
            and self._uses_compiler(result)
        ):
            self._todo(original, "nki.compiler (direct allocation, scheduling directives) is "
                       "not rewritten: allocate with nl.ndarray(buffer=...) or drop the hint")  # fmt: skip
        if (not isinstance(result, cst.RemovalSentinel) and not definition
                and self._has_grid_api(result)):  # fmt: skip
            self._todo(original, "an index grid used in a way nkic migrate does not rewrite: "
                       "write the index as a slice")  # fmt: skip
        if not self.pending:
            return result
        comments = [
            cst.EmptyLine(comment=cst.Comment(f"# TODO(nkic migrate): {m}"))
            for m in dict.fromkeys(self.pending)
        ]
        self.pending = []
        if isinstance(result, cst.FlattenSentinel):
            first, *rest = result.nodes
            first = first.with_changes(leading_lines=[*first.leading_lines, *comments])
            return cst.FlattenSentinel([first, *rest])
        return result.with_changes(leading_lines=[*result.leading_lines, *comments])

    def _statement(self, updated):
        before = len(self.todos)
        result = self._rewrite_statement(updated)
        if result is updated and len(self.todos) == before:
            hoisted = self._hoist_nested(updated)
            if hoisted is not None:
                return hoisted
            for name in self._results_without_dst(updated):
                self._todo(self.statement, f"nisa.{name} returns its result here, which current "
                           "NKI does not: allocate the destination and pass it as dst=")  # fmt: skip
        return result

    def _hoist_nested(self, updated):
        """`e = nl.exp(nisa.X(...))`: a value-returning call inside another expression runs
        first, into a fresh tile (dst-first, as for `t = nisa.X(...)`), and the expression reads
        the tile. Innermost calls go first, so nested calls keep their order of evaluation. Not
        for calls that may not run, or run more than once: under `and`/`or`, a conditional
        expression, a lambda or a comprehension."""
        if len(updated.body) != 1:
            return None
        stmt = updated.body[0]
        if not isinstance(stmt, cst.Assign | cst.AnnAssign | cst.AugAssign | cst.Expr | cst.Return):
            return None
        owner = self

        class Innermost(cst.CSTVisitor):
            found: cst.Call | None = None

            def visit_Lambda(self, node):
                return False

            visit_IfExp = visit_BooleanOperation = visit_Lambda
            visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = visit_Lambda

            def leave_Call(self, call):
                if self.found is None and call is not value and owner._returning(call):
                    self.found = call

        value = getattr(stmt, "value", None)
        finder = Innermost()
        stmt.visit(finder)
        call = finder.found
        if call is None:
            return None
        name = self._returning(call)
        tile = self._fresh(f"{name}_result")
        first = cst.SimpleStatementLine(
            [cst.Assign([cst.AssignTarget(cst.Name(tile))], call)],
            leading_lines=updated.leading_lines,
        )
        todos, pending = len(self.todos), len(self.pending)
        written = self._rewrite_statement(first)
        if written is first or len(self.todos) != todos:
            # not rewritable: the statement stays as it is, under the caller's TODO
            del self.todos[todos:]
            del self.pending[pending:]
            return None
        rest = self._statement(
            updated.deep_replace(call, cst.Name(tile)).with_changes(leading_lines=[])
        )
        nodes = []
        for part in (written, rest):
            nodes.extend(part.nodes if isinstance(part, cst.FlattenSentinel) else [part])
        return cst.FlattenSentinel(nodes)

    def _results_without_dst(self, node) -> list[str]:
        """The `nisa` instructions with a destination called without `dst=` in `node`."""
        from .ir.isa import INSTRUCTIONS

        found: list[str] = []

        class Finder(cst.CSTVisitor):
            def visit_Call(inner, call):
                name = self._is(call.func, self.nisa)
                inst = INSTRUCTIONS.get(name or "")
                if inst is None or not inst.params or inst.params[0].name != "dst":
                    return
                if not any(a.keyword and a.keyword.value == "dst" for a in call.args):
                    found.append(name)

        node.visit(Finder())
        return found

    def _rewrite_statement(self, updated):
        if len(updated.body) != 1:
            self.full_result = None
            return updated
        stmt = updated.body[0]
        full = self._full_result(updated, stmt)
        if full is not None:
            return full
        reduced = self._loop_reduce(updated, stmt)
        if reduced is not None:
            return reduced
        patterned = self._pattern_generator(updated, stmt)
        if patterned is not None:
            return patterned
        element = self._element_store(updated, stmt)
        if element is not None:
            return element
        broadcast = self._exact_broadcast(updated, stmt)
        if broadcast is not None:
            return broadcast
        copied = self._load_into_view(updated, stmt)
        if copied is not None:
            return copied
        if isinstance(stmt, cst.Assign) and len(stmt.targets) == 1:
            target = stmt.targets[0].target
            call = stmt.value
            name = self._returning(call)
            if name and isinstance(target, cst.Name):
                return self._dst_first(updated, name, call, target.value, new=True)
            if name and isinstance(target, cst.Subscript):
                # `t[...] = nisa.X(...)`: the instruction writes the view directly (a matmul
                # into its own PSUM tile first, copied over as Beta 1 did)
                return self._dst_first(updated, name, call, _code(target), new=False)
        if isinstance(stmt, cst.AnnAssign) and isinstance(stmt.target, cst.Name) and stmt.value:
            name = self._returning(stmt.value)
            if name:  # `a: tensor[128, 1] = nisa.X(...)`: the annotation goes with the value
                shape = _annotated_shape(stmt.annotation.annotation)
                return self._dst_first(
                    updated, name, stmt.value, stmt.target.value, new=True, annotated=shape
                )
        if (isinstance(stmt, cst.AugAssign) and isinstance(stmt.target, cst.Subscript)
                and not self._returning(stmt.value) and self._is_tile(stmt.value)):  # fmt: skip
            # `t[...] += x` on tiles: the operation in place, into the view
            op = AUG_OPERATORS.get(type(stmt.operator))
            if op is not None:
                view, value = _code(stmt.target), _code(stmt.value)
                nisa = self._nisa()
                text = (f"{nisa}.tensor_tensor(dst={view}, data1={view}, data2={value}, "
                        f"op={self._nl()}.{op})\n")  # fmt: skip
                new = cst.parse_statement(text)
                return new.with_changes(
                    leading_lines=updated.leading_lines,
                    trailing_whitespace=updated.trailing_whitespace,
                )
        if isinstance(stmt, cst.AugAssign) and isinstance(stmt.operator, cst.AddAssign):
            name = self._returning(stmt.value)
            if name == "nc_matmul" and isinstance(stmt.target, cst.Name | cst.Subscript):
                target = _code(stmt.target)  # PSUM accumulation, in place
                return self._dst_first(updated, name, stmt.value, target, new=False)
        return updated

    def _load_into_view(self, line, stmt):
        """`t[...] = nl.load(src)`: one DMA into the view, `nisa.dma_copy(dst=t[...],
        src=src)`. Current NKI would load into a tile of its own and copy that into the view,
        two instructions and a tile; the DMA writes the same values (a copy, or the same
        round-to-nearest-even cast when the dtypes differ). Not for a PSUM view, nor a load
        with `dtype=` or other options."""
        if not (isinstance(stmt, cst.Assign) and len(stmt.targets) == 1):
            return None
        target, call = stmt.targets[0].target, stmt.value
        if not (isinstance(target, cst.Subscript) and isinstance(call, cst.Call)):
            return None
        if self._is(call.func, self.nl) != "load" or len(call.args) != 1:
            return None
        arg = call.args[0]
        if arg.star or (arg.keyword is not None and arg.keyword.value != "src"):
            return None
        base = target
        while isinstance(base, cst.Subscript):
            base = base.value
        if not isinstance(base, cst.Name) or base.value in self.psum:
            return None
        text = f"{self._nisa()}.dma_copy(dst={_code(target)}, src={_code(arg.value)})\n"
        return cst.parse_statement(text).with_changes(
            leading_lines=line.leading_lines, trailing_whitespace=line.trailing_whitespace
        )

    def _loop_reduce(self, line, stmt):
        """`t[...] = nl.loop_reduce(x, np.add, loop_indices=[i])`: Beta 1 reduced `x` into the
        destination view, `t = op(t, x)` on each iteration (the value `t` held before the loop is the
        reduction's start); current NKI writes that instruction: `nisa.tensor_tensor(dst=t,
        data1=t, data2=x, op=nl.add)`. `dtype=` goes: the result is the destination's."""
        if not (
            isinstance(stmt, cst.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0].target, cst.Subscript)
            and isinstance(stmt.value, cst.Call)
            and self._is(stmt.value.func, self.nl, "loop_reduce")
        ):
            return None
        positional = [a.value for a in stmt.value.args if a.keyword is None]
        named = {a.keyword.value: a.value for a in stmt.value.args if a.keyword is not None}
        x = named.get("x", positional[0] if positional else None)
        op = named.get("op", positional[1] if len(positional) > 1 else None)
        if x is None or op is None or "mask" in named:
            self._todo(self.statement, "nl.loop_reduce without its tile and operator (or with a "
                       "mask): write nisa.tensor_tensor(dst=t, data1=t, data2=x, op=...) in the "
                       "loop")  # fmt: skip
            return line
        view = _code(stmt.targets[0].target)
        text = (f"{self._nisa()}.tensor_tensor(dst={view}, data1={view}, data2={_code(x)}, "
                f"op={_code(op)})\n")  # fmt: skip
        return cst.parse_statement(text).with_changes(
            leading_lines=line.leading_lines, trailing_whitespace=line.trailing_whitespace
        )

    def _exact_broadcast(self, line, stmt):
        """`y = nl.broadcast_to(x, shape=(p, f))` of a one-partition tile: Beta 1 copied it to
        every partition for any dtype; current NKI broadcasts across partitions through the
        Tensor engine, exact for integers of up to 16 bits only. For 4-byte integer tiles, one
        DMA per partition copies the row (the same bits); other dtypes keep the call. Only in
        a file that names `int32` or `uint32` (the dtype is known when the kernel is traced, not
        here), so that the broadcasts of float kernels stay as they were."""
        if not (isinstance(stmt, cst.Assign) and len(stmt.targets) == 1):
            return None
        if not self.names_int32:  # no 4-byte integer in the file: its broadcasts stay calls
            return None
        target, call = stmt.targets[0].target, stmt.value
        if not (isinstance(target, cst.Name) and isinstance(call, cst.Call)):
            return None
        if self._is(call.func, self.nl) != "broadcast_to" or not call.args:
            return None
        x = call.args[0].value if call.args[0].keyword is None else None
        shape = next((a.value for a in call.args[1:] if a.keyword and a.keyword.value == "shape"),
                     call.args[1].value if len(call.args) > 1 and call.args[1].keyword is None
                     else None)  # fmt: skip
        if not (isinstance(x, cst.Name) and isinstance(shape, cst.Tuple | cst.List)):
            return None
        if len(shape.elements) != 2:
            return None
        nl, nisa = self._nl(), self._nisa()
        y, x, rows = target.value, x.value, _code(shape.elements[0].value)
        cols = _code(shape.elements[1].value)
        p = self._fresh("partition")
        indent = " " * 4
        text = (
            f"if {x}.dtype in ({nl}.int32, {nl}.uint32) and {x}.shape[0] == 1:\n"
            f"{indent}{y} = {nl}.ndarray(({rows}, {cols}), dtype={x}.dtype, buffer={nl}.sbuf)\n"
            f"{indent}for {p} in range({rows}):\n"
            f"{indent * 2}{nisa}.dma_copy(dst={y}[{p}:{p} + 1, 0:{cols}], src={x}[0:1, 0:{cols}])\n"
            f"else:\n"
            f"{indent}{_code(stmt).strip()}\n"
        )
        self.tiles.add(y)
        replaced = cst.parse_statement(text)
        return replaced.with_changes(leading_lines=line.leading_lines)

    def _element_store(self, line, stmt):
        """`t[i, j] = c` (a number into one element of a tile, at a partition that is not a
        literal 0, 32, 64 or 96): an instruction reaches one partition only at those, so the
        number is set in a tile of its own and copied into place by DMA, as Beta 1 did."""
        if not (isinstance(stmt, cst.Assign) and len(stmt.targets) == 1):
            return None
        target, value = stmt.targets[0].target, stmt.value
        if not (isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name)):
            return None
        if target.value.value not in self.tiles or target.value.value in self.psum:
            return None
        indices = [e.slice for e in target.slice]
        if len(indices) < 2 or not all(isinstance(i, cst.Index) for i in indices):
            return None
        if any(self._uses_grid(i.value) or _names(i.value) & self.tiles for i in indices):
            return None
        if _int(indices[0].value) in (0, 32, 64, 96):
            return None
        if not isinstance(
            value, cst.Integer | cst.Float | cst.BinaryOperation | cst.UnaryOperation
        ):
            return None  # a number written out (a bare name may be a tile)
        if _calls(value) or _names(value) & self.tiles or self._uses_grid(value):
            return None
        nl = self._nl()
        nisa = self._nisa()
        tile = self._fresh("element")
        dst = _code(target)
        lines = [
            f"{tile} = {nl}.ndarray((1, 1), dtype={target.value.value}.dtype, buffer={nl}.sbuf)",
            f"{nisa}.memset(dst={tile}, value={_code(value)})",
            f"{nisa}.dma_copy(dst={dst}, src={tile})",
        ]
        nodes = [cst.parse_statement(t + "\n") for t in lines]
        nodes[0] = nodes[0].with_changes(leading_lines=line.leading_lines)
        nodes[-1] = nodes[-1].with_changes(trailing_whitespace=line.trailing_whitespace)
        return cst.FlattenSentinel(nodes)

    def _pattern_generator(self, line, stmt):
        """`x = nisa.iota(expr, dtype)` and `x = nisa.affine_select(pred, tile, value)` of
        Beta 1, whose value at [p, f...] is a linear form of index grids (`i_p + 2 * i_f`; for
        the predicate a comparison of two), as the current instruction: a destination tile and
        `pattern=[[step, num] per free axis]`, `channel_multiplier=` (the partition axis's step),
        `offset=`."""
        if isinstance(stmt, cst.Assign) and len(stmt.targets) == 1:
            target, call = stmt.targets[0].target, stmt.value
        elif isinstance(stmt, cst.AnnAssign) and stmt.value is not None:
            target, call = stmt.target, stmt.value
        else:
            return None
        if not isinstance(call, cst.Call) or not isinstance(target, cst.Name | cst.Subscript):
            return None
        name = self._is(call.func, self.nisa)
        if name not in PATTERN_GENERATORS:
            return None
        if any(a.keyword and a.keyword.value == "dst" for a in call.args):
            return None
        params = PATTERN_GENERATORS[name]
        named: dict[str, cst.BaseExpression] = {}
        for i, a in enumerate(call.args):
            if a.star or (a.keyword is None and i >= len(params)):
                return None
            named[a.keyword.value if a.keyword else params[i]] = a.value
        if "mask" in named:
            return None
        nl = self._nl()
        nisa = _code(call.func).rsplit(".", 1)[0]
        dst = _code(target)
        statements = []
        if name == "iota":
            if "expr" not in named or "dtype" not in named:
                return None
            form = self._linear(named["expr"])
            if form is None or not form.coefs or form.rank < 2:
                return None
            sizes = [form.sizes.get(a, "1") for a in range(form.rank)]
            if isinstance(target, cst.Name):
                shape = "(" + ", ".join(sizes) + ")"
                statements.append(f"{dst} = {nl}.ndarray({shape}, dtype={_code(named['dtype'])}, "
                                  f"buffer={nl}.sbuf)")  # fmt: skip
            free = [f"[{form.coefs.get(a, 0)}, {sizes[a]}]" for a in range(1, form.rank)]
            statements.append(
                f"{nisa}.iota(dst={dst}, pattern=[{', '.join(free)}], offset={form.const}, "
                f"channel_multiplier={form.coefs.get(0, 0)})"
            )
        else:
            pred = named.get("pred")
            if pred is None or "on_true_tile" not in named or "on_false_value" not in named:
                return None
            if not (isinstance(pred, cst.Comparison) and len(pred.comparisons) == 1):
                return None
            cmp_op = COMPARISONS.get(type(pred.comparisons[0].operator))
            left, right = self._linear(pred.left), self._linear(pred.comparisons[0].comparator)
            if cmp_op is None or left is None or right is None:
                return None
            form = left.plus(right.scaled(-1))  # pred: (left - right) cmp 0
            if not form.coefs or form.rank < 2:
                return None
            on_true = _code(named["on_true_tile"])
            if isinstance(target, cst.Name):
                dtype = _code(named["dtype"]) if "dtype" in named else f"{on_true}.dtype"
                statements.append(f"{dst} = {nl}.ndarray({on_true}.shape, dtype={dtype}, "
                                  f"buffer={nl}.sbuf)")  # fmt: skip
            free = [
                f"[{form.coefs.get(a, 0)}, {form.sizes.get(a, f'{dst}.shape[{a}]')}]"
                for a in range(1, form.rank)
            ]
            statements.append(
                f"{nisa}.affine_select(dst={dst}, pattern=[{', '.join(free)}], "
                f"channel_multiplier={form.coefs.get(0, 0)}, on_true_tile={on_true}, "
                f"on_false_value={_code(named['on_false_value'])}, cmp_op={nl}.{cmp_op}, "
                f"offset={form.const})"
            )
        if isinstance(target, cst.Name):
            self.tiles.add(target.value)
            self.psum.discard(target.value)
        lines = [cst.parse_statement(s + "\n") for s in statements]
        lines[0] = lines[0].with_changes(leading_lines=line.leading_lines)
        lines[-1] = lines[-1].with_changes(trailing_whitespace=line.trailing_whitespace)
        return cst.FlattenSentinel(lines)

    def _fresh(self, stem: str) -> str:
        """A name the file does not use yet."""
        n = 0
        while f"{stem}{n}" in self.source:
            n += 1
        self.source += f" {stem}{n}"  # taken
        return f"{stem}{n}"

    def _returning(self, call) -> str | None:
        if not isinstance(call, cst.Call):
            return None
        name = self._is(call.func, self.nisa)
        if name not in RETURNING or any(a.keyword and a.keyword.value == "dst" for a in call.args):
            return None
        return name

    def _dst_first(
        self, line, name: str, call: cst.Call, target: str, new: bool, annotated: str = ""
    ):
        params, shape_of = RETURNING[name]
        named: dict[str, str] = {}
        dtype = None
        shape_arg = None
        for i, a in enumerate(call.args):
            if a.keyword is None and i >= len(params) or a.star:
                self._todo(line, f"nisa.{name}: arguments nkic migrate does not recognise: "
                           "allocate the destination and pass it as dst=")  # fmt: skip
                return line
            key = a.keyword.value if a.keyword is not None else params[i]
            if key == "dtype":
                dtype = _code(a.value)
                continue
            if key == "shape" and shape_of == "shape":
                shape_arg = _code(a.value)
                continue
            named[key] = _code(a.value)
        nl = self._nl()
        nisa = _code(call.func).rsplit(".", 1)[0]
        statements = []
        view = None
        assigned = line.body and isinstance(line.body[0], cst.Assign)
        if not new and assigned and name == "nc_matmul":
            base = line.body[0].targets[0].target
            while isinstance(base, cst.Subscript):
                base = base.value
            if isinstance(base, cst.Name) and base.value in self.psum_f32:
                # into a float32 PSUM tile: the matmul writes the view, overwriting it
                named["accumulate"] = "False"
            else:
                # `t[...] = nisa.nc_matmul(...)`: a fresh PSUM tile, then copied into the view
                view, target, new = target, self._fresh("psum_result"), True
        if new:
            if shape_of == "matmul":
                shape = f"({named['stationary']}.shape[-1], {named['moving']}.shape[-1])"
                dt, buf = dtype or f"{nl}.float32", "psum"
            elif shape_of == "transpose":
                src = named[params[0]]  # nc_transpose's result is in PSUM, a DMA's in SBUF
                buf = "psum" if name == "nc_transpose" else "sbuf"
                shape, dt = f"({src}.shape[1], {src}.shape[0])", dtype or f"{src}.dtype"
                if "axes" in named:
                    try:
                        axes = ast.literal_eval(named["axes"])
                    except (ValueError, SyntaxError):
                        axes = None
                    if not (isinstance(axes, tuple | list) and axes
                            and all(type(a) is int for a in axes)):  # fmt: skip
                        self._todo(line, f"nisa.{name} with axes= not written as numbers: "
                                   "allocate the transposed destination and pass it as dst=")  # fmt: skip
                        return line
                    if not src.isidentifier():  # a view: bound once, its shape read from it
                        view_name = self._fresh("transposed_src")
                        statements.append(f"{view_name} = {src}")
                        src = named[params[0]] = view_name
                    dims = ", ".join(f"{src}.shape[{a}]" for a in axes)
                    shape = f"({dims},)" if len(axes) == 1 else f"({dims})"
                    dt = dtype or f"{src}.dtype"
            elif shape_of == "shape":
                if shape_arg is None or dtype is None:
                    self._todo(line, f"nisa.{name} without shape= and dtype=: allocate the "
                               "destination and pass it as dst=")  # fmt: skip
                    return line
                shape, dt, buf = shape_arg, dtype, "sbuf"
            elif shape_of == "annotation":  # the shape the statement's annotation gives
                if not annotated:
                    self._todo(line, f"nisa.{name} without a shape annotation: allocate the "
                               "destination and pass it as dst=")  # fmt: skip
                    return line
                src = named[params[0]]
                shape, dt, buf = annotated, dtype or f"{src}.dtype", "sbuf"
            elif shape_of == "bounds":  # each element's segment start and end
                src = named["segment_ids"]
                shape, dt, buf = f"({src}.shape[0], 2, {src}.shape[1])", f"{src}.dtype", "sbuf"
            elif shape_of == "partition_reduce":  # across partitions: one row
                src = named["data"]
                shape, dt, buf = f"(1,) + {src}.shape[1:]", dtype or f"{src}.dtype", "sbuf"
            elif shape_of == "reduce":
                axis = named.get("axis", "").strip("()[], ")
                if axis != "1" or named.get("keepdims", "False") != "False":
                    self._todo(line, f"nisa.{name} over axis {named.get('axis')}: allocate the "
                               "destination (the reduced shape) and pass it as dst=")  # fmt: skip
                    return line
                src = named["data"]
                shape, dt, buf = f"({src}.shape[0], 1)", dtype or f"{src}.dtype", "sbuf"
            elif isinstance(shape_of, tuple):
                src, width, fixed = shape_of
                if src not in named:
                    return line
                shape = f"({named[src]}.shape[0], {width})"
                fixed = f"{nl}.{fixed}" if fixed else f"{named[src]}.dtype"
                dt, buf = dtype or fixed, "sbuf"
            else:
                if shape_of not in named:
                    return line
                src = named[shape_of]
                shape, dt, buf = f"{src}.shape", dtype or f"{src}.dtype", "sbuf"
            statements.append(f"{target} = {nl}.ndarray({shape}, dtype={dt}, buffer={nl}.{buf})")
            self.tiles.add(target)
            if buf == "psum":
                self.psum.add(target)
            else:
                self.psum.discard(target)
        kwargs = ", ".join(f"{k}={v}" for k, v in named.items())
        statements.append(f"{nisa}.{name}(dst={target}, {kwargs})")
        instruction = len(statements) - 1
        if view is not None:
            statements.append(f"{nisa}.tensor_copy(dst={view}, src={target})")
        lines = [cst.parse_statement(s + "\n") for s in statements]
        if "\n" in _code(call):  # written over several lines: they stay, with their comments
            laid_out = _laid_out(call, params, named, target, f"{nisa}.{name}")
            lines[instruction] = cst.SimpleStatementLine([cst.Expr(laid_out)])
        lines[0] = lines[0].with_changes(leading_lines=line.leading_lines)
        lines[-1] = lines[-1].with_changes(trailing_whitespace=line.trailing_whitespace)
        return cst.FlattenSentinel(lines)


def _ends_as(arg: cst.Arg, last: cst.Arg) -> cst.Arg:
    """`arg`, now the last argument of a call written over several lines, ending as the
    removed `last` did (a trailing comma or none, the closing parenthesis on its own line);
    the comment on `arg`'s own line stays."""
    own, ending = arg.comma, last.comma
    mine = own.whitespace_after if isinstance(own, cst.Comma) else None
    commented = isinstance(mine, cst.ParenthesizedWhitespace) and mine.first_line.comment
    if isinstance(ending, cst.Comma) and isinstance(mine, cst.ParenthesizedWhitespace):
        theirs = ending.whitespace_after
        if isinstance(theirs, cst.ParenthesizedWhitespace):
            ending = own.with_changes(
                whitespace_after=mine.with_changes(last_line=theirs.last_line)
            )
    elif commented and isinstance(last.whitespace_after_arg, cst.ParenthesizedWhitespace):
        # no trailing comma, but a comment on arg's line: a comma keeps it there
        closing = last.whitespace_after_arg.with_changes(first_line=mine.first_line)
        ending = own.with_changes(whitespace_after=closing)
        return arg.with_changes(comma=ending, whitespace_after_arg=cst.SimpleWhitespace(""))
    return arg.with_changes(comma=ending, whitespace_after_arg=last.whitespace_after_arg)


def _laid_out(call: cst.Call, params, named: dict[str, str], dst: str, func: str) -> cst.Call:
    """The dst-first call `func(dst=..., **named)` laid out as `call` was (an argument a line,
    the comments between them): each argument keeps its place, written by keyword; those that
    went into the destination's allocation (`dtype=`, `shape=`) are left out."""
    tight = cst.AssignEqual(
        whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")
    )
    args = []
    for i, a in enumerate(call.args):
        key = a.keyword.value if a.keyword is not None else params[i]
        if key not in named:
            continue
        value = a.value if _code(a.value) == named[key] else cst.parse_expression(named[key])
        if a.keyword is None:
            a = a.with_changes(keyword=cst.Name(key), equal=tight)
        args.append(a.with_changes(value=value))
    last = call.args[-1]
    used = {a.keyword.value for a in args}
    extra = [
        cst.Arg(cst.parse_expression(v), keyword=cst.Name(k), equal=tight)
        for k, v in named.items()
        if k not in used
    ]  # arguments the rewrite adds (`accumulate=False`): after the others
    if extra and args:
        space = cst.Comma(cst.SimpleWhitespace(""), cst.SimpleWhitespace(" "))
        args[-1] = args[-1].with_changes(comma=space, whitespace_after_arg=cst.SimpleWhitespace(""))
        for a in extra[:-1]:
            args.append(a.with_changes(comma=space))
        args.append(
            extra[-1].with_changes(comma=last.comma, whitespace_after_arg=last.whitespace_after_arg)
        )
    elif extra:
        args = extra
    elif args and args[-1].value is not last.value:  # the last argument went
        args[-1] = _ends_as(args[-1], last)
    first = args[0].comma if args else cst.MaybeSentinel.DEFAULT
    comma = (
        first
        if isinstance(first, cst.Comma)
        else cst.Comma(cst.SimpleWhitespace(""), cst.SimpleWhitespace(" "))
    )
    head = cst.Arg(cst.parse_expression(dst), keyword=cst.Name("dst"), equal=tight, comma=comma)
    return call.with_changes(func=cst.parse_expression(func), args=[head, *args])


def migrate_source(source: str, to: str = "0.7", grid: tuple[int, ...] = ()) -> Migration:
    """Rewrite a Beta 1 kernel file's source into NKI `to` (0.7, the current language, or
    0.3). `grid` is the SPMD launch grid of its kernels (`kernel[2, 2]`): their programs become
    loops over the program ids."""
    if to not in TARGETS:
        raise ValueError(
            f"migration to NKI {to} is not supported (supported: {', '.join(TARGETS)})"
        )
    module = cst.parse_module(source)
    keep: frozenset[tuple[tuple[str, ...], str]] = frozenset()
    blocked = _BlockedTensors.of(module)
    full = _MaskedResults.of(module)
    while True:
        migrator = _Migrator(tuple(grid), source, to, keep, blocked, full)
        new = MetadataWrapper(module).visit(migrator)
        # a masked result that every reader masks alike (written differently) keeps the
        # kept shape: a second pass
        alike = {k for k in full if len(migrator.full_masks.get(k, ())) == 1}
        if alike:
            full = full - alike
            continue
        # an index grid whose definition went while one of its uses stayed (a grid passed to
        # a call, arithmetic slices cannot express) stays whole: a second pass keeps it
        left = _grid_uses(new, migrator.removed) - keep
        if not left:
            break
        keep = keep | left
    new = new.visit(_MgridAxes()).visit(_SplitFreeDims(migrator._nl(), to, _names(new)))
    text = new.visit(_CarryComments()).code
    todos = sorted(migrator.todos, key=lambda t: (t.line, t.col))
    return Migration(source, text, todos)


def _tile_list(tile: cst.BaseExpression, counts: list[str]) -> cst.BaseExpression:
    """`[[tile for _ in range(n0)] for _ in range(n1)]`-style nested lists: one `tile` per
    block, `counts` the block dimensions (outermost first)."""
    for count in reversed(counts):
        loop = cst.CompFor(target=cst.Name("_"), iter=cst.parse_expression(f"range({count})"))
        tile = cst.ListComp(elt=tile, for_in=loop)
    return tile


def _tile_of_list(name: str, elements: list[str], blocks: int) -> cst.BaseExpression:
    """`t[i, j, 0:128, :]` of a block tensor that became a list of tiles: `t[i][j][0:128, :]`."""
    picked = name + "".join(f"[{e}]" for e in elements[:blocks])
    rest = elements[blocks:]
    return cst.parse_expression(picked + (f"[{', '.join(rest)}]" if rest else ""))


#: `nl` calls that allocate a tensor of the shape given first
ALLOCATIONS = ("ndarray", "zeros", "ones", "full", "empty", "rand", "random")

#: buffers off chip: a tensor there keeps its layout
HBM_BUFFERS = ("hbm", "shared_hbm", "private_hbm")


class _Scoped(cst.CSTVisitor):
    """A module visitor that knows the functions it is in: names are keyed `(scope, name)`."""

    def __init__(self):
        self.scope: list[str] = []

    def visit_FunctionDef(self, node):
        self.scope.append(node.name.value)

    def leave_FunctionDef(self, node):
        self.scope.pop()


class _BlockedTensors(_Scoped):
    """The tensors allocated with block dimensions before `nl.par_dim`
    (`t = nl.ndarray((n, nl.par_dim(p), f), ...)`) that the rewrite moves to another layout:
    allocated once in their function, and every other use a subscript `t[...]`.

    Beta 1's block dimension is a list of tiles, each live only from its first write to its
    last read, so that blocks may rotate over a few physical buffers. The migration guide
    ("Removing block dimensions from NKI kernels") gives two forms. The blocks as a free
    dimension, (p, n, f), keep every block alive at once: the form for SBUF blocks. A list of
    tiles, `[nl.ndarray((p, f), ...) for _ in range(n)]`, is the same program as Beta 1's: the
    form for blocks that were never meant to be live at once (`listed`), those in PSUM (8 banks
    of 2 KiB per partition, which a PSUM block tensor routinely exceeds, e.g. one bank per
    (q, kv) tile of an attention score matrix) and those placed by a rotating direct
    allocation (`ncc.sbuf.mod_alloc(..., num_free_tiles=(2,))`). A list needs every subscript
    to pick one block (`t[i]`, `t[i, j, 0:128, :]`); a tensor sliced across blocks keeps the
    free-dimension form."""

    def __init__(self):
        super().__init__()
        self.found: dict = {}  # (scope, name) -> (blocks, rank, on chip, listed)
        self.assigned: dict = {}  # (scope, name) -> times assigned
        self.other_use: set = set()  # (scope, name) read other than as t[...]
        self.nested: dict = {}  # (nested scope, name) read there as t[...] -> (scope, name)
        self.across: set = set()  # (scope, name) with a subscript that picks no single block
        self.psum_allocators: set[str] = set()  # `psum_mod = nki.compiler.psum.mod_alloc`

    @classmethod
    def of(cls, module: cst.Module) -> dict:
        finder = cls()
        module.visit(finder)
        blocked = {
            k: (*v[:3], v[3] and k not in finder.across)
            for k, v in finder.found.items()
            if not v[2] or (finder.assigned.get(k) == 1 and k not in finder.other_use)
        }  # an HBM tensor keeps its layout: any use is fine
        for use, key in finder.nested.items():  # its subscripts in nested functions move too
            if key in blocked and use not in finder.assigned:
                blocked[use] = blocked[key]
        return blocked

    def visit_Assign(self, node):
        for t in node.targets:
            if isinstance(t.target, cst.Name):
                key = (tuple(self.scope), t.target.value)
                self.assigned[key] = self.assigned.get(key, 0) + 1
        target = node.targets[0].target if len(node.targets) == 1 else None
        call = node.value
        if isinstance(target, cst.Name) and "psum" in (_dotted(call) or "").split(".")[:-1]:
            self.psum_allocators.add(target.value)
        if not (isinstance(target, cst.Name) and isinstance(call, cst.Call) and call.args):
            return
        func = _dotted(call.func) or ""
        if func.rsplit(".", 1)[-1] not in ALLOCATIONS:
            return
        shape = next((a.value for a in call.args if a.keyword and a.keyword.value == "shape"),
                     call.args[0].value if call.args[0].keyword is None else None)  # fmt: skip
        if not isinstance(shape, cst.Tuple | cst.List):
            return
        dims = [e.value for e in shape.elements]
        at = [
            i for i, d in enumerate(dims)
            if isinstance(d, cst.Call) and (_dotted(d.func) or "").endswith("par_dim")
        ]  # fmt: skip
        if len(at) != 1 or at[0] == 0:
            return
        buffer = next((a.value for a in call.args if a.keyword and a.keyword.value == "buffer"),
                      None)  # fmt: skip
        name = buffer.attr.value if isinstance(buffer, cst.Attribute) else ""
        on_chip = name not in HBM_BUFFERS
        key = (tuple(self.scope), target.value)
        self.found[key] = (at[0], len(dims), on_chip, on_chip and self._rotating(buffer))

    def _rotating(self, buffer) -> bool:
        """Whether blocks in `buffer` were meant to rotate over a few physical tiles: PSUM
        (`nl.psum`, `ncc.psum.mod_alloc(...)`, a name bound to a PSUM allocator) or a direct
        SBUF allocation with `num_free_tiles=`."""
        if buffer is None:
            return False
        call = buffer if isinstance(buffer, cst.Call) else None
        dotted = _dotted(call.func if call is not None else buffer) or ""
        if "psum" in dotted.split(".") or dotted in self.psum_allocators:
            return True
        return call is not None and any(
            a.keyword is not None and a.keyword.value == "num_free_tiles" for a in call.args
        )

    def _candidate(self, name: str):
        """(key, in this very function) of the candidate `name` reads here, else None."""
        for depth in range(len(self.scope), -1, -1):
            key = (tuple(self.scope[:depth]), name)
            if key in self.found:
                return key, depth == len(self.scope)
            if key in self.assigned:
                return None  # a name of its own there
        return None

    def visit_Name(self, node):
        # a use other than t[...] and the allocation's target (neither is visited)
        found = self._candidate(node.value)
        if found is not None:
            self.other_use.add(found[0])

    def visit_Subscript(self, node):
        if not isinstance(node.value, cst.Name):
            return True
        found = self._candidate(node.value.value)
        if found is not None and not found[1]:  # read in a nested function (a closure)
            self.nested[(tuple(self.scope), node.value.value)] = found[0]
        if found is not None:
            blocks = self.found[found[0]][0]
            picks = node.slice[:blocks]
            if len(picks) < blocks or any(
                not isinstance(e.slice, cst.Index) or isinstance(e.slice.value, cst.Ellipsis)
                for e in picks
            ):
                self.across.add(found[0])
        for element in node.slice:
            element.visit(self)
        return False

    def visit_AssignTarget(self, node):
        if isinstance(node.target, cst.Name):
            return False
        return True


class _MaskedResults(_Scoped):
    """The tiles a masked call makes (`t = nl.load(a[...], mask=m)`) that every later read
    uses under another mask (`nl.max(t[...], mask=m2)`, `nl.store(..., value=t, mask=m3)`).

    Beta 1 gave a masked call's result the full shape of its index grids, writing only the
    elements the mask keeps; the rewrite of masks into slices gives it the kept shape instead,
    which is the same program only while every reader keeps the same elements. These tiles
    keep the full shape in the migrated kernel (allocated, then the call writes the kept view)
    and each reader slices them to what its own mask keeps (`_Migrator._full_result`)."""

    def __init__(self):
        super().__init__()
        self.producers: dict = {}  # (scope, name) -> [mask text of each masked assignment]
        self.late: set = set()  # (scope, name) assigned again after its masked assignment
        self.reads: dict = {}  # (scope, name) -> reads of it
        self.masked_reads: dict = {}  # (scope, name) -> mask texts of the masked calls reading it
        self.direct: dict = {}  # id of a Name read as a masked call's argument -> mask text

    @classmethod
    def of(cls, module: cst.Module) -> frozenset:
        finder = cls()
        module.visit(finder)
        return frozenset(
            key
            for key, masks in finder.producers.items()
            if len(masks) == 1
            and key not in finder.late
            and finder.reads.get(key, 0) == len(finder.masked_reads.get(key, ()))
            and any(m != masks[0] for m in finder.masked_reads.get(key, ()))
        )

    def visit_Assign(self, node):
        for t in node.targets:
            if isinstance(t.target, cst.Name):
                key = (tuple(self.scope), t.target.value)
                if key in self.producers:
                    self.late.add(key)
        target = node.targets[0].target if len(node.targets) == 1 else None
        mask = _mask_argument(node.value)
        if isinstance(target, cst.Name) and mask is not None:
            key = (tuple(self.scope), target.value)
            self.late.discard(key)
            self.producers.setdefault(key, []).append(_code(mask))

    def visit_Call(self, node):
        mask = _mask_argument(node)
        if mask is None:
            return
        for arg in node.args:
            base = arg.value
            while isinstance(base, cst.Subscript):
                base = base.value
            if isinstance(base, cst.Name) and not (arg.keyword and arg.keyword.value == "mask"):
                self.direct[id(base)] = _code(mask)

    def visit_Name(self, node):
        key = (tuple(self.scope), node.value)
        for depth in range(len(self.scope)):  # a read in a nested function is not sliced
            outer = (tuple(self.scope[:depth]), node.value)
            self.reads[outer] = self.reads.get(outer, 0) + 1
        self.reads[key] = self.reads.get(key, 0) + 1
        if id(node) in self.direct:
            self.masked_reads.setdefault(key, []).append(self.direct[id(node)])

    def visit_AssignTarget(self, node):
        return not isinstance(node.target, cst.Name)


def _kept_key(kept: dict) -> tuple:
    """A mask's kept ranges (`_Migrator._mask_bounds`) as they compare, axes and spaces
    aside."""

    def text(t: str) -> str:
        return "".join(t.split())

    return tuple(sorted(
        (text(start), tuple(map(text, lows)), tuple(map(text, highs)))
        for start, lows, highs in kept.values()
    ))  # fmt: skip


def _same_code(a: cst.CSTNode, b: cst.CSTNode) -> bool:
    """Whether two statements read the same, spaces aside."""
    return "".join(_code(a).split()) == "".join(_code(b).split())


def _mask_argument(node) -> cst.BaseExpression | None:
    """The `mask=` argument of a call, else None."""
    if not isinstance(node, cst.Call):
        return None
    return next((a.value for a in node.args if a.keyword and a.keyword.value == "mask"), None)


#: marks the stand-in of a removed line whose comments stay (`_CarryComments`)
_CARRIED = "# nkic-migrate-carried-comments"


class _CarryComments(cst.CSTTransformer):
    """The comments above a removed line, moved above the statement that follows it (or to the
    end of its block)."""

    def _body(self, body):
        out, carried = [], []
        for stmt in body:
            ws = getattr(stmt, "trailing_whitespace", None)
            if ws is not None and ws.comment is not None and ws.comment.value == _CARRIED:
                carried += stmt.leading_lines
                continue
            if carried:
                stmt = stmt.with_changes(leading_lines=[*carried, *stmt.leading_lines])
                carried = []
            out.append(stmt)
        return out, carried

    def leave_IndentedBlock(self, original, updated):
        body, carried = self._body(updated.body)
        if not body:
            body = [cst.SimpleStatementLine([cst.Pass()])]
        return updated.with_changes(body=body, footer=[*carried, *updated.footer])

    def leave_Module(self, original, updated):
        body, carried = self._body(updated.body)
        return updated.with_changes(body=body, footer=[*carried, *updated.footer])


#: free dimensions one instruction's access pattern takes (NKI: at most 4 after the partition)
MAX_FREE_DIMS = 4

#: `nl` operations applied element by element, which a loop over an outer dimension of all
#: their operands splits without changing a result
_SPLITTABLE = ELEMENTWISE | {
    "exp", "log", "sqrt", "rsqrt", "abs", "negative", "square", "tanh", "sigmoid", "relu",
    "copy", "reciprocal", "sign", "sin", "cos", "gelu", "silu", "erf",
}  # fmt: skip


def _access_pattern_call(node) -> tuple[cst.Call, list[cst.List], cst.BaseExpression] | None:
    """`t.ap(pattern=[[s, n], ...], offset=o)` as (the call, its entries, `o`)."""
    if not (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value == "ap"
    ):
        return None
    kw = {a.keyword.value: a.value for a in node.args if a.keyword is not None}
    pattern, offset = kw.get("pattern"), kw.get("offset")
    if len(kw) != 2 or len(node.args) != 2 or not isinstance(pattern, cst.List):
        return None
    entries = [e.value for e in pattern.elements]
    if not all(isinstance(e, cst.List) and len(e.elements) == 2 for e in entries):
        return None
    return node, entries, offset


class _SplitFreeDims(cst.CSTTransformer):
    """`t.ap(pattern=[...])[...] = expression` whose access patterns have more free dimensions
    than an instruction takes (Beta 1 index grids of rank 6 and more become such patterns):
    the statement inside loops over its outer free dimensions, each pattern without them and
    its offset moved by the loop index. Only where it is provably the same computation: every
    call of the expression elementwise (an `nl` operation or an access pattern), every pattern
    with the same outer dimensions, and the destination's tensor not read by the expression."""

    def __init__(self, nl: str, to: str, taken: set[str]):
        self.nl, self.to, self.taken = nl, to, taken

    def _split(self, stmt: cst.Assign) -> tuple[list[tuple[str, str]], cst.Assign] | None:
        if len(stmt.targets) != 1:
            return None
        target = stmt.targets[0].target
        if not (
            isinstance(target, cst.Subscript)
            and len(target.slice) == 1
            and isinstance(target.slice[0].slice, cst.Index)
            and isinstance(target.slice[0].slice.value, cst.Ellipsis)
        ):
            return None
        dst = _access_pattern_call(target.value)
        if dst is None or not isinstance(dst[0].func.value, cst.Name):
            return None
        outer = len(dst[1]) - 1 - MAX_FREE_DIMS
        if outer <= 0 or dst[0].func.value.value in _names(stmt.value):
            return None
        counts = [_code(e.elements[1].value) for e in dst[1][1 : 1 + outer]]
        calls: list[cst.Call] = []

        class Calls(cst.CSTVisitor):
            def visit_Call(self, n):
                calls.append(n)

        stmt.value.visit(Calls())
        nl = self.nl
        for call in calls:
            ap = _access_pattern_call(call)
            if ap is None:
                name = _dotted(call.func) or ""
                if not (name.startswith(f"{nl}.") and name[len(nl) + 1 :] in _SPLITTABLE):
                    return None
                continue
            if (
                len(ap[1]) != len(dst[1])
                or [_code(e.elements[1].value) for e in ap[1][1 : 1 + outer]] != counts
            ):
                return None
        names: list[str] = []
        i = 0
        while len(names) < outer:  # the same names in each split statement's own loops
            if f"i_free{i}" not in self.taken:
                names.append(f"i_free{i}")
            i += 1

        class Narrow(cst.CSTTransformer):
            def leave_Call(self, original, updated):
                ap = _access_pattern_call(updated)
                if ap is None:
                    return updated
                _, entries, offset = ap
                moved = "" if _int(offset) == 0 else _code(offset)
                for name, entry in zip(names, entries[1 : 1 + outer]):
                    stride = entry.elements[0].value
                    text = _code(stride)
                    if not isinstance(
                        stride, cst.Name | cst.Integer | cst.Attribute | cst.Subscript
                    ):
                        text = f"({text})"
                    moved += f"{' + ' if moved else ''}{text} * {name}"
                kept = [entries[0], *entries[1 + outer :]]
                pattern = cst.List([cst.Element(e) for e in kept])
                return updated.with_changes(
                    args=[
                        cst.Arg(pattern, keyword=cst.Name("pattern"),
                                equal=updated.args[0].equal),
                        cst.Arg(cst.parse_expression(moved), keyword=cst.Name("offset"),
                                equal=updated.args[1].equal),
                    ]
                )  # fmt: skip

        return list(zip(names, counts)), stmt.visit(Narrow())

    def _loop(self) -> str:
        return "range" if self.to == "0.7" else f"{self.nl}.affine_range"

    def leave_SimpleStatementLine(self, original, updated):
        if len(updated.body) != 1 or not isinstance(updated.body[0], cst.Assign):
            return updated
        split = self._split(updated.body[0])
        if split is None:
            return updated
        loops, stmt = split
        node = updated.with_changes(body=[stmt], leading_lines=[])
        for name, count in reversed(loops):
            node = cst.For(
                target=cst.Name(name),
                iter=cst.parse_expression(f"{self._loop()}({count})"),
                body=cst.IndentedBlock([node]),
            )
        return node.with_changes(leading_lines=updated.leading_lines)


_MGRID_AXIS = "_nkic_mgrid_axis__"


def _mgrid_axis(name: str, attr: str) -> str:
    """The name standing for `name.attr` of `name = nl.mgrid[...]` during the rewrite."""
    return f"{_MGRID_AXIS}{name}__{attr}"


class _MgridAxes(cst.CSTTransformer):
    """The `g.p` / `g.x` the rewrite left, written back as they were."""

    def leave_Name(self, original, updated):
        if updated.value.startswith(_MGRID_AXIS):
            name, attr = updated.value.removeprefix(_MGRID_AXIS).rsplit("__", 1)
            return cst.Attribute(cst.Name(name), cst.Name(attr))
        return updated


def _grid_uses(module: cst.Module, names: set) -> set:
    """The (enclosing functions, name) of `names` that `module` still reads (`g` of a dotted
    `g.p` too)."""
    found: set = set()
    scope: list[str] = []
    shadowed: list[set] = []  # the names each enclosing comprehension binds

    class Finder(cst.CSTVisitor):
        # a name assigned (`_, _, n = k.shape` beside `i_p, _ = nl.mgrid[...]`) is not a use;
        # the indices of a subscript assigned to are
        def visit_AssignTarget(self, n):
            t = n.target
            bound = t.elements if isinstance(t, cst.Tuple | cst.List) else [t]
            return not all(isinstance(getattr(e, "value", e), cst.Name) for e in bound)

        def visit_FunctionDef(self, n):
            scope.append(n.name.value)

        def leave_FunctionDef(self, n):
            scope.pop()

        # a comprehension's own variables (`for _ in range(n)` of a list of tiles) shadow a
        # grid of the same name (`i_p, _ = nl.mgrid[...]`)
        def visit_ListComp(self, n):
            bound = set()
            loop = n.for_in
            while loop is not None:
                bound |= _names(loop.target)
                loop = loop.inner_for_in
            shadowed.append(bound)

        def leave_ListComp(self, n):
            shadowed.pop()

        visit_SetComp = visit_GeneratorExp = visit_DictComp = visit_ListComp
        leave_SetComp = leave_GeneratorExp = leave_DictComp = leave_ListComp

        def visit_Name(self, n):
            if any(n.value in bound for bound in shadowed):
                return
            name = n.value.removeprefix(_MGRID_AXIS).rsplit("__", 1)[0]
            # the innermost enclosing function that removed it (a closure reads its outer one's)
            for depth in range(len(scope), -1, -1):
                key = (tuple(scope[:depth]), name)
                if key in names:
                    found.add(key)
                    break

    module.visit(Finder())
    return found


@dataclass
class Verification:
    """The original and the migrated kernel compiled and run on the same seeded inputs.

    `identical`: every output bit for bit. Otherwise `within_tolerance` when the difference is
    no more than the roundings the migration changed explain (`explained_by`, each with the
    normwise difference it allows; the rule is nkic.migrate_rounding's)."""

    kernel: str
    identical: bool
    max_abs_diff: float
    latency_ns: tuple[float, float]
    error: str | None = None  # why one of them could not be compiled or run
    within_tolerance: bool = False
    max_rel_diff: float = 0.0  # max over outputs of max |a - b| / max |a|
    max_ulp: int = 0  # in the output's dtype
    allowed_rel_diff: float = 0.0  # what the changed roundings explain
    explained_by: tuple[str, ...] = ()
    incomparable: str = ""  # why the outputs cannot be within a tolerance (NaN moved, ...)

    @property
    def matches(self) -> bool:
        """Identical, or within the tolerance the changed rounding explains."""
        return self.error is None and (self.identical or self.within_tolerance)

    def describe(self) -> str:
        if self.error:
            return f"{self.kernel}: not verified: {self.error}"
        before, after = (t / 1000 for t in self.latency_ns)
        if self.identical:
            same = "outputs bit-identical"
        else:
            measured = (
                f"max ulp error {self.max_ulp}, max relative error {self.max_rel_diff:.3g}"
                if not self.incomparable
                else self.incomparable
            )
            if self.within_tolerance:
                same = (
                    f"outputs within tolerance ({measured} <= {self.allowed_rel_diff:.3g}, "
                    f"explained by {'; '.join(self.explained_by)})"
                )
            else:
                why = (
                    f"; the changed roundings explain at most {self.allowed_rel_diff:.3g}: "
                    + "; ".join(self.explained_by)
                    if self.explained_by
                    else "; no rounding the migration changed explains it"
                )
                same = f"outputs differ (max |difference| {self.max_abs_diff:.3g}, {measured}{why})"
        return f"{self.kernel}: {same}; predicted latency {before:,.3f} µs -> {after:,.3f} µs"


def verify(
    path: str,
    migrated: str,
    kernel: str,
    args: dict,
    target: str,
    seed: int = 0,
    grid: tuple[int, ...] = (),
) -> Verification:
    """Compile `kernel` of the original file and of the migrated source (compiled as a file
    beside it, so that its relative imports resolve, but never written) for `args`, run both on the
    same seeded inputs, and compare every output."""
    import os

    import numpy as np
    from nkirt.errors import RunError, RuntimeFault

    from . import api, driver
    from .diagnostics import CompileError
    from .frontend import TensorSpec
    from .frontend.loader import source_overrides

    folder = os.path.dirname(os.path.abspath(path))
    twin = os.path.join(folder, f".nkic-migrated-{os.getpid()}-{next(_TWINS)}.py")
    with source_overrides({twin: migrated}):
        rng = np.random.default_rng(seed)
        tensors = {name: spec for name, spec in args.items() if isinstance(spec, TensorSpec)}
        inputs = {
            name: _random(spec, rng, _index_range(tensors, name)) for name, spec in tensors.items()
        }
        results = []
        for file in (path, twin):
            launch = {"grid": tuple(grid)} if grid and file == path else {}
            given = args if file == path else _migrated_args(args)
            # the program only: verification needs no assembly listing or resource report
            try:
                res = driver.compile_file(file, kernel, api._tensor_args(given), target, **launch)
                diagnostics = [] if res.ok else res.diagnostics
            except CompileError as e:
                res, diagnostics = None, e.diagnostics
            if res is None or not res.ok:
                which = "original" if file == path else "migrated"
                # the first error: a warning before it (a deprecation) is not why it failed
                errors = [d for d in diagnostics if d.severity == "error"]
                first = (errors or diagnostics or [None])[0]
                what = f"{first.code}: {first.message}" if first else "no program"
                return Verification(kernel, False, float("nan"), (0.0, 0.0), f"{which}: {what}")
            compiled = api.CompiledKernel(res.neff, returns_nothing=not res.ir.returns)
            try:
                outs = compiled(**inputs, seed=seed)
            except (RuntimeFault, RunError) as e:  # e.g. an index input out of range
                which = "original" if file == path else "migrated"
                first = str(e).splitlines()[0] if str(e) else type(e).__name__
                return Verification(
                    kernel, False, float("nan"), (0.0, 0.0), f"{which}: run faulted: {first}"
                )
            outs = outs if isinstance(outs, tuple) else (outs,)
            results.append((outs, compiled.profile["total_ns"], res))
        (before, t0, res0), (after, t1, res1) = results
        identical = len(before) == len(after) and all(
            a.shape == b.shape and a.tobytes() == b.tobytes() for a, b in zip(before, after)
        )
        if identical:
            return Verification(kernel, True, 0.0, (t0, t1))
        return _compared(kernel, before, after, (t0, t1), (res0.ir_text, res1.ir_text))


def _compared(kernel, before, after, latency, irs) -> Verification:
    """The verdict on outputs that are not bit-identical: within the tolerance the roundings
    the migration changed explain (migrate_rounding), or differ."""
    from . import migrate_rounding as rounding

    gap = rounding.distance(before, after)
    found = rounding.changes(*(rounding.Rounding.of_ir(ir) for ir in irs))
    allowed = sum(c.bound for c in found) + 2 * gap.output_roundoff if found else 0.0
    return Verification(
        kernel,
        False,
        gap.max_abs,
        latency,
        within_tolerance=bool(found) and gap.comparable and gap.max_rel <= allowed,
        max_rel_diff=gap.max_rel,
        max_ulp=gap.max_ulp,
        allowed_rel_diff=allowed,
        explained_by=tuple(c.what for c in found),
        incomparable=gap.why_not,
    )


def _migrated_args(args: dict) -> dict:
    """The kernel arguments as the migrated kernel takes them: an argument expression naming
    a numpy function as an operator (`np.greater_equal`, which Beta 1 accepted) names the `nl`
    operator."""
    from .frontend.args import ArgExpr

    def operator(m: re.Match) -> str:
        name = NUMPY_ALIASES.get(m.group(2), m.group(2))
        return f"nl.{name}" if name in NUMPY_OPS else m.group(0)

    out = {}
    for name, value in args.items():
        if isinstance(value, ArgExpr):
            value = ArgExpr(re.sub(r"\b(np|numpy)\.(\w+)\b", operator, value.text))
        out[name] = value
    return out


#: numbers the stand-in paths of migrated sources (`verify`)
_TWINS = itertools.count()


#: integer dtypes: their inputs are indices (`_index_range`)
_INTEGER_DTYPES = ("int8", "int16", "int32", "uint8", "uint16", "uint32")


def _index_range(specs: dict, name: str) -> int:
    """The values the integer input `name` is drawn from, [0, n): Beta 1 kernels take integer
    tensors as row indices of their other tensors (indirect DMA), so n is the smallest first
    dimension of the non-integer tensors, or, where every tensor is an integer one, of the
    other tensors (128 with none)."""
    others = [s for other, s in specs.items() if other != name and s.shape]
    rows = [s.shape[0] for s in others if s.dtype not in _INTEGER_DTYPES]
    return min(rows or [s.shape[0] for s in others], default=128)


def _random(spec, rng, rows: int = 128):
    import ml_dtypes  # noqa: F401  (registers the bf16/fp8 numpy dtypes)
    import numpy as np
    from nkirt import dtypes

    if spec.dtype in _INTEGER_DTYPES:
        return rng.integers(0, rows, spec.shape).astype(spec.dtype)
    values = rng.standard_normal(spec.shape, dtype=np.float32)
    return dtypes.cast(values, spec.dtype)
