"""Registers and dynamic control flow: `nisa.register_*` and `VirtualRegister` (NKI 0.3-0.6),
`NkiScalar` with `nisa.scalar_load` / `nisa.scalar_store` and traced `+ - *` (NKI 0.7), and the
loops whose trip count is read at run time: `nl.dynamic_range` and `while reg:` (0.3-0.6),
`nl.fori_loop` and `nl.while_loop` (0.6+).

A register is a `reg` tensor of shape (1,), int32: 32-bit, wrapping on overflow, as the engine
sequencers' registers are (nki.isa.register_alloc:
https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/nki.isa.register_alloc.html).
A dynamic loop is one `DynLoop` op whose body is specialised once, as NKI's own front ends do.
"""

from __future__ import annotations

import ast

from ..diagnostics import Diagnostic
from ..ir.builder import whole
from ..ir.core import Imm, Tensor
from ..ir.types import DTYPES
from .tensors import TensorView, type_name
from .values import SymbolicAbort, UserError

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
#: The traced operators of an NkiScalar (NKI 0.7: `+`, `-`, `*`).
SCALAR_OPS = {"+": "add", "-": "subtract", "*": "multiply"}


class Register:
    """A `VirtualRegister` (NKI 0.3-0.6) or an `NkiScalar` (0.7): a value known only at run
    time, held in the register `tensor`. `frozen`: a dynamic loop's induction variable, which
    the kernel may read but not write."""

    def __init__(self, tensor: Tensor, frozen: bool = False, scalar: bool = False):
        self.tensor = tensor
        self.frozen = frozen
        self.scalar = scalar

    @property
    def type_name(self) -> str:
        return "NkiScalar" if self.scalar else "VirtualRegister"

    def view(self) -> TensorView:
        return TensorView.whole(self.tensor)

    def __repr__(self) -> str:
        return f"{self.type_name}(%{self.tensor.name})"


def version_at_least(ip, version: str) -> bool:
    """Is the kernel's language NKI `version` or newer (False for Beta 1)?"""
    try:
        have = tuple(int(x) for x in ip.language.version.split("."))
    except ValueError:
        return False
    return have >= tuple(int(x) for x in version.split("."))


def new_register(ip, call, label: str, *, frozen=False, scalar=False, dtype="int32") -> Register:
    """A new register: int32, or an int64 pair of registers (an `nl.int64` NkiScalar)."""
    tensor = ip.builder.alloc("reg", dtype, (1,), label, ip.loc(call.node))
    for att in ip.attempts:
        att.tensors.add(tensor)
    return Register(tensor, frozen, scalar)


def _int32(ip, v, what: str, node) -> int:
    v = ip.need_int(v, what)
    if not INT32_MIN <= v <= INT32_MAX:
        raise UserError(
            "err_dynamic_loop_bound",
            f"{what} {v} does not fit in 32 bits",
            node,
            "registers and dynamic loop bounds are signed 32-bit integers",
        )
    return v


def _register_or_int(ip, v, what: str, node, wide: bool = False) -> Register | int:
    """A register or an int32 immediate; an int64 NkiScalar only where `wide` (scalar
    arithmetic and stores: loop bounds and register instructions are 32-bit)."""
    if isinstance(v, Register):
        if v.tensor.dtype == "int64" and not wide:
            raise UserError(
                "err_dynamic_loop_bound",
                f"{what} is an int64 NkiScalar; it must be 32-bit",
                node,
                "loop bounds and registers are 32-bit: load the value with an int32 tensor",
            )
        return v
    if isinstance(v, TensorView):
        raise UserError(
            "err_invalid_argument",
            f"{what} must be an integer or a register, got a tensor",
            node,
            "load the value into a register with nisa.register_load (or nisa.scalar_load)",
        )
    return _int32(ip, v, what, node)


def _operand(v: Register | int):
    return whole(v.tensor) if isinstance(v, Register) else Imm(v)


def _writable(v, what: str, node) -> Register:
    if not isinstance(v, Register):
        raise UserError(
            "err_invalid_argument",
            f"{what} must be a register (nisa.register_alloc), got {type_name(v)}",
            node,
        )
    if v.frozen:
        raise UserError(
            "err_write_to_loop_register",
            "the induction variable of a dynamic loop is read-only",
            node,
            "copy it into a register of your own with nisa.register_move and change that one",
        )
    return v


