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
* `nl.par_dim(n)` → `n`; numpy functions used as operators (`op=np.add`) → `nl.add`.

What it cannot rewrite (masks, grids that transpose, anything it does not recognise) stays in
place under a `# TODO(nkic migrate): ...` comment, and is returned as a `Todo`.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

IMPORTS = {
    "neuronxcc.nki": "nki",
    "neuronxcc.nki.language": "nki.language",
    "neuronxcc.nki.isa": "nki.isa",
    "neuronxcc.nki.typing": "nki.typing",
}

TILE_OPERATORS = {
    cst.Add: "add", cst.Subtract: "subtract", cst.Multiply: "multiply", cst.Divide: "divide",
    cst.Power: "power", cst.LeftShift: "left_shift", cst.RightShift: "right_shift",
    cst.BitAnd: "bitwise_and", cst.BitOr: "bitwise_or", cst.BitXor: "bitwise_xor",
}  # fmt: skip

NUMPY_OPS = {
    "add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "equal",
    "not_equal", "greater", "greater_equal", "less", "less_equal", "logical_and",
    "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor",
}  # fmt: skip

#: value-returning Beta 1 instructions: positional parameter names and the destination
#: (shape source, dtype source, buffer); "matmul" builds (stationary.shape[1], moving.shape[1]).
RETURNING = {
    "nc_matmul": (("stationary", "moving"), "matmul"),
    "activation": (("op", "data", "bias", "scale"), "data"),
    "tensor_tensor": (("data1", "data2", "op"), "data1"),
    "tensor_scalar": (("data", "op0", "operand0", "reverse0", "op1", "operand1", "reverse1"), "data"),
    "tensor_copy": (("src",), "src"),
    "reciprocal": (("data",), "data"),
}  # fmt: skip

#: `nl` calls that do not produce a tile
NOT_TILES = {"arange", "mgrid", "program_id", "num_programs", "par_dim", "ndarray_shape"}


