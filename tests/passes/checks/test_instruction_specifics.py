"""Instruction-specific argument rules beyond shapes and buffers."""

from __future__ import annotations

import pytest

from nkic.passes.checks import operand_rules

from .irkit import at, check, codes, tile


def kernel(*lines: str, allocs: dict[str, tuple[str, str, int, int]]) -> str:
    """Allocate and initialise `name: (buffer, dtype, p, f)` tiles, then run `lines`."""
    out = []
    for n, (buf, dt, p, f) in allocs.items():
        out.append(f'  %{n} = alloc {buf} {dt}[{p}, {f}] "{n}" {at(1)}')
        value = "0" if "int" in dt else "0.0"
        out.append(f"  memset(dst={tile(n, p, f)}, value={value}) {{}} {at(2)}")
    return "\n".join(out + list(lines))


X = {"x": ("sbuf", "float32", 128, 512), "y": ("sbuf", "float32", 128, 512)}


@pytest.mark.parametrize(
    ("engine", "expected"),
    [('"gpsimd"', []), ("3", []), ('"nisa.engine.vector"', []), ("1", ["err_unsupported_engine"])],
)
def test_engine_attribute_forms(engine, expected):
    line = f"  tensor_copy(dst={tile('y', 128, 512)}, src={tile('x', 128, 512)}) {{engine={engine}}} {at(10)}"
    assert codes(check(kernel(line, allocs=X))) == expected


def test_engine_field_of_the_instruction():
    line = (
        f"  tensor_copy[tensor](dst={tile('y', 128, 512)}, src={tile('x', 128, 512)}) {{}} {at(10)}"
    )
    assert codes(check(kernel(line, allocs=X))) == ["err_unsupported_engine"]


def test_vector_transpose_limit():
    allocs = {"x": ("sbuf", "float32", 64, 64), "y": ("sbuf", "float32", 64, 64)}
    line = f"  nc_transpose(dst={tile('y', 64, 64)}, data={tile('x', 64, 64)}) {{}} {at(10)}"
    d = check(kernel(line, allocs=allocs))
    assert codes(d) == ["err_size_of_dimension_exceed_arch_limit"]
    assert "Vector engine transposes at most 32x32" in d[0].message


def test_tensor_engine_transpose_into_psum():
    allocs = {"x": ("sbuf", "bfloat16", 128, 128), "p": ("psum", "bfloat16", 128, 128)}
    line = f"  nc_transpose(dst={tile('p', 128, 128)}, data={tile('x', 128, 128)}) {{}} {at(10)}"
    assert check(kernel(line, allocs=allocs)) == []


def test_bn_stats_free_size_limit():
    allocs = {"x": ("sbuf", "float32", 128, 1024), "s": ("sbuf", "float32", 128, 6)}
    line = f"  bn_stats(dst={tile('s', 128, 6)}, data={tile('x', 128, 1024)}) {{}} {at(10)}"
    assert codes(check(kernel(line, allocs=allocs))) == ["err_size_of_dimension_exceed_arch_limit"]


def test_iota_pattern_must_fill_destination():
    allocs = {"i": ("sbuf", "int32", 128, 64)}
    bad = f"  iota(dst={tile('i', 128, 64)}) {{pattern=((1, 32),)}} {at(10)}"
    good = f"  iota(dst={tile('i', 128, 64)}) {{pattern=((1, 64),)}} {at(10)}"
    assert codes(check(kernel(bad, allocs=allocs))) == ["err_shape_mismatch"]
    assert check(kernel(good, allocs=allocs)) == []


def test_activation_reduce_op_is_add():
    allocs = {**X, "r": ("sbuf", "float32", 128, 1)}
    line = (
        f"  activation(dst={tile('y', 128, 512)}, data={tile('x', 128, 512)}, "
        f'reduce_res={tile("r", 128, 1)}) {{op="exp", reduce_op="maximum"}} {at(10)}'
    )
    assert codes(check(kernel(line, allocs=allocs))) == ["err_unsupported_operator"]


def test_activation_reduce_res_shape():
    allocs = {**X, "r": ("sbuf", "float32", 128, 2)}
    line = (
        f"  activation(dst={tile('y', 128, 512)}, data={tile('x', 128, 512)}, "
        f'reduce_res={tile("r", 128, 2)}) {{op="exp", reduce_op="add"}} {at(10)}'
    )
    assert codes(check(kernel(line, allocs=allocs))) == ["err_shape_mismatch"]


def test_unknown_activation_function():
    line = f'  activation(dst={tile("y", 128, 512)}, data={tile("x", 128, 512)}) {{op="softmax"}} {at(10)}'
    assert codes(check(kernel(line, allocs=X))) == ["err_unsupported_operator"]


def test_power_runs_without_psum():
    allocs = {"x": ("sbuf", "float32", 128, 512), "p": ("psum", "float32", 128, 512)}
    line = f'  tensor_tensor(dst={tile("p", 128, 512)}, data1={tile("x", 128, 512)}, data2={tile("x", 128, 512)}) {{op="power"}} {at(10)}'
    assert codes(check(kernel(line, allocs=allocs))) == ["err_unsupported_memory"]


def test_predicated_copy_predicate_dtype():
    allocs = {**X, "m": ("sbuf", "float32", 128, 512)}
    line = f"  tensor_copy_predicated(dst={tile('y', 128, 512)}, src={tile('x', 128, 512)}, predicate={tile('m', 128, 512)}) {{}} {at(10)}"
    assert codes(check(kernel(line, allocs=allocs))) == ["err_dtype_mismatch"]


