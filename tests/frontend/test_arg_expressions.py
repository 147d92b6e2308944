"""Argument expressions: `--arg` values and `nkic.ArgExpr`s that build kernel-module objects,
Enum members and lists or dicts of tensors, evaluated by nkic's interpreter; the tensors in
them become kernel inputs named by their place."""

from __future__ import annotations

import numpy as np
import pytest

import nkic
from nkic.diagnostics import CompileError
from nkic.frontend import ArgExpr, TensorSpec, parse_arg_spec

from .util import KERNELS, run

FILE = str(KERNELS / "structured_args.py")


def test_expressions_parse_to_arg_exprs():
    for text in ("Config(mode=Mode.DOUBLED_SUM)", "[bfloat16[2,3], nl.float32[4]]", "Mode.SUM"):
        value = parse_arg_spec(text)
        assert isinstance(value, ArgExpr) and value.text == text
    # literals and plain tensor specs keep their meaning
    assert parse_arg_spec("[1, 2]") == [1, 2]
    assert parse_arg_spec("float32[4]") == TensorSpec((4,), "float32")


@pytest.mark.parametrize(
    "text, why",
    [
        ("Config(", "expected a tensor spec"),
        ("lambda: 1", "Lambda is not allowed"),
        ("[x for x in y]", "ListComp is not allowed"),
        ("Config(w=table[1, 2])", "only a dtype can be subscripted"),
        ("[float32[a, 2]]", "tensor dimensions must be integers"),
        ("[float32[0, 2]]", "positive sizes"),
    ],
)
def test_malformed_expressions_are_one_line_errors(text, why):
    with pytest.raises(ValueError, match=why) as e:
        parse_arg_spec(text)
    assert "\n" not in str(e.value)


def test_tensors_in_a_list_and_an_object_become_named_inputs():
    k, diags = run(
        "structured_args.py",
        "add_all",
        xs=parse_arg_spec("[bfloat16[128,64], bfloat16[128,64], bfloat16[128,64]]"),
        cfg=parse_arg_spec("Config(mode=Mode.DOUBLED_SUM, bias=bfloat16[128,64], dtype=bfloat16)"),
    )
    assert not diags, [(d.code, d.message) for d in diags]
    assert [(p.label, p.shape, p.dtype) for p in k.params] == [
        ("xs_0", (128, 64), "bfloat16"),
        ("xs_1", (128, 64), "bfloat16"),
        ("xs_2", (128, 64), "bfloat16"),
        ("cfg_bias", (128, 64), "bfloat16"),
    ]


def test_api_runs_lists_of_arrays_and_enum_members():
    rng = np.random.default_rng(1)
    a, b, bias = (rng.standard_normal((128, 64)).astype(np.float32) for _ in range(3))
    doubled = nkic.compile(
        FILE, kernel="add_all", xs=[a, b], cfg=ArgExpr("Config(mode=Mode.DOUBLED_SUM)")
    )
    assert [t.name for t in doubled.inputs] == ["xs_0", "xs_1"]
    np.testing.assert_allclose(doubled(xs=[a, b]), (a + b) * 2, rtol=1e-6)
    biased = nkic.compile(
        FILE, kernel="add_all", xs=[a, b, a], cfg=ArgExpr("Config(bias=float32[128,64])")
    )
    np.testing.assert_allclose(biased(a, b, a, bias), a + b + a + bias, rtol=1e-6, atol=1e-6)
    tables = nkic.compile(FILE, kernel="scaled", tables={"a": a}, scale=3.0)
    np.testing.assert_allclose(tables(tables={"a": a}), a * 3.0, rtol=1e-6)


def test_errors_while_evaluating_point_at_the_parameter():
    with pytest.raises(CompileError) as e:
        nkic.compile(
            FILE,
            kernel="add_all",
            xs=[np.ones((4, 4), np.float32)],
            cfg=ArgExpr("Config(colour=1)"),
        )
    (d,) = e.value.diagnostics
    assert d.code == "err_unexpected_keyword" and d.message.startswith("argument 'cfg': ")
    assert (d.loc.line, d.loc.col) == (24, 17)
    with pytest.raises(CompileError) as e:
        nkic.compile(
            FILE,
            kernel="add_all",
            xs=[np.ones((4, 4), np.float32)],
            cfg=ArgExpr("nl.zeros((4, 4))"),
        )
    assert e.value.diagnostics[0].code == "err_nki_api_outside_of_nki_kernel"


def test_a_bare_word_is_a_module_name_and_the_hint_says_to_quote_strings():
    _, diags = run(
        "structured_args.py",
        "scaled",
        tables=parse_arg_spec("{'a': float32[4,4]}"),
        scale=parse_arg_spec("causal"),
    )
    (d,) = [d for d in diags if d.severity == "error"]
    assert d.code == "err_undefined_name" and "--arg scale=\"'causal'\"" in d.hint


def test_an_input_name_taken_by_a_parameter_is_an_error():
    _, diags = run(
        "structured_args.py", "clash", xs=parse_arg_spec("[float32[4,4]]"), xs_0=TensorSpec((4, 4))
    )
    assert [d.code for d in diags if d.severity == "error"] == ["err_invalid_argument"]


def test_lists_stay_an_error_under_nki_0_3():
    with pytest.raises(CompileError) as e:
        nkic.compile(FILE, kernel="scaled", tables=ArgExpr("[float32[4,4]]"), scale=1.0, nki="0.3")
    assert e.value.diagnostics[0].code == "err_unsupported_syntax"