@dataclass
class Todo:
    line: int
    message: str


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

    def __init__(self):
        super().__init__()
        self.todos: list[Todo] = []
        self.nl = {"nl"}
        self.nisa = {"nisa"}
        self.np = {"np", "numpy"}
        self.grids: dict[str, _Grid] = {}
        self.tiles: set[str] = set()
        self.unresolved: set[str] = set()
        #: TODO messages of the statement being rewritten (written above it as comments)
        self.pending: list[str] = []

    # helpers ---------------------------------------------------------------------------------

    def _line(self, node) -> int:
        try:
            return self.get_metadata(PositionProvider, node).start.line
        except KeyError:
            return 0

    def _todo(self, node, message: str) -> None:
        self.todos.append(Todo(self._line(node), message))
        self.pending.append(message)

    def _is(self, node, module: set[str], name: str | None = None) -> str | None:
        """`nl.X` → "X" when node is an attribute of one of the module aliases."""
        if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name):
            if node.value.value in module and (name is None or node.attr.value == name):
                return node.attr.value
        return None

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

    # index grids -----------------------------------------------------------------------------

    def _grid_of(self, value) -> _Grid | None:
        """`nl.arange(n)[:, None]` / `[None, :]` / `nl.arange(n)`."""
        call, axis = value, 0
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
            axis = kinds.index("all")
        if not (isinstance(call, cst.Call) and self._is(call.func, self.nl, "arange")):
            return None
        args = [a.value for a in call.args]
        if len(args) == 1:
            return _Grid("0", _code(args[0]), 1, axis)
        if len(args) == 2:
            lo, hi = _code(args[0]), _code(args[1])
            return _Grid(lo, f"{hi} - {lo}" if lo != "0" else hi, 1, axis)
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
                return _Grid(start, grid.size, grid.step, grid.axis)
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
            grids.append(_Grid(lo, f"{hi} - ({lo})" if lo != "0" else hi, 1, axis))
        return grids

    def leave_Assign(self, original, updated):
        if len(updated.targets) != 1:
            return updated
        target, value = updated.targets[0].target, updated.value
        if isinstance(target, cst.Name):
            grid = self._grid_of(value) or self._shifted_grid(value)
            if grid is not None:
                self.grids[target.value] = grid
                return cst.RemovalSentinel.REMOVE
            if isinstance(value, cst.Call):
                fn = value.func
                nl_name = self._is(fn, self.nl)
                if (nl_name and nl_name not in NOT_TILES) or self._is(fn, self.nisa):
                    self.tiles.add(target.value)
        elif isinstance(target, cst.Tuple):
            grids = self._mgrid(value)
            names = [e.value for e in target.elements]
            if grids and len(grids) == len(names) and all(isinstance(n, cst.Name) for n in names):
                for n, g in zip(names, grids):
                    self.grids[n.value] = g
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
                    return _Grid(
                        f"{k} * {g.start}" if g.start != "0" else "0", g.size, g.step * k, g.axis
                    ), "0"
            if isinstance(node.operator, cst.Add):
                for grid_side, other in ((node.left, node.right), (node.right, node.left)):
                    inner = self._affine(grid_side)
                    if inner is not None and not self._uses_grid(other):
                        g, off = inner
                        text = _code(other)
                        return g, text if off == "0" else f"{off} + {text}"
        return None

    def _uses_grid(self, node) -> bool:
        found = []

        class Finder(cst.CSTVisitor):
            def visit_Name(inner, n):
                if n.value in self.grids:
                    found.append(n)

        node.visit(Finder())
        return bool(found)

    def leave_Name(self, original, updated):
        return updated

    def leave_Subscript(self, original, updated):
        if not any(
            self._uses_grid(e.slice) for e in updated.slice if isinstance(e.slice, cst.Index)
        ):
            return updated
        elements = []
        axes = []
        for element in updated.slice:
            s = element.slice
            if isinstance(s, cst.Index) and self._uses_grid(s.value):
                found = self._affine(s.value)
                if found is None:
                    self._todo(original, f"index {_code(s.value)} is not start + step * grid")
                    self.unresolved.update(self._grid_names(s.value))
                    return updated
                grid, offset = found
                axes.append(grid.axis)
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
                text = f"{start}:{stop}" + (f":{grid.step}" if grid.step != 1 else "")
                elements.append(
                    element.with_changes(slice=cst.parse_expression(f"x[{text}]").slice[0].slice)
                )
            else:
                elements.append(element)
        if axes != sorted(axes):
            self._todo(
                original, "index grids transpose the tensor: load it in order and transpose it"
            )
            return updated
        return updated.with_changes(slice=elements)

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
                if n.value in self.grids:
                    names.add(n.value)

        node.visit(Finder())
        return names

    # calls and operators ---------------------------------------------------------------------

    def leave_Call(self, original, updated):
        if self._is(updated.func, self.nl, "par_dim") and len(updated.args) == 1:
            return updated.args[0].value
        args = []
        for a in updated.args:
            np_name = self._is(a.value, self.np)
            if np_name in NUMPY_OPS:  # a numpy function as a value is an operator
                a = a.with_changes(value=cst.parse_expression(f"{sorted(self.nl)[0]}.{np_name}"))
            if a.keyword is not None and a.keyword.value == "mask":
                self._todo(original, "mask= has no current equivalent: slice the operands to the "
                           "rows and columns the mask keeps")  # fmt: skip
            args.append(a)
        return updated.with_changes(args=args)

    def leave_BinaryOperation(self, original, updated):
        name = TILE_OPERATORS.get(type(updated.operator))
        if name is None:
            return updated
        if self._is_tile(updated.left) or self._is_tile(updated.right):
            nl = "nl" if "nl" in self.nl else sorted(self.nl)[0]
            return cst.parse_expression(
                f"{nl}.{name}({_code(updated.left)}, {_code(updated.right)})"
            )
        return updated

    def _is_tile(self, node) -> bool:
        if isinstance(node, cst.Name):
            return node.value in self.tiles
        if isinstance(node, cst.Call):
            return bool(
                self._is(node.func, self.nl) and self._is(node.func, self.nl) not in NOT_TILES
            )
        return False

    def leave_SimpleStatementLine(self, original, updated):
        result = self._statement(updated)
        if not isinstance(result, cst.RemovalSentinel) and self._has_grid_api(result):
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
        if len(updated.body) != 1:
            return updated
        stmt = updated.body[0]
        if isinstance(stmt, cst.Assign) and len(stmt.targets) == 1:
            target = stmt.targets[0].target
            call = stmt.value
            name = self._returning(call)
            if name and isinstance(target, cst.Name):
                return self._dst_first(updated, name, call, target.value, new=True)
        if isinstance(stmt, cst.AugAssign) and isinstance(stmt.operator, cst.AddAssign):
            name = self._returning(stmt.value)
            if name == "nc_matmul" and isinstance(stmt.target, cst.Name):
                return self._dst_first(updated, name, stmt.value, stmt.target.value, new=False)
        return updated

    def _returning(self, call) -> str | None:
        if not isinstance(call, cst.Call):
            return None
        name = self._is(call.func, self.nisa)
        if name not in RETURNING or any(a.keyword and a.keyword.value == "dst" for a in call.args):
            return None
        return name

    def _dst_first(self, line, name: str, call: cst.Call, target: str, new: bool):
        params, shape_of = RETURNING[name]
        named: dict[str, str] = {}
        dtype = None
        for i, a in enumerate(call.args):
            key = a.keyword.value if a.keyword is not None else params[i]
            if key == "dtype":
                dtype = _code(a.value)
                continue
            named[key] = _code(a.value)
        nl = "nl" if "nl" in self.nl else sorted(self.nl)[0]
        nisa = _code(call.func).rsplit(".", 1)[0]
        statements = []
        if new:
            if shape_of == "matmul":
                shape = f"({named['stationary']}.shape[1], {named['moving']}.shape[1])"
                dt, buf = dtype or f"{nl}.float32", "psum"
            else:
                src = named[shape_of]
                shape, dt, buf = f"{src}.shape", dtype or f"{src}.dtype", "sbuf"
            statements.append(f"{target} = {nl}.ndarray({shape}, dtype={dt}, buffer={nl}.{buf})")
            self.tiles.add(target)
        kwargs = ", ".join(f"{k}={v}" for k, v in named.items())
        statements.append(f"{nisa}.{name}(dst={target}, {kwargs})")
        lines = [cst.parse_statement(s + "\n") for s in statements]
        lines[0] = lines[0].with_changes(leading_lines=line.leading_lines)
        lines[-1] = lines[-1].with_changes(trailing_whitespace=line.trailing_whitespace)
        return cst.FlattenSentinel(lines)