def _scalar_tensor(v, what: str, node, emit_hint: str, wide: bool = False) -> TensorView:
    """A one-element integer tensor in SBUF or HBM (register_load / register_store); `wide`
    allows `nl.int64` (NkiScalar)."""
    if not isinstance(v, TensorView):
        raise UserError(
            "err_invalid_argument", f"{what} must be a tensor, got {type_name(v)}", node
        )
    if v.size != 1 or v.buffer not in ("sbuf", "hbm", "shared_hbm"):
        raise UserError(
            "err_invalid_argument",
            f"{what} must be a one-element tensor in SBUF or HBM, got {v.buffer} {list(v.shape)}",
            node,
            emit_hint,
        )
    info = DTYPES[v.dtype]
    if not info.is_int or info.itemsize > (8 if wide else 4):
        raise UserError(
            "err_invalid_argument",
            f"{what} must hold an integer of at most 32 bits, got {v.dtype}",
            node,
            "registers are 32-bit integers; use nl.int32",
        )
    return v


# ---- nisa.register_* (NKI 0.3-0.6, still present in 0.7) -------------------------------------


def register_alloc(ip, call, x=None):
    reg = new_register(ip, call, "reg")
    if isinstance(x, TensorView):  # the NKI Library initialises from a one-element tile
        t = _scalar_tensor(x, "x", call.arg_node(0, "x"), "e.g. a [1, 1] int32 SBUF tile")
        ip.emit("register_load", {"dst": whole(reg.tensor), "src": t.to_ap()}, {}, call)
    elif x is not None:
        value = _int32(ip, x, "the initial value", call.arg_node(0, "x"))
        ip.emit("register_move", {"dst": whole(reg.tensor), "src": Imm(value)}, {}, call)
    return reg


def register_move(ip, call, dst, src):
    reg = _writable(dst, "dst", call.arg_node(0, "dst"))
    value = _register_or_int(ip, src, "src", call.arg_node(1, "src"))
    ip.emit("register_move", {"dst": whole(reg.tensor), "src": _operand(value)}, {}, call)


def register_load(ip, call, dst, src):
    reg = _writable(dst, "dst", call.arg_node(0, "dst"))
    t = _scalar_tensor(src, "src", call.arg_node(1, "src"), "e.g. a [1, 1] int32 SBUF tile")
    ip.emit("register_load", {"dst": whole(reg.tensor), "src": t.to_ap()}, {}, call)


def register_store(ip, call, dst, src):
    t = _scalar_tensor(dst, "dst", call.arg_node(0, "dst"), "e.g. a [1, 1] int32 SBUF tile")
    if not isinstance(src, Register):
        raise UserError(
            "err_invalid_argument",
            f"src must be a register, got {type_name(src)}",
            call.arg_node(1, "src"),
        )
    ip.emit("register_store", {"dst": t.to_ap(), "src": whole(src.tensor)}, {}, call)


# ---- NkiScalar (NKI 0.7) -----------------------------------------------------------------------


def scalar_load(ip, call, src):
    t = _scalar_tensor(src, "src", call.arg_node(0, "src"), "e.g. a [1, 1] int32 tensor", True)
    dtype = "int64" if t.dtype == "int64" else "int32"
    reg = new_register(ip, call, "scalar", scalar=True, dtype=dtype)
    ip.emit("register_load", {"dst": whole(reg.tensor), "src": t.to_ap()}, {}, call)
    return reg


def scalar_store(ip, call, dst, value):
    t = _scalar_tensor(dst, "dst", call.arg_node(0, "dst"), "e.g. a [1, 1] int32 tensor", True)
    v = _register_or_int(ip, value, "value", call.arg_node(1, "value"), wide=True)
    if isinstance(v, int):
        reg = new_register(ip, call, "scalar", scalar=True)
        ip.emit("register_move", {"dst": whole(reg.tensor), "src": Imm(v)}, {}, call)
        v = reg
    ip.emit("register_store", {"dst": t.to_ap(), "src": whole(v.tensor)}, {}, call)


