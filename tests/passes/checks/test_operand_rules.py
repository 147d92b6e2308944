"""Operand rules: each failing IR kernel reports one code at the instruction, its twin is clean."""

from __future__ import annotations

import pytest

from .irkit import at, check, codes, only, tile, view


def alloc(name: str, buffer: str, dtype: str, shape: tuple[int, ...], line: int = 1) -> str:
    return f'  %{name} = alloc {buffer} {dtype}[{", ".join(map(str, shape))}] "{name}" {at(line)}'


def init(name: str, p: int, f: int, line: int = 2, value: str = "0.0") -> str:
    return f"  memset(dst={tile(name, p, f)}, value={value}) {{}} {at(line)}"


def body(*lines: str) -> str:
    return "\n".join(lines)


def matmul(
    k: int,
    m: int,
    n: int,
    *,
    k_moving: int | None = None,
    st_buf="sbuf",
    mv_buf="sbuf",
    dt="bfloat16",
    dst_dt="float32",
    attrs="",
    engine="",
) -> str:
    kb = k_moving or k
    return body(
        alloc("a", st_buf, dt, (k, m)),
        alloc("b", mv_buf, dt, (kb, n)),
        alloc("p", "psum", dst_dt, (m, n)),
        *_halves("a", k, m, dt),
        *_halves("b", kb, n, dt),
        f"  nc_matmul{engine}(dst={tile('p', m, n)}, stationary={tile('a', k, m)}, "
        f"moving={tile('b', kb, n)}) {{{attrs}}} {at(10, 3, 60)}",
    )


def _halves(name: str, p: int, f: int, dtype: str) -> list[str]:
    """Initialise a tile in blocks of at most 128 partitions."""
    value = "0" if "int" in dtype else "0.0"
    return [
        f"  memset(dst=%{name}[{start * f}; [{f}, {min(128, p - start)}], [1, {f}]], value={value}) {{}} {at(2)}"
        for start in range(0, p, 128)
    ]


def activation(scale: str = "1.0", bias: str = "none", extra: tuple[str, ...] = ()) -> str:
    return body(
        alloc("x", "sbuf", "float32", (128, 512)),
        alloc("y", "sbuf", "float32", (128, 512)),
        *extra,
        init("x", 128, 512),
        f"  activation(dst={tile('y', 128, 512)}, data={tile('x', 128, 512)}, scale={scale}, "
        f'bias={bias}) {{op="exp"}} {at(10, 3, 60)}',
    )


def vec(name: str, dtype: str = "float32", f: int = 1) -> tuple[str, str]:
    return alloc(name, "sbuf", dtype, (128, f)), init(
        name, 128, f, value="0" if "int" in dtype else "0.0"
    )


