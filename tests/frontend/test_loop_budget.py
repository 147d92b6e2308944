"""The specialisation budgets: unrolled iterations that build instructions bound the size of the
program, and a larger budget bounds all iterations, most of them compile-time Python (helpers
walking the dimensions of a view, index lists, argument checks) that build nothing."""

from __future__ import annotations

import numpy as np
import pytest

from nkic.diagnostics import DiagnosticSink
from nkic.driver import compile_file
from nkic.frontend import TensorSpec, entry, specialise
from nkic.frontend.interp import loops
from nkic.ir.core import Inst

HEADER = "import nki\nimport nki.isa as nisa\nimport nki.language as nl\n\n\n"

#: 300,000 iterations of pure compile-time Python, more than the emitting budget, in each
#: loop form (a `for` over a range, a helper's loop over a shape, a `while`, a
#: comprehension), whose result sets the value a memset writes
PURE = (
    HEADER
    + """def strides(shape):
    out = []
    acc = 1
    for d in reversed(shape):
        out.insert(0, acc)
        acc *= d
    return out


@nki.jit
def k(x):
    out = nl.ndarray((128, 64), x.dtype, buffer=nl.shared_hbm)
    total = 0
    for i in range(200000):
        total += i % 7
    for n in range(20000):
        total += strides((2, n % 3 + 1, 1))[0]
    j = 0
    while j < 10000:
        j += 1
    total += sum([v % 3 for v in range(10000)]) + j
    t = nl.ndarray((128, 64), x.dtype, buffer=nl.sbuf)
    nisa.memset(dst=t, value=float(total))
    nisa.dma_copy(dst=out, src=t)
    return out
"""
)

#: an unrolled loop whose every iteration builds an instruction
RUNAWAY = (
    HEADER
    + """@nki.jit
def k(x):
    out = nl.ndarray((128, 64), x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 64), x.dtype, buffer=nl.sbuf)
    for i in range(N):
        if i % 2 == 0:
            nisa.memset(dst=t[:, 0:1], value=float(i))
        else:
            nisa.memset(dst=t[:, 1:2], value=float(i))
    nisa.dma_copy(dst=out, src=t)
    return out
"""
)


def _specialise(tmp_path, source: str):
    path = tmp_path / "k.py"
    path.write_text(source)
    sink = DiagnosticSink()
    kernel = specialise(str(path), "k", {"x": TensorSpec((128, 64), "float32")}, "trn2", sink)
    return kernel, [d for d in sink.items if d.severity == "error"]


def _expected_total() -> int:
    """The kernel's arithmetic in numpy: the C-order strides of a (2, m, 1) array are (m, 1, 1)."""
    total = int(np.sum(np.arange(200000) % 7))
    total += sum(np.empty((2, n % 3 + 1, 1), np.int8).strides[0] for n in range(20000))
    return total + int(np.sum(np.arange(10000) % 3)) + 10000


@pytest.mark.slow
def test_pure_python_iterations_past_the_emitting_budget_compile(tmp_path):
    kernel, errors = _specialise(tmp_path, PURE)
    assert not errors, [(d.code, d.message) for d in errors]
    (memset,) = [op for op in kernel.body if isinstance(op, Inst) and op.opcode == "memset"]
    assert memset.attrs["value"] == float(_expected_total())


@pytest.fixture
def small_budgets(monkeypatch):
    """Budgets a hundred times smaller than the real ones, for kernels that run in a moment."""
    monkeypatch.setattr(loops, "MAX_ITERATIONS", 2000)
    monkeypatch.setattr(loops, "MAX_PYTHON_ITERATIONS", 20000)


def test_a_runaway_instruction_loop_is_diagnosed_at_the_loop(tmp_path, small_budgets):
    kernel, errors = _specialise(tmp_path, RUNAWAY.replace("range(N)", "range(5000)"))
    (err,) = errors
    assert err.code == "err_specialisation_limit"
    assert (err.loc.line, err.loc.col) == (10, 5)
    assert err.message == (
        "specialisation unrolled more than 2000 loop iterations that build instructions "
        "(2003 instructions and allocations); this loop ran 2001 iterations"
    )
    assert "nl.affine_range" in err.hint