def binop(ip, symbol: str, a, b, call):
    """`a <op> b` where one side is a register: traced NkiScalar arithmetic (NKI 0.7), an
    error for a VirtualRegister (it has no arithmetic) and for comparisons (their result
    cannot steer specialisation)."""
    regs = [x for x in (a, b) if isinstance(x, Register)]
    node = call.node
    wide = any(r.tensor.dtype == "int64" for r in regs)
    if symbol in SCALAR_OPS and all(r.scalar for r in regs):
        x = _register_or_int(ip, a, "the left operand", node, wide=True)
        y = _register_or_int(ip, b, "the right operand", node, wide=True)
        dtype = "int64" if wide else "int32"
        out = new_register(ip, call, "scalar", scalar=True, dtype=dtype)
        operands = {"dst": whole(out.tensor), "data0": _operand(x), "data1": _operand(y)}
        ip.emit("register_alu", operands, {"op": SCALAR_OPS[symbol]}, call)
        return out
    if symbol in SCALAR_OPS:
        raise UserError(
            "err_dynamic_control_flow_not_supported",
            f"'{symbol}' on a VirtualRegister: registers have no arithmetic before NKI 0.7",
            node,
            "compute the value in an int32 SBUF tile and nisa.register_load it, or use "
            "NkiScalar (nisa.scalar_load) with --nki 0.7",
        )
    if wide:
        raise UserError(
            "err_int64_scalar_operator",
            f"'{symbol}' on an int64 NkiScalar: only +, - and * exist at 64 bits (NKI 0.7)",
            node,
            "compare int32 scalars, or compute the condition in a tensor",
        )
    raise UserError(
        "err_dynamic_control_flow_not_supported",
        f"'{symbol}' on a {regs[0].type_name}: its value is known only at run time, so the "
        "result cannot be used while specialising",
        node,
        "branch on run-time values with nl.while_loop, or select data with "
        "nisa.tensor_copy_predicated",
    )


def truth_error(reg: Register) -> UserError:
    return UserError(
        "err_dynamic_control_flow_not_supported",
        f"the truth value of a {reg.type_name} is known only at run time",
        None,
        "loop on it with nl.while_loop (or `while reg:` before NKI 0.7)",
    )


# ---- dynamic loops -----------------------------------------------------------------------------


class DynRange:
    """`nl.dynamic_range(start, stop=None, step=1)`: iterated by a `for` statement."""

    def __init__(self, start, stop, step: int):
        self.start, self.stop, self.step = start, stop, step


def dynamic_range(ip, call, start, stop=None, step=1):
    if stop is None:
        start, stop = 0, start
    return DynRange(*_bounds(ip, call, start, stop, step, ("start", "stop"), 2))


def _bounds(ip, call, lower, upper, step, names, step_index: int):
    lo = _register_or_int(ip, lower, names[0], call.arg_node(0, names[0]))
    hi = _register_or_int(ip, upper, names[1], call.arg_node(1, names[1]))
    where = call.arg_node(step_index, "step")
    if isinstance(step, Register):
        raise UserError(
            "err_dynamic_loop_bound",
            "the step of a dynamic loop must be a compile-time integer, not a register",
            where,
            "the hardware loop encodes the step as an immediate",
        )
    step = _int32(ip, step, "the step", where)
    if step <= 0:
        raise UserError(
            "err_dynamic_loop_bound", f"the step of a dynamic loop must be positive, got {step}",
            where,
        )  # fmt: skip
    return lo, hi, step


def _bound(v):
    return v.tensor if isinstance(v, Register) else v


def _enter(ip, node) -> None:
    """A dynamic loop inside a loop kept symbolic: that loop is unrolled instead (the backend
    joins the engine queues around a dynamic loop, once per execution). Inside
    `nl.no_reorder()` it is an error, as in NKI (nki/deep-dives/nki-dynamic-loops.rst)."""
    if getattr(ip, "no_reorder_depth", 0):
        raise UserError(
            "err_dynamic_control_flow_not_supported",
            "a dynamic loop cannot be inside `with nl.no_reorder():`",
            node,
            "put the no_reorder block inside the loop body instead",
        )
    if ip.attempts:
        raise SymbolicAbort(ip.attempts[-1], "the body holds a dynamic loop")


def run_for(ip, node: ast.For, rng: DynRange) -> None:
    """`for i in nl.dynamic_range(...)`: the body specialised once inside a `DynLoop`."""
    _enter(ip, node)
    if not version_at_least(ip, "0.4") and not isinstance(node.target, ast.Name):
        raise UserError("err_unsupported_syntax", "unpacking a dynamic_range item", node.target)
    call = _Site(node)
    counter = new_register(ip, call, _target_name(node.target), frozen=True)
    with ip.builder.dynamic_loop(
        "for", _bound(rng.start), _bound(rng.stop), rng.step, counter.tensor, None,
        ip.loop_header(node),
    ):  # fmt: skip
        ip.assign(node.target, counter)
        _body(ip, node.body)
    ip.exec_block(node.orelse)


