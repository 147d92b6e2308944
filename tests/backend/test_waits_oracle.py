"""Every conflicting pair of instruction instances is ordered by waits (brute-force oracle)."""

from __future__ import annotations

import random

import pytest

from nkic.backend.schedule import schedule

from . import oracle
from .irkit import blocked_matmul, lowered
from .oracle import check_waits

PARAMS = '  param %a : hbm bfloat16[64, 64] "a"\n  param %b : hbm bfloat16[64, 128] "b"\n'


def T(name: str, p: int, f: int, offset: str = "0", row: int | None = None) -> str:
    return f"%{name}[{offset}; [{row or f}, {p}], [1, {f}]]"


MATMUL = f"""
  %o = alloc shared_hbm bfloat16[32, 128] "o" output
  for $m = 0 to 2 step 1 affine {{
    for $n = 0 to 2 step 1 affine {{
      %acc = alloc psum float32[16, 64] "acc"
      for $k = 0 to 4 step 1 affine {{
        %l = alloc sbuf bfloat16[16, 16] "l"
        %r = alloc sbuf bfloat16[16, 64] "r"
        dma_copy(dst={T("l", 16, 16)}, src={T("a", 16, 16, "1024*$k + 16*$m", 64)}) {{}}
        dma_copy(dst={T("r", 16, 64)}, src={T("b", 16, 64, "2048*$k + 64*$n", 128)}) {{}}
        nc_matmul(dst={T("acc", 16, 64)}, stationary={T("l", 16, 16)}, moving={T("r", 16, 64)}) {{}}
      }}
      %s = alloc sbuf bfloat16[16, 64] "s"
      tensor_copy(dst={T("s", 16, 64)}, src={T("acc", 16, 64)}) {{}}
      dma_copy(dst={T("o", 16, 64, "2048*$m + 64*$n", 128)}, src={T("s", 16, 64)}) {{}}
    }}
  }}"""

HOISTED = f"""
  %o = alloc shared_hbm bfloat16[32, 128] "o" output
  %acc = alloc sbuf float32[16, 128] "acc"
  memset(dst={T("acc", 16, 128)}) {{value=0.0}}
  for $i = 0 to 3 step 1 sequential {{
    %x = alloc sbuf bfloat16[16, 128] "x"
    dma_copy(dst={T("x", 16, 128)}, src={T("b", 16, 128, "2048*$i", 128)}) {{}}
    for $j = 0 to 2 step 1 affine {{
      %y = alloc sbuf float32[16, 64] "y"
      activation(dst={T("y", 16, 64)}, data={T("x", 16, 64, "64*$j", 128)}) {{op="exp"}}
      tensor_tensor(dst={T("acc", 16, 64, "64*$j", 128)}, data1={T("acc", 16, 64, "64*$j", 128)}, data2={T("y", 16, 64)}) {{op="add"}}
    }}
  }}
  %z = alloc sbuf bfloat16[16, 128] "z"
  tensor_copy(dst={T("z", 16, 128)}, src={T("acc", 16, 128)}) {{}}
  dma_copy(dst={T("o", 16, 128)}, src={T("z", 16, 128)}) {{}}"""

REUSE = f"""
  %o = alloc shared_hbm bfloat16[32, 128] "o" output
  for $i = 0 to 2 step 1 affine {{
    %x = alloc sbuf bfloat16[32, 128] "x"
    dma_copy(dst={T("x", 32, 128)}, src={T("b", 32, 128)}) {{}}
    %y = alloc sbuf bfloat16[32, 128] "y"
    tensor_scalar(dst={T("y", 32, 128)}, data={T("x", 32, 128)}, operand0=2.0) {{op0="multiply"}}
    dma_copy(dst={T("o", 32, 128)}, src={T("y", 32, 128)}) {{}}
  }}
  %w = alloc sbuf bfloat16[32, 128] "w"
  dma_copy(dst={T("w", 32, 128)}, src={T("b", 32, 128, "4096")}) {{}}
  activation(dst={T("w", 32, 128)}, data={T("w", 32, 128)}) {{op="exp"}}
  dma_copy(dst={T("o", 32, 128)}, src={T("w", 32, 128)}) {{}}"""


@pytest.mark.parametrize("body", [MATMUL, HOISTED, REUSE], ids=["matmul", "hoisted", "reuse"])
def test_every_conflict_is_ordered(body):
    k = lowered(body, PARAMS, "%o")
    assert any(t.rotate for t in k.tensors())
    assert check_waits(k) == []


def test_oracle_catches_a_missing_wait(monkeypatch):
    def without_matmul_waits(kernel):
        s = schedule(kernel)
        for x in s.insts:
            if x.inst.opcode == "nc_matmul":
                x.waits = []
            # one queue per load, which orders its instances without the matmul's waits
            x.queues = 1
            x.waits = [w for w in x.waits if w[0] != x.id]
        return s

    monkeypatch.setattr(oracle, "schedule", without_matmul_waits)
    problems = check_waits(lowered(MATMUL, PARAMS, "%o"))
    assert problems and "nc_matmul" in problems[0]