CASES = {
    # name: (failing body, fixed body, code, message fragment, target)
    "partition_limit": (
        body(
            alloc("t", "sbuf", "float32", (256, 512)),
            f"  memset(dst={tile('t', 256, 512)}, value=0.0) {{}} {at(10, 3, 60)}",
        ),
        body(
            alloc("t", "sbuf", "float32", (128, 512)),
            f"  memset(dst={tile('t', 128, 512)}, value=0.0) {{}} {at(10, 3, 60)}",
        ),
        "err_num_partition_exceed_arch_limit",
        "memset: `dst` has 256 partitions, at most 128",
        "trn2",
    ),
    "partition_mismatch": (
        body(
            alloc("x", "sbuf", "float32", (128, 512)),
            alloc("y", "sbuf", "float32", (64, 512)),
            init("x", 128, 512),
            init("y", 64, 512),
            f'  tensor_tensor(dst={tile("x", 128, 512)}, data1={tile("x", 128, 512)}, data2={tile("y", 64, 512)}) {{op="add"}} {at(10, 3, 60)}',
        ),
        body(
            alloc("x", "sbuf", "float32", (128, 512)),
            alloc("y", "sbuf", "float32", (128, 512)),
            init("x", 128, 512),
            init("y", 128, 512),
            f'  tensor_tensor(dst={tile("x", 128, 512)}, data1={tile("x", 128, 512)}, data2={tile("y", 128, 512)}) {{op="add"}} {at(10, 3, 60)}',
        ),
        "err_num_partition_mismatch",
        "`data2` has 64 partitions but `data1` has 128",
        "trn2",
    ),
    "tensor_scalar_operand_shape": (
        body(
            alloc("x", "sbuf", "float32", (128, 512)),
            *vec("s", f=4),
            init("x", 128, 512, 3),
            f'  tensor_scalar(dst={tile("x", 128, 512)}, data={tile("x", 128, 512)}, operand0={tile("s", 128, 4)}) {{op0="multiply"}} {at(10, 3, 60)}',
        ),
        body(
            alloc("x", "sbuf", "float32", (128, 512)),
            *vec("s"),
            init("x", 128, 512, 3),
            f'  tensor_scalar(dst={tile("x", 128, 512)}, data={tile("x", 128, 512)}, operand0={tile("s", 128, 1)}) {{op0="multiply"}} {at(10, 3, 60)}',
        ),
        "err_shape_mismatch",
        "`operand0` must be a scalar or a (128, 1) vector, got (128, 4)",
        "trn2",
    ),
    "free_size_mismatch": (
        body(
            alloc("x", "sbuf", "float32", (128, 512)),
            alloc("y", "sbuf", "float32", (128, 256)),
            init("x", 128, 512),
            f"  reciprocal(dst={tile('y', 128, 256)}, data={tile('x', 128, 512)}) {{}} {at(10, 3, 60)}",
        ),
        body(
            alloc("x", "sbuf", "float32", (128, 512)),
            alloc("y", "sbuf", "float32", (128, 512)),
            init("x", 128, 512),
            f"  reciprocal(dst={tile('y', 128, 512)}, data={tile('x', 128, 512)}) {{}} {at(10, 3, 60)}",
        ),
        "err_shape_mismatch",
        "`dst` has shape (128, 256) but `data` has shape (128, 512)",
        "trn2",
    ),
    "memset_value_type": (
        body(
            alloc("t", "sbuf", "int32", (128, 512)),
            f"  memset(dst={tile('t', 128, 512)}, value=0.5) {{}} {at(10, 3, 60)}",
        ),
        body(
            alloc("t", "sbuf", "int32", (128, 512)),
            f"  memset(dst={tile('t', 128, 512)}, value=0) {{}} {at(10, 3, 60)}",
        ),
        "err_dtype_mismatch",
        "`value=0.5` is a float but `dst` is int32",
        "trn2",
    ),
    "matmul_dtype": (
        matmul(128, 128, 512, dt="int8"),
        matmul(128, 128, 512, dt="bfloat16"),
        "err_dtype_mismatch",
        "`stationary` is int8",
        "trn2",
    ),
    "matmul_dst_dtype": (
        matmul(128, 128, 512, dst_dt="bfloat16"),
        matmul(128, 128, 512, dst_dt="bfloat16"),
        "err_dtype_mismatch",
        "`dst` is bfloat16",
        "trn2",  # the fixed twin runs on trn3, which accumulates bf16
    ),
    "matmul_moving_in_psum": (
        matmul(128, 128, 512, mv_buf="psum"),
        matmul(128, 128, 512),
        "err_unsupported_memory",
        "nc_matmul: `moving` is in PSUM; it must be in SBUF",
        "trn2",
    ),
    "matmul_moving_partitions": (
        matmul(128, 128, 512, k_moving=256),
        matmul(128, 128, 512),
        "err_num_partition_exceed_arch_limit",
        "nc_matmul: `moving` has 256 partitions, at most 128",
        "trn2",
    ),
    "matmul_n_limit": (
        matmul(128, 128, 1024),
        matmul(128, 128, 512),
        "err_size_of_dimension_exceed_arch_limit",
        "`moving` has 1024 elements per partition (N), at most 512",
        "trn2",
    ),
    "matmul_tiling_pair": (
        matmul(128, 128, 512, attrs="tile_position=(0, 0)"),
        matmul(128, 128, 512, attrs="tile_position=(0, 0), tile_size=(128, 128)"),
        "err_invalid_argument",
        "`tile_position` and `tile_size` must be given together",
        "trn2",
    ),
    "dma_psum": (
        body(
            alloc("p", "psum", "float32", (128, 512)),
            init("p", 128, 512),
            f"  dma_copy(dst={tile('out', 128, 512)}, src={tile('p', 128, 512)}) {{}} {at(10, 3, 60)}",
        ),
        body(
            alloc("p", "sbuf", "float32", (128, 512)),
            init("p", 128, 512),
            f"  dma_copy(dst={tile('out', 128, 512)}, src={tile('p', 128, 512)}) {{}} {at(10, 3, 60)}",
        ),
        "err_unsupported_memory",
        "dma_copy: `src` is in PSUM; it must be in HBM or SBUF",
        "trn2",
    ),
    "gpsimd_psum": (
        body(
            alloc("p", "psum", "float32", (128, 512)),
            f'  memset(dst={tile("p", 128, 512)}, value=0.0) {{engine="gpsimd"}} {at(10, 3, 60)}',
        ),
        body(
            alloc("p", "psum", "float32", (128, 512)),
            f'  memset(dst={tile("p", 128, 512)}, value=0.0) {{engine="vector"}} {at(10, 3, 60)}',
        ),
        "err_unsupported_memory",
        "memset: `dst` is in PSUM; it must be in SBUF",
        "trn2",
    ),
    "both_inputs_psum": (
        body(
            alloc("x", "psum", "float32", (128, 512)),
            alloc("y", "psum", "float32", (128, 512)),
            init("x", 128, 512),
            init("y", 128, 512),
            f'  tensor_tensor(dst={tile("x", 128, 512)}, data1={tile("x", 128, 512)}, data2={tile("y", 128, 512)}) {{op="add"}} {at(10, 3, 60)}',
        ),
        body(
            alloc("x", "psum", "float32", (128, 512)),
            alloc("y", "sbuf", "float32", (128, 512)),
            init("x", 128, 512),
            init("y", 128, 512),
            f'  tensor_tensor(dst={tile("x", 128, 512)}, data1={tile("x", 128, 512)}, data2={tile("y", 128, 512)}) {{op="add"}} {at(10, 3, 60)}',
        ),
        "err_unsupported_memory",
        "`data1` and `data2` are both in PSUM",
        "trn2",
    ),
    "too_many_dims": (
        body(
            alloc("t", "sbuf", "float32", (128, 2, 2, 2, 2, 8)),
            f"  memset(dst=%t[0; [128, 128], [64, 2], [32, 2], [16, 2], [8, 2], [1, 8]], value=0.0) {{}} {at(10, 3, 60)}",
        ),
        body(
            alloc("t", "sbuf", "float32", (128, 2, 2, 2, 2, 8)),
            f"  memset(dst=%t[0; [128, 128], [32, 4], [16, 2], [8, 2], [1, 8]], value=0.0) {{}} {at(10, 3, 60)}",
        ),
        "err_exceed_max_supported_dimension",
        "`dst` has 5 free dimensions, at most 4",
        "trn2",
    ),
    "target": (
        body(
            alloc("x", "sbuf", "bfloat16", (128, 512)),
            alloc("q", "sbuf", "float8_e4m3fn_x4", (128, 128)),
            alloc("s", "sbuf", "uint8", (128, 16)),
            init("x", 128, 512),
            f"  quantize_mx(dst={tile('q', 128, 128)}, src={tile('x', 128, 512)}, dst_scale={tile('s', 128, 16)}) {{}} {at(10, 3, 60)}",
        ),
        None,
        "err_unsupported_on_target",
        "quantize_mx: requires trn3 or newer; the target is trn2",
        "trn2",
    ),
    "engine": (
        body(
            alloc("x", "sbuf", "float32", (128, 512)),
            init("x", 128, 512),
            f'  tensor_tensor(dst={tile("x", 128, 512)}, data1={tile("x", 128, 512)}, data2={tile("x", 128, 512)}) {{op="add", engine="scalar"}} {at(10, 3, 60)}',
        ),
        body(
            alloc("x", "sbuf", "float32", (128, 512)),
            init("x", 128, 512),
            f'  tensor_tensor(dst={tile("x", 128, 512)}, data1={tile("x", 128, 512)}, data2={tile("x", 128, 512)}) {{op="add", engine="vector"}} {at(10, 3, 60)}',
        ),
        "err_unsupported_engine",
        "tensor_tensor: cannot run on the scalar engine",
        "trn2",
    ),
    "scalar_engine_copy_trn1": (
        body(
            alloc("x", "sbuf", "float32", (128, 512)),
            alloc("y", "sbuf", "float32", (128, 512)),
            init("x", 128, 512),
            f'  tensor_copy(dst={tile("y", 128, 512)}, src={tile("x", 128, 512)}) {{engine="scalar"}} {at(10, 3, 60)}',
        ),
        body(
            alloc("x", "sbuf", "float32", (128, 512)),
            alloc("y", "sbuf", "float32", (128, 512)),
            init("x", 128, 512),
            f'  tensor_copy(dst={tile("y", 128, 512)}, src={tile("x", 128, 512)}) {{engine="vector"}} {at(10, 3, 60)}',
        ),
        "err_unsupported_on_target",
        "trn2 or newer",
        "trn1",
    ),
    "reduce_operator": (
        body(
            alloc("x", "sbuf", "float32", (128, 512)),
            alloc("r", "sbuf", "float32", (128, 1)),
            init("x", 128, 512),
            f'  tensor_reduce(dst={tile("r", 128, 1)}, data={tile("x", 128, 512)}) {{op="greater", axis=1}} {at(10, 3, 60)}',
        ),
        body(
            alloc("x", "sbuf", "float32", (128, 512)),
            alloc("r", "sbuf", "float32", (128, 1)),
            init("x", 128, 512),
            f'  tensor_reduce(dst={tile("r", 128, 1)}, data={tile("x", 128, 512)}) {{op="maximum", axis=1}} {at(10, 3, 60)}',
        ),
        "err_unsupported_operator",
        "`op=nl.greater` is not supported",
        "trn2",
    ),
    "reduce_axis": (
        body(
            alloc("x", "sbuf", "float32", (128, 4, 64)),
            alloc("r", "sbuf", "float32", (128, 64)),
            f"  memset(dst=%x[0; [256, 128], [64, 4], [1, 64]], value=0.0) {{}} {at(2)}",
            f'  tensor_reduce(dst={tile("r", 128, 64)}, data=%x[0; [256, 128], [64, 4], [1, 64]]) {{op="add", axis=1}} {at(10, 3, 60)}',
        ),
        body(
            alloc("x", "sbuf", "float32", (128, 4, 64)),
            alloc("r", "sbuf", "float32", (128, 4)),
            f"  memset(dst=%x[0; [256, 128], [64, 4], [1, 64]], value=0.0) {{}} {at(2)}",
            f'  tensor_reduce(dst={tile("r", 128, 4)}, data=%x[0; [256, 128], [64, 4], [1, 64]]) {{op="add", axis=2}} {at(10, 3, 60)}',
        ),
        "err_invalid_argument",
        "`axis=1` must be trailing free dimensions",
        "trn2",
    ),
    "reduce_partition_axis": (
        body(
            alloc("x", "sbuf", "float32", (128, 512)),
            alloc("r", "sbuf", "float32", (128, 1)),
            init("x", 128, 512),
            f'  tensor_reduce(dst={tile("r", 128, 1)}, data={tile("x", 128, 512)}) {{op="add", axis=(0, 1)}} {at(10, 3, 60)}',
        ),
        body(
            alloc("x", "sbuf", "float32", (128, 512)),
            alloc("r", "sbuf", "float32", (128, 1)),
            init("x", 128, 512),
            f'  tensor_reduce(dst={tile("r", 128, 1)}, data={tile("x", 128, 512)}) {{op="add", axis=-1}} {at(10, 3, 60)}',
        ),
        "err_invalid_argument",
        "partition dimension 0",
        "trn2",
    ),
    "activation_bias_type": (
        activation(bias=tile("b", 128, 1), extra=vec("b", "int32")),
        activation(bias=tile("b", 128, 1), extra=vec("b", "float32")),
        "err_activation_bias_invalid_type",
        "`bias` is int32",
        "trn2",
    ),
    "activation_scale_type": (
        activation(scale=tile("s", 128, 1), extra=vec("s", "bfloat16")),
        activation(scale=tile("s", 128, 1), extra=vec("s", "float32")),
        "err_activation_scale_invalid_type",
        "`scale` is bfloat16; it must be float32",
        "trn2",
    ),
    "activation_scale_shape": (
        activation(scale=tile("s", 128, 512), extra=vec("s", "float32", 512)),
        activation(scale="2.0"),
        "err_activation_scale_scalar_or_vector",
        "`scale` has shape (128, 512); it must be a scalar or a (128, 1) vector",
        "trn2",
    ),
    "copy_into_smaller": (
        body(
            alloc("x", "sbuf", "float32", (128, 512)),
            alloc("y", "sbuf", "float32", (128, 256)),
            init("x", 128, 512),
            f"  tensor_copy(dst={tile('y', 128, 256)}, src={tile('x', 128, 512)}) {{}} {at(10, 3, 60)}",
        ),
        body(
            alloc("x", "sbuf", "float32", (128, 512)),
            alloc("y", "sbuf", "float32", (128, 256)),
            init("x", 128, 512),
            f"  tensor_copy(dst={tile('y', 128, 256)}, src={view('x', 512, 128, 256)}) {{}} {at(10, 3, 60)}",
        ),
        "err_store_dst_shape_smaller_than_other_shape",
        "`dst` (128, 256) is smaller than `src` (128, 512)",
        "trn2",
    ),
    "transpose_shape": (
        body(
            alloc("x", "sbuf", "bfloat16", (128, 64)),
            alloc("p", "psum", "bfloat16", (128, 64)),
            init("x", 128, 64),
            f"  nc_transpose(dst={tile('p', 128, 64)}, data={tile('x', 128, 64)}) {{}} {at(10, 3, 60)}",
        ),
        body(
            alloc("x", "sbuf", "bfloat16", (128, 64)),
            alloc("p", "psum", "bfloat16", (64, 128)),
            init("x", 128, 64),
            f"  nc_transpose(dst={tile('p', 64, 128)}, data={tile('x', 128, 64)}) {{}} {at(10, 3, 60)}",
        ),
        "err_shape_mismatch",
        "the transpose of `data` (128, 64) is (64, 128)",
        "trn2",
    ),
}