def run_while(ip, node: ast.While, cond: Register) -> None:
    """`while reg:` (NKI 0.3-0.6): a true while on the register, its body specialised once."""
    if version_at_least(ip, "0.7"):
        raise UserError(
            "err_unsupported_api",
            "`while reg:` on a VirtualRegister was removed in NKI 0.7",
            node.test,
            "use nl.while_loop(init, body_fun)",
        )
    if version_at_least(ip, "0.6"):
        ip._emit_diag(
            Diagnostic(
                "nkic_deprecated_api",
                "`while reg:` is deprecated since NKI 0.6",
                ip.loc(node.test),
                "warning",
                "use nl.while_loop(init, body_fun)",
            )
        )
    _enter(ip, node)
    with ip.builder.dynamic_loop("while", 0, None, 1, None, cond.tensor, ip.loc(node)):
        _body(ip, node.body)
    ip.exec_block(node.orelse)


def _body(ip, body: list[ast.stmt]) -> None:
    from .values import BreakSignal, ContinueSignal, ReturnSignal

    try:
        ip.exec_block(body)
    except ContinueSignal:
        pass
    except (BreakSignal, ReturnSignal):
        raise UserError(
            "err_dynamic_control_flow_not_supported",
            "break/return inside a dynamic loop: its trip count is decided at run time",
            None,
            "leave a while loop by making its condition register zero",
        ) from None


def _target_name(target: ast.AST) -> str:
    return target.id if isinstance(target, ast.Name) and target.id != "_" else "iv"


class _Site:
    """A call site for a statement (what `new_register` and `emit` need)."""

    def __init__(self, node: ast.AST):
        self.node = node


def fori_loop(ip, call, lower, upper, body_fun, step=1):
    """`nl.fori_loop(lower, upper, body_fun, step=1)` (NKI 0.6+): `body_fun(i)` for i in
    range(lower, upper, step), the bounds read at run time. `i` is an NkiScalar in 0.7 unless
    a bound is a VirtualRegister."""
    lo, hi, step = _bounds(ip, call, lower, upper, step, ("lower", "upper"), 3)
    _enter(ip, call.node)
    scalar = version_at_least(ip, "0.7") and not any(
        isinstance(b, Register) and not b.scalar for b in (lo, hi)
    )
    counter = new_register(ip, call, "i", frozen=True, scalar=scalar)
    with ip.builder.dynamic_loop(
        "for", _bound(lo), _bound(hi), step, counter.tensor, None, ip.loc(call.node)
    ):
        result = ip.call(body_fun, [counter], {}, call)
    if result is not None:
        raise UserError(
            "err_invalid_argument",
            f"the body of nl.fori_loop must return None, got {type_name(result)}",
            call.arg_node(2, "body_fun"),
            "carry loop state through SBUF/HBM tensors",
        )


def while_loop(ip, call, init, body_fun):
    """`nl.while_loop(init, body_fun)` (NKI 0.6+): `r = init; while r != 0: r = body_fun(r)`,
    tested before the first iteration."""
    if not isinstance(init, Register):
        raise UserError(
            "err_invalid_argument",
            f"init must be a register, got {type_name(init)}",
            call.arg_node(0, "init"),
            "allocate it with nisa.register_alloc and load it with nisa.register_load",
        )
    _enter(ip, call.node)
    cond = new_register(ip, call, "cond", scalar=init.scalar)
    ip.emit("register_move", {"dst": whole(cond.tensor), "src": whole(init.tensor)}, {}, call)
    with ip.builder.dynamic_loop("while", 0, None, 1, None, cond.tensor, ip.loc(call.node)):
        result = ip.call(body_fun, [cond], {}, call)
        if not isinstance(result, Register):
            raise UserError(
                "err_invalid_argument",
                f"the body of nl.while_loop must return the next condition register, got "
                f"{type_name(result)}",
                call.arg_node(1, "body_fun"),
            )
        if result.tensor is not cond.tensor:
            operands = {"dst": whole(cond.tensor), "src": whole(result.tensor)}
            ip.emit("register_move", operands, {}, call)
