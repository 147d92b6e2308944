"""Dynamic control flow end to end: registers, `nl.dynamic_range`, `while reg:`,
`nl.fori_loop`, `nl.while_loop` and NkiScalar arithmetic, compiled and run on the simulator
with trip counts read from input tensors, against numpy references."""

from __future__ import annotations

import re

import numpy as np
import pytest
from nkirt.errors import RuntimeFault
from nkirt.executor import Executor
from nkirt.neff import read_neff
from nkirt.run import execute

import nkic

HEADER = "import nki\nimport nki.isa as nisa\nimport nki.language as nl\n\n"

# out = a, then rows [128 i, 128 i + 128) of out = a + b for i < n (n read at run time)
FORI_ADD = """
@nki.jit
def dyn_add(a, b, n):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=a)
    n_sb = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=n_sb, src=n)
    count = nisa.scalar_load(n_sb)
    cols = a.shape[1]

    def body(i):
        row = i * 128
        x = nl.ndarray((128, cols), dtype=a.dtype, buffer=nl.sbuf)
        y = nl.ndarray((128, cols), dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=x, src=a.ap([[cols, 128], [1, cols]], scalar_offset=row))
        nisa.dma_copy(dst=y, src=b.ap([[cols, 128], [1, cols]], scalar_offset=row))
        nisa.tensor_tensor(dst=x, data1=x, data2=y, op=nl.add)
        nisa.dma_copy(dst=out.ap([[cols, 128], [1, cols]], scalar_offset=row), src=x)

    nl.fori_loop(0, count, body)
    return out
"""


def compile_source(tmp_path, source: str, *args, nki: str | None = None, **kwargs):
    path = tmp_path / "kernel.py"
    path.write_text(HEADER + source)
    return nkic.compile(path, *args, nki=nki, **kwargs)


def arrays(rows: int = 512, cols: int = 64, seed: int = 0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((rows, cols), np.float32) for _ in range(2))


def test_fori_loop_length_read_from_an_input(tmp_path):
    a, b = arrays()
    k = compile_source(tmp_path, FORI_ADD, a, b, np.zeros((1, 1), np.int32))
    latencies = []
    for n in (0, 1, 2, 4):
        got = k(a, b, np.array([[n]], np.int32))
        want = a.copy()
        want[: 128 * n] += b[: 128 * n]
        np.testing.assert_array_equal(got, want)
        latencies.append(k.profile["total_ns"])
    assert latencies == sorted(latencies) and len(set(latencies)) == 4


def test_no_race_for_any_trip_count_and_the_barriers_are_what_orders_it(tmp_path, monkeypatch):
    """The semaphore checker (happens-before over waits and queue order) finds no race for
    trip counts 0, 1, 2, 7; without the joins around the loop it does."""
    a, b = arrays(rows=1024)
    k = compile_source(tmp_path, FORI_ADD, a, b, np.zeros((1, 1), np.int32))
    for n in (0, 1, 2, 7):
        got = k(a, b, np.array([[n]], np.int32))
        np.testing.assert_array_equal(got[128 * n :], a[128 * n :])
    monkeypatch.setattr(Executor, "_barrier", lambda self: None)
    with pytest.raises(RuntimeFault, match="missing semaphore"):
        k(a, b, np.array([[2]], np.int32))


def test_timing_only_latency_grows_with_the_trip_count(tmp_path):
    a, b = arrays()
    k = compile_source(tmp_path, FORI_ADD, a, b, np.zeros((1, 1), np.int32))
    program = read_neff(k.neff)
    totals = [
        execute(
            program, {"a": a, "b": b, "n": np.array([[n]], np.int32)}, timing_only=True
        ).profile["total_ns"]
        for n in (1, 3)
    ]
    assert totals[1] > totals[0] * 2


OUT_OF_RANGE = """
@nki.jit
def rows(a, n):
    out = nl.ndarray((128, a.shape[1]), dtype=a.dtype, buffer=nl.shared_hbm)
    n_sb = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=n_sb, src=n)
    count = nisa.scalar_load(n_sb)
    x = nl.ndarray((128, a.shape[1]), dtype=a.dtype, buffer=nl.sbuf)

    def body(i):
        nisa.dma_copy(dst=x, src=a.ap([[a.shape[1], 128], [1, a.shape[1]]], scalar_offset=i * 128))

    nl.fori_loop(0, count, body)
    nisa.dma_copy(dst=out, src=x)
    return out
"""