OUT = '  param %out : hbm float32[128, 512] "out" @0:1:1-1:2'


@pytest.mark.parametrize("name", list(CASES))
def test_failing_kernel_reports_code_at_instruction(name):
    bad, _, code, fragment, target = CASES[name]
    d = only([x for x in check(bad, params=OUT, target=target) if x.severity == "error"], code)
    assert (d.loc.file, d.loc.line, d.loc.col) == ("kernel.py", 10, 3)
    assert fragment in d.message
    assert d.hint


@pytest.mark.parametrize("name", [n for n in CASES if CASES[n][1] is not None])
def test_fixed_twin_is_clean(name):
    _, good, _, _, target = CASES[name]
    if name == "matmul_dst_dtype":
        target = "trn3"
    assert [x for x in check(good, params=OUT, target=target) if x.severity == "error"] == []


def test_target_twin_on_trn3_is_clean():
    bad, _, _, _, _ = CASES["target"]
    assert check(bad, params=OUT, target="trn3") == []


def test_partition_limit_reported_once_per_tensor():
    text = body(
        alloc("t", "sbuf", "float32", (256, 512)),
        f"  memset(dst={tile('t', 256, 512)}, value=0.0) {{}} {at(10)}",
        f"  memset(dst={tile('t', 256, 512)}, value=1.0) {{}} {at(11)}",
    )
    d = only(check(text), "err_num_partition_exceed_arch_limit")
    assert d.related[0].loc.line == 1  # the allocation


