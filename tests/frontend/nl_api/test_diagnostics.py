"""Every diagnostic of the `nl` lowerings: its code and the exact source it underlines (the
offending argument where there is one)."""

from __future__ import annotations

import textwrap

import pytest

import nkic
from nkic.frontend import TensorSpec

HEADER = """\
import nki
import nki.language as nl


@nki.jit
def kernel(a, b, i, big):
    x = nl.load(a)
    y = nl.load(b)
    p = nl.matmul(x, y, transpose_x=True)
"""

ARGS = {
    "a": TensorSpec((32, 16)),
    "b": TensorSpec((32, 16)),
    "i": TensorSpec((32, 16), "int32"),
    "big": TensorSpec((256, 16)),
}


def diagnose(tmp_path, body: str, target: str = "trn2"):
    path = tmp_path / "kernel.py"
    path.write_text(HEADER + textwrap.indent(textwrap.dedent(body), "    "))
    lines = path.read_text().splitlines()
    found = []
    for d in nkic.check(path, "kernel", target=target, **ARGS):
        text = lines[d.loc.line - 1][d.loc.col - 1 : d.loc.end_col - 1]
        found.append((d.code, text))
    return found


CASES = [
    # elementwise
    ("z = nl.add(1.0, 2.0)", "err_invalid_argument", "nl.add(1.0, 2.0)"),
    ("z = nl.add(x, nl.load(big))", "err_num_partition_exceed_arch_limit", "big"),
    ("z = nl.add(x, y[:, 0:8])", "err_shape_mismatch", "y[:, 0:8]"),
    ("z = nl.multiply(p, p)", "err_unsupported_memory", "p"),
    ("z = nl.power(nl.copy(p), p)", "err_unsupported_memory", "p"),
    ("z = nl.power(p, 2.0)", "err_unsupported_memory", "p"),
    ("z = nl.exp(a)", "err_unsupported_memory", "a"),
    ("z = nl.exp([1.0])", "err_invalid_argument", "[1.0]"),
    ("z = nl.subtract(x, 'one')", "err_invalid_argument", "'one'"),
    ("z = nl.bitwise_and(x, y)", "err_dtype_mismatch", "x"),
    ("z = nl.left_shift(nl.load(i), 1.5)", "err_dtype_mismatch", "1.5"),
    ("z = nl.divide(x, 0)", "err_value_error", "0"),
    ("z = nl.invert(x)", "err_dtype_mismatch", "x"),
    ("z = nl.exp(x, dtype=nl.float64)", "err_unknown_api", "nl.float64"),
    ("z = nl.exp(x, dtype='float31')", "err_invalid_argument", "dtype='float31'"),
    ("z = nl.add(x, y, mask=None)", "err_unexpected_keyword", "mask=None"),
    ("z = nl.add(x)", "err_missing_argument", "nl.add(x)"),
    ("z = x + y", "err_tensor_operator", "x + y"),
    ("z = nl.sofmax(x)", "err_unknown_api", "nl.sofmax"),
    ("z = nl.fmod(x, y)", "err_unsupported_api", "nl.fmod"),
    # reductions, softmax, rms_norm
    ("z = nl.sum(x, axis=0)", "err_invalid_argument", "axis=0"),
    ("z = nl.sum(x, axis=(0, 1))", "err_invalid_argument", "axis=(0, 1)"),
    ("z = nl.max(x.reshape((32, 4, 4)), axis=1)", "err_invalid_argument", "axis=1"),
    ("z = nl.min(x, axis=5)", "err_invalid_argument", "axis=5"),
    ("z = nl.mean(x, 1, None, 1)", "err_invalid_argument", "1"),
    ("z = nl.softmax(x, axis=0)", "err_invalid_argument", "axis=0"),
    ("z = nl.rms_norm(x, y, axis=1, n=0)", "err_invalid_argument", "n=0"),
    ("z = nl.rms_norm(x, y[0:2, :], axis=1, n=16)", "err_shape_mismatch", "y[0:2, :]"),
    (
        "z = nl.rms_norm(x, y, 1, 16, compute_dtype=nl.int32)",
        "err_invalid_argument",
        "compute_dtype=nl.int32",
    ),
    # data movement
    ("z = nl.load(x)", "err_unsupported_memory", "x"),
    ("z = nl.load(a[0])", "err_invalid_argument", "a[0]"),
    ("z = nl.load(big)", "err_num_partition_exceed_arch_limit", "big"),
    ("nl.store(a, p)", "err_unsupported_memory", "p"),
    ("nl.store(x, y)", "err_unsupported_memory", "x"),
    ("nl.store(a[0:16, :], x)", "err_shape_mismatch", "x"),
    ("z = nl.load_transpose2d(a)", "err_dtype_mismatch", "a"),
    (
        "z = nl.load_transpose2d(a.reshape((32, 4, 4)))",
        "err_invalid_argument",
        "a.reshape((32, 4, 4))",
    ),
    ("z = nl.copy(a)", "err_unsupported_memory", "a"),
    ("z = nl.expand_dims(x, 0)", "err_invalid_view", "0"),
    ("z = nl.expand_dims(3, 0)", "err_invalid_argument", "3"),
    # Tensor Engine
    ("z = nl.matmul(x, y)", "err_unsupported_api", "nl.matmul(x, y)"),
    ("z = nl.matmul(x, y, transpose_x=1)", "err_invalid_argument", "transpose_x=1"),
    ("z = nl.matmul(x, y[0:16, :], transpose_x=True)", "err_shape_mismatch", "y[0:16, :]"),
    ("z = nl.matmul(x, nl.load(i), transpose_x=True)", "err_dtype_mismatch", "nl.load(i)"),
    ("z = nl.matmul(nl.copy(p), p, transpose_x=True)", "err_unsupported_memory", "p"),
    (
        "z = nl.matmul(nl.zeros((32, 200), nl.float32), y, transpose_x=True)",
        "err_size_of_dimension_exceed_arch_limit",
        "nl.zeros((32, 200), nl.float32)",
    ),
    (
        "z = nl.transpose(nl.zeros((32, 200), nl.float32))",
        "err_size_of_dimension_exceed_arch_limit",
        "nl.zeros((32, 200), nl.float32)",
    ),
    ("z = nl.transpose(p)", "err_unsupported_memory", "p"),
    ("z = nl.transpose(x.reshape((32, 4, 4)))", "err_invalid_argument", "x.reshape((32, 4, 4))"),
    ("z = nl.broadcast_to(x, (32, 32))", "err_shape_mismatch", "(32, 32)"),
    (
        "z = nl.broadcast_to(x[0:1, :], (200, 16))",
        "err_num_partition_exceed_arch_limit",
        "(200, 16)",
    ),
    (
        "z = nl.broadcast_to(nl.load(i)[0:1, :], (32, 16))",
        "err_dtype_mismatch",
        "nl.load(i)[0:1, :]",
    ),
    # gather, where, dropout
    ("z = nl.gather_flattened(x, y)", "err_dtype_mismatch", "y"),
    (
        "z = nl.gather_flattened(x, nl.load(i)[0:8, :])",
        "err_num_partition_mismatch",
        "nl.load(i)[0:8, :]",
    ),
    ("z = nl.gather_flattened(x, nl.load(i), axis=1)", "err_invalid_argument", "axis=1"),
    ("z = nl.where(x, y[:, 0:4], y)", "err_shape_mismatch", "y[:, 0:4]"),
    ("z = nl.where(x, y, None)", "err_invalid_argument", "None"),
    ("z = nl.dropout(x, 1.5)", "err_invalid_argument", "1.5"),
    ("z = nl.dropout(x, y)", "err_shape_mismatch", "y"),
    # random numbers, constants, device_print
    ("z = nl.rand((32, 8), nl.int32)", "err_invalid_argument", "nl.int32"),
    ("z = nl.rand((32, 8), nl.float32, buffer=nl.hbm)", "err_unsupported_memory", "buffer=nl.hbm"),
    ("z = nl.rand((200, 8), nl.float32)", "err_num_partition_exceed_arch_limit", "(200, 8)"),
    ("nl.random_seed(x)", "err_invalid_argument", "x"),
    ("z = nl.shared_constant('missing.npy')", "err_invalid_argument", "'missing.npy'"),
    ("z = nl.shared_constant(3)", "err_invalid_argument", "3"),
    ("z = nl.shared_constant([[1, 2], [3]])", "err_invalid_argument", "[[1, 2], [3]]"),
    ("z = nl.shared_identity_matrix(200)", "err_invalid_argument", "200"),
    ("z = nl.shared_identity_matrix(16, dst=x)", "err_shape_mismatch", "dst=x"),
    ("nl.device_print(1, x)", "err_invalid_argument", "1"),
    ("nl.device_print('p', p)", "err_unsupported_memory", "p"),
    ("nl.device_print('x', x)", "nkic_device_print_ignored", "nl.device_print('x', x)"),
]