def test_select_reduce_only_max():
    allocs = {**X, "m": ("sbuf", "uint8", 128, 512)}
    line = f'  select_reduce(dst={tile("y", 128, 512)}, predicate={tile("m", 128, 512)}, on_true={tile("x", 128, 512)}, on_false=0.0) {{reduce_op="add"}} {at(10)}'
    assert codes(check(kernel(line, allocs=allocs))) == ["err_unsupported_operator"]


def test_range_select_on_trn1():
    allocs = {**X, "b": ("sbuf", "float32", 128, 1)}
    line = (
        f"  range_select(dst={tile('y', 128, 512)}, on_true_tile={tile('x', 128, 512)}, bound0={tile('b', 128, 1)}, "
        f'bound1={tile("b", 128, 1)}) {{comp_op0="greater_equal", comp_op1="less"}} {at(10)}'
    )
    assert codes(check(kernel(line, allocs=allocs), target="trn1")) == ["err_unsupported_on_target"]
    assert check(kernel(line, allocs=allocs), target="trn2") == []


def test_dma_trigger_engine_needs_hwdge():
    allocs = {"x": ("sbuf", "float32", 128, 512)}
    param = '  param %a : hbm float32[128, 512] "a" @0:1:1-1:2'
    line = f'  dma_copy(dst={tile("x", 128, 512)}, src={tile("a", 128, 512)}) {{engine="sync"}} {at(10)}'
    assert codes(check(kernel(line, allocs=allocs), params=param)) == ["err_invalid_argument"]
    hw = line.replace('engine="sync"', 'engine="sync", dge_mode="hwdge"')
    assert check(kernel(hw, allocs=allocs), params=param) == []


def test_double_row_matmul():
    allocs = {"a": ("sbuf", "float8_e4m3", 128, 256), "b": ("sbuf", "float8_e4m3", 128, 1024)}
    allocs_p = {"p": ("psum", "float32", 128, 512)}
    line = (
        "  nc_matmul(dst=%p[0; [512, 128], [1, 512]], stationary=%a[0; [256, 128], [128, 2], [1, 128]], "
        f'moving=%b[0; [1024, 128], [512, 2], [1, 512]]) {{perf_mode="double_row"}} {at(10)}'
    )
    assert check(kernel(line, allocs={**allocs, **allocs_p})) == []
    assert codes(check(kernel(line, allocs={**allocs, **allocs_p}), target="trn1")) == [
        "err_unsupported_on_target"
    ]


def test_tensor_scalar_on_scalar_engine_trn2_combinations():
    line = f'  tensor_scalar(dst={tile("y", 128, 512)}, data={tile("x", 128, 512)}, operand0=2.0) {{op0="subtract", engine="scalar"}} {at(10)}'
    assert codes(check(kernel(line, allocs=X))) == ["err_unsupported_operator"]
    assert check(kernel(line.replace("subtract", "multiply"), allocs=X)) == []


def test_rng_state_tile():
    allocs = {"s": ("sbuf", "uint32", 128, 6)}
    line = f'  rand_set_state(src_seeds={tile("s", 128, 6)}) {{engine="gpsimd"}} {at(10)}'
    assert check(kernel(line, allocs=allocs)) == []
    assert codes(check(kernel(line.replace("gpsimd", "vector"), allocs=allocs))) == [
        "err_unsupported_on_target",
        "err_shape_mismatch",
    ]


def test_a_crashing_rule_becomes_an_internal_error_diagnostic(monkeypatch):
    def broken(c):
        raise KeyError("boom")

    monkeypatch.setitem(operand_rules._RULES, "reciprocal", [broken])
    lines = [
        f"  reciprocal(dst={tile('y', 128, 512)}, data={tile('x', 128, 512)}) {{}} {at(10)}",
        f'  memset(dst={tile("y", 128, 512)}, value=0.5) {{engine="tensor"}} {at(11)}',
    ]
    diags = check(kernel(*lines, allocs=X))
    assert codes(diags) == ["nkic_internal_error", "err_unsupported_engine"]
    assert diags[0].loc.line == 10 and "KeyError" in diags[0].message


def test_exponential_reduce_init_default_is_not_an_argument():
    line = f'  exponential(dst={tile("y", 128, 512)}, src={tile("x", 128, 512)}, max_value=0.0, reduce_init=0.0) {{reduce_cmd="idle"}} {at(10)}'
    assert check(kernel(line, allocs=X), target="trn3") == []
    assert codes(
        check(kernel(line.replace("reduce_init=0.0", "reduce_init=1.0"), allocs=X), target="trn3")
    ) == ["err_invalid_argument"]


def test_dma_transpose_shapes():
    allocs = {"x": ("sbuf", "bfloat16", 16, 128), "y": ("sbuf", "bfloat16", 128, 16)}
    line = f"  dma_transpose(dst={tile('y', 128, 16)}, src={tile('x', 16, 128)}) {{axes=none}} {at(10)}"
    assert check(kernel(line, allocs=allocs)) == []
    wrong = line.replace(tile("y", 128, 16), "%y[0; [16, 16], [1, 128]]")
    assert codes(check(kernel(wrong, allocs=allocs))) == ["err_shape_mismatch"]
    assert codes(check(kernel(line, allocs=allocs), target="trn1")) == ["err_unsupported_on_target"]