def test_partition_limit_on_unused_allocation():
    d = only(
        check(alloc("t", "sbuf", "float32", (256, 512), line=4)),
        "err_num_partition_exceed_arch_limit",
    )
    assert d.loc.line == 4


def test_matmul_dtype_pairing():
    text = body(
        alloc("a", "sbuf", "float32", (128, 128)),
        alloc("b", "sbuf", "bfloat16", (128, 512)),
        alloc("p", "psum", "float32", (128, 512)),
        init("a", 128, 128),
        init("b", 128, 512),
        f"  nc_matmul(dst={tile('p', 128, 512)}, stationary={tile('a', 128, 128)}, moving={tile('b', 128, 512)}) {{}} {at(10)}",
    )
    assert "pair only with fp32/tf32" in only(check(text), "err_dtype_mismatch").message


def test_matmul_large_n_allowed_on_trn3():
    assert check(matmul(128, 128, 2048), target="trn3") == []


def test_matmul_result_partitions():
    text = body(
        alloc("a", "sbuf", "bfloat16", (128, 64)),
        alloc("b", "sbuf", "bfloat16", (128, 512)),
        alloc("p", "psum", "float32", (128, 512)),
        init("a", 128, 64),
        init("b", 128, 512),
        f"  nc_matmul(dst={tile('p', 128, 512)}, stationary={tile('a', 128, 64)}, moving={tile('b', 128, 512)}) {{}} {at(10)}",
    )
    assert "M=64" in only(check(text), "err_num_partition_mismatch").message