@pytest.mark.parametrize(("body", "code", "underlined"), CASES)
def test_diagnostic(tmp_path, body, code, underlined):
    assert (code, underlined) in diagnose(tmp_path, body)


def test_load_transpose2d_needs_trn2(tmp_path):
    found = diagnose(tmp_path, "z = nl.load_transpose2d(nl.ndarray((16, 128), nl.bfloat16, "
                     "buffer=nl.hbm))", target="trn1")  # fmt: skip
    assert found and found[0][0] == "err_unsupported_on_target"


def test_every_error_of_a_kernel_is_reported_in_one_run(tmp_path):
    found = diagnose(tmp_path, "z = nl.exp(a)\nw = nl.add(x, 1.0, mask=1)\nv = nl.sum(x, axis=0)")
    assert [c for c, _ in found] == [
        "err_unsupported_memory", "err_unexpected_keyword", "err_invalid_argument"
    ]  # fmt: skip


def test_shared_constant_reads_only_regular_files_of_bounded_size(tmp_path):
    """A FIFO would block `nkic check` for ever and a header can declare terabytes: both are
    refused before any data is read."""
    import os

    import numpy as np

    os.mkfifo(tmp_path / "pipe.npy")
    found = diagnose(tmp_path, "z = nl.shared_constant('pipe.npy')")
    assert found == [("err_invalid_argument", "'pipe.npy'")]
    huge = tmp_path / "huge.npy"
    with open(huge, "wb") as f:  # a header declaring 2^36 float32 values, and no data
        np.lib.format.write_array_header_1_0(
            f, {"descr": "<f4", "fortran_order": False, "shape": (1 << 18, 1 << 18)}
        )
    found = diagnose(tmp_path, "z = nl.shared_constant('huge.npy')")
    assert found and found[0][0] == "err_invalid_argument"
