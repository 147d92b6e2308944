"""nisa.topk (NKI 0.6, GpSimd): the K largest of each 16-partition input snake, ascending, with
their snake indices, against a plain-Python reference; its operand checks; and its version."""

from __future__ import annotations

import numpy as np
import pytest

import nkic

from .helpers import BF16, assert_bits, isa, isa_diagnostics


def reference(src: np.ndarray, n: int, k: int):
    """Per group of 16 partitions: element e of the snake is src[16g + e % 16, e // 16]; the
    top K by value (ties: the lower index ranks higher), written in ascending order to every
    partition of the group."""
    P = src.shape[0]
    values = np.zeros((P, k), np.float32)
    indices = np.zeros((P, k), np.uint32)
    for g in range(0, P, 16):
        snake = [(float(src[g + e % 16, e // 16]), e) for e in range(n)]
        ranked = sorted(snake, key=lambda ve: (-ve[0], ve[1]))[:k]
        ranked.reverse()
        values[g : g + 16] = [v for v, _ in ranked]
        indices[g : g + 16] = [e for _, e in ranked]
    return values.astype(BF16), indices


def run_topk(src, n, k, target="trn2"):
    P, x = src.shape
    return isa(
        "topk",
        [src],
        {"src": {"t": 0}},
        {
            "val_dst": {"shape": (P, k), "dtype": "bfloat16"},
            "idx_dst": {"shape": (P, k), "dtype": "uint32"},
        },
        target=target,
        n=n,
    )


@pytest.mark.parametrize("target", ["trn2", "trn3"])
@pytest.mark.parametrize(("P", "n", "k"), [(16, 42, 8), (32, 100, 17), (128, 8, 8), (16, 300, 1)])
def test_topk_matches_the_reference(target, P, n, k):
    rng = np.random.default_rng(n + k)
    x = -(-n // 16)
    src = rng.standard_normal((P, x)).astype(BF16)
    values, indices = run_topk(src, n, k, target)
    want_v, want_i = reference(src, n, k)
    assert_bits(values, want_v)
    assert_bits(indices, want_i)


def test_ties_keep_the_lower_index_and_inactive_elements_are_ignored():
    rng = np.random.default_rng(3)
    n, k = 37, 10
    src = rng.integers(0, 4, (16, 4)).astype(BF16)  # many equal values
    src[5:, 2] = BF16(100.0)  # elements 37.. of the snake are past n: never selected
    src[:, 3] = BF16(100.0)
    values, indices = run_topk(src, n, k)
    want_v, want_i = reference(src, n, k)
    assert_bits(values, want_v)
    assert_bits(indices, want_i)
    assert values.max() <= 3 and indices.max() < n


def test_nan_ranks_above_every_number():
    src = np.zeros((16, 1), BF16)
    src[3, 0] = BF16(np.inf)
    src[7, 0] = BF16(np.nan)
    values, indices = run_topk(src, 16, 2)
    assert np.isinf(values[0, 0]) and np.isnan(values[0, 1])
    assert list(indices[0]) == [3, 7]


@pytest.mark.parametrize(
    ("P", "x", "n", "k", "src_dtype", "text"),
    [
        (16, 3, 42, 8, "float32", "`src` is float32; it must be bfloat16"),
        (8, 3, 42, 8, "bfloat16", "topk needs a multiple of 16"),
        (16, 1, 4, 2, "bfloat16", "8 <= n < 65536"),
        (16, 3, 42, 43, "bfloat16", "K <= n=42"),
        (16, 2, 42, 8, "bfloat16", "needs 3 (ceil(n / 16))"),
    ],
)
def test_topk_operand_checks(P, x, n, k, src_dtype, text):
    src = np.zeros((P, x), np.float32 if src_dtype == "float32" else BF16)
    diags = isa_diagnostics(
        "topk",
        [src],
        {"src": {"t": 0}},
        {
            "val_dst": {"shape": (P, k), "dtype": "bfloat16"},
            "idx_dst": {"shape": (P, k), "dtype": "uint32"},
        },
        n=n,
    )
    assert [d.code for d in diags if d.severity == "error"] and any(
        text in d.message for d in diags
    ), [(d.code, d.message) for d in diags]


def test_topk_is_new_in_0_6(tmp_path):
    path = tmp_path / "k.py"
    path.write_text(
        "import nki\nimport nki.isa as nisa\nimport nki.language as nl\n\n\n@nki.jit\n"
        "def kernel(a):\n"
        "    v = nl.ndarray((16, 8), nl.bfloat16, buffer=nl.sbuf)\n"
        "    i = nl.ndarray((16, 8), nl.uint32, buffer=nl.sbuf)\n"
        "    nisa.topk(val_dst=v, idx_dst=i, src=a, n=8)\n"
        "    return a\n"
    )
    a = np.zeros((16, 1), np.float32)
    for nki in ("0.6", "0.7"):
        assert [d.code for d in nkic.check(path, a=a, nki=nki)] == ["err_unsupported_memory"]
    (d,) = nkic.check(path, a=a, nki="0.5")
    assert d.code == "err_unknown_api" and "it is new in NKI 0.6" in d.message