def test_activation_bias_must_be_vector():
    d = only(
        check(activation(bias=tile("b", 128, 4), extra=vec("b", "float32", 4))),
        "err_activation_bias_invalid_type",
    )
    assert "(128, 1) vector" in d.message


def test_scalar_bias_needs_trn2():
    assert codes(check(activation(bias="0.5"), target="trn1")) == ["err_unsupported_on_target"]
    assert check(activation(bias="0.5"), target="trn2") == []


def test_tensor_scalar_bitvec_needs_integers():
    text = body(
        alloc("x", "sbuf", "float32", (128, 512)),
        init("x", 128, 512),
        f'  tensor_scalar(dst={tile("x", 128, 512)}, data={tile("x", 128, 512)}, operand0=3) {{op0="bitwise_and"}} {at(10)}',
    )
    assert "needs integer operands" in only(check(text), "err_dtype_mismatch").message


def test_tensor_scalar_op1_without_operand1():
    text = body(
        alloc("x", "sbuf", "float32", (128, 512)),
        init("x", 128, 512),
        f'  tensor_scalar(dst={tile("x", 128, 512)}, data={tile("x", 128, 512)}, operand0=2.0) {{op0="multiply", op1="add"}} {at(10)}',
    )
    only(check(text), "err_invalid_argument")