def test_register_offset_out_of_range_at_run_time_names_line_and_iteration(tmp_path):
    a, _ = arrays(rows=512)
    k = compile_source(tmp_path, OUT_OF_RANGE, a, np.zeros((1, 1), np.int32))
    np.testing.assert_array_equal(k(a, np.array([[4]], np.int32)), a[384:])
    with pytest.raises(RuntimeFault) as e:
        k(a, np.array([[5]], np.int32))
    message = str(e.value)
    assert "out-of-bounds dynamic access" in message
    assert "kernel.py:15" in message and "[i=4]" in message


DYNAMIC_RANGE = """
@nki.jit
def col_sums(a, n):
    # acc += a[128 t : 128 t + 128] for t < n, the row offset kept in an SBUF tile
    out = nl.ndarray((128, a.shape[1]), dtype=a.dtype, buffer=nl.shared_hbm)
    reg = nisa.register_alloc()
    nisa.register_load(reg, n)
    start = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.memset(dst=start, value=0)
    acc = nl.ndarray((128, a.shape[1]), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=acc, value=0.0)
    for t in nl.dynamic_range(reg):
        x = nl.ndarray((128, a.shape[1]), dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=x, src=a.ap([[a.shape[1], 128], [1, a.shape[1]]], scalar_offset=start))
        nisa.tensor_tensor(dst=acc, data1=acc, data2=x, op=nl.add)
        nisa.tensor_scalar(dst=start, data=start, op0=nl.add, operand0=128)
    nisa.dma_copy(dst=out, src=acc)
    return out
"""


@pytest.mark.parametrize("nki", ["0.3", "0.5"])
def test_dynamic_range_with_register_load_from_hbm(tmp_path, nki):
    a, _ = arrays(rows=512, cols=32)
    k = compile_source(tmp_path, DYNAMIC_RANGE, a, np.zeros((1, 1), np.int32), nki=nki)
    for n in (0, 3):
        got = k(a, np.array([[n]], np.int32))
        want = a.reshape(4, 128, 32)[:n].sum(axis=0, dtype=np.float32)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


WHILE_COUNTDOWN = """
@nki.jit
def countdown(val, count):
    # acc = count * val, by a loop that decrements count until it is 0
    out = nl.ndarray((1, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    v = nl.ndarray((1, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=v, src=val)
    acc = nl.ndarray((1, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=acc, value=0.0)
    left = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=left, src=count)
    reg = nisa.register_alloc()
    nisa.register_load(reg, left)
{loop}
    nisa.dma_copy(dst=out, src=acc)
    return out
"""

WHILE_LOOP = """
    def body(r):
        nisa.tensor_tensor(dst=acc, data1=acc, data2=v, op=nl.add)
        nisa.tensor_scalar(dst=left, data=left, op0=nl.subtract, operand0=1)
        nisa.register_load(r, left)
        return r

    nl.while_loop(reg, body)"""

WHILE_REG = """
    reg = nisa.register_alloc(left[0, 0])
    while reg:
        nisa.tensor_tensor(dst=acc, data1=acc, data2=v, op=nl.add)
        nisa.tensor_scalar(dst=left, data=left, op0=nl.subtract, operand0=1)
        nisa.register_load(reg, left)"""


@pytest.mark.parametrize(
    ("loop", "nki"), [(WHILE_LOOP, "0.7"), (WHILE_LOOP, "0.6"), (WHILE_REG, "0.5")]
)
def test_while_countdown(tmp_path, loop, nki):
    val = np.array([[1.5]], np.float32)
    src = WHILE_COUNTDOWN.replace("{loop}", loop)
    k = compile_source(tmp_path, src, val, np.zeros((1, 1), np.int32), nki=nki)
    for n in (0, 1, 5):
        np.testing.assert_array_equal(k(val, np.array([[n]], np.int32)), [[1.5 * n]])


SCALAR_OFFSETS = """
@nki.jit
def strided_sum(a, n, k):
    # acc = sum over i < n of row (k * i + 1) of a, offsets computed with NkiScalar + and *
    out = nl.ndarray((1, a.shape[1]), dtype=nl.float32, buffer=nl.shared_hbm)
    n_sb = nl.ndarray((1, 2), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=n_sb[0:1, 0:1], src=n)
    nisa.dma_copy(dst=n_sb[0:1, 1:2], src=k)
    count = nisa.scalar_load(n_sb[0:1, 0:1])
    stride = nisa.scalar_load(n_sb[0:1, 1:2])
    acc = nl.ndarray((1, a.shape[1]), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=acc, value=0.0)
    row = nl.ndarray((1, a.shape[1]), dtype=nl.float32, buffer=nl.sbuf)

    def body(i):
        offset = stride * i + 1
        nisa.dma_copy(dst=row, src=a.ap([[a.shape[1], 1], [1, a.shape[1]]], scalar_offset=offset))
        nisa.tensor_tensor(dst=acc, data1=acc, data2=row, op=nl.add)

    nl.fori_loop(0, count - 0, body)
    nisa.dma_copy(dst=out, src=acc)
    return out
"""