def migrate_source(source: str, to: str = "0.3") -> Migration:
    """Rewrite a Beta 1 kernel file's source into NKI `to` (0.3; 0.7 is not yet separate)."""
    if to not in ("0.3",):
        raise ValueError(f"migration to NKI {to} is not supported yet (supported: 0.3)")
    module = cst.parse_module(source)
    migrator = _Migrator()
    new = MetadataWrapper(module).visit(migrator)
    text = new.code
    todos = sorted(migrator.todos, key=lambda t: t.line)
    return Migration(source, text, todos)


@dataclass
class Verification:
    """The original and the migrated kernel compiled and run on the same seeded inputs."""

    kernel: str
    identical: bool
    max_abs_diff: float
    latency_ns: tuple[float, float]
    error: str | None = None  # why one of them could not be compiled or run

    def describe(self) -> str:
        if self.error:
            return f"{self.kernel}: not verified: {self.error}"
        before, after = (t / 1000 for t in self.latency_ns)
        same = (
            "outputs bit-identical"
            if self.identical
            else f"outputs differ (max |difference| {self.max_abs_diff:.3g})"
        )
        return f"{self.kernel}: {same}; predicted latency {before:,.3f} µs -> {after:,.3f} µs"


def verify(
    path: str, migrated: str, kernel: str, args: dict, target: str, seed: int = 0
) -> Verification:
    """Compile `kernel` of the original file and of the migrated source (written beside it for
    the run, so that its relative imports resolve, then removed) for `args`, run both on the
    same seeded inputs, and compare every output."""
    import os
    import tempfile

    import numpy as np

    from . import api
    from .diagnostics import CompileError
    from .frontend import TensorSpec

    folder = os.path.dirname(os.path.abspath(path))
    fd, twin = tempfile.mkstemp(prefix=".nkic-migrated-", suffix=".py", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(migrated)
        rng = np.random.default_rng(seed)
        inputs = {
            name: _random(spec, rng) for name, spec in args.items() if isinstance(spec, TensorSpec)
        }
        results = []
        for file in (path, twin):
            try:
                compiled = api.compile(file, kernel=kernel, target=target, **args)
            except CompileError as e:
                which = "original" if file == path else "migrated"
                first = e.diagnostics[0] if e.diagnostics else None
                what = f"{first.code}: {first.message}" if first else str(e)
                return Verification(kernel, False, float("nan"), (0.0, 0.0), f"{which}: {what}")
            outs = compiled(**inputs, seed=seed)
            outs = outs if isinstance(outs, tuple) else (outs,)
            results.append((outs, compiled.profile["total_ns"]))
        (before, t0), (after, t1) = results
        identical = len(before) == len(after) and all(
            a.shape == b.shape and a.tobytes() == b.tobytes() for a, b in zip(before, after)
        )
        diff = 0.0
        if not identical and len(before) == len(after):
            diff = max(
                float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64))))
                for a, b in zip(before, after)
            )
        return Verification(kernel, identical, diff, (t0, t1))
    finally:
        os.unlink(twin)


def _random(spec, rng):
    import ml_dtypes  # noqa: F401  (registers the bf16/fp8 numpy dtypes)
    import numpy as np
    from nkirt import dtypes

    values = rng.standard_normal(spec.shape, dtype=np.float32)
    return dtypes.cast(values, spec.dtype)