def test_dma_copy_element_count():
    text = body(
        alloc("x", "sbuf", "float32", (128, 256)),
        f"  dma_copy(dst={tile('x', 128, 256)}, src={tile('out', 128, 512)}) {{}} {at(10)}",
    )
    only(check(text, params=OUT), "err_store_dst_shape_smaller_than_other_shape")


def test_hwdge_requires_equal_dtypes():
    text = body(
        alloc("x", "sbuf", "bfloat16", (128, 512)),
        f'  dma_copy(dst={tile("x", 128, 512)}, src={tile("out", 128, 512)}) {{dge_mode="hwdge"}} {at(10)}',
    )
    only(check(text, params=OUT), "err_dtype_mismatch")
    assert codes(check(text, params=OUT, target="trn1")) == [
        "err_unsupported_on_target",
        "err_dtype_mismatch",
    ]


def test_unknown_opcode_is_left_to_the_verifier():
    assert check(f"  frobnicate() {{}} {at(10)}") == []


def test_repeated_instructions_are_checked_once(monkeypatch):
    """An unrolled loop's instructions that differ only in their tiles pass the rules once."""
    from nkic.passes.checks import operand_rules

    calls = []
    real = operand_rules._elementwise
    monkeypatch.setattr(operand_rules, "_elementwise", lambda c: calls.append(c) or real(c))
    lines = []
    for i in range(3):
        lines += [alloc(f"x{i}", "sbuf", "float32", (128, 512)), init(f"x{i}", 128, 512, 10 + i)]
    assert check(body(*lines)) == []
    assert len(calls) == 1


def test_repeated_failing_instruction_reports_at_each():
    lines = []
    for i in range(2):
        lines += [
            alloc(f"a{i}", "sbuf", "float32", (128, 512)),
            alloc(f"b{i}", "sbuf", "float32", (128, 256)),
            init(f"a{i}", 128, 512),
            f"  tensor_copy(dst={tile(f'b{i}', 128, 256)}, src={tile(f'a{i}', 128, 512)}) {{}} "
            + at(10 + i),
        ]
    diags = check(body(*lines))
    assert [(d.code, d.loc.line) for d in diags] == [
        ("err_store_dst_shape_smaller_than_other_shape", 10),
        ("err_store_dst_shape_smaller_than_other_shape", 11),
    ]


def test_repeated_instruction_still_checks_its_partition_window():
    """The window rule reads the offset, which a clean twin does not share."""
    lines = [alloc(f"t{i}", "sbuf", "float32", (48, 64)) for i in range(2)]
    lines += [
        f"  memset(dst={view('t0', 64, 8, 64)}, value=0.0) {{}} {at(10)}",
        f"  memset(dst={view('t1', 64, 8, 64, '512')}, value=0.0) {{}} {at(11)}",
    ]
    d = only(check(body(*lines)), "nkic_partition_window")
    assert d.loc.line == 11


def test_rule_reported_once_per_tensor_still_reports_on_a_new_tensor():
    """The second instruction on `a` is silent (its tensor was reported), yet a third with the
    same operands on a new tensor is reported."""
    six = "[[64, 128], [32, 2], [16, 2], [8, 2], [4, 2], [1, 4]]"
    lines = [alloc("a", "sbuf", "float32", (128, 64)), alloc("b", "sbuf", "float32", (128, 64))]
    for line, name in ((10, "a"), (11, "a"), (12, "b")):
        lines.append(f"  memset(dst=%{name}[0; {six[1:-1]}], value=0.0) {{}} {at(line)}")
    diags = [d for d in check(body(*lines)) if d.code == "err_exceed_max_supported_dimension"]
    assert [d.loc.line for d in diags] == [10, 12]