def test_fori_loop_accumulates_with_nki_scalar_offsets(tmp_path):
    a, _ = arrays(rows=64, cols=16)
    one = np.zeros((1, 1), np.int32)
    k = compile_source(tmp_path, SCALAR_OFFSETS, a, one, one)
    for n, stride in ((0, 3), (4, 3), (7, 9)):
        got = k(a, np.array([[n]], np.int32), np.array([[stride]], np.int32))
        want = a[[stride * i + 1 for i in range(n)]].sum(axis=0, dtype=np.float32)
        np.testing.assert_allclose(got[0], want, rtol=1e-6, atol=1e-6)


WRAP = """
@nki.jit
def wrap(x):
    out = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.shared_hbm)
    s = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=s, src=x)
    v = nisa.scalar_load(s)
    nisa.scalar_store(s, v * 65536 * 65536 + v * 70000 - 5)
    nisa.dma_copy(dst=out, src=s)
    return out
"""


def test_nki_scalar_arithmetic_wraps_at_32_bits(tmp_path):
    k = compile_source(tmp_path, WRAP, np.zeros((1, 1), np.int32))
    for x in (3, 70000, -123456):
        want = np.array([[x * 65536 * 65536 + x * 70000 - 5]], np.int64).astype(np.int32)
        np.testing.assert_array_equal(k(np.array([[x]], np.int32)), want)


PER_CORE = """
@nki.jit
def per_core(a, n):
    # each core doubles its half of a's rows, n[core] row tiles of 128 rows
    core = nl.program_id(0)
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    half = a.shape[0] // 2
    cols = a.shape[1]
    s = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=s, src=n[core : core + 1, 0:1])
    count = nisa.scalar_load(s)
    x = nl.ndarray((128, cols), dtype=a.dtype, buffer=nl.sbuf)

    def body(i):
        row = i * 128 + core * half
        nisa.dma_copy(dst=x, src=a.ap([[cols, 128], [1, cols]], scalar_offset=row))
        nisa.tensor_tensor(dst=x, data1=x, data2=x, op=nl.add)
        nisa.dma_copy(dst=out.ap([[cols, 128], [1, cols]], scalar_offset=row), src=x)

    nl.fori_loop({lower}, count, body)
    return out
"""


def test_lnc2_cores_with_equal_trip_counts_run_and_different_ones_fault(tmp_path):
    a, _ = arrays(rows=512, cols=32)
    n = np.zeros((2, 1), np.int32)
    k = compile_source(tmp_path, PER_CORE.replace("{lower}", "0"), a, n, lnc=2)
    got = k(a, np.array([[2], [2]], np.int32))
    np.testing.assert_array_equal(got, 2 * a)
    with pytest.raises(RuntimeFault) as e:
        k(a, np.array([[2], [1]], np.int32))
    assert "control flow diverges" in str(e.value)
    # the core that arrives first at the loop's end is named first
    assert re.search(
        r"ran (1 iterations on core 1 but 2 on core 0|2 iterations on core 0 but 1 on core 1)",
        str(e.value),
    )


def test_lnc2_divergent_immediate_bounds_are_found_at_compile_time(tmp_path):
    a, _ = arrays(rows=512, cols=32)
    path = tmp_path / "kernel.py"
    path.write_text(HEADER + PER_CORE.replace("{lower}", "core").replace("count, body", "2, body"))
    diags = nkic.check(path, lnc=2, a=a, n=np.zeros((2, 1), np.int32))
    assert [d.code for d in diags] == ["nkic_lnc_divergent_control_flow"]
    assert "dynamic loop of 2 iteration(s)" in diags[0].message


WIDE = """
@nki.jit
def wide(x, n):
    out = nl.ndarray((1, 1), dtype=nl.int64, buffer=nl.shared_hbm)
    v = nisa.scalar_load(x)
    nisa.scalar_store(out, v * 4 + 7 - v)
    return out
"""