def test_per_iteration_skips_are_exact(monkeypatch):
    # waiting one instance older than any per-iteration skip says is a race
    def one_older(kernel):
        s = schedule(kernel)
        for x in s.insts:
            x.waits = [(p, skip if isinstance(skip, int) else skip + 1) for p, skip in x.waits]
        return s

    params, body = blocked_matmul(kt=3, p=2, tm=2, tn=4)
    k = lowered(body, params, "%o")
    assert check_waits(k) == []
    monkeypatch.setattr(oracle, "schedule", one_older)
    problems = check_waits(k)
    assert any("dma_copy" in p and "nc_matmul" in p for p in problems)
    assert any(p.startswith("#") and "nc_matmul" in p.split(" races")[0] for p in problems)


def _instruction(kind: str, pad: str, view, hbm) -> str:
    """One instruction line of a random kernel; `view()` draws an on-chip window, `hbm()` an
    HBM one (in the order the operands are written)."""
    if kind == "load":
        return f"{pad}dma_copy(dst={view()}, src=%a{hbm()}) {{}}"
    if kind == "store":
        return f"{pad}dma_copy(dst=%o{hbm()}, src={view()}) {{}}"
    if kind == "copy":
        return f"{pad}tensor_copy(dst={view()}, src={view()}) {{}}"
    if kind == "act":
        return f'{pad}activation(dst={view()}, data={view()}) {{op="exp"}}'
    if kind == "memset":
        return f"{pad}memset(dst={view()}) {{value=0.0}}"
    if kind == "add":
        return f'{pad}tensor_tensor(dst={view()}, data1={view()}, data2={view()}) {{op="add"}}'
    return f'{pad}tensor_copy(dst={view()}, src={view()}) {{engine="gpsimd"}}'


def _nest(rng, depth: int, state, alloc, inst, header, deepest: int, p_loop: float, count: int):
    """Tiles, then 2..`count` items at `depth`: loops (below `deepest`, with probability
    `p_loop`) holding a nest of their own, or instructions. `state` is (lines, tiles, loops);
    `header(depth)` draws a loop: its `for` line and its entry in `loops`."""
    lines, tiles, loops = state
    for _ in range(rng.randint(1, 2)):
        alloc(depth)
    for _ in range(rng.randint(2, count)):
        if depth < deepest and rng.random() < p_loop:
            line, entry = header(depth)
            lines.append(line)
            loops.append(entry)
            tiles.append([])
            _nest(rng, depth + 1, state, alloc, inst, header, deepest, p_loop, count)
            tiles.pop()
            loops.pop()
            lines.append(f"{'  ' * depth}  }}")
        else:
            inst(depth)


def _random_kernel(seed: int) -> str:
    """A small random kernel: tiles inside and outside two loop levels, accessed through
    random windows by instructions on every queue kind."""
    rng = random.Random(seed)
    lines: list[str] = ['  %o = alloc shared_hbm float32[64, 64] "o" output']
    tiles: list[list[tuple[str, int, int]]] = [[]]
    loops: list[tuple[str, int]] = []
    counter = iter(range(1000))

    def alloc(depth: int) -> None:
        name = f"t{next(counter)}"
        buffer = rng.choice(["sbuf", "sbuf", "psum"])
        p, f = rng.choice([8, 32, 64]), rng.choice([8, 16])
        lines.append(f'{"  " * depth}  %{name} = alloc {buffer} float32[{p}, {f}] "{name}"')
        tiles[-1].append((name, p, f))

    def window(p: int, f: int) -> tuple[str, int, int]:
        wp, wf = rng.randint(1, p), rng.randint(1, f)
        var = rng.choice(loops) if loops and rng.random() < 0.6 else None
        slack = f - wf - (var[1] - 1 if var else 0)
        if slack < 0:
            var, slack = None, f - wf
        off = f"{rng.randint(0, p - wp) * f + rng.randint(0, slack)}"
        return (f"${var[0]} + {off}" if var else off), wp, wf

    def view(visible) -> str:
        name, p, f = rng.choice(visible)
        off, wp, wf = window(p, f)
        return f"%{name}[{off}; [{f}, {wp}], [1, {wf}]]"

    def hbm() -> str:
        off, wp, wf = window(64, 64)
        return f"[{off}; [64, {wp}], [1, {wf}]]"

    def inst(depth: int) -> None:
        visible = [t for level in tiles for t in level]
        if visible:
            kind = rng.choice(["load", "store", "copy", "act", "memset", "add", "gpsimd"])
            lines.append(_instruction(kind, "  " * depth + "  ", lambda: view(visible), hbm))

    def header(depth: int):
        var, trips = f"l{next(counter)}", rng.randint(2, 3)
        mode = rng.choice(["affine", "sequential"])
        return f"{'  ' * depth}  for ${var} = 0 to {trips} step 1 {mode} {{", (var, trips)

    state = (lines, tiles, loops)
    _nest(rng, 0, state, alloc, inst, header, deepest=2, p_loop=0.25, count=5)
    return "\n".join(lines)


