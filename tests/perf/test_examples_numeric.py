"""The matmul tutorial versions of examples/ compute the right product (functional runs at a
small shape with small blocks, against numpy)."""

from __future__ import annotations

import ml_dtypes
import nkirt
import numpy as np
import pytest

from .conftest import EXAMPLES, compile_neff, spec

BF16 = ml_dtypes.bfloat16
K, M, N = 512, 256, 2048


def run_example(kernel: str, **params) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    lhsT = rng.standard_normal((K, M)).astype(BF16)
    rhs = rng.standard_normal((K, N)).astype(BF16)
    args = {"lhsT": spec((K, M)), "rhs": spec((K, N)), **params}
    neff = compile_neff(EXAMPLES / f"{kernel}.py", kernel, args, "trn1")
    result = nkirt.execute(nkirt.load(neff), {"lhsT": lhsT, "rhs": rhs})
    (got,) = result.outputs.values()
    want = lhsT.astype(np.float32).T @ rhs.astype(np.float32)
    return got.astype(np.float32), want


@pytest.mark.parametrize(
    ("kernel", "params", "rtol"),
    [
        ("matmul_hoisted", {}, 1e-2),
        ("matmul_blocked", {"TILES_M": 2, "TILES_N": 2}, 1e-2),
        ("matmul_blocked_mnk", {"TILES_M": 2, "TILES_N": 2, "TILES_K": 2}, 1e-2),
        ("matmul_row_loads", {"TILES_M": 2, "TILES_N": 2}, 1e-2),
        # bf16 partial sums (the published kernel's choice) round after every K block
        (
            "matmul_blocked_mnk",
            {"TILES_M": 1, "TILES_N": 1, "TILES_K": 2, "SUMS_DTYPE": "bfloat16"},
            3e-2,
        ),
    ],
)
def test_tutorial_matmul_versions_match_numpy(kernel, params, rtol):
    got, want = run_example(kernel, **params)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * np.abs(want).max())


def test_back_to_back_matmuls_sum_repeat_products():
    rng = np.random.default_rng(11)
    stationary = rng.standard_normal((128, 128)).astype(BF16)
    moving = rng.standard_normal((128, 512)).astype(BF16)
    args = {"stationary": spec((128, 128)), "moving": spec((128, 512)), "REPEAT": 5}
    neff = compile_neff(EXAMPLES / "matmul_back_to_back.py", "matmul_back_to_back", args, "trn2")
    result = nkirt.execute(nkirt.load(neff), {"stationary": stationary, "moving": moving})
    (got,) = result.outputs.values()
    want = 5 * (stationary.astype(np.float32).T @ moving.astype(np.float32))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3 * np.abs(want).max())


def test_compile_time_python_benchmark_kernel_matches_numpy():
    # benchmarks/kernels/unrolled_python.py: x * 0.5 on tiles (i + j) even, x * 0.5 + 1 on odd
    path = EXAMPLES.parent / "benchmarks" / "kernels" / "unrolled_python.py"
    x = np.random.default_rng(5).standard_normal((256, 1536)).astype(BF16)
    neff = compile_neff(path, "unrolled_python", {"x": spec((256, 1536))}, "trn2")
    (got,) = nkirt.execute(nkirt.load(neff), {"x": x}).outputs.values()
    want = x.astype(np.float32) * 0.5
    for i in range(2):
        for j in range(3):
            if (i + j) % 2:
                want[i * 128 : (i + 1) * 128, j * 512 : (j + 1) * 512] += 1.0
    np.testing.assert_allclose(
        got.astype(np.float32), want.astype(BF16).astype(np.float32), rtol=1e-2, atol=1e-2
    )