def test_int64_scalars_compute_at_64_bits_and_wrap_there(tmp_path):
    k = compile_source(tmp_path, WIDE, np.zeros((1, 1), np.int64), np.zeros((1, 1), np.int32))
    for x in (3_000_000_000, -(2**40), 2**62):
        want = np.array([[x * 3 + 7]], dtype=object)
        want = ((want + 2**63) % 2**64 - 2**63).astype(np.int64)
        got = k(np.array([[x]], np.int64), np.zeros((1, 1), np.int32))
        np.testing.assert_array_equal(got, want)


def test_int64_bounds_and_comparisons_are_rejected(tmp_path):
    bound = WIDE.replace(
        "nisa.scalar_store(out, v * 4 + 7 - v)",
        "def body(i):\n        pass\n\n    nl.fori_loop(0, v, body)",
    )
    path = tmp_path / "kernel.py"
    path.write_text(HEADER + bound)
    (d,) = nkic.check(path, x=np.zeros((1, 1), np.int64), n=np.zeros((1, 1), np.int32))
    assert d.code == "err_dynamic_loop_bound" and "32-bit" in d.message
    path.write_text(HEADER + WIDE.replace("v * 4 + 7 - v", "v * (v == 4)"))
    (d,) = nkic.check(path, x=np.zeros((1, 1), np.int64), n=np.zeros((1, 1), np.int32))
    assert d.code == "err_int64_scalar_operator"
    for nki in ("0.5", "0.6"):  # nl.int64 and NkiScalar came with NKI 0.7
        diags = nkic.check(
            path, x=nkic.TensorSpec((1, 1), "int32"), n=np.zeros((1, 1), np.int32), nki=nki
        )
        assert {d.code for d in diags} == {"err_unknown_api"}
        assert "has no attribute 'int64'" in diags[0].message


def test_register_offsets_with_known_values_are_checked_at_compile_time(tmp_path):
    """A counter with integer bounds, through + and *, gives a known range: an access past
    the tensor for its last value is a compile-time error; data-dependent ones are not."""
    a, _ = arrays(rows=512)
    src = OUT_OF_RANGE.replace("nl.fori_loop(0, count, body)", "nl.fori_loop(0, {n}, body)")
    path = tmp_path / "kernel.py"
    path.write_text(HEADER + src.replace("{n}", "5"))
    (d,) = nkic.check(path, a=a, n=np.zeros((1, 1), np.int32))
    assert (d.code, d.loc.line) == ("err_tensor_access_out_of_bound", 15)
    assert "at scalar_offset 512 (the register takes [0, 512])" in d.message
    path.write_text(HEADER + src.replace("{n}", "4"))
    assert nkic.check(path, a=a, n=np.zeros((1, 1), np.int32)) == []
    path.write_text(HEADER + OUT_OF_RANGE)  # the bound is data: checked at run time only
    assert nkic.check(path, a=a, n=np.zeros((1, 1), np.int32)) == []


@pytest.mark.parametrize(("loop", "nki"), [(WHILE_LOOP, "0.7"), (WHILE_REG, "0.5")])
def test_printed_dynamic_loops_parse_back(tmp_path, loop, nki):
    """The IR text of `fori_loop` and of both `while` forms reads back into the same loops:
    kind, bounds, counter or condition register, loop variable and body."""
    from nkic.ir.core import DynLoop
    from nkic.ir.parser import parse_kernel
    from nkic.ir.printer import print_kernel

    a, b = arrays()
    fori = compile_source(tmp_path, FORI_ADD, a, b, np.zeros((1, 1), np.int32)).ir
    val = np.array([[1.5]], np.float32)
    src = WHILE_COUNTDOWN.replace("{loop}", loop)
    whiles = compile_source(tmp_path, src, val, np.zeros((1, 1), np.int32), nki=nki).ir
    for text, kind in ((fori, "for"), (whiles, "while")):
        k = parse_kernel(text)
        assert print_kernel(k) == text
        (dyn,) = [op for op, _ in k.walk() if isinstance(op, DynLoop)]
        assert dyn.kind == kind and dyn.body
        assert f"as ${dyn.var}" in text
        if kind == "for":
            assert (dyn.bound_start, dyn.bound_step, dyn.cond) == (0, 1, None)
            assert dyn.bound_stop.buffer == "reg" and dyn.counter.label == "i"
        else:
            assert dyn.cond.buffer == "reg" and dyn.counter is None and dyn.bound_stop is None
