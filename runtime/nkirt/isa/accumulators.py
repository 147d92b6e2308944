"""Per-lane fp32 accumulator registers of ScalarE and VectorE, kept in `ctx.state`, and the
`reduce_cmd` protocol that drives them."""

from __future__ import annotations

import numpy as np

from nkirt.isa import alu

LANES = 128
ACCUMULATOR_OPS = ("add", "multiply", "maximum", "minimum", "abs_max", "abs_min")
REDUCE_CMDS = ("idle", "reset", "reduce", "reset_reduce", "load_reduce")


def registers(ctx, engine: str) -> np.ndarray:
    """The 128 fp32 accumulators of `engine` ("scalar" or "vector"), zero at power-on."""
    key = f"{engine}_accumulators"
    if key not in ctx.state:
        ctx.state[key] = np.zeros(LANES, dtype=np.float32)
    return ctx.state[key]


def first_lane(attrs) -> int:
    """The first accumulator lane of an instruction: its tile's first physical partition when
    the executor passes it (`attrs["_first_partition"]`), else 0 (lanes relative to the tile;
    docs/numerics.md §5)."""
    return int(attrs.get("_first_partition", 0) or 0)


def fold(op: str, start: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Fold each row of fp32 `rows` (P, n) into `start` (P,), one element at a time in
    order, as the accumulator hardware does: acc = op(acc, x)."""
    table = np.concatenate([start.reshape(-1, 1).astype(np.float32), rows], axis=1)
    if op in alu.SEQUENTIAL:
        with np.errstate(all="ignore"):
            return alu.SEQUENTIAL[op].accumulate(table, axis=1)[:, -1]
    if op in ("maximum", "minimum"):
        return getattr(np, op).reduce(table, axis=1)
    if op in ("abs_max", "abs_min"):
        magnitude = np.abs(table)
        # the later operand wins ties, so look for the last extreme element
        reversed_magnitude = magnitude[:, ::-1]
        pick = (
            reversed_magnitude.argmax(axis=1)
            if op == "abs_max"
            else reversed_magnitude.argmin(axis=1)
        )
        return table[np.arange(table.shape[0]), table.shape[1] - 1 - pick]
    raise ValueError(f"unsupported accumulator op {op!r}")


def apply_reduce_cmd(
    ctx,
    engine: str,
    instruction: str,
    cmd: str,
    op: str,
    rows: np.ndarray | None,
    init=None,
    first: int = 0,
) -> np.ndarray:
    """Run `cmd` on lanes first..first+P-1 of `engine`'s accumulators with `rows` (P, n) fp32 and
    return their new values (P,).

    idle leaves them alone; reset sets them to `op`'s identity; reduce folds `rows` into them;
    reset_reduce folds into the identity; load_reduce folds into `init` (scalar or (P,))."""
    if cmd not in REDUCE_CMDS:
        raise ValueError(f"{instruction}: unsupported reduce_cmd {cmd!r}")
    if op not in ACCUMULATOR_OPS:
        raise ValueError(f"{instruction}: unsupported reduce_op {op!r}")
    lanes = rows.shape[0]
    if not 0 <= first <= LANES - lanes:
        raise ValueError(f"{instruction}: lanes {first}..{first + lanes - 1} exceed {LANES}")
    acc = registers(ctx, engine)[first : first + lanes]
    identity = np.full(lanes, alu.REDUCE_IDENTITY[op], dtype=np.float32)
    if cmd == "idle":
        return acc.copy()
    if cmd == "reset":
        acc[:] = identity
        return identity
    if cmd == "reduce":
        start = acc.copy()
    elif cmd == "reset_reduce":
        start = identity
    else:
        if init is None:
            raise ValueError(f"{instruction}: reduce_cmd load_reduce needs an initial value")
        start = np.broadcast_to(np.asarray(init, dtype=np.float32).reshape(-1), (lanes,))
    acc[:] = fold(op, start, rows)
    return acc.copy()
