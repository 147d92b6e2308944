"""Calls of pure helpers answered from a cache (interp/pure.py): the values, the diagnostics and
the loop counts are those of running every call."""

from __future__ import annotations

import pytest

from nkic.diagnostics import DiagnosticSink
from nkic.frontend import TensorSpec, entry, specialise
from nkic.frontend.interp import loops, pure
from nkic.ir.core import Inst

HEADER = "import nki\nimport nki.isa as nisa\nimport nki.language as nl\n\n\n"

HELPERS = """def strides(shape, inner=1):
    out = [inner]
    for i in range(1, len(shape)):
        out.append(out[i - 1] * shape[len(shape) - i])
    res = []
    for i in range(len(shape)):
        res.append(out[len(shape) - i - 1])
    return tuple(res)


def check(ok, text):
    assert ok, f"check: {text}"


def describe(v):
    return f"{v}"


def as_list(n):
    return [n, n]


def count_to(n):
    i = 0
    while i < n:
        i += 1
    return i


"""


def _specialise(tmp_path, body: str):
    """(kernel, errors, specialisers) of a kernel whose memset writes `value`."""
    path = tmp_path / "k.py"
    path.write_text(
        HEADER
        + HELPERS
        + "@nki.jit\ndef k(x):\n"
        + "    out = nl.ndarray((128, 64), x.dtype, buffer=nl.shared_hbm)\n"
        + body
        + "    t = nl.ndarray((128, 64), x.dtype, buffer=nl.sbuf)\n"
        + "    nisa.memset(dst=t, value=float(value))\n"
        + "    nisa.dma_copy(dst=out, src=t)\n"
        + "    return out\n"
    )
    runs = []
    real_run = entry._run

    def run(sp, *args):
        runs.append(sp)
        return real_run(sp, *args)

    entry._run = run
    try:
        sink = DiagnosticSink()
        kernel = specialise(str(path), "k", {"x": TensorSpec((128, 64), "float32")}, "trn2", sink)
    finally:
        entry._run = real_run
    errors = [(d.code, d.loc.line, d.message) for d in sink.items if d.severity == "error"]
    return kernel, errors, runs


def _value(kernel) -> float:
    (memset,) = [op for op in kernel.body if isinstance(op, Inst) and op.opcode == "memset"]
    return memset.attrs["value"]


def _uncached(monkeypatch):
    monkeypatch.setattr(pure, "analyse", lambda node: None)


BODY = """    value = 0
    for j in range(300):
        s = strides((2, j % 5 + 1, 3))
        check(s[0] >= 0, f"stride {s[0]}")
        value += s[0] + s[1] + len(describe(j % 2 == 0)) + len(describe(j % 2))
"""


def _expected() -> int:
    total = 0
    for j in range(300):
        m = j % 5 + 1
        total += 3 * m + 3 + len(str(j % 2 == 0)) + len(str(j % 2))
    return total


def test_cached_calls_give_the_values_and_loop_counts_of_running_every_call(tmp_path, monkeypatch):
    kernel, errors, (sp,) = _specialise(tmp_path, BODY)
    assert errors == []
    assert _value(kernel) == float(_expected())  # True and 1 are told apart: "True" != "1"
    cached = sp.pure_cache
    assert sum(len(c) for c in cached.values()) < 20  # 5 shapes, 2 checks, 4 descriptions
    counts = (sp.iterations, sorted(sp.site_iterations.values()))

    _uncached(monkeypatch)
    kernel, errors, (sp,) = _specialise(tmp_path, BODY)
    assert errors == [] and _value(kernel) == float(_expected())
    assert sp.pure_cache == {}
    assert (sp.iterations, sorted(sp.site_iterations.values())) == counts


def test_functions_that_read_state_or_rebound_builtins_are_run_every_time(tmp_path):
    body = """    seen = [0]
    def total():
        return len(seen)
    value = 0
    for j in range(5):
        seen.append(j)
        value += total() * 100 + len(as_list(j)) + as_list(j)[1]
        r = as_list(j)
        r.append(1)
        value += len(as_list(j))
"""
    kernel, errors, (sp,) = _specialise(tmp_path, body)
    assert errors == []
    # total() reads `seen` of its enclosing scope, which grows; as_list returns a new list
    assert _value(kernel) == float(sum((j + 2) * 100 + 2 + j + 2 for j in range(5)))
    assert sorted(fn.name for fn, entries in sp.pure_cache.items() if entries) == []


