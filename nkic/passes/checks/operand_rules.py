"""Operand rules of every `nki.isa` instruction: partitions, shapes, dtypes, buffers, engines,
targets and per-instruction argument constraints (sources: ISA, Checks §5, §9, §10).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

from ...backend.engines import choose_engine
from ...diagnostics import Related
from ...ir.affine import Affine
from ...ir.core import AccessPattern, Alloc, Imm, Inst, Kernel, Tensor
from ...ir.isa import (
    ACTIVATIONS,
    BITVEC_OPS,
    COLLECTIVES,
    ENUMS,
    FP32_MIN,
    REGISTER_OPS,
    InstrDef,
    lookup,
    target_at_least,
)
from ...ir.target import (
    INDIRECTION_GROUP,
    INDIRECTION_GROUP_TENSOR,
    PARTITIONS,
    PSUM_BANK_BYTES,
    PSUM_BANKS,
    QUADRANT,
)
from ...ir.types import DTYPES
from ..base import Pass, PassContext

PMAX = PARTITIONS
MAX_AP_DIMS = 5  # the common rules of every ISA instruction (docs/sources.md): one partition dimension + up to four free dimensions
# ISA §5.2 nc_matmul: N fills one PSUM bank of fp32 on trn1/trn2, all 8 banks on trn3
MATMUL_N_MAX = PSUM_BANK_BYTES // 4
MATMUL_N_MAX_TRN3 = {
    "float32": PSUM_BANKS * PSUM_BANK_BYTES // 4,
    "bfloat16": PSUM_BANKS * PSUM_BANK_BYTES // 2,
}

_HBM = ("hbm", "shared_hbm")
_ON_CHIP = ("sbuf", "psum")
_BUFFER_NAMES = {
    "sbuf": "SBUF",
    "psum": "PSUM",
    "hbm": "HBM",
    "shared_hbm": "shared HBM",
    "reg": "a register",
}

#: Operands that must have the same partition count and elements per partition (first = reference).
_ELEMENTWISE: dict[str, tuple[str, ...]] = {
    "tensor_copy": ("src", "dst"),
    "tensor_tensor": ("data1", "data2", "dst"),
    "tensor_scalar": ("data", "dst"),
    "scalar_tensor_tensor": ("data", "operand1", "dst"),
    "tensor_scalar_reduce": ("data", "dst"),
    "tensor_scalar_cumulative": ("src", "dst"),
    "tensor_tensor_scan": ("data0", "data1", "dst"),
    "reciprocal": ("data", "dst"),
    "exponential": ("src", "dst"),
    "activation": ("data", "dst"),
    "activation_reduce": ("data", "dst"),
    "activate2": ("data", "dst"),
    "dropout": ("data", "dst"),
    "tensor_copy_predicated": ("src", "predicate", "dst"),
    "select_reduce": ("on_true", "predicate", "dst"),
    "range_select": ("on_true_tile", "dst"),
    "affine_select": ("on_true_tile", "dst"),
    "quantize_mx": ("src", "dst"),
}

#: Operands that are a compile-time scalar or a `(P, 1)` per-partition vector.
_VECTOR_ARGS: dict[str, tuple[str, ...]] = {
    "tensor_scalar": ("operand0", "operand1"),
    "scalar_tensor_tensor": ("operand0",),
    "tensor_scalar_reduce": ("operand0",),
    "tensor_scalar_cumulative": ("imm0", "imm1"),
    "tensor_tensor_scan": ("initial",),
    "exponential": ("max_value",),
    "dropout": ("prob",),
    "select_reduce": ("on_false",),
    "activate2": ("imm0", "imm1"),
    "range_select": ("bound0", "bound1"),
}

#: Scalar-or-vector operands that must be float32 when given as a tile (ISA §5.3).
_FP32_ARGS: dict[str, tuple[str, ...]] = {
    "tensor_tensor_scan": ("initial",),
    "tensor_scalar_cumulative": ("imm0", "imm1"),
    "exponential": ("max_value",),
    "select_reduce": ("on_false",),
}

#: Instructions whose `reduce_res` must be a float type.
_FLOAT_REDUCE_RES = ("select_reduce", "exponential", "range_select")

#: `(P, 1)` reduction results.
_REDUCE_RES = (
    "tensor_scalar_reduce", "activation", "activation_reduce", "activate2", "select_reduce",
    "range_select", "exponential",
)  # fmt: skip

#: Operand pairs that may not both live in PSUM (a single PSUM read port).
_NOT_BOTH_PSUM: dict[str, tuple[str, str]] = {
    "tensor_tensor": ("data1", "data2"),
    "scalar_tensor_tensor": ("data", "operand1"),
    "tensor_tensor_scan": ("data0", "data1"),
    "tensor_copy_predicated": ("src", "predicate"),
    "select_reduce": ("on_true", "predicate"),
}

_MATMUL_IN = ("float8_e4m3", "float8_e5m2", "bfloat16", "float16", "tfloat32", "float32")
_REDUCIBLE = (
    "add", "subtract", "multiply", "maximum", "minimum", "bitwise_and", "bitwise_or",
    "bitwise_xor", "logical_and", "logical_or", "logical_xor",
)  # fmt: skip
_UNARY_ALU = ("invert", "logical_not", "abs", "square", "relu", "rsqrt", "reciprocal")
_TRN3_OP0 = ("square", "relu", "abs_max", "abs_min")


def _name(v: object, enum: str | None = None) -> str | None:
    """`nl.add`, `"engine.gpsimd"`, `gpsimd` (or an enum's integer value) → the member name."""
    if v is None or isinstance(v, bool):
        return None
    if isinstance(v, int) and enum is not None:
        return next((k for k, x in ENUMS[enum].items() if x == v), None)
    return str(v).rsplit(".", 1)[-1]


def _is_int(dtype: str) -> bool:
    return DTYPES[dtype].is_int if dtype in DTYPES else False


def _shape(ap: AccessPattern) -> str:
    return "(" + ", ".join(map(str, ap.shape)) + (",)" if len(ap.shape) == 1 else ")")


@dataclass
class InstCheck:
    """The instruction being checked, with accessors for its operands and a reporter."""

    inst: Inst
    d: InstrDef
    target: str
    ctx: PassContext
    allocs: dict[int, Alloc]

    def __post_init__(self) -> None:
        # plain attributes, read by every rule (a cached_property costs a Python call per read)
        self.op: str = self.inst.opcode
        #: The instruction's access-pattern operands (the checks do not change them).
        self.aps: tuple[tuple[str, AccessPattern], ...] = self.inst.aps()
        #: diagnostics reported so far (`_check` tells a clean outcome by it)
        self.reports = 0

    def ap(self, name: str) -> AccessPattern | None:
        o = self.inst.operands.get(name)
        return o if isinstance(o, AccessPattern) else None

    def value(self, name: str) -> object:
        """An immediate operand or attribute value (the catalogue default when absent)."""
        o = self.inst.operands.get(name)
        if isinstance(o, Imm):
            return o.value
        if name in self.inst.attrs:
            return self.inst.attrs[name]
        p = self.d.param(name)
        return None if p is None or p.required else p.default

    def present(self, name: str) -> bool:
        return self.ap(name) is not None or self.value(name) is not None

    def error(self, code: str, message: str, hint: str | None = None, tensor: Tensor | None = None):
        self.reports += 1
        related = ()
        if tensor is not None and id(tensor) in self.allocs:
            related = (Related(tensor.loc, f"`{tensor.label or tensor.name}` allocated here"),)
        self.ctx.sink.error(code, f"{self.op}: {message}", self.inst.loc, hint, related=related)

    @cached_property
    def engine(self) -> str | None:
        """The engine the kernel asked for, else the only engine the instruction has."""
        e = _name(self.inst.engine) or _name(self.inst.attrs.get("engine"), "engine")
        if e in (None, "unknown"):
            return self.d.engines[0] if len(self.d.engines) == 1 else None
        return e


Rule = Callable[[InstCheck], None]
_RULES: dict[str, list[Rule]] = {}


def rule(*opcodes: str) -> Callable[[Rule], Rule]:
    def register(fn: Rule) -> Rule:
        for op in opcodes:
            _RULES.setdefault(op, []).append(fn)
        return fn

    return register


@dataclass(frozen=True)
class OperandRules(Pass):
    """Checks every instruction's operands against the ISA's documented constraints."""

    name = "operand-rules"
    local = True

    def run(self, kernel: Kernel, ctx: PassContext) -> None:
        allocs = {id(op.result): op for op, _ in kernel.walk() if isinstance(op, Alloc)}
        flagged: set[tuple[str, int]] = set()  # (rule, tensor id) already reported
        clean: set[tuple] = set()  # signatures of instructions that passed every rule
        used: set[int] = set()
        for inst in kernel.instructions():
            d = lookup(inst.opcode)
            if d is None:
                continue
            c = InstCheck(inst, d, ctx.target, ctx, allocs)
            used.update(id(ap.tensor) for _, ap in c.aps)
            try:
                _check(c, flagged, clean)
            except Exception as e:  # a bug in one rule must not hide the other diagnostics
                ctx.sink.error(
                    "nkic_internal_error",
                    f"{inst.opcode}: operand check failed: {type(e).__name__}: {e}",
                    inst.loc,
                    "this is a bug in nkic; please report it with the kernel",
                )
        for alloc in allocs.values():
            t = alloc.result
            if t.on_chip and t.shape and t.shape[0] > PMAX and id(t) not in used:
                ctx.sink.error(
                    "err_num_partition_exceed_arch_limit",
                    f"`{t.label or t.name}` has {t.shape[0]} partitions, at most {PMAX}",
                    alloc.loc,
                    "an SBUF/PSUM tile spans at most 128 partitions; split dimension 0",
                )


def _check(c: InstCheck, flagged: set[tuple[str, int]], clean: set[tuple]) -> None:
    """Every rule on `c`. An unrolled kernel repeats instructions that differ only in their
    tensors and offsets: once an instruction passes every rule, another with the same
    `_signature` passes them too, and only the partition-window rule (the one rule that
    reads offsets) runs on it. Instructions with a diagnostic are checked in full each time,
    so that each reports at its own span."""
    signature = _signature(c)
    if signature is not None and signature in clean:
        if not c.op.startswith("dma_"):  # (DMA reaches any partition)
            for name, ap in c.aps:
                _partition_window(c, name, ap)
        return
    if not _target_and_engine(c):
        return
    _indirection(c)
    oversized = False
    for name, ap in c.aps:
        oversized |= _partitions(c, name, ap, flagged)
        _rank(c, name, ap, flagged)
        _packed_dtype_target(c, name, ap, flagged)
    if not _buffers(c) or oversized or not _int64(c):
        return
    before = c.reports
    for name, ap in c.aps:
        _partition_window(c, name, ap)
    windows = c.reports - before
    _elementwise(c)
    for fn in _RULES.get(c.op, ()):
        fn(c)
    # clean: no rule but the window rule reported, and none stayed silent because it had
    # reported on one of these tensors before (`flagged`: it would report on new tensors)
    if (
        signature is not None
        and c.reports == windows
        and not any((rule, id(ap.tensor)) in flagged for _, ap in c.aps for rule in _ONCE)
    ):
        clean.add(signature)


#: The rules reported once per tensor (their keys in `flagged`).
_ONCE = ("partitions", "rank", "packed")


def _signature(c: InstCheck) -> tuple | None:
    """What the rules but `_partition_window` read of an instruction: its opcode, engine and
    attributes, and per operand its name with its immediate value, or with its tensor's
    buffer, kind, dtype and shape, its pattern and dtype, and which earlier operand has the
    same tensor. Not the tensors themselves nor the offsets (read by the window rule, which
    always runs, and for tensor indirection). None where that is not the whole story: an
    operand with a runtime offset (indirection and dynamic DMA rules read offsets, placements
    and index tiles), or a value that is not a plain constant. (The pass's target and NKI
    version are the same for every instruction.)"""
    inst = c.inst
    parts: list = [c.op, inst.engine]
    for name, value in inst.attrs.items():
        key = _value_key(value)
        if key is None:
            return None
        parts.append((name, key))
    tensors: list[Tensor] = []  # (tensors compare by identity)
    for name, o in inst.operands.items():
        if type(o) is Imm:
            key = _value_key(o.value)
            if key is None:
                return None
            parts.append((name, key))
            continue
        if type(o) is not AccessPattern or o.dynamic is not None:
            return None
        t = o.tensor
        alias = tensors.index(t) if t in tensors else -1
        tensors.append(t)
        parts.append((name, t.buffer, t.kind, t.dtype, t.shape, o.pattern, o.dtype, alias))
    return tuple(parts)


def _value_key(v: object, depth: int = 0) -> tuple | None:
    """`v` with its type (True is not 1, nor 1.0), floats by their text (-0.0 is not 0.0);
    None for anything but None, bools, ints, floats, strings and tuples of them."""
    t = type(v)
    if t is int or t is str or t is bool or v is None:
        return (t, v)
    if t is float:
        return (t, repr(v))
    if t is tuple and depth < 8:
        items = []
        for x in v:
            key = _value_key(x, depth + 1)
            if key is None:
                return None
            items.append(key)
        return (t, tuple(items))
    return None


def _int64(c: InstCheck) -> bool:
    """`nl.int64` (NKI 0.7) is a scalar dtype: only DMA and the scalar instructions move it."""
    if c.op in REGISTER_OPS or c.op == "dma_copy":
        return True
    for name, ap in c.aps:
        if ap.dtype == "int64":
            c.error(
                "err_int64_operand",
                f"`{name}` is int64; compute instructions do not take nl.int64",
                "nl.int64 is for NkiScalar values (nisa.scalar_load / scalar_store) and DMA; "
                "compute on int32",
                tensor=ap.tensor,
            )
            return False
    return True


def _target_and_engine(c: InstCheck) -> bool:
    if not target_at_least(c.target, c.d.min_target):
        c.error(
            "err_unsupported_on_target",
            f"requires {c.d.min_target} or newer; the target is {c.target}",
            f"compile with `--target {c.d.min_target}` or use another instruction",
        )
        return False
    e = c.engine
    if c.op.startswith("dma_") or e is None:
        return True
    if e not in c.d.engines:
        allowed = ", ".join(f"`nisa.engine.{x}`" for x in c.d.engines)
        c.error(
            "err_unsupported_engine",
            f"cannot run on the {e} engine",
            f"`{c.op}` runs on {allowed}",
        )
        return False
    if e == "scalar" and c.op in ("tensor_copy", "tensor_scalar") and c.target == "trn1":
        c.error(
            "err_unsupported_on_target",
            "the Scalar engine runs this instruction on trn2 or newer; the target is trn1",
            "use `nisa.activation(op=nl.copy, ...)` or the Vector engine on trn1",
        )
    if e == "gpsimd" and c.op == "rng" and c.target == "trn1":
        c.error(
            "err_unsupported_on_target",
            "GpSimd random numbers need trn2 or newer; the target is trn1",
            "use `engine=nisa.engine.vector`",
        )
    return True


def _partitions(c: InstCheck, name: str, ap: AccessPattern, flagged: set[tuple[str, int]]) -> bool:
    """Reports an operand spanning more than 128 partitions (once per tensor); True if it does."""
    if not ap.tensor.on_chip or ap.num_partitions <= PMAX:
        return False
    key = ("partitions", id(ap.tensor))
    if key in flagged:
        return True
    flagged.add(key)
    c.error(
        "err_num_partition_exceed_arch_limit",
        f"`{name}` has {ap.num_partitions} partitions, at most {PMAX}",
        "tile the partition dimension into blocks of at most 128 (`nl.tile_size.pmax`)",
        tensor=ap.tensor,
    )
    return True


def _rank(c: InstCheck, name: str, ap: AccessPattern, flagged: set[tuple[str, int]]) -> None:
    """Reports an on-chip operand with too many free dimensions (once per tensor)."""
    key = ("rank", id(ap.tensor))
    if ap.tensor.on_chip and len(ap.pattern) > MAX_AP_DIMS and key not in flagged:
        flagged.add(key)
        c.error(
            "err_exceed_max_supported_dimension",
            f"`{name}` has {len(ap.pattern) - 1} free dimensions, at most {MAX_AP_DIMS - 1}",
            "merge contiguous free dimensions with `.reshape` before the call",
        )


_PACKED = ("float8_e5m2_x4", "float8_e4m3fn_x4", "float4_e2m1fn_x4")


def _packed_dtype_target(
    c: InstCheck, name: str, ap: AccessPattern, flagged: set[tuple[str, int]]
) -> None:
    """x4 packed MX dtypes exist on trn3 only (Checks §10); reported once per tensor."""
    key = ("packed", id(ap.tensor))
    if ap.dtype in _PACKED and not target_at_least(c.target, "trn3") and key not in flagged:
        flagged.add(key)
        c.error(
            "err_unsupported_on_target",
            f"`{name}` is {ap.dtype}; packed x4 types need trn3, the target is {c.target}",
            "compile with `--target trn3` or use an unpacked fp8 type",
        )
    # NKI 0.5's MX scale type: the engines of trn3 read it; DMA moves its bytes anywhere
    scale = ap.dtype == "float8_e8m0fnu" and not c.op.startswith("dma_")
    if scale and not target_at_least(c.target, "trn3") and key not in flagged:
        flagged.add(key)
        c.error(
            "err_unsupported_on_target",
            f"`{name}` is float8_e8m0fnu; compute engines read it on trn3 only, the target is "
            f"{c.target}",
            "compile with `--target trn3`, or move the bytes as uint8",
        )


def _partition_window(c: InstCheck, name: str, ap: AccessPattern) -> None:
    """Compute engines reach partitions in aligned windows (the common rules of every ISA instruction (docs/sources.md)): an operand
    of more than 64 partitions starts at partition 0, one of 33..64 at 0 or 64, one of at most
    32 at 0, 32, 64 or 96. Tensors are placed on such a window, so the view's partition offset
    inside its tensor must be a multiple of the window. DMA reaches any partition."""
    if c.op.startswith("dma_") or not ap.tensor.on_chip or not ap.pattern:
        return
    off = ap.offset
    if type(off) is Affine and not off.terms and not off.const:
        return  # partition 0 suits every window
    if ap.tensor.shape and ap.tensor.shape[0] > PMAX:
        return  # the oversized tensor is reported on its own
    n, step = ap.num_partitions, ap.pattern[0][0]
    if step <= 0:
        return
    align = 32 if n <= 32 else 64 if n <= 64 else None
    off = Affine.of(off)
    # offset = partition * step + free offset (0 <= free offset < step); a loop term moves the
    # partition when its coefficient is a multiple of the partition step
    parts = [off.const // step] + [coeff // step for _, coeff in off.terms if coeff % step == 0]
    for p in parts:
        if (align is None and p != 0) or (align is not None and p % align):
            legal = "0" if align is None else ", ".join(str(x) for x in range(0, PMAX, align))
            c.error(
                "nkic_partition_window",
                f"`{name}` spans {n} partitions starting {p} partitions into its tensor; an "
                f"operand of {n} partitions must start at partition {legal}",
                "slice the partitions at a multiple of 32 (64 for 33-64 partitions, 0 above)",
                tensor=ap.tensor,
            )
            return


def _allowed_buffers(c: InstCheck, name: str) -> tuple[str, ...]:
    param = c.d.param(name)
    role = param.role if param else "in"
    if c.op == "core_barrier":
        return ("shared_hbm",)
    if c.op in REGISTER_OPS:
        memory = name == "src" if c.op == "register_load" else name == "dst"
        return (
            (*_HBM, "sbuf") if memory and c.op in ("register_load", "register_store") else ("reg",)
        )
    if param is None and name.endswith("scalar_offset"):
        return ("sbuf", "reg")  # the index of a dynamic operand
    if name in ("metadata", "dst_counts"):
        return (*_HBM, "sbuf")
    if c.op in _V_COLLECTIVES:
        return _HBM  # "Must be HBM-backed" (nki.collectives.all_to_all_v / all_gather_v)
    if c.op in COLLECTIVES:
        return (*_HBM,) if c.op == "all_to_all" else (*_HBM, "sbuf")
    if c.op in ("dma_copy", "dma_compute"):
        return (*_HBM, "sbuf")
    if c.op == "dma_transpose":
        return ("sbuf",) if role == "out" else (*_HBM, "sbuf")
    if c.op in ("nc_matmul", "nc_matmul_mx"):
        return ("psum",) if role == "out" else ("sbuf",)
    if c.op == "nc_transpose" and _transpose_engine(c) == "tensor":
        return ("psum",) if role == "out" else ("sbuf",)
    if c.op == "quantize_mx" or c.engine == "gpsimd":
        return ("sbuf",)
    if c.op == "tensor_tensor" and _name(c.value("op")) == "power":
        return ("sbuf",)
    return _ON_CHIP


def _buffers(c: InstCheck) -> bool:
    ok = True
    for name, ap in c.aps:
        allowed = _allowed_buffers(c, name)
        if ap.tensor.buffer in allowed:
            continue
        if c.op == "core_barrier" and ap.tensor.kind == "input":
            continue  # the launch's inputs are in the HBM both cores share
        ok = False
        shown = [b for b in allowed if b != "shared_hbm"] or allowed
        where = " or ".join(_BUFFER_NAMES[b] for b in shown)
        c.error(
            "err_unsupported_memory",
            f"`{name}` is in {_BUFFER_NAMES[ap.tensor.buffer]}; it must be in {where}",
            _buffer_hint(c, ap.tensor.buffer),
            tensor=ap.tensor,
        )
    pair = _NOT_BOTH_PSUM.get(c.op)
    if pair:
        a, b = c.ap(pair[0]), c.ap(pair[1])
        if a is not None and b is not None and a.tensor.buffer == b.tensor.buffer == "psum":
            ok = False
            c.error(
                "err_unsupported_memory",
                f"`{pair[0]}` and `{pair[1]}` are both in PSUM; at most one may be",
                "copy one operand to SBUF with `nisa.tensor_copy` first",
            )
    return ok


def _buffer_hint(c: InstCheck, buffer: str) -> str:
    if c.op.startswith("dma_") and buffer == "psum":
        return "DMA cannot access PSUM: copy the tile to SBUF with `nisa.tensor_copy` first"
    if buffer in _HBM:
        return "load the data into SBUF with `nisa.dma_copy` first"
    if c.engine == "gpsimd":
        return "the GpSimd engine cannot access PSUM; use the Vector engine or an SBUF tile"
    if c.op in ("nc_matmul", "nc_matmul_mx", "nc_transpose"):
        return "the Tensor engine reads SBUF and writes PSUM"
    return "move the tile with `nisa.tensor_copy` or allocate it in another buffer"


def _elementwise(c: InstCheck) -> None:
    group = [(n, c.ap(n)) for n in _ELEMENTWISE.get(c.op, ()) if c.ap(n) is not None]
    if c.op == "dma_copy":
        _copy_sizes(c, "src", "dst", total=True)
        return
    if c.op == "tensor_copy":
        _copy_sizes(c, "src", "dst", total=False)
        return
    if len(group) < 2:
        _vector_args(c, group[0][1] if group else None)
        return
    ref_name, ref = group[0]
    for name, ap in group[1:]:
        if ap.num_partitions != ref.num_partitions:
            c.error(
                "err_num_partition_mismatch",
                f"`{name}` has {ap.num_partitions} partitions but `{ref_name}` has "
                f"{ref.num_partitions}",
                "all tile operands of an element-wise instruction span the same partitions",
            )
        elif ap.free_size != ref.free_size and c.op != "quantize_mx":
            c.error(
                "err_shape_mismatch",
                f"`{name}` has shape {_shape(ap)} but `{ref_name}` has shape {_shape(ref)}",
                "operands need the same number of elements per partition (no broadcasting; "
                "use `nisa.tensor_scalar` to broadcast a (P, 1) vector)",
            )
    _vector_args(c, ref)


def _copy_sizes(c: InstCheck, src_name: str, dst_name: str, total: bool) -> None:
    src, dst = c.ap(src_name), c.ap(dst_name)
    if src is None or dst is None:
        return
    if not total and src.num_partitions != dst.num_partitions:
        c.error(
            "err_num_partition_mismatch",
            f"`dst` has {dst.num_partitions} partitions but `src` has {src.num_partitions}",
            "a copy keeps every element on its partition; use `nisa.nc_transpose` to move "
            "data across partitions",
        )
        return
    n_src = src.num_partitions * src.free_size if not total else _count(src)
    n_dst = dst.num_partitions * dst.free_size if not total else _count(dst)
    if n_dst < n_src:
        c.error(
            "err_store_dst_shape_smaller_than_other_shape",
            f"`dst` {_shape(dst)} is smaller than `src` {_shape(src)}",
            "slice `src` to the destination's shape or enlarge the destination",
        )
    elif n_dst != n_src:
        c.error(
            "err_shape_mismatch",
            f"`dst` {_shape(dst)} and `src` {_shape(src)} have different element counts",
            "source and destination must hold the same number of elements",
        )


def _count(ap: AccessPattern) -> int:
    n = 1
    for d in ap.shape:
        n *= d
    return n


def _vector_args(c: InstCheck, ref: AccessPattern | None) -> None:
    if ref is None:
        return
    for name in _VECTOR_ARGS.get(c.op, ()):
        ap = c.ap(name)
        if ap is not None and (ap.num_partitions != ref.num_partitions or ap.free_size != 1):
            c.error(
                "err_shape_mismatch",
                f"`{name}` must be a scalar or a ({ref.num_partitions}, 1) vector, "
                f"got {_shape(ap)}",
                "pass a compile-time number or one value per partition",
            )
    for name in _FP32_ARGS.get(c.op, ()):
        ap = c.ap(name)
        if ap is not None and ap.dtype != "float32":
            c.error(
                "err_dtype_mismatch",
                f"`{name}` is {ap.dtype}; it must be a float32 scalar or (P, 1) tile",
                "keep per-partition scalars in a float32 (P, 1) tile",
            )
    if c.op in _REDUCE_RES:
        ap = c.ap("reduce_res")
        if ap is not None and (ap.num_partitions != ref.num_partitions or ap.free_size != 1):
            c.error(
                "err_shape_mismatch",
                f"`reduce_res` must have shape ({ref.num_partitions}, 1), got {_shape(ap)}",
                "the reduction writes one value per partition",
            )
        elif (
            ap is not None
            and c.op in _FLOAT_REDUCE_RES
            and ap.dtype in DTYPES
            and not DTYPES[ap.dtype].is_float
        ):
            c.error(
                "err_dtype_mismatch",
                f"`reduce_res` is {ap.dtype}; the reduction result is a float type",
                "allocate `reduce_res` as float32",
            )


def _dtype_equal(c: InstCheck, a: str, b: str, hint: str) -> None:
    x, y = c.ap(a), c.ap(b)
    if x is not None and y is not None and x.dtype != y.dtype:
        c.error("err_dtype_mismatch", f"`{a}` is {x.dtype} but `{b}` is {y.dtype}", hint)


def _op_in(c: InstCheck, arg: str, allowed: tuple[str, ...], why: str) -> bool:
    op = _name(c.value(arg))
    if op is None or op in allowed:
        return True
    c.error(
        "err_unsupported_operator",
        f"`{arg}=nl.{op}` is not supported; {why}",
        "allowed: " + ", ".join(f"`nl.{a}`" for a in allowed),
    )
    return False


# ---------------------------------------------------------------------------------------------
# data movement


@rule("dma_copy")
def _dma_copy(c: InstCheck) -> None:
    dge = _name(c.value("dge_mode"), "dge_mode")
    trigger = _name(c.value("engine"), "engine")
    if dge == "hwdge" and not target_at_least(c.target, "trn2"):
        c.error(
            "err_unsupported_on_target",
            f"`dge_mode=hwdge` requires trn2 or newer; the target is {c.target}",
            "use `dge_mode=nisa.dge_mode.unknown` on trn1",
        )
    if dge == "hwdge":
        _dtype_equal(c, "src", "dst", "hardware DGE copies bits: reinterpret with `.view(dtype)`")
    if trigger not in (None, "unknown", "sync", "scalar", "dma"):
        c.error(
            "err_unsupported_engine",
            f"`engine=nisa.engine.{trigger}` cannot trigger a DMA",
            "use `nisa.engine.sync` or `nisa.engine.scalar` together with `dge_mode=hwdge`",
        )
    elif trigger in ("sync", "scalar") and dge != "hwdge":
        c.error(
            "err_invalid_argument",
            f"`engine=nisa.engine.{trigger}` is only valid with `dge_mode=nisa.dge_mode.hwdge`",
            "add `dge_mode=nisa.dge_mode.hwdge` or drop `engine=`",
        )
    dynamic = [ap.dynamic.kind for _, ap in c.aps if ap.dynamic is not None]
    if "vector" in dynamic and dge not in (None, "unknown", "swdge"):
        c.error(
            "err_invalid_argument",
            f"`dge_mode=nisa.dge_mode.{dge}` cannot serve a vector_offset (indirect) access: "
            "only the software DGE generates per-row descriptors",
            "drop `dge_mode` or use `nisa.dge_mode.swdge`",
        )


@rule("dma_transpose")
def _dma_transpose(c: InstCheck) -> None:
    _dtype_equal(c, "src", "dst", "a DMA transpose does not convert; cast before or after")
    src, dst = c.ap("src"), c.ap("dst")
    hwdge = _name(c.value("dge_mode"), "dge_mode") == "hwdge"
    if src is not None and (src.itemsize != 2 if hwdge else src.itemsize not in (2, 4)):
        c.error(
            "err_dtype_mismatch",
            f"`src` is {src.dtype}; "
            + (
                "a hardware-DGE transpose moves 2-byte elements only"
                if hwdge
                else "DMA transpose moves 2- and 4-byte elements only"
            ),
            "transpose bfloat16/float16 data, or use `nisa.nc_transpose`",
        )
    if src is None or dst is None:
        return
    legal = {2: (1, 0), 3: (2, 1, 0), 4: (3, 1, 2, 0)}
    axes = c.value("axes") or legal.get(len(src.shape), ())
    if tuple(axes) != legal.get(len(src.shape)):
        c.error(
            "err_invalid_argument",
            f"`axes={tuple(axes)}` is not supported for a {len(src.shape)}-D source",
            "use (1, 0) for 2-D, (2, 1, 0) for 3-D or (3, 1, 2, 0) for 4-D",
        )
        return
    want = tuple(src.shape[a] for a in axes)
    if c.ctx.since("0.4") and dst.shape != want:
        c.error(
            "err_shape_mismatch",
            f"`dst` has shape {_shape(dst)}; the transposed source has shape {want} (from NKI "
            "0.4 the shapes match exactly, rank included)",
            "allocate the destination with the permuted shape",
        )
    elif tuple(n for n in dst.shape if n != 1) != tuple(n for n in want if n != 1):
        c.error(  # NKI 0.3 padded the rank with size-1 dimensions
            "err_shape_mismatch",
            f"`dst` has shape {_shape(dst)}; the transposed source has shape {want}",
            "allocate the destination with the permuted shape",
        )
    dge = _name(c.value("dge_mode"), "dge_mode")
    if _dynamic_transpose(c, src, dst, dge):
        return
    # static (direct) transposes: ISA §5.1
    if dge not in (None, "unknown", "hwdge"):
        c.error(
            "err_invalid_argument",
            f"`dge_mode=nisa.dge_mode.{dge}`: a direct transpose uses `unknown` or `hwdge`",
            "drop `dge_mode` (the software DGE only serves indirect transposes)",
        )
    if _name(c.value("oob_mode"), "oob_mode") == "skip":
        c.error(
            "err_invalid_argument",
            "`oob_mode=nisa.oob_mode.skip` needs an indirect (vector_offset) source",
            "drop `oob_mode` for a static transpose",
        )
    if dge != "hwdge":
        return
    s = src.shape
    if len(s) == 2:
        leading, rule = s[0] == 16, "src.shape[0] == 16"
    else:
        leading = s[0] in (1, 2, 4, 8, 16) and (s[0] * s[-2]) % 16 == 0
        rule = "src.shape[0] in {1, 2, 4, 8, 16}, (src.shape[0] * src.shape[-2]) % 16 == 0"
    if c.ctx.since("0.6") and (not leading or s[-1] > 128):
        c.error(
            "err_shape_mismatch",
            f"`src` has shape {_shape(src)}; a hardware-DGE transpose (NKI 0.6) needs {rule} "
            "and src.shape[-1] <= 128",
            "use `dge_mode=nisa.dge_mode.unknown` or tile the source",
        )
    elif not c.ctx.since("0.6") and (src.shape[0] != 16 or src.shape[-1] % 128):
        c.error(
            "err_shape_mismatch",
            f"`src` has shape {_shape(src)}; a hardware-DGE transpose (NKI {c.ctx.nki}) needs "
            "src.shape[0] == 16 and src.shape[-1] a multiple of 128",
            "use `dge_mode=nisa.dge_mode.unknown` or reshape the source",
        )


def _dynamic_transpose(c: InstCheck, src: AccessPattern, dst: AccessPattern, dge) -> bool:
    """The rules of a transpose whose source has a runtime offset; False for a static one."""
    if dst.dynamic is not None:
        c.error(
            "err_unsupported_api",
            "a runtime offset on the destination of a DMA transpose is not supported",
            "transpose into a tile, then scatter it with nisa.dma_copy",
        )
        return True
    if src.dynamic is None:
        return False
    if src.dynamic.kind == "vector":
        _indirect_transpose(c, src, dge)
    elif not c.ctx.since("0.5"):
        c.error(
            "err_invalid_argument",
            f"a scalar_offset source of nisa.dma_transpose is new in NKI 0.5 (this kernel is "
            f"NKI {c.ctx.nki})",
            "move the block with nisa.dma_copy first, or compile as NKI 0.5 or later",
        )
    elif dge not in (None, "unknown", "swdge"):
        c.error(
            "err_invalid_argument",
            f"`dge_mode=nisa.dge_mode.{dge}` cannot serve a runtime offset: the software DGE "
            "generates its descriptors",
            "drop `dge_mode` or use `nisa.dge_mode.swdge`",
        )
    return True


def _indirect_transpose(c: InstCheck, src: AccessPattern, dge) -> None:
    """A gather-transpose: the rows an index tile names, transposed (ISA `dma_transpose`,
    indirect form): software DGE, HBM source, 2-byte elements, 16..128 indices in blocks of 16,
    rows of at most 128 elements."""
    index = c.ap(src.dynamic.index)
    if dge not in (None, "unknown", "swdge"):
        c.error(
            "err_invalid_argument",
            f"`dge_mode=nisa.dge_mode.{dge}`: an indirect transpose is served by the software "
            "DGE (`unknown` or `swdge`)",
            "drop `dge_mode`",
        )
    if src.tensor.on_chip:
        c.error(
            "err_unsupported_memory",
            "the source of an indirect DMA transpose is in HBM",
            "gather from the HBM tensor, or transpose the SBUF tile with nisa.nc_transpose",
        )
    if src.itemsize != 2:
        c.error(
            "err_dtype_mismatch",
            f"`src` is {src.dtype}; an indirect DMA transpose moves 2-byte elements only",
            "transpose bfloat16/float16/uint16 data",
        )
    rows = src.shape[0]
    if rows % 16 or not 16 <= rows <= 128 or src.shape[-1] > 128:
        c.error(
            "err_shape_mismatch",
            f"`src` has shape {_shape(src)}; an indirect transpose gathers 16..128 rows (a "
            "multiple of 16) of at most 128 elements each",
            "gather in blocks of 16 to 128 indices",
        )
    if len(src.shape) == 4 and 1 not in src.shape[1:3]:
        c.error(
            "err_shape_mismatch",
            f"`src` has shape {_shape(src)}; a 4-D indirect transpose needs shape[1] or "
            "shape[2] equal to 1",
            "split the source along one of its middle dimensions",
        )
    if index is not None and index.dtype not in ("uint32", "int32"):
        c.error(
            "err_dtype_mismatch",
            f"the index tile is {index.dtype}; an indirect transpose reads uint32 indices",
            "load the indices as uint32",
        )


@rule("sendrecv")
def _sendrecv(c: InstCheck) -> None:
    src, dst = c.ap("src"), c.ap("dst")
    if src is not None and dst is not None:
        if src.shape != dst.shape:
            c.error(
                "err_shape_mismatch",
                f"`src` has shape {_shape(src)} and `dst` {_shape(dst)}; sendrecv moves a tile "
                "into a tile of the same shape on the other core",
                "give src and dst the same shape",
            )
        if src.dtype != dst.dtype:
            c.error(
                "err_dtype_mismatch",
                f"`src` is {src.dtype} and `dst` {dst.dtype}; sendrecv does not convert",
                "give src and dst the same dtype",
            )
    for key in ("send_to_rank", "recv_from_rank"):
        rank = c.value(key)
        if isinstance(rank, bool) or rank not in (0, 1):
            c.error(
                "err_invalid_argument",
                f"`{key}={rank!r}`: an LNC=2 launch has ranks 0 and 1",
                "use 1 - nl.program_id() for the other core",
            )


#: How the dst of a collective between the launch's 2 cores relates to its src along
#: `collective_dim`: the same size, twice (gathered) or half (scattered).
_COLLECTIVE_FACTOR = {"all_reduce": 1, "all_gather": 2, "reduce_scatter": 0.5, "all_to_all": 1}


@rule(*_COLLECTIVE_FACTOR)
def _collective(c: InstCheck) -> None:
    src, dst = c.ap("src"), c.ap("dst")
    if src is None or dst is None:
        return
    if (src.tensor.buffer == "sbuf") != (dst.tensor.buffer == "sbuf"):
        c.error(
            "err_unsupported_memory",
            "`src` and `dst` of a collective are both in HBM or both in SBUF",
            "copy one of them first",
        )
    if src.dtype != dst.dtype:
        c.error(
            "err_dtype_mismatch",
            f"`src` is {src.dtype} and `dst` {dst.dtype}; collectives do not convert",
            "give src and dst the same dtype",
        )
    if c.op in ("all_reduce", "reduce_scatter") and _name(c.value("op")) not in (
        "add",
        "minimum",
        "maximum",
    ):
        c.error(
            "err_invalid_argument",
            f"`op={_name(c.value('op'))}`: collectives reduce with add, minimum or maximum",
            "use nl.add, nl.minimum or nl.maximum",
        )
    dim = c.value("collective_dim") or 0
    want = list(src.shape)
    if not 0 <= dim < len(want):
        c.error("err_invalid_argument", f"`collective_dim={dim}` is not a dimension of src", "")
        return
    want[dim] = want[dim] * _COLLECTIVE_FACTOR[c.op]
    if c.op in ("reduce_scatter", "all_to_all") and src.shape[dim] % 2:
        c.error(
            "err_shape_mismatch",
            f"`src` dimension {dim} has {src.shape[dim]} entries; {c.op} splits it between "
            "the 2 cores",
            "make it even",
        )
    elif tuple(dst.shape) != tuple(int(w) for w in want):
        c.error(
            "err_shape_mismatch",
            f"`dst` has shape {_shape(dst)}; {c.op} of a `src` of shape {_shape(src)} between "
            f"the 2 cores of the launch gives {list(int(w) for w in want)}",
            "size dst for the result",
        )


_V_COLLECTIVES = ("all_to_all_v", "all_gather_v")


@rule(*_V_COLLECTIVES, "all_to_all_v_prepare", "all_gather_v_prepare")
def _collective_v(c: InstCheck) -> None:
    """The metadata of a variable-size collective: uint32, (rows, ranks) in HBM or
    (1, rows, ranks) in SBUF, rows 3, or 4 with recv displacements."""
    src, dst, meta = c.ap("src"), c.ap("dst"), c.ap("metadata")
    if src is not None and dst is not None and src.dtype != dst.dtype:
        c.error(
            "err_dtype_mismatch",
            f"`src` is {src.dtype} and `dst` {dst.dtype}; collectives do not convert",
            "give src and dst the same dtype",
        )
    if meta is None:
        return
    if meta.dtype != "uint32":
        c.error(
            "err_dtype_mismatch",
            f"`metadata_tensor` is {meta.dtype}; the counts and displacements are uint32",
            "allocate it with dtype=nl.uint32",
            tensor=meta.tensor,
        )
    rows = 4 if c.value("has_rdispls") else 3
    want = (rows, 2) if meta.tensor.buffer in _HBM else (1, rows, 2)
    if tuple(meta.shape) != want:
        c.error(
            "err_shape_mismatch",
            f"`metadata_tensor` has shape {_shape(meta)}; for the 2 ranks of the launch it is "
            f"{list(want)} ({rows} rows: send counts, send displacements, receive counts"
            + (", receive displacements" if rows == 4 else "")
            + ")",
            "one column per rank of the replica group",
            tensor=meta.tensor,
        )


@rule("collective_permute", "collective_permute_reduce")
def _collective_permute(c: InstCheck) -> None:
    dst = c.ap("dst")
    for name in ("src", "src1"):
        src = c.ap(name)
        if src is None or dst is None:
            continue
        if src.dtype != dst.dtype or tuple(src.shape) != tuple(dst.shape):
            c.error(
                "err_shape_mismatch",
                f"`{name}` is {src.dtype}{_shape(src)} and `dst` {dst.dtype}{_shape(dst)}; a "
                "permute moves a tensor unchanged",
                "give the sources and dst the same shape and dtype",
            )
    if c.op == "collective_permute_reduce" and _name(c.value("op")) not in (
        "add",
        "minimum",
        "maximum",
    ):
        c.error(
            "err_invalid_argument",
            f"`op={_name(c.value('op'))}`: collectives reduce with add, minimum or maximum",
            "use nl.add, nl.minimum or nl.maximum",
        )


@rule("core_barrier")
def _core_barrier(c: InstCheck) -> None:
    cores = c.value("cores")
    if cores is not None and tuple(cores) != (0, 1):
        c.error(
            "err_invalid_argument",
            f"`cores={cores!r}`: the barrier is between cores (0, 1), the only value NKI supports",
            "drop `cores` or pass (0, 1)",
        )


@rule("memset")
def _memset(c: InstCheck) -> None:
    dst, value = c.ap("dst"), c.value("value")
    if dst is None:
        return
    dt = DTYPES.get(dst.dtype)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        c.error(
            "err_dtype_mismatch",
            f"`value={value!r}` is not a number",
            "memset fills the tile with a compile-time int or float",
        )
    elif dt is not None and dt.is_int and not isinstance(value, int) and not value.is_integer():
        # a whole float (0.0) names the integer it equals; a fraction has no integer meaning
        c.error(
            "err_dtype_mismatch",
            f"`value={value!r}` is a float but `dst` is {dst.dtype}",
            "use an integer value such as "
            f"`{int(value) if math.isfinite(value) else 0}` for integer tiles",
        )
    elif dt is not None and dt.kind == "packed" and value != 0:
        c.error(
            "err_dtype_mismatch",
            f"`dst` is {dst.dtype}; packed x4 tiles can only be filled with 0",
            "use `value=0`",
        )


@rule("tensor_copy_predicated")
def _copy_predicated(c: InstCheck) -> None:
    _dtype_equal(c, "src", "dst", "a predicated copy does not convert; cast first")
    pred = c.ap("predicate")
    if pred is not None and pred.dtype not in ("uint8", "uint16", "uint32"):
        c.error(
            "err_dtype_mismatch",
            f"`predicate` is {pred.dtype}; it must be uint8, uint16 or uint32",
            "build the mask in an unsigned integer tile",
        )


# ---------------------------------------------------------------------------------------------
# tensor engine


@rule("nc_matmul")
def _nc_matmul(c: InstCheck) -> None:
    st, mv, dst = c.ap("stationary"), c.ap("moving"), c.ap("dst")
    if st is None or mv is None or dst is None:
        return
    double_row = _name(c.value("perf_mode"), "matmul_perf_mode") == "double_row"
    if st.num_partitions != mv.num_partitions:
        c.error(
            "err_num_partition_mismatch",
            f"`stationary` has {st.num_partitions} partitions (K) but `moving` has "
            f"{mv.num_partitions}",
            "both operands hold the contraction dimension K on their partitions",
        )
    m, n = st.free_size, mv.free_size
    if double_row:
        m, n = m // 2, n // 2
        _double_row(c, st, mv)
    n_max = MATMUL_N_MAX
    if target_at_least(c.target, "trn3"):
        n_max = MATMUL_N_MAX_TRN3.get(dst.dtype, MATMUL_N_MAX_TRN3["float32"])
    for arg, size, limit in (("stationary", m, 128), ("moving", n, n_max)):
        if size > limit:
            which = "M" if arg == "stationary" else "N"
            c.error(
                "err_size_of_dimension_exceed_arch_limit",
                f"`{arg}` has {size} elements per partition ({which}), at most {limit}",
                f"tile {which} into blocks of {limit} "
                f"(`nl.tile_size.gemm_{arg}_fmax`) and issue one matmul per block",
            )
            return
    if dst.num_partitions != m:
        c.error(
            "err_num_partition_mismatch",
            f"`dst` has {dst.num_partitions} partitions; the result has M={m} (the "
            "free size of `stationary`)",
            "dst[M, N] = stationary[K, M].T @ moving[K, N]",
        )
    elif dst.free_size != n:
        c.error(
            "err_shape_mismatch",
            f"`dst` has {dst.free_size} elements per partition; the result has N={n} "
            "(the free size of `moving`)",
            "dst[M, N] = stationary[K, M].T @ moving[K, N]",
        )
    _matmul_dtypes(c, st, mv, dst)
    _matmul_tiling(c)


def _matmul_dtypes(c: InstCheck, st: AccessPattern, mv: AccessPattern, dst: AccessPattern):
    allowed = _MATMUL_IN + (("float8_e4m3fn",) if target_at_least(c.target, "trn3") else ())
    for arg, ap in (("stationary", st), ("moving", mv)):
        if ap.dtype not in allowed:
            extra = " on trn3 only" if ap.dtype == "float8_e4m3fn" else ""
            c.error(
                "err_dtype_mismatch",
                f"`{arg}` is {ap.dtype}; the Tensor engine multiplies fp8, bf16, fp16, tf32 "
                f"or fp32{extra}",
                "cast the operand with `nisa.tensor_copy` into a bfloat16 tile",
            )
            return
    wide = ("float32", "tfloat32")
    if (st.dtype in wide) != (mv.dtype in wide):
        c.error(
            "err_dtype_mismatch",
            f"`stationary` is {st.dtype} but `moving` is {mv.dtype}; fp32/tf32 operands "
            "pair only with fp32/tf32",
            "cast both operands to the same family (e.g. both bfloat16)",
        )
    if {st.dtype, mv.dtype} == {"float8_e4m3", "float8_e4m3fn"}:
        c.error(
            "err_dtype_mismatch",
            "`float8_e4m3` and `float8_e4m3fn` operands cannot be mixed",
            "use the same fp8 flavour for both operands",
        )
    if c.value("is_transpose") and target_at_least(c.target, "trn2"):
        _transpose_mode(c, st, mv, dst)
        return
    dst_ok = ("float32", "bfloat16") if target_at_least(c.target, "trn3") else ("float32",)
    if dst.dtype not in dst_ok:
        c.error(
            "err_dtype_mismatch",
            f"`dst` is {dst.dtype}; matmul accumulates into "
            + " or ".join(dst_ok)
            + f" PSUM on {c.target}",
            "allocate the PSUM tile as `nl.float32` and cast when copying it out",
        )


def _transpose_mode(c: InstCheck, st: AccessPattern, mv: AccessPattern, dst: AccessPattern):
    """`is_transpose=True` (trn2+) copies bits: fp32/tf32 into a 4-byte PSUM tile, bf16/fp16 into
    the same dtype, fp8 into a 16-bit tile (upper byte zero) (ISA §5.2)."""
    if _name(c.value("perf_mode"), "matmul_perf_mode") == "double_row":
        c.error(
            "err_invalid_argument",
            "`perf_mode=double_row` cannot be combined with `is_transpose=True`",
            "transpose with a plain `nc_matmul(is_transpose=True)`",
        )
        return
    width = 8 * DTYPES[st.dtype].itemsize if st.dtype in DTYPES else None
    dwidth = 8 * DTYPES[dst.dtype].itemsize if dst.dtype in DTYPES else None
    if width is None or dwidth is None:
        return
    want = {32: 32, 16: 16, 8: 16}.get(width)
    same = st.dtype in ("bfloat16", "float16")
    if dwidth != want or (same and dst.dtype != st.dtype):
        need = st.dtype if same else f"a {want}-bit type"
        c.error(
            "err_dtype_mismatch",
            f"`dst` is {dst.dtype}; a transpose of {st.dtype} `stationary` writes {need}",
            "is_transpose copies bits: size the PSUM tile to the input's element width",
        )


def _double_row(c: InstCheck, st: AccessPattern, mv: AccessPattern) -> None:
    if not target_at_least(c.target, "trn2"):
        c.error(
            "err_unsupported_on_target",
            f"`perf_mode=double_row` requires trn2 or newer; the target is {c.target}",
            "drop `perf_mode` on trn1",
        )
    fp8 = ("float8_e4m3", "float8_e5m2", "float8_e4m3fn")
    for arg, ap in (("stationary", st), ("moving", mv)):
        if ap.dtype not in fp8:
            c.error(
                "err_dtype_mismatch",
                f"`perf_mode=double_row` needs fp8 operands; `{arg}` is {ap.dtype}",
                "cast the operands to float8_e4m3 or float8_e5m2",
            )
        elif len(ap.shape) < 3 or ap.shape[1] != 2:
            c.error(
                "err_shape_mismatch",
                f"`perf_mode=double_row` needs `{arg}` of shape (K, 2, ...), got {_shape(ap)}",
                "split the contraction over the partitions and a first free dimension of 2",
            )


def _matmul_tiling(c: InstCheck) -> None:
    pos, size = c.value("tile_position") or (), c.value("tile_size") or ()
    if bool(pos) != bool(size):
        c.error(
            "err_invalid_argument",
            "`tile_position` and `tile_size` must be given together",
            "set both to enable PE-array tiling, or neither",
        )
        return
    if not size:
        return
    legal = (32, 64, 128) if target_at_least(c.target, "trn2") else (64, 128)
    for s in size:
        if s not in legal:
            c.error(
                "err_invalid_argument",
                f"`tile_size` {tuple(size)} is not supported on {c.target}",
                "tile sizes are " + ", ".join(map(str, legal)),
            )
            return
    for p, s in zip(pos, size):
        if isinstance(p, int) and p % s:
            c.error(
                "err_invalid_argument",
                f"`tile_position` {tuple(pos)} is not a multiple of `tile_size` {tuple(size)}",
                "start each tile at a multiple of its size",
            )
            return
    st = c.ap("stationary")
    if st is not None and len(size) == 2:
        m = st.free_size // (
            2 if _name(c.value("perf_mode"), "matmul_perf_mode") == "double_row" else 1
        )
        for what, have, limit, arg in (
            ("K (partitions)", st.num_partitions, size[0], "row"),
            ("M (free size)", m, size[1], "column"),
        ):
            if have > limit:
                c.error(
                    "err_size_of_dimension_exceed_arch_limit",
                    f"`stationary` has {what} {have}, larger than the PE tile's {arg} size "
                    f"{limit} (`tile_size={tuple(size)}`)",
                    "use a larger tile or split the matmul",
                )
                return
    if _name(c.value("perf_mode"), "matmul_perf_mode") == "double_row" and size[1] != 128:
        c.error(
            "err_invalid_argument",
            f"`perf_mode=double_row` cannot be combined with column tiling (`tile_size={tuple(size)}`)",
            "use full-width columns (size 128) with double_row",
        )


@rule("nc_transpose")
def _nc_transpose(c: InstCheck) -> None:
    _dtype_equal(c, "data", "dst", "a transpose does not convert; cast before or after")
    data, dst = c.ap("data"), c.ap("dst")
    if data is None or dst is None:
        return
    limit = 128 if _transpose_engine(c) == "tensor" else 32
    engine = "Tensor" if limit == 128 else "Vector"
    for what, size in (
        ("partitions", data.num_partitions),
        ("elements per partition", data.free_size),
    ):
        if size > limit:
            c.error(
                "err_size_of_dimension_exceed_arch_limit",
                f"`data` has {size} {what}; the {engine} engine transposes at most {limit}x{limit}",
                f"transpose {limit}x{limit} blocks one at a time",
            )
            return
    if dst.num_partitions != data.free_size or dst.free_size != data.num_partitions:
        c.error(
            "err_shape_mismatch",
            f"`dst` has shape {_shape(dst)}; the transpose of `data` {_shape(data)} is "
            f"({data.free_size}, {data.num_partitions})",
            "swap the partition and free sizes in the destination",
        )


def _transpose_engine(c: InstCheck) -> str:
    e = c.engine
    if e in ("tensor", "vector"):
        return e
    dst, data = c.ap("dst"), c.ap("data")
    if (
        dst is not None
        and dst.tensor.buffer == "psum"
        and (data is None or data.tensor.buffer == "sbuf")
    ):
        return "tensor"
    return "vector"


# ---------------------------------------------------------------------------------------------
# vector / scalar / gpsimd


@rule("tensor_tensor")
def _tensor_tensor(c: InstCheck) -> None:
    op = _name(c.value("op"))
    binary = tuple(o for o in _REDUCIBLE + ("equal", "not_equal", "greater_equal", "greater",
                                            "less_equal", "less", "left_shift", "right_shift",
                                            "power", "abs_max", "abs_min"))  # fmt: skip
    if not _op_in(c, "op", binary, "tensor_tensor takes a binary ALU operator"):
        return
    if op in _TRN3_OP0 and not target_at_least(c.target, "trn3"):
        c.error(
            "err_unsupported_on_target",
            f"`op=nl.{op}` requires trn3; the target is {c.target}",
            "compute the magnitude comparison with abs and a select",
        )
    if op in BITVEC_OPS:
        _integer_operands(c, ("data1", "data2", "dst"), op)


def _integer_operands(c: InstCheck, names: tuple[str, ...], op: str) -> None:
    for n in names:
        ap = c.ap(n)
        if ap is not None and not _is_int(ap.dtype):
            c.error(
                "err_dtype_mismatch",
                f"bitwise `nl.{op}` needs integer operands; `{n}` is {ap.dtype}",
                "reinterpret the tile with `.view(nl.int32)` or use an arithmetic operator",
            )
            return


@rule("tensor_scalar")
def _tensor_scalar(c: InstCheck) -> None:
    op0, op1 = _name(c.value("op0")), _name(c.value("op1"))
    if (op1 is None) != (not c.present("operand1")):
        given = "op1" if op1 is not None else "operand1"
        c.error(
            "err_invalid_argument",
            f"`{given}` is given without its partner; `op1` and `operand1` go together",
            "pass both `op1=` and `operand1=` or neither",
        )
    ops = [o for o in (op0, op1) if o is not None]
    bitvec = [o in BITVEC_OPS for o in ops]
    if any(bitvec) and not all(bitvec):
        c.error(
            "err_unsupported_operator",
            f"`op0=nl.{op0}` and `op1=nl.{op1}` mix bitwise and arithmetic operators",
            "use two bitwise or two arithmetic operators (or two instructions)",
        )
    elif any(bitvec):
        if c.engine not in (None, "vector"):
            c.error(
                "err_unsupported_engine",
                f"bitwise operators run on the Vector engine only, not {c.engine}",
                "use `engine=nisa.engine.vector`",
            )
        _integer_operands(c, ("data", "dst"), ops[0])
    else:
        for n in ("operand0", "operand1"):
            ap = c.ap(n)
            if ap is not None and ap.dtype != "float32":
                c.error(
                    "err_dtype_mismatch",
                    f"`{n}` is {ap.dtype}; arithmetic scalar operands must be float32",
                    "keep per-partition scalars in a float32 (P, 1) tile",
                )
    if c.engine == "gpsimd" and not any(bitvec):
        # ISA §5.3: GpSimd "only for rsqrt" (docstring); the Beta-1 ALU table also lists
        # add and multiply on GpSimd. Accept those three, reject the rest.
        for arg, o in (("op0", op0), ("op1", op1)):
            if o is not None and o not in ("rsqrt", "add", "multiply"):
                c.error(
                    "err_unsupported_engine",
                    f"`{arg}=nl.{o}` does not run on the gpsimd engine (rsqrt, add, multiply)",
                    "use `engine=nisa.engine.vector`",
                )
                break
    if op0 in _TRN3_OP0 and not target_at_least(c.target, "trn3"):
        c.error(
            "err_unsupported_on_target",
            f"`op0=nl.{op0}` requires trn3; the target is {c.target}",
            "use `nisa.activation` for square/relu on older targets",
        )
    if op0 in _UNARY_ALU and c.value("operand0") not in (None, 0, 0.0):
        c.error(
            "err_invalid_argument",
            f"`op0=nl.{op0}` is unary; `operand0` must be None or 0",
            "pass `operand0=0`",
        )
    if c.engine == "scalar" and c.target == "trn2" and (op0, op1) not in (
        ("multiply", "add"), ("multiply", None), ("add", None),
    ):  # fmt: skip
        c.error(
            "err_unsupported_operator",
            f"the Scalar engine on trn2 supports (multiply, add), (multiply) or (add), not "
            f"({op0}, {op1})",
            "run the instruction on the Vector engine",
        )


@rule("scalar_tensor_tensor", "tensor_tensor_scan")
def _arith_only(c: InstCheck) -> None:
    for arg in ("op0", "op1"):
        op = _name(c.value(arg))
        if op in BITVEC_OPS:
            c.error(
                "err_unsupported_operator",
                f"`{arg}=nl.{op}` is bitwise; this instruction takes arithmetic operators",
                "use `nisa.tensor_tensor` / `nisa.tensor_scalar` for bitwise operations",
            )


@rule("tensor_scalar_reduce")
def _tensor_scalar_reduce(c: InstCheck) -> None:
    if c.ap("reduce_res") is None and not c.ctx.since("0.6"):
        c.error(
            "err_missing_argument",
            f"`reduce_res` is required in NKI {c.ctx.nki}; leaving the result in the Vector "
            "engine's accumulator (reduce_res=None) is new in NKI 0.6",
            "pass a (P, 1) tile as `reduce_res`",
        )
    op0 = _name(c.value("op0"))
    if op0 in _TRN3_OP0 and not target_at_least(c.target, "trn3"):
        c.error(
            "err_unsupported_on_target",
            f"`op0=nl.{op0}` requires trn3; the target is {c.target}",
            "compute the operator with a separate instruction on older targets",
        )
    _op_in(
        c,
        "reduce_op",
        ("add", "multiply", "maximum", "minimum"),
        "reductions are add, multiply, max, min",
    )
    if c.value("reverse0"):
        c.error(
            "err_invalid_argument", "`reverse0=True` is not supported", "swap the operands instead"
        )


@rule("tensor_scalar_cumulative")
def _tensor_scalar_cumulative(c: InstCheck) -> None:
    _op_in(
        c,
        "op1",
        ("add", "subtract", "multiply", "maximum", "minimum"),
        "the scan combines with add, subtract, multiply, max or min",
    )
    for n in ("src", "dst"):
        ap = c.ap(n)
        if ap is not None and ap.dtype in ("int32", "uint32"):
            c.error(
                "err_dtype_mismatch",
                f"`{n}` is {ap.dtype}; cumulative scans do not support 32-bit integers",
                "use float32 or a 16-bit integer type",
            )
    if _name(c.value("reduce_cmd"), "reduce_cmd") == "load_reduce" and not c.present("imm1"):
        c.error(
            "err_invalid_argument",
            "`reduce_cmd=nisa.reduce_cmd.load_reduce` starts the scan from `imm1`, which is "
            "not given",
            "pass `imm1=` (the initial accumulator value)",
        )


@rule("tensor_reduce")
def _tensor_reduce(c: InstCheck) -> None:
    data, dst = c.ap("data"), c.ap("dst")
    op = _name(c.value("op"))
    if not _op_in(c, "op", _REDUCIBLE, "this operator cannot reduce"):
        return
    if op in BITVEC_OPS:
        _integer_operands(c, ("data", "dst"), op)
        if c.value("negate"):
            c.error(
                "err_invalid_argument",
                "`negate=True` needs an arithmetic operator",
                "drop `negate`",
            )
    if data is None:
        return
    axis = c.value("axis")
    axes = (axis,) if isinstance(axis, int) else tuple(axis or ())
    rank = len(data.shape)
    norm = sorted(a + rank if a < 0 else a for a in axes)
    if 0 in norm:
        c.error(
            "err_invalid_argument",
            "`axis` includes the partition dimension 0",
            "reduce across partitions with `nisa.tensor_partition_reduce` or a matmul with a "
            "ones vector",
        )
        return
    if not norm or norm != list(range(rank - len(norm), rank)) or norm[0] < 1:
        c.error(
            "err_invalid_argument",
            f"`axis={axis}` must be trailing free dimensions of `data` {_shape(data)} ending "
            f"at its last dimension",
            f"valid choices: {', '.join(str(tuple(range(k, rank))) for k in range(rank - 1, 0, -1))}",
        )
        return
    kept = 1
    for d in data.shape[1 : rank - len(norm)]:
        kept *= d
    if dst is not None and (dst.num_partitions, dst.free_size) != (data.num_partitions, kept):
        c.error(
            "err_shape_mismatch",
            f"`dst` has shape {_shape(dst)}; reducing `data` {_shape(data)} over axis "
            f"{tuple(norm)} leaves {data.num_partitions} partitions x {kept} elements",
            "size the destination to the non-reduced dimensions",
        )


@rule("tensor_partition_reduce")
def _tensor_partition_reduce(c: InstCheck) -> None:
    _op_in(
        c,
        "op",
        ("add", "average", "maximum", "bitwise_or", "bitwise_and"),
        "GpSimd reduces partitions with add, average, max, or, and",
    )
    data, dst = c.ap("data"), c.ap("dst")
    if data is not None and dst is not None:
        if dst.num_partitions != 1:
            c.error(
                "err_shape_mismatch",
                f"`dst` has {dst.num_partitions} partitions; the partition reduction writes 1",
                "allocate `dst` as (1, ...)",
            )
        elif dst.free_size != data.free_size:
            c.error(
                "err_shape_mismatch",
                f"`dst` has {dst.free_size} elements per partition but `data` has {data.free_size}",
                "the free dimensions are kept",
            )


@rule("activation", "activation_reduce")
def _activation(c: InstCheck) -> None:
    op = _name(c.value("op"))
    if op is not None and op not in ACTIVATIONS:
        c.error(
            "err_unsupported_operator",
            f"`op=nl.{op}` is not an activation function",
            "see the activation table (nl.exp, nl.tanh, nl.gelu, nl.copy, ...)",
        )
    if op == "bypass" and not target_at_least(c.target, "trn3"):
        c.error(
            "err_unsupported_on_target",
            f"`op=nl.bypass` as an activation function requires trn3; the target is {c.target}",
            "use `op=nl.copy`",
        )
    if op == "prelu":
        c.error(
            "err_unsupported_operator",
            "`op=nl.prelu` takes its negative slope from `relu_param`, which only "
            "`nisa.activate2` (trn3) has",
            "use `nisa.activate2(op=nl.prelu, relu_param=alpha, ...)` on trn3, or "
            "max(x, alpha * x) with two tensor instructions",
        )
    if c.op == "activation" or c.present("reduce_op"):
        _op_in(c, "reduce_op", ("add",), "the Scalar engine accumulates with add only")
    data = c.ap("data")
    p = data.num_partitions if data is not None else None
    _activation_scale(c, p)
    _activation_bias(c, p, op)


def _activation_scale(c: InstCheck, p: int | None) -> None:
    scale = c.ap("scale")
    if scale is None:
        v = c.value("scale")
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            c.error(
                "err_activation_scale_invalid_type",
                f"`scale={v!r}` is not a number",
                "pass a float constant or a float32 (P, 1) tile",
            )
        return
    if scale.num_partitions != p or scale.free_size != 1:
        c.error(
            "err_activation_scale_scalar_or_vector",
            f"`scale` has shape {_shape(scale)}; it must be a scalar or a ({p}, 1) vector",
            "pass one scale per partition, or a compile-time float",
        )
    elif scale.dtype != "float32":
        c.error(
            "err_activation_scale_invalid_type",
            f"`scale` is {scale.dtype}; it must be float32",
            "keep the scale vector in a float32 tile",
        )


def _activation_bias(c: InstCheck, p: int | None, op: str | None) -> None:
    bias = c.ap("bias")
    value = c.value("bias") if bias is None else None
    if bias is None and value is None:
        return
    if op == "reciprocal" and c.target == "trn1":
        c.error(
            "err_unsupported_on_target",
            "`op=nl.reciprocal` with a bias needs trn2 or newer; the target is trn1",
            "add the bias with a separate `nisa.tensor_scalar` first",
        )
    if bias is None:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            c.error(
                "err_activation_bias_invalid_type",
                f"`bias={value!r}` is not a tensor or a number",
                "pass a (P, 1) tile",
            )
        elif c.target == "trn1":
            c.error(
                "err_unsupported_on_target",
                "a scalar `bias` needs trn2 or newer; the target is trn1",
                "pass the bias as a (P, 1) float32 tile",
            )
        return
    if bias.num_partitions != p or bias.free_size != 1:
        c.error(
            "err_activation_bias_invalid_type",
            f"`bias` has shape {_shape(bias)}; it must be a ({p}, 1) vector",
            "pass one bias value per partition",
        )
    elif bias.dtype not in ("float32", "float16", "bfloat16"):
        c.error(
            "err_activation_bias_invalid_type",
            f"`bias` is {bias.dtype}; it must be float32, float16 or bfloat16",
            "cast the bias vector into a float32 tile",
        )


@rule("dropout")
def _dropout(c: InstCheck) -> None:
    _dtype_equal(c, "data", "dst", "dropout keeps the dtype; cast separately")
    data, prob = c.ap("data"), c.ap("prob")
    if data is not None and prob is not None and _is_int(data.dtype) and prob.dtype != "float32":
        c.error(
            "err_dtype_mismatch",
            f"`prob` is {prob.dtype}; with integer `data` ({data.dtype}) it must be float32",
            "keep the probabilities in a float32 (P, 1) tile",
        )


@rule("iota", "affine_select")
def _pattern(c: InstCheck) -> None:
    pattern, dst = c.value("pattern"), c.ap("dst")
    if not isinstance(pattern, (tuple, list)):
        return
    if len(pattern) > 4:
        c.error(
            "err_exceed_max_supported_dimension",
            f"`pattern` has {len(pattern)} levels, at most 4",
            "merge levels with equal strides",
        )
        return
    total = 1
    for level in pattern:
        total *= level[1] if isinstance(level, (tuple, list)) and len(level) == 2 else 1
    if dst is not None and total != dst.free_size:
        c.error(
            "err_shape_mismatch",
            f"`pattern` generates {total} elements per partition but `dst` holds {dst.free_size}",
            "the product of the pattern's counts must equal the destination's free size",
        )


@rule("bn_stats", "bn_aggr")
def _bn(c: InstCheck) -> None:
    data, dst = c.ap("data"), c.ap("dst")
    if data is None or dst is None:
        return
    if c.op == "bn_stats" and data.free_size > 512:
        c.error(
            "err_size_of_dimension_exceed_arch_limit",
            f"`data` has {data.free_size} elements per partition, at most 512",
            "run bn_stats on chunks of `nl.tile_size.bn_stats_fmax` and combine with bn_aggr",
        )
    if c.op == "bn_aggr" and data.free_size % 3:
        c.error(
            "err_shape_mismatch",
            f"`data` has {data.free_size} elements per partition; bn_aggr reads "
            "(count, mean, variance) triples",
            "pass the concatenated outputs of bn_stats",
        )
    want = 6 if c.op == "bn_stats" else 2
    if dst.free_size != want:
        c.error(
            "err_shape_mismatch",
            f"`dst` has {dst.free_size} elements per partition; {c.op} writes {want}",
            f"allocate `dst` as (P, {want})",
        )


@rule("quantize_mx")
def _quantize_mx(c: InstCheck) -> None:
    src, dst = c.ap("src"), c.ap("dst")
    if src is not None and src.dtype not in ("float16", "bfloat16"):
        c.error(
            "err_dtype_mismatch",
            f"`src` is {src.dtype}; it must be float16 or bfloat16",
            "cast the input first",
        )
    if dst is not None and dst.dtype not in ("float8_e5m2_x4", "float8_e4m3fn_x4"):
        c.error(
            "err_dtype_mismatch",
            f"`dst` is {dst.dtype}; it must be an MXFP8 x4 type",
            "allocate `dst` as float8_e4m3fn_x4",
        )
    if src is not None and src.num_partitions % 32:
        c.error(
            "err_shape_mismatch",
            f"`src` has {src.num_partitions} partitions; quantize_mx needs a multiple of 32",
            "pad the partition dimension to a multiple of 32",
        )
    if src is not None and src.free_size % 4:
        c.error(
            "err_shape_mismatch",
            f"`src` has {src.free_size} elements per partition; quantize_mx needs a multiple of 4",
            "pad the free dimension to a multiple of 4",
        )
    elif src is not None and dst is not None and dst.free_size * 4 != src.free_size:
        c.error(
            "err_shape_mismatch",
            f"`dst` has {dst.free_size} x4 words per partition; `src` needs "
            f"{src.free_size // 4} (4 elements per word)",
            "allocate `dst` with a quarter of the source's free size",
        )
    scale = c.ap("dst_scale")
    if scale is not None and scale.dtype not in ("float8_e8m0fnu", "uint8"):
        c.error(
            "err_dtype_mismatch",
            f"`dst_scale` is {scale.dtype}; it must be float8_e8m0fnu or uint8",
            "store the scales as uint8",
        )


@rule("max8", "nc_find_index8", "nc_match_replace8")
def _top8(c: InstCheck) -> None:
    src = c.ap("src") or c.ap("data")
    dst = c.ap("dst")
    if src is not None and src.tensor.on_chip and len(src.shape) > 3:
        c.error(
            "err_exceed_max_supported_dimension",
            f"the input has shape {_shape(src)}; at most 3 dimensions",
            "merge free dimensions with `.reshape`",
        )
    if src is not None and not 8 <= src.free_size <= 16384:
        c.error(
            "err_size_of_dimension_exceed_arch_limit",
            f"the input has {src.free_size} elements per partition; it must have 8 to 16384",
            "split the search into chunks and combine the partial top-8 results",
        )
    if c.op != "nc_match_replace8" and dst is not None and dst.free_size != 8:
        c.error(
            "err_shape_mismatch",
            f"`dst` has {dst.free_size} elements per partition, not 8",
            "allocate `dst` as (P, 8)",
        )
    if c.op == "nc_find_index8" and dst is not None and dst.dtype not in ("uint16", "uint32"):
        c.error(
            "err_dtype_mismatch",
            f"`dst` is {dst.dtype}; indices are written as uint16 or uint32",
            "allocate `dst` as uint32",
        )


@rule("topk")
def _topk(c: InstCheck) -> None:
    """The constraints of the nki.isa.topk documentation (NKI 0.6)."""
    src, val, idx = c.ap("src"), c.ap("val_dst"), c.ap("idx_dst")
    for name, ap, dtype in (("src", src, "bfloat16"), ("val_dst", val, "bfloat16"),
                            ("idx_dst", idx, "uint32")):  # fmt: skip
        if ap is not None and ap.dtype != dtype:
            c.error("err_dtype_mismatch", f"`{name}` is {ap.dtype}; it must be {dtype}",
                    f"allocate `{name}` as {dtype}")  # fmt: skip
    if src is None or val is None:
        return
    for name, ap in (("val_dst", val), ("idx_dst", idx)):
        if ap is not None and ap.num_partitions != src.num_partitions:
            c.error(
                "err_num_partition_mismatch",
                f"`{name}` has {ap.num_partitions} partitions but `src` has {src.num_partitions}",
                "the outputs span the partitions of the input",
            )
    if src.num_partitions % 16:
        c.error(
            "err_invalid_argument",
            f"`src` has {src.num_partitions} partitions; topk needs a multiple of 16 (one "
            "16-partition snake per GpSimd core)",
            "pad the partition dimension to a multiple of 16",
        )
    k, n = val.free_size, c.value("n")
    if idx is not None and idx.free_size != k:
        c.error(
            "err_shape_mismatch",
            f"`idx_dst` has {idx.free_size} elements per partition but `val_dst` has {k}",
            "allocate both outputs as (P, K)",
        )
    if not isinstance(n, int) or not 8 <= n < 65536:
        c.error(
            "err_invalid_argument",
            f"n={n}; the snake holds 8 <= n < 65536 elements",
            "give the number of active elements of the 16-partition input snake",
        )
        return
    if not 1 <= k < 32768 or k > n:
        c.error(
            "err_invalid_argument",
            f"K={k} (the free size of `val_dst`); it must be 1 <= K < 32768 and K <= n={n}",
            "select at most n elements",
        )
    if src.free_size < -(-n // 16):
        c.error(
            "err_shape_mismatch",
            f"`src` has {src.free_size} elements per partition; a snake of n={n} needs "
            f"{-(-n // 16)} (ceil(n / 16))",
            "allocate `src` as (P, ceil(n / 16))",
        )


@rule("nc_n_gather")
def _nc_n_gather(c: InstCheck) -> None:
    _dtype_equal(c, "data", "dst", "gathers copy bits; cast separately")
    idx, dst = c.ap("indices"), c.ap("dst")
    if idx is not None and idx.dtype != "uint32":
        c.error(
            "err_dtype_mismatch",
            f"`indices` is {idx.dtype}; it must be uint32",
            "store indices as uint32",
        )
    if idx is not None and dst is not None and idx.free_size != dst.free_size:
        c.error(
            "err_shape_mismatch",
            f"`dst` has {dst.free_size} elements per partition but `indices` has {idx.free_size}",
            "one destination element per index",
        )


@rule("local_gather")
def _local_gather(c: InstCheck) -> None:
    _dtype_equal(c, "src_buffer", "dst", "gathers copy bits; cast separately")
    src, idx = c.ap("src_buffer"), c.ap("index")
    if idx is not None and idx.dtype != "uint16":
        c.error(
            "err_dtype_mismatch",
            f"`index` is {idx.dtype}; it must be uint16",
            "store indices as uint16",
        )
    if src is not None and src.num_partitions % 16:
        c.error(
            "err_shape_mismatch",
            f"`src_buffer` has {src.num_partitions} partitions; local_gather needs a multiple of 16",
            "GpSimd cores own 16 partitions each",
        )
    epi = c.value("num_elem_per_idx")
    if isinstance(epi, int) and epi not in (1, 2, 4, 8, 16, 32):
        c.error(
            "err_invalid_argument",
            f"`num_elem_per_idx` is {epi}; it must be 1, 2, 4, 8, 16 or 32",
            "gather a power-of-two run of elements per index",
        )


@rule("nc_stream_shuffle")
def _stream_shuffle(c: InstCheck) -> None:
    _dtype_equal(c, "src", "dst", "shuffles copy bits; cast separately")
    mask = c.value("shuffle_mask")
    if isinstance(mask, (tuple, list)) and len(mask) != 32:
        c.error(
            "err_invalid_argument",
            f"`shuffle_mask` has {len(mask)} entries, not 32",
            "give one source partition per quadrant lane",
        )
        return
    src, dst = c.ap("src"), c.ap("dst")
    if src is not None and dst is not None and src.free_size != dst.free_size:
        c.error(
            "err_shape_mismatch",
            f"`dst` has {dst.free_size} elements per partition but `src` has {src.free_size}",
            "a shuffle moves whole partitions",
        )
    if not isinstance(mask, (tuple, list)):
        return
    for i, m in enumerate(mask):
        if isinstance(m, int) and not (0 <= m < 32 or m == 255):
            c.error(
                "err_invalid_argument",
                f"`shuffle_mask[{i}]` is {m}; entries are quadrant lanes 0..31 or 255 (keep)",
                "give the source lane within the 32-partition quadrant",
            )
            return
    if src is None or dst is None:
        return
    for p in range(dst.num_partitions):
        m = mask[p % 32]
        if isinstance(m, int) and m != 255 and (p // 32) * 32 + m >= src.num_partitions:
            c.error(
                "err_invalid_argument",
                f"`shuffle_mask[{p % 32}]` = {m} makes `dst` partition {p} read partition "
                f"{(p // 32) * 32 + m} of `src`, which has {src.num_partitions} partitions",
                "use 255 for lanes without a source",
            )
            return


@rule("rng")
def _rng(c: InstCheck) -> None:
    dst = c.ap("dst")
    if dst is not None and not _is_int(dst.dtype):
        c.error(
            "err_dtype_mismatch",
            f"`dst` is {dst.dtype}; rng writes integer bits",
            "use `nl.rand` for floats",
        )


@rule("rand2")
def _rand2(c: InstCheck) -> None:
    lo, hi = c.value("min"), c.value("max")
    num = (int, float)
    if isinstance(lo, num) and isinstance(hi, num) and not lo < hi:
        c.error(
            "err_invalid_argument",
            f"`min` ({lo}) must be smaller than `max` ({hi})",
            "swap the bounds",
        )


@rule("dma_compute")
def _dma_compute(c: InstCheck) -> None:
    _op_in(c, "reduce_op", ("add",), "DMA compute only adds")
    srcs = [ap for name, ap in c.aps if re.fullmatch(r"srcs\.\d+", name)]
    if len(srcs) > 16:
        c.error(
            "err_invalid_argument", f"{len(srcs)} sources, at most 16", "reduce in several steps"
        )
    dst = c.ap("dst")
    for i, ap in enumerate(srcs):
        if dst is not None and _count(ap) != _count(dst):
            c.error(
                "err_shape_mismatch",
                f"source {i} has {_count(ap)} elements but `dst` has {_count(dst)}",
                "every source and the destination hold the same number of elements",
            )
            break
    vector = any(ap.dynamic is not None and ap.dynamic.kind == "vector" for _, ap in c.aps)
    if _name(c.value("oob_mode"), "oob_mode") == "skip" and not (vector and c.ctx.since("0.4")):
        c.error(
            "err_invalid_argument",
            "`oob_mode=nisa.oob_mode.skip` is new in NKI 0.4"
            if not c.ctx.since("0.4")
            else "`oob_mode=nisa.oob_mode.skip` needs an indirect (vector_offset) source",
            "drop `oob_mode` (indices outside the tensor are then an error)",
        )
    scales = c.value("scales")
    if isinstance(scales, (tuple, list)) and any(s not in (None, 1, 1.0) for s in scales):
        c.error(
            "err_invalid_argument",
            "every entry of `scales` must be 1.0",
            "scale the sources before the DMA",
        )


@rule("range_select")
def _range_select(c: InstCheck) -> None:
    comps = ("equal", "less", "less_equal", "greater", "greater_equal")
    for arg in ("comp_op0", "comp_op1"):
        _op_in(c, arg, comps, "range_select compares with ==, <, <=, > or >=")
    _op_in(c, "reduce_op", ("maximum",), "range_select reduces with max only")
    for arg in ("bound0", "bound1"):
        ap = c.ap(arg)
        if ap is not None and ap.dtype != "float32":
            c.error(
                "err_dtype_mismatch",
                f"`{arg}` is {ap.dtype}; bounds must be float32",
                "keep the bounds in a float32 (P, 1) tile",
            )
    fill = c.value("on_false_value")
    # compared as fp32: -3.4028235e38 and FP32_MIN round to the same value
    if isinstance(fill, (int, float)) and abs(float(fill) - FP32_MIN) > 2.0**103:
        c.error(
            "err_invalid_argument",
            f"`on_false_value` is {fill}; range_select fills with FP32_MIN (-3.4028235e38) only",
            "leave `on_false_value` at its default",
        )
    on_true = c.ap("on_true_tile")
    if on_true is not None and on_true.dtype in DTYPES and not DTYPES[on_true.dtype].is_float:
        c.error(
            "err_dtype_mismatch",
            f"`on_true_tile` is {on_true.dtype}; it must be a float type",
            "cast the values to float32 first",
        )


@rule("select_reduce")
def _select_reduce(c: InstCheck) -> None:
    _op_in(c, "reduce_op", ("maximum",), "select_reduce reduces with max only")
    pred, on_true = c.ap("predicate"), c.ap("on_true")
    if pred is not None and pred.dtype not in ("int8", "uint8", "int16", "uint16"):
        c.error(
            "err_dtype_mismatch",
            f"`predicate` is {pred.dtype}; it must be an 8- or 16-bit integer",
            "build the mask as uint8",
        )
    if on_true is not None and on_true.dtype in ("tfloat32", "int32", "uint32"):
        c.error(
            "err_dtype_mismatch",
            f"`on_true` is {on_true.dtype}, which select_reduce does not read",
            "cast the values to float32 first",
        )


@rule("activate2")
def _activate2(c: InstCheck) -> None:
    pair = (_name(c.value("op0")), _name(c.value("op1")))
    allowed = (
        ("multiply", "add"), ("multiply", "subtract"), ("multiply", "bypass"), ("add", "bypass"),
        ("subtract", "bypass"), ("bypass", "bypass"),
    )  # fmt: skip
    if pair not in allowed:
        c.error(
            "err_unsupported_operator",
            f"(op0, op1) = ({pair[0]}, {pair[1]}) is not a supported pipeline",
            "use (multiply, add), (multiply, subtract) or a single op followed by `nl.bypass`",
        )
    _op_in(
        c,
        "reduce_op",
        ("add", "maximum", "minimum", "abs_max", "abs_min"),
        "activate2 reduces with add, max, min, abs_max or abs_min",
    )
    for i, op in enumerate(pair):
        if c.value(f"reverse{i}") and op in (None, "bypass"):
            c.error(
                "err_invalid_argument",
                f"`reverse{i}=True` needs `op{i}`; it is {op or 'None'}",
                f"drop `reverse{i}` or give `op{i}`",
            )
    a, b = c.ap("imm0"), c.ap("imm1")
    if a is not None and b is not None and a.dtype != b.dtype:
        c.error(
            "err_dtype_mismatch",
            f"`imm0` is {a.dtype} but `imm1` is {b.dtype}; tile immediates share one dtype",
            "keep both immediate vectors in float32 tiles",
        )


_EXP_DST = (
    "float8_e4m3", "float8_e5m2", "float16", "bfloat16", "float32", "tfloat32", "int8", "int16",
    "int32", "uint8", "uint16",
)  # fmt: skip
_EXP_SRC = (
    "float8_e4m3", "float8_e5m2", "float8_e4m3fn", "float16", "bfloat16", "float32", "int8",
    "int16", "int32", "uint8", "uint16", "uint32",
)  # fmt: skip


@rule("exponential")
def _exponential(c: InstCheck) -> None:
    for arg, allowed in (("src", _EXP_SRC), ("dst", _EXP_DST)):
        ap = c.ap(arg)
        if ap is not None and ap.dtype not in allowed:
            c.error(
                "err_dtype_mismatch",
                f"`{arg}` is {ap.dtype}, which exponential does not "
                + ("read" if arg == "src" else "write"),
                "use float32 or bfloat16",
            )


@rule("exponential", "tensor_scalar_reduce")
def _reduce_init(c: InstCheck) -> None:
    cmd = _name(c.value("reduce_cmd"), "reduce_cmd")
    given = c.ap("reduce_init") is not None or c.value("reduce_init") not in (None, 0, 0.0)
    if given and cmd not in (None, "load_reduce"):
        c.error(
            "err_invalid_argument",
            "`reduce_init` is only read with `reduce_cmd=nisa.reduce_cmd.load_reduce`",
            "drop `reduce_init` or load it with `load_reduce`",
        )


@rule("sequence_bounds")
def _sequence_bounds(c: InstCheck) -> None:
    seg, dst = c.ap("segment_ids"), c.ap("dst")
    if seg is not None and seg.num_partitions != 1:
        c.error(
            "err_shape_mismatch",
            f"`segment_ids` has {seg.num_partitions} partitions; it must have 1",
            "lay the ids out as (1, n)",
        )
    for arg, ap in (("segment_ids", seg), ("dst", dst)):
        if ap is not None and ap.dtype not in ("float32", "int32"):
            c.error(
                "err_dtype_mismatch",
                f"`{arg}` is {ap.dtype}; it must be float32 or int32",
                "cast the ids to int32",
            )
    if seg is not None and dst is not None and dst.free_size != 2 * seg.free_size:
        c.error(
            "err_shape_mismatch",
            f"`dst` holds {dst.free_size} elements; (1, 2, {seg.free_size}) are written",
            "allocate `dst` as (1, 2, n)",
        )


@rule("nonzero_with_count")
def _nonzero_with_count(c: InstCheck) -> None:
    src, dst = c.ap("src"), c.ap("dst")
    if src is not None and src.dtype not in ("float32", "int32"):
        c.error(
            "err_dtype_mismatch",
            f"`src` is {src.dtype}; it must be float32 or int32",
            "cast the input first",
        )
    if dst is not None and dst.dtype != "int32":
        c.error(
            "err_dtype_mismatch",
            f"`dst` is {dst.dtype}; it must be int32",
            "allocate `dst` as int32",
        )
    if src is not None and dst is not None and dst.free_size != src.free_size + 1:
        c.error(
            "err_shape_mismatch",
            f"`dst` has {dst.free_size} elements per partition; it needs {src.free_size + 1} (the indices and the count)",
            "allocate one more element than the input",
        )


@rule("set_rng_seed", "rand_set_state", "rand_get_state")
def _rng_state(c: InstCheck) -> None:
    ap = c.ap("src_seeds") or c.ap("dst")
    if ap is None:
        return
    if c.op == "set_rng_seed":
        if (ap.num_partitions, ap.free_size) != (1, 1) or ap.itemsize != 4:
            c.error(
                "err_shape_mismatch",
                f"the seed is {_shape(ap)} {ap.dtype}; it must be one 32-bit value (1, 1)",
                "pass a [1, 1] uint32 tile",
            )
        return
    if ap.dtype != "uint32":
        c.error(
            "err_dtype_mismatch",
            f"the state tile is {ap.dtype}; it must be uint32",
            "allocate the state as uint32",
        )
    engine = c.engine or "gpsimd"
    if engine == "vector" and not target_at_least(c.target, "trn3"):
        c.error(
            "err_unsupported_on_target",
            f"Vector random states need trn3; the target is {c.target}",
            "use `engine=nisa.engine.gpsimd`",
        )
    want = 24 if engine == "vector" else 6
    if ap.free_size != want:
        c.error(
            "err_shape_mismatch",
            f"the state tile has {ap.free_size} elements per partition; the {engine} engine keeps {want}",
            f"allocate the state as (P, {want})",
        )


@rule("nc_matmul_mx")
def _nc_matmul_mx(c: InstCheck) -> None:
    x4 = ("float8_e5m2_x4", "float8_e4m3fn_x4", "float4_e2m1fn_x4")
    for arg in ("stationary", "moving"):
        ap = c.ap(arg)
        if ap is not None and ap.dtype not in x4:
            c.error(
                "err_dtype_mismatch",
                f"`{arg}` is {ap.dtype}; it must be an MX x4 type",
                "quantize with `nisa.quantize_mx` first",
            )
    for arg in ("stationary_scale", "moving_scale"):
        ap = c.ap(arg)
        if ap is not None and ap.dtype not in ("float8_e8m0fnu", "uint8"):
            c.error(
                "err_dtype_mismatch",
                f"`{arg}` is {ap.dtype}; it must be float8_e8m0fnu or uint8",
                "store the scales as float8_e8m0fnu",
            )
    st, mv = c.ap("stationary"), c.ap("moving")
    if st is not None and mv is not None and st.num_partitions != mv.num_partitions:
        c.error(
            "err_num_partition_mismatch",
            f"`stationary` has {st.num_partitions} partitions but `moving` has {mv.num_partitions}",
            "both operands hold K on their partitions",
        )
    elif st is not None and st.num_partitions % 32:
        c.error(
            "err_shape_mismatch",
            f"K = {st.num_partitions} partitions is not a multiple of 32",
            "pad the contraction to a multiple of 32",
        )
    if st is not None and (st.free_size % 2 or st.free_size > 128):
        c.error(
            "err_size_of_dimension_exceed_arch_limit",
            f"`stationary` has {st.free_size} elements per partition; it must be even and at "
            "most 128",
            "pad M to an even size and tile it into blocks of 128",
        )
    dst = c.ap("dst")
    limit = {"float32": 512, "bfloat16": 1024}.get(dst.dtype if dst is not None else "", 512)
    if mv is not None and mv.free_size > limit:
        c.error(
            "err_size_of_dimension_exceed_arch_limit",
            f"`moving` has {mv.free_size} elements per partition (N), at most {limit}",
            f"tile N into blocks of {limit}",
        )
    if (
        dst is not None
        and st is not None
        and mv is not None
        and (dst.num_partitions != st.free_size or dst.free_size != mv.free_size)
    ):
        c.error(
            "err_shape_mismatch",
            f"`dst` has shape {_shape(dst)}; the result is ({st.free_size}, {mv.free_size})",
            "dst[M, N] with M the stationary free size and N the moving free size",
        )
    if dst is not None and dst.dtype not in ("float32", "bfloat16"):
        c.error(
            "err_dtype_mismatch",
            f"`dst` is {dst.dtype}; the MX matmul writes float32 or bfloat16 PSUM",
            "allocate the PSUM tile as float32",
        )
    pos, size = c.value("tile_position") or (), c.value("tile_size") or ()
    if (size and len(size) == 2 and size[1] != 128) or (
        pos and len(pos) == 2 and pos[1] not in (0, None)
    ):
        c.error(
            "err_invalid_argument",
            f"`tile_position={tuple(pos)}`, `tile_size={tuple(size)}`: nc_matmul_mx tiles rows "
            "only (column size 128, column start 0)",
            "use `tile_size=(rows, 128)` and `tile_position=(row_start, 0)`",
        )


# tensor indirection ------------------------------------------------------------------------

#: Tensor indirection (`.indirect(index)`, NKI 0.5, NeuronCore-v4), from each instruction's
#: "Tensor indirection" section of the ISA reference: the operands that take it, the engines
#: that run it, and the input whose start partition a scattered `dst`'s index must match.
INDIRECTION: dict[str, tuple[tuple[str, ...], tuple[str, ...], str]] = {
    "tensor_copy": (("dst", "src"), ("vector", "scalar"), "src"),
    "tensor_copy_predicated": (("dst", "predicate"), ("vector",), "predicate"),
    "nc_matmul": (("dst", "stationary", "moving"), ("tensor",), "stationary"),
    "nc_matmul_mx": (
        ("dst", "stationary", "moving", "stationary_scale", "moving_scale"),
        ("tensor",),
        "stationary",
    ),
    "tensor_tensor": (("dst", "data1"), ("vector", "gpsimd"), "data1"),
    "tensor_scalar": (("dst", "data"), ("vector", "scalar", "gpsimd"), "data"),
    "tensor_scalar_reduce": (("dst", "data"), ("vector",), "data"),
    "tensor_scalar_cumulative": (("dst", "src"), ("vector",), "src"),
    "tensor_reduce": (("dst", "data"), ("vector",), "data"),
    "activation": (("dst", "data"), ("scalar",), "data"),
    "activation_reduce": (("dst", "data"), ("scalar",), "data"),
    "activate2": (("dst", "data"), ("scalar",), "data"),
    "exponential": (("dst", "src"), ("vector",), "src"),
}
#: The float dtypes the Tensor engine reads an indirect operand in (ISA nc_matmul).
_TE_INDIRECT_DTYPES = ("float16", "bfloat16", "float8_e4m3", "float8_e5m2", "float8_e4m3fn")
_TI = "nkic_tensor_indirection"


def _engines_text(engines: tuple[str, ...]) -> str:
    names = [e.capitalize() if e != "gpsimd" else "GpSimd" for e in engines]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def _indirection(c: InstCheck) -> None:
    """Every documented constraint of tensor indirection: the instruction and operand take it,
    the engine runs it, the index tile holds the offsets the engine's snake order reads, the
    instruction-specific rules, and the start partitions where the placement is known."""
    views = {n: ap for n, ap in c.aps if ap.dynamic is not None and ap.dynamic.kind == "indirect"}
    if not views:
        return
    spec = INDIRECTION.get(c.op)
    if spec is None:
        name = next(iter(views))
        c.error(
            _TI,
            f"`{name}` is a tensor-indirection view (.indirect()), which nisa.{c.op} does not "
            "take (compute instructions such as tensor_copy, tensor_tensor, activation and "
            "nc_matmul do)",
            "gather HBM rows with .ap(vector_offset=...)"
            if c.op.startswith("dma_")
            else "gather into a tile with nisa.tensor_copy(dst=tile, src=t.indirect(index)) first",
        )
        return
    operands, engines, reference = spec
    refused = [n for n in views if n not in operands]
    for name in refused:
        taken = " and ".join(f"`{n}`" for n in operands)
        c.error(
            _TI,
            f"`{name}` does not take tensor indirection; only {taken} do",
            f"gather `{name}` into a tile with nisa.tensor_copy(dst=tile, "
            f"src=t.indirect(index)) first",
        )
    if refused:
        return
    engine = choose_engine(c.inst)
    if engine not in engines:
        c.error(
            "err_unsupported_engine",
            f"with tensor indirection nisa.{c.op} runs on the {_engines_text(engines)} engine, "
            f"not {_engines_text((engine,))}",
            f"pass engine=nisa.engine.{engines[0]}",
        )
        return
    group = INDIRECTION_GROUP_TENSOR if engine == "tensor" else INDIRECTION_GROUP
    for name, ap in views.items():
        _snake_fits(c, name, ap, group)
    _indirection_rules(c, views, engine)
    _indirection_partitions(c, views, reference)


def _snake_fits(c: InstCheck, name: str, ap: AccessPattern, group: int) -> None:
    """The engine reads offset i from partition `(i // (G·K))·G + i % G` of the (P, K) index
    tile: the `num_elem` offsets must come from its P partitions."""
    index = c.ap(ap.dynamic.index)
    if index is None or len(index.shape) != 2:
        return
    parts, cols = index.shape
    count = ap.shape[1]
    last = (count - 1) // (group * cols)
    highest = last * group + min(group, count - last * group * cols) - 1
    if highest < parts:
        return
    full, rest = divmod(parts, group)
    limit = full * group * cols + rest
    c.error(
        _TI,
        f"`{name}` uses {count} offsets; the engine reads them in groups of {group} partitions "
        f"(offset i from index[i % {group}, i // {group}]), so offset {count - 1} comes from "
        f"partition {highest} of the {parts}-partition index tile",
        f"use num_elem <= {limit}, or an index tile of a multiple of {group} partitions",
        tensor=index.tensor,
    )


def _indirection_rules(c: InstCheck, views: dict[str, AccessPattern], engine: str) -> None:
    """The per-instruction restrictions of the ISA's tensor-indirection sections."""
    if engine == "scalar" and "dst" in views and views["dst"].tensor.buffer == "psum":
        c.error(
            _TI,
            "on the Scalar engine a scattered `dst` (.indirect()) cannot be in PSUM",
            "scatter into an SBUF tile"
            + (
                ", or run on the Vector engine" if c.op in ("tensor_copy", "tensor_scalar") else ""
            ),  # fmt: skip
            tensor=views["dst"].tensor,
        )
    if c.op not in ("nc_matmul", "nc_matmul_mx"):
        return
    pos = c.value("tile_position")
    if pos and tuple(pos) != (0, 0):
        c.error(
            _TI,
            f"tensor indirection is incompatible with hardware tiling: tile_position is "
            f"{tuple(pos)}",
            "drop tile_position (or use (0, 0)) when an operand is an .indirect() view",
        )
    if c.op == "nc_matmul" and c.value("is_transpose") and "moving" in views:
        c.error(
            _TI,
            "with is_transpose=True `moving` cannot be an .indirect() view",
            "gather `moving` into a tile with nisa.tensor_copy first",
        )
    if c.op == "nc_matmul":
        for name in ("stationary", "moving"):
            ap = views.get(name)
            if ap is not None and ap.dtype not in _TE_INDIRECT_DTYPES:
                c.error(
                    _TI,
                    f"an indirect `{name}` is {ap.dtype}; the Tensor engine gathers "
                    + ", ".join(_TE_INDIRECT_DTYPES)
                    + " only",
                    f"cast `{name}` to bfloat16 first (nisa.tensor_copy into a bfloat16 tile)",
                    tensor=ap.tensor,
                )
    if c.op == "nc_matmul_mx":
        for data, scale in (("stationary", "stationary_scale"), ("moving", "moving_scale")):
            a, b = views.get(data), views.get(scale)
            same = (
                a is not None and b is not None and c.ap(a.dynamic.index) == c.ap(b.dynamic.index)
            )
            if (a is None) != (b is None) or (a is not None and not same):
                c.error(
                    _TI,
                    f"`{data}` and `{scale}` must both be .indirect() views with the same index, "
                    "or neither (MX data and its scales are one logical tensor)",
                    f"index `{data}` and `{scale}` with the same index tile",
                )


def _start_partition(ap: AccessPattern) -> int | None:
    """The absolute start partition of an on-chip operand of an instruction with tensor
    indirection: its tensor's `address=` placement, else 0 (the allocator starts such operands
    at partition 0), plus the view's partition offset; None when a loop moves it."""
    t = ap.tensor
    if not t.on_chip or not ap.pattern or ap.pattern[0][0] <= 0:
        return None
    base = t.address[0] if t.fixed_address and t.address is not None else 0
    off = Affine.of(ap.offset)
    if any(coeff % ap.pattern[0][0] == 0 for _, coeff in off.terms):
        return None
    return base + off.const // ap.pattern[0][0]


def _indirection_partitions(c: InstCheck, views: dict[str, AccessPattern], reference: str) -> None:
    """The start-partition rules (the ISA states them for manually placed operands; nkic
    places the others at partition 0, so their views decide): every index starts on a
    quadrant boundary; a gathered input starts where its index does; a scattered `dst`'s index
    starts where the reference input does (its index when that input is gathered from PSUM;
    for the matmuls, `stationary`)."""

    def start(ap):
        return None if ap is None else _start_partition(ap)

    def mismatch(what: str, a: int | None, other: str, b: int | None, hint: str) -> None:
        if a is not None and b is not None and a != b:
            c.error(_TI, f"{what} starts at partition {a} but {other} at partition {b}", hint)

    for name, ap in views.items():
        index = c.ap(ap.dynamic.index)
        p = start(index)
        if p is not None and p % QUADRANT:
            c.error(
                _TI,
                f"the index of `{name}` starts at partition {p}, not on a quadrant boundary "
                "(a multiple of 32)",
                "place the index tile at partition 0, 32, 64 or 96",
                tensor=index.tensor,
            )
        if name != "dst":
            mismatch(
                f"`{name}`", start(ap), "its index", p,
                f"place `{name}` and its index tile on the same partitions",
            )  # fmt: skip
    dst = views.get("dst")
    ref = c.ap(reference)
    if dst is None or ref is None:
        return
    dst_index = start(c.ap(dst.dynamic.index))
    matmul = c.op in ("nc_matmul", "nc_matmul_mx")
    if matmul or ref.tensor.buffer == "sbuf":
        mismatch(
            "the index of `dst`", dst_index, f"`{reference}`", start(ref),
            f"place the index tile of `dst` on the partitions of `{reference}`",
        )  # fmt: skip
    elif reference in views:
        mismatch(
            "the index of `dst`", dst_index, f"the index of `{reference}`",
            start(c.ap(views[reference].dynamic.index)),
            f"index `dst` and `{reference}` with tiles on the same partitions",
        )  # fmt: skip