def test_only_iterations_that_build_instructions_spend_the_emitting_budget(tmp_path, small_budgets):
    # 15,000 iterations of compile-time Python, then 1,900 that each build an instruction
    source = RUNAWAY.replace(
        "    for i in range(N):",
        "    n = 0\n    for i in range(15000):\n        n += 1\n    for i in range(n - 13100):",
    )
    kernel, errors = _specialise(tmp_path, source)
    assert not errors, [(d.code, d.message) for d in errors]
    memsets = [op for op in kernel.body if isinstance(op, Inst) and op.opcode == "memset"]
    assert [m.attrs["value"] for m in memsets] == [float(i) for i in range(1900)]


def test_runaway_compile_time_python_is_diagnosed_with_its_count(tmp_path, small_budgets):
    source = HEADER + (
        "@nki.jit\n"
        "def k(x):\n"
        "    out = nl.ndarray((128, 64), x.dtype, buffer=nl.shared_hbm)\n"
        "    for i in range(10):\n"
        "        nisa.memset(dst=out, value=1.0)\n"
        "    n = 0\n"
        "    while True:\n"
        "        n += 1\n"
        "    return out\n"
    )
    kernel, errors = _specialise(tmp_path, source)
    (err,) = errors
    assert (err.code, err.loc.line, err.loc.col) == ("err_specialisation_limit", 12, 5)
    assert err.message == (
        "specialisation ran more than 20000 loop iterations (10 of them built instructions); "
        "this loop ran 19991 of them"
    )


def test_the_cores_after_one_that_spent_a_budget_are_not_specialised(tmp_path, small_budgets):
    # core 0 spends the budget on its share; core 1, which runs the same loop on its own share,
    # is not specialised, so the launch fails in the time of one core
    source = HEADER + (
        "@nki.jit\n"
        "def k(x):\n"
        "    out = nl.ndarray((128, 64), x.dtype, buffer=nl.shared_hbm)\n"
        "    n = 0\n"
        "    while n < 15000 * (2 - nl.program_id(0)):\n"
        "        n += 1\n"
        "    nisa.dma_copy(dst=out, src=x)\n"
        "    return out\n"
    )
    path = tmp_path / "k.py"
    path.write_text(source)
    specialised = []
    real_run = entry._run

    def run(sp, *args):
        specialised.append(sp.kernel.core)
        return real_run(sp, *args)

    entry._run = run
    try:
        result = compile_file(str(path), "k", {"x": TensorSpec((128, 64), "float32")}, lnc=2)
    finally:
        entry._run = real_run
    assert specialised == [0]
    (err,) = [d for d in result.diagnostics if d.severity == "error"]
    assert err.code == "err_specialisation_limit" and err.loc.line == 10
    assert err.message == (
        "specialisation ran more than 20000 loop iterations (0 of them built instructions); "
        "this loop ran 20001 of them [LNC=2 core 0]"
    )
    assert result.neff is None


def test_a_launch_within_the_budgets_specialises_every_core(tmp_path, small_budgets):
    source = HEADER + (
        "@nki.jit\n"
        "def k(x):\n"
        "    out = nl.ndarray((256, 64), x.dtype, buffer=nl.shared_hbm)\n"
        "    n = 0\n"
        "    for i in range(15000 * (2 - nl.program_id(0))):\n"
        "        n += 1\n"
        "    t = nl.ndarray((128, 64), x.dtype, buffer=nl.sbuf)\n"
        "    nisa.memset(dst=t, value=float(n))\n"
        "    p = nl.program_id(0) * 128\n"
        "    nisa.dma_copy(dst=out[p : p + 128, :], src=t)\n"
        "    return out\n"
    )
    path = tmp_path / "k.py"
    path.write_text(source.replace("15000", "9000"))
    result = compile_file(str(path), "k", {"x": TensorSpec((128, 64), "float32")}, lnc=2)
    assert not [d for d in result.diagnostics if d.severity == "error"]
    values = [
        [op.attrs["value"] for op in core.instructions() if op.opcode == "memset"]
        for core in result.cores
    ]
    assert values == [[18000.0], [9000.0]]