def test_a_module_that_rebinds_a_builtin_is_seen_by_its_helpers(tmp_path):
    path = tmp_path / "k.py"
    path.write_text(
        HEADER
        + "def len(x):\n    return 7\n\n\ndef size(t):\n    return len(t)\n\n\n"
        + "@nki.jit\ndef k(x):\n"
        + "    out = nl.ndarray((128, 64), x.dtype, buffer=nl.shared_hbm)\n"
        + "    assert size((1, 2)) + size((1, 2)) == 14\n"
        + "    return out\n"
    )
    sink = DiagnosticSink()
    kernel = specialise(str(path), "k", {"x": TensorSpec((128, 64), "float32")}, "trn2", sink)
    assert kernel is not None and not [d for d in sink.items if d.severity == "error"]


def test_a_failing_check_is_reported_at_each_failing_call(tmp_path):
    body = """    value = 0
    check(True, "a")
    check(True, "a")
    check(value == 1, "b")
"""
    _, errors, _ = _specialise(tmp_path, body)
    assert [(code, line) for code, line, _ in errors] == [("err_assert_failed", 17)]  # in check()


def test_cached_iterations_spend_the_budget_at_the_helpers_loop(tmp_path, monkeypatch):
    monkeypatch.setattr(loops, "MAX_ITERATIONS", 2000)
    monkeypatch.setattr(loops, "MAX_PYTHON_ITERATIONS", 20000)
    monkeypatch.setattr("nkic.frontend.interp.calls.MAX_PYTHON_ITERATIONS", 20000)
    body = "    value = 0\n    for j in range(300):\n        value += count_to(100)\n"
    _, errors, (sp,) = _specialise(tmp_path, body)
    ((code, line, message),) = errors
    assert (code, line) == ("err_specialisation_limit", 30)  # count_to's `while`
    # 20,001 iterations: the kernel's loop ran 199 of them (the 199th call spends the budget),
    # count_to's loop the other 19,802: 197 calls from the cache and the first and last run
    assert message == (
        "specialisation ran more than 20000 loop iterations (0 of them built instructions); "
        "this loop ran 19802 of them"
    )
    assert sum(len(c) for c in sp.pure_cache.values()) == 1


@pytest.mark.parametrize(
    ("source", "qualifies"),
    [
        ("def f(a, b=2):\n    return a * b + len((a,))\n", True),
        ("def f(a):\n    xs = []\n    xs.append(a)\n    return tuple(xs)\n", True),
        ("def f(a):\n    return g(a)\n", False),  # another function: its body is unknown
        ("def f(a):\n    return a.shape\n", False),  # an attribute of an argument
        ("def f(a):\n    print(a)\n", False),  # output
        ("def f(a):\n    return nl.add(a, a)\n", False),  # the NKI API
        ("def f(a):\n    return [x for x in a]\n", False),
        ("def f(a, **kw):\n    return a\n", False),
        ("def f(a):\n    a.append(1)\n", False),  # mutates an argument
        ("def f(a):\n    return min(a, key=abs)\n", False),
    ],
)
def test_what_qualifies_as_pure(source, qualifies):
    import ast

    node = ast.parse(source).body[0]
    assert (pure.analyse(node) is not None) == qualifies


def test_runs_are_reused_only_under_the_same_rule_for_keeping_range_loops(tmp_path, monkeypatch):
    # past PLAIN_AFTER iterations a plain `range` loop is attempted as a symbolic loop, and
    # `spin`'s is kept (an empty loop, then dropped): a run recorded below the threshold is not
    # reused above it, where running the call keeps the loop again
    monkeypatch.setattr(loops, "PLAIN_AFTER", 1000)
    path = tmp_path / "k.py"
    path.write_text(
        HEADER
        + "def spin(n):\n    for i in range(n):\n        pass\n    return n\n\n\n"
        + "@nki.jit\ndef k(x):\n"
        + "    out = nl.ndarray((128, 64), x.dtype, buffer=nl.shared_hbm)\n"
        + "    j = 0\n    v = 0\n"
        + "    while j < 300:\n        v += spin(9)\n        j += 1\n"
        + "    nisa.dma_copy(dst=out, src=x)\n"
        + "    return out\n"
    )

    def run():
        runs = []
        real_run = entry._run
        entry._run = lambda sp, *a: (runs.append(sp), real_run(sp, *a))[1]
        try:
            sink = DiagnosticSink()
            args = {"x": TensorSpec((128, 64), "float32")}
            assert specialise(str(path), "k", args, "trn2", sink) is not None
        finally:
            entry._run = real_run
        (sp,) = runs
        return sp.iterations, sp.plain_loops, sorted(sp.memo.plain), sp.memo.unroll

    cached = run()
    assert cached[1] > 0  # the loop was kept once the threshold was passed
    _uncached(monkeypatch)
    assert run() == cached
