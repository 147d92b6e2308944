"""Misuse of registers, NkiScalar and dynamic loops: each is a diagnostic with its code and
the span of the mistake, and the version gating of the APIs."""

from __future__ import annotations

import pytest

import nkic
from tests.deprecations import without_loop_deprecations

HEADER = (
    "import nki\nimport nki.isa as nisa\nimport nki.language as nl\nimport nki.typing as nt\n\n"
)


def check(tmp_path, body: str, nki: str | None = None):
    path = tmp_path / "kernel.py"
    path.write_text(HEADER + body)
    return nkic.check(path, nki=nki)


def errors(diags):
    return [(d.code, d.loc.line, d.loc.col) for d in diags if d.severity == "error"]


FORI = """@nki.jit
def kernel(a: nt.tensor[128, 512]):
    def body(i):
        pass

    nl.fori_loop(0, 4, body)
"""


@pytest.mark.parametrize("nki", ["0.3", "0.4", "0.5"])
def test_fori_loop_and_while_loop_do_not_exist_before_0_6(tmp_path, nki):
    (d,) = check(tmp_path, FORI, nki)
    assert (d.code, d.loc.line) == ("err_unknown_api", 11)
    assert check(tmp_path, FORI.replace("fori_loop(0, 4, body)", "while_loop(0, body)"), nki)


@pytest.mark.parametrize("nki", ["0.6", "0.7"])
def test_fori_loop_exists_from_0_6(tmp_path, nki):
    assert check(tmp_path, FORI, nki) == []


WHILE_REG = """@nki.jit
def kernel(a: nt.tensor[128, 512]):
    reg = nisa.register_alloc(3)
    while reg:
        nisa.register_move(reg, 0)
"""


def test_while_reg_is_removed_in_0_7_deprecated_in_0_6_and_plain_before(tmp_path):
    (d,) = check(tmp_path, WHILE_REG, "0.7")
    assert (d.code, d.loc.line, d.loc.col) == ("err_unsupported_api", 9, 11)
    assert "removed in NKI 0.7" in d.message and "nl.while_loop" in d.hint
    (w,) = check(tmp_path, WHILE_REG, "0.6")
    assert (w.code, w.severity, w.loc.line) == ("nkic_deprecated_api", "warning", 9)
    assert check(tmp_path, WHILE_REG, "0.5") == []


def test_scalar_load_exists_only_from_0_7(tmp_path):
    body = """@nki.jit
def kernel(n: nt.tensor[1, 1, nl.int32]):
    s = nisa.scalar_load(n)
"""
    assert check(tmp_path, body, "0.7") == []
    (d,) = check(tmp_path, body, "0.6")
    assert d.code == "err_unknown_api"


def test_writing_the_induction_variable(tmp_path):
    body = """@nki.jit
def kernel(a: nt.tensor[128, 512]):
    for i in nl.dynamic_range(4):
        nisa.register_move(i, 1)
"""
    assert errors(check(tmp_path, body, "0.5")) == [("err_write_to_loop_register", 9, 28)]


def test_register_step(tmp_path):
    body = """@nki.jit
def kernel(a: nt.tensor[128, 512]):
    r = nisa.register_alloc(2)
    for i in nl.dynamic_range(0, 8, r):
        pass
"""
    (d,) = check(tmp_path, body, "0.5")
    assert (d.code, d.loc.line, d.loc.col) == ("err_dynamic_loop_bound", 9, 37)


def test_zero_step(tmp_path):
    (d,) = check(tmp_path, FORI.replace("body)", "body, step=0)"), "0.7")
    assert (d.code, d.loc.line) == ("err_dynamic_loop_bound", 11)
    assert "positive" in d.message


COMPARE = """@nki.jit
def kernel(n: nt.tensor[1, 1, nl.int32]):
    s = nisa.scalar_load(n)
    if s < 3:
        pass
"""


def test_a_run_time_value_cannot_steer_specialisation(tmp_path):
    assert errors(check(tmp_path, COMPARE)) == [("err_dynamic_control_flow_not_supported", 9, 8)]
    truth = COMPARE.replace("if s < 3:", "if s:")
    assert errors(check(tmp_path, truth)) == [("err_dynamic_control_flow_not_supported", 9, 5)]


def test_virtual_register_has_no_arithmetic(tmp_path):
    body = """@nki.jit
def kernel(a: nt.tensor[128, 512]):
    r = nisa.register_alloc(2)
    s = r * 4
"""
    ((code, line, _),) = errors(check(tmp_path, body, "0.5"))
    assert (code, line) == ("err_dynamic_control_flow_not_supported", 9)


def test_break_leaves_a_dynamic_loop(tmp_path):
    body = """@nki.jit
def kernel(a: nt.tensor[128, 512]):
    for i in nl.dynamic_range(4):
        break
"""
    ((code, line, _),) = errors(check(tmp_path, body, "0.5"))
    assert (code, line) == ("err_dynamic_control_flow_not_supported", 8)


def test_register_load_needs_one_integer_element(tmp_path):
    body = """@nki.jit
def kernel(a: nt.tensor[128, 512]):
    r = nisa.register_alloc()
    nisa.register_load(r, a)
"""
    ((code, line, col),) = errors(check(tmp_path, body, "0.5"))
    assert (code, line, col) == ("err_invalid_argument", 9, 27)


def test_while_loop_body_must_return_a_register(tmp_path):
    body = """@nki.jit
def kernel(a: nt.tensor[128, 512]):
    r = nisa.register_alloc(1)

    def body(x):
        nisa.register_move(x, 0)

    nl.while_loop(r, body)
"""
    ((code, line, _),) = errors(check(tmp_path, body, "0.7"))
    assert (code, line) == ("err_invalid_argument", 13)


def test_dynamic_loop_inside_a_symbolic_loop_unrolls_it(tmp_path):
    """The backend joins the queues around a dynamic loop once per execution, so an
    `nl.affine_range` loop around it is unrolled (and the result is the same)."""
    body = """@nki.jit
def kernel(a: nt.tensor[128, 512]):
    def body(i):
        pass

    for j in nl.affine_range(3):
        nl.fori_loop(0, j, body)
"""
    path = tmp_path / "kernel.py"
    path.write_text(HEADER + body)
    assert without_loop_deprecations(nkic.check(path)) == []
    ir = nkic.compile(path, nkic.TensorSpec((128, 512), "float32")).ir
    assert ir.count("dynamic for") == 3 and "for $" not in ir


def test_a_register_in_nl_ds_points_to_scalar_offset_views(tmp_path):
    body = """@nki.jit
def kernel(a: nt.tensor[512, 64]):
    t = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)

    def body(i):
        nisa.dma_copy(dst=t, src=a[nl.ds(i * 128, 128), :])

    nl.fori_loop(0, 4, body)
"""
    (d,) = [d for d in check(tmp_path, body) if d.severity == "error"]
    assert (d.code, d.loc.line) == ("err_invalid_argument", 11)
    assert "scalar_offset" in d.hint


def test_no_dynamic_loop_inside_no_reorder(tmp_path):
    body = """@nki.jit
def kernel(a: nt.tensor[128, 512]):
    with nl.no_reorder():
        for i in nl.dynamic_range(4):
            pass
    for i in nl.dynamic_range(4):
        with nl.no_reorder():
            pass
"""
    ((code, line, _),) = errors(check(tmp_path, body, "0.5"))
    assert (code, line) == ("err_dynamic_control_flow_not_supported", 9)