@pytest.mark.parametrize("seed", range(40))
def test_random_kernels_order_every_conflict(seed):
    k = lowered(_random_kernel(seed), '  param %a : hbm float32[64, 64] "a"\n', "%o")
    assert check_waits(k) == []


def _tiled_kernel(seed: int) -> str:
    """A small random blocked kernel: tiles filled and read slice by slice, the slices
    indexed by loop variables with tile-sized strides (as in blocked matmuls), loops with
    starts and steps other than 0 and 1, three levels deep."""
    rng = random.Random(seed)
    lines: list[str] = ['  %o = alloc shared_hbm float32[64, 64] "o" output']
    tiles: list[list[tuple[str, int, int]]] = [[]]
    loops: list[tuple[str, int, int]] = []  # (var, first, last)
    counter = iter(range(1000))

    def alloc(depth: int) -> None:
        name = f"t{next(counter)}"
        buffer = rng.choice(["sbuf", "sbuf", "sbuf", "psum"])
        p, f = rng.choice([4, 8, 32]), rng.choice([8, 16, 24])
        lines.append(f'{"  " * depth}  %{name} = alloc {buffer} float32[{p}, {f}] "{name}"')
        tiles[-1].append((name, p, f))

    def term(extent: int, width: int, avoid: dict[str, int]) -> dict[str, int]:
        """{var: coeff, "": const}: an offset keeping [0, extent) for every value of var (not
        a variable of `avoid`) with 0 <= const < extent, so that the sum splits back exactly
        into partition and in-partition parts."""
        for _ in range(4):
            if not loops or rng.random() < 0.25:
                break
            var, first, last = rng.choice(loops)
            if var in avoid:
                continue
            coeff = rng.choice([width, width, 1, 2 * width, -width])
            lo, hi = min(coeff * first, coeff * last), max(coeff * first, coeff * last)
            c_lo, c_hi = max(0, -lo), min(extent - 1, extent - width - hi)
            if c_lo <= c_hi:
                return {var: coeff, "": rng.randint(c_lo, c_hi)}
        return {"": rng.randint(0, extent - width)}

    def offset(row: int, part: dict[str, int], free: dict[str, int]) -> str:
        total: dict[str, int] = {}
        for scale, t in ((row, part), (1, free)):
            for v, c in t.items():
                total[v] = total.get(v, 0) + scale * c
        const = total.pop("")
        text = " + ".join(f"{c}*${v}" for v, c in total.items() if c) + f" + {const}"
        return text.lstrip(" +").replace("+ -", "- ")

    def view(visible) -> str:
        name, p, f = rng.choice(visible)
        wp, wf = rng.choice([1, p // 4, p // 2, p]), rng.choice([1, 4, 8, f])
        part = term(p, wp, {})
        return f"%{name}[{offset(f, part, term(f, wf, part))}; [{f}, {wp}], [1, {wf}]]"

    def hbm() -> str:
        wp, wf = rng.choice([4, 8]), rng.choice([4, 8])
        part = term(64, wp, {})
        return f"[{offset(64, part, term(64, wf, part))}; [64, {wp}], [1, {wf}]]"

    def inst(depth: int) -> None:
        visible = [t for level in tiles for t in level]
        if visible:
            kind = rng.choice(["load", "load", "store", "copy", "act", "add", "gpsimd"])
            lines.append(_instruction(kind, "  " * depth + "  ", lambda: view(visible), hbm))

    def header(depth: int):
        var, trips = f"l{next(counter)}", rng.randint(2, 3)
        start, step = rng.choice([(0, 1), (0, 1), (1, 1), (0, 2), (3, 2)])
        mode = rng.choice(["affine", "sequential"])
        stop = start + step * trips
        line = f"{'  ' * depth}  for ${var} = {start} to {stop} step {step} {mode} {{"
        return line, (var, start, start + step * (trips - 1))

    state = (lines, tiles, loops)
    _nest(rng, 0, state, alloc, inst, header, deepest=3, p_loop=0.45, count=4)
    return "\n".join(lines)


@pytest.mark.parametrize("seed", range(60))
def test_random_tiled_kernels_order_every_conflict(seed):
    k = lowered(_tiled_kernel(seed), '  param %a : hbm float32[64, 64] "a"\n', "%o")
    assert check_waits(k) == []


def test_tiled_kernels_exercise_per_iteration_skips():
    per_iteration = 0
    for seed in range(60):
        k = lowered(_tiled_kernel(seed), '  param %a : hbm float32[64, 64] "a"\n', "%o")
        waits = (skip for x in schedule(k).insts for _, skip in x.waits)
        per_iteration += any(not isinstance(skip, int) for skip in waits)
    assert per_iteration >= 10
